internal import CMediaShims
import Logging
import Synchronization

/// Routes FFmpeg's av_log into swift-log under the label "ffmpeg"; nothing goes to stderr directly.
///
/// Install once at start-up, after `LoggingSystem.bootstrap`. Lines at or above `level` are forwarded
/// (FFmpeg's error -> .error, warning -> .warning, info -> .info, verbose -> .debug, debug -> .trace).
/// `nil` forwards nothing. Independently of the level, the last error line FFmpeg logs on each thread is
/// kept, so that `FFmpegError` can quote it. Thread-safe: FFmpeg logs from its own threads too.
public enum FFmpegLog {
    private static let installed = Atomic<Bool>(false)

    public static func install(level: Logger.Level?) {
        installed.store(true, ordering: .releasing)
        mf_log_install(sink, avLevel(for: level))
    }

    /// Installs the trampoline silently unless the application installed it first. MediaCore calls
    /// this before touching FFmpeg, so that library users get no stderr noise and errors keep
    /// FFmpeg's reasons without any set-up.
    static func installDefaultIfNeeded() {
        guard !installed.load(ordering: .acquiring) else { return }
        if installed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            mf_log_install(sink, avLevel(for: nil))
        }
    }

    public static func setLevel(_ level: Logger.Level?) {
        mf_log_set_max_level(avLevel(for: level))
    }

    /// The calling thread's last FFmpeg error line, which is then forgotten.
    static func takeLastError() -> String? {
        var buffer = [CChar](repeating: 0, count: 512)
        let n = mf_log_last_error(&buffer, buffer.count)
        mf_log_clear_last_error()
        return n == 0 ? nil : String(cBuffer: buffer)
    }

    static func clearLastError() { mf_log_clear_last_error() }

    static var errorSequence: UInt64 { mf_log_error_sequence() }

    /// This thread's last error line, else one logged by any thread after `sequence` (codec worker threads).
    static func takeLastError(since sequence: UInt64) -> String? {
        if let own = takeLastError() { return own }
        var buffer = [CChar](repeating: 0, count: 512)
        return mf_log_last_error_since(sequence, &buffer, buffer.count) == 0 ? nil : String(cBuffer: buffer)
    }

    // AV_LOG_* values.
    private static let quiet: Int32 = -8, fatal: Int32 = 8, error: Int32 = 16, warning: Int32 = 24,
                       info: Int32 = 32, verbose: Int32 = 40, debug: Int32 = 48, trace: Int32 = 56

    private static func avLevel(for level: Logger.Level?) -> Int32 {
        guard let level else { return quiet }
        switch level {
        case .critical: return fatal
        case .error: return error
        case .warning: return warning
        case .notice, .info: return info
        case .debug: return verbose
        case .trace: return trace
        }
    }

    private static let sink: mf_log_sink = { level, line in
        guard let line else { return }
        let swiftLevel: Logger.Level
        switch level {
        case ...fatal: swiftLevel = .critical
        case ...error: swiftLevel = .error
        case ...warning: swiftLevel = .warning
        case ...info: swiftLevel = .info
        case ...verbose: swiftLevel = .debug
        default: swiftLevel = .trace
        }
        Logger(label: "ffmpeg").log(level: swiftLevel, "\(String(cString: line))")
    }
}
