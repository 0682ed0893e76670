import FarmModel
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The coordinator's output (`coordinator` and `batch`): a line per event, or JSON lines (the events' one
/// encoding); a live line of running jobs on a terminal. Events come from any thread; each is written whole.
public final class CoordinatorPrinter: Sendable {
    public let json: Bool
    public let live: Bool

    /// The running jobs' progress, for the live line, and when it was drawn last.
    private struct Live {
        var progress: [Int64: (name: String, fraction: Double, phase: String)] = [:]
        var lastDraw = Date.distantPast
    }
    private let state = Mutex(Live())
    /// Where the text goes: standard output, or what a coordinator built in a test's process keeps.
    private let write: @Sendable (String) -> Void

    public init(json: Bool) {
        self.json = json
        self.live = !json && isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
        self.write = { FileHandle.standardOutput.write(Data($0.utf8)) }
    }

    /// Lines written to `write`, never a live line: the output of a coordinator built in another program.
    public init(json: Bool, write: @escaping @Sendable (String) -> Void) {
        self.json = json
        self.live = false
        self.write = write
    }

    public func notice(_ text: String) { print(.notice(text)) }

    public func print(_ event: CoordinatorEvent) {
        state.withLock { state in
            if json {
                // The one encoding, as GET /api/events sends it.
                write(event.json + "\n")
                return
            }
            switch event {
            case .started(let e):
                state.progress[e.job] = (e.name, 0, "starting")
                line(&state, String(format: "job %lld (%@) started: attempt %d, worker pid %d, %.0f ms after it was due", e.job, e.name, e.attempt,
                                    e.pid, e.queuedFor * 1000))
            case .progress(let e):
                state.progress[e.job] = (e.name, e.fraction, e.phase)
                drawLive(&state, force: false)
            case .finished(let e):
                state.progress[e.job] = nil
                var text = String(format: "job %lld (%@) %@ after %.1f s (attempt %d)", e.job, e.name, e.state, e.seconds, e.attempt)
                if let message = e.message { text += ": \(message)" }
                line(&state, text)
            case .notice(let e):
                line(&state, e.message)
            case .submitted(let e):
                line(&state, "job \(e.job) (\(e.name)) submitted" + (e.queued ? "" : ": a live job already held its key"))
            case .cancelled(let e), .retried(let e):
                line(&state, "job \(e.job) (\(e.name)) \(event.kind.rawValue): \(e.state)")
            }
        }
    }

    public func finish() {
        state.withLock { _ in
            if live { write("\r\u{1B}[2K") }
        }
    }

    /// One line of the log: whatever users wrote in it (names, paths, errors quoting them) escaped, so the
    /// line stays one line and acts on no terminal.
    private func line(_ state: inout Live, _ text: String) {
        var out = live ? "\r\u{1B}[2K" : ""
        out += UserText.printable(text) + "\n"
        write(out)
        drawLive(&state, force: true)
    }

    private func drawLive(_ state: inout Live, force: Bool) {
        guard live, !state.progress.isEmpty else { return }
        guard force || Date().timeIntervalSince(state.lastDraw) > 0.2 else { return }
        state.lastDraw = Date()
        let parts = state.progress.sorted { $0.key < $1.key }.map { id, p in
            let filled = Int(p.fraction * 10)
            return "\(id) \(UserText.printable(p.name)) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: 10 - filled) + "] \(UserText.printable(p.phase))"
        }
        write(String(("\r\u{1B}[2K" + parts.joined(separator: " | ")).prefix(200)))
    }
}
