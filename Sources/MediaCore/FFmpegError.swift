internal import CFFmpeg
internal import CMediaShims

/// An error code returned by an FFmpeg call, kept raw (like GRDB's ResultCode), with named constants
/// for pattern matching and a message formatted only when asked for.
///
/// `operation` says which call failed ("avformat_open_input"); `detail` is the last error line FFmpeg
/// logged on the failing thread ("[vp9 @ 0x..] Invalid sync code"), when there was one.
public struct FFmpegError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: Int32
    public let operation: String?
    public let detail: String?

    public init(code: Int32, operation: String? = nil, detail: String? = nil) {
        self.code = code
        self.operation = operation
        self.detail = detail
    }

    /// An error for `code` that picks up (and clears) the calling thread's last FFmpeg error line.
    static func capture(_ code: Int32, _ operation: String) -> FFmpegError {
        FFmpegError(code: code, operation: operation, detail: FFmpegLog.takeLastError())
    }

    /// As `capture`, also accepting a line another thread logged after `sequence` (codec threads).
    static func capture(_ code: Int32, _ operation: String, since sequence: UInt64) -> FFmpegError {
        FFmpegError(code: code, operation: operation, detail: FFmpegLog.takeLastError(since: sequence))
    }

    public static let endOfFile = FFmpegError(code: mf_averror_eof())
    public static let tryAgain = FFmpegError(code: mf_averror_eagain())
    public static let exit = FFmpegError(code: fferrtag("E", "X", "I", "T"))
    public static let invalidData = FFmpegError(code: fferrtag("I", "N", "D", "A"))
    public static let decoderNotFound = FFmpegError(code: fferrtag(0xF8, "D", "E", "C"))
    public static let encoderNotFound = FFmpegError(code: fferrtag(0xF8, "E", "N", "C"))
    public static let demuxerNotFound = FFmpegError(code: fferrtag(0xF8, "D", "E", "M"))
    public static let streamNotFound = FFmpegError(code: fferrtag(0xF8, "S", "T", "R"))
    public static let patchWelcome = FFmpegError(code: fferrtag("P", "A", "W", "E"))
    public static let notFound = FFmpegError(code: mf_averror(ENOENT))
    public static let permissionDenied = FFmpegError(code: mf_averror(EACCES))
    public static let outOfMemory = FFmpegError(code: mf_averror(ENOMEM))
    public static let invalidArgument = FFmpegError(code: mf_averror(EINVAL))

    /// The POSIX errno inside this code, when it wraps one.
    public var posixErrno: Int32? {
        let e = mf_avunerror(code)
        return e > 0 && e < 4096 ? e : nil
    }

    /// FFmpeg's own words for the code ("Invalid data found when processing input").
    public var message: String {
        var buffer = [CChar](repeating: 0, count: 256)
        if av_strerror(code, &buffer, buffer.count) < 0 {
            return "FFmpeg error \(code)"
        }
        return String(cBuffer: buffer)
    }

    public var description: String {
        var text = message
        if let detail, !detail.isEmpty {
            text += " (\(FFmpegError.stripAddress(detail)))"
        }
        return text
    }

    /// Equality and hashing compare the code only, so `error == .invalidData` matches.
    public static func == (a: FFmpegError, b: FFmpegError) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `case .endOfFile:` in a `catch` or `switch` over an FFmpegError.
    public static func ~= (pattern: FFmpegError, value: any Error) -> Bool {
        (value as? FFmpegError)?.code == pattern.code
    }

    /// "[vp9 @ 0x55d1c0] Invalid sync code" -> "vp9: Invalid sync code".
    static func stripAddress(_ line: String) -> String {
        guard line.hasPrefix("["), let close = line.firstIndex(of: "]") else { return line }
        let inside = line[line.index(after: line.startIndex)..<close]
        let name = inside.split(separator: "@").first.map { $0.trimmingCharacters(in: " ") } ?? String(inside)
        let rest = line[line.index(after: close)...].trimmingCharacters(in: " ")
        return name.isEmpty ? rest : "\(name): \(rest)"
    }
}

/// FFERRTAG(a, b, c, d): the negated four-character code FFmpeg uses for its own errors.
private func fferrtag(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Int32 {
    -Int32(bitPattern: UInt32(a) | UInt32(b) << 8 | UInt32(c) << 16 | UInt32(d) << 24)
}

private func fferrtag(_ a: Character, _ b: Character, _ c: Character, _ d: Character) -> Int32 {
    fferrtag(a.asciiValue!, b.asciiValue!, c.asciiValue!, d.asciiValue!)
}

private func fferrtag(_ a: UInt8, _ b: Character, _ c: Character, _ d: Character) -> Int32 {
    fferrtag(a, b.asciiValue!, c.asciiValue!, d.asciiValue!)
}

extension StringProtocol {
    func trimmingCharacters(in set: Character) -> String {
        String(drop(while: { $0 == set }).reversed().drop(while: { $0 == set }).reversed())
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension String {
    /// The text of a NUL-terminated C buffer.
    init(cBuffer buffer: [CChar]) {
        let bytes = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self)
    }
}
