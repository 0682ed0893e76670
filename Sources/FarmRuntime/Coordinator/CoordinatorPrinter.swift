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

    public init(json: Bool) {
        self.json = json
        self.live = !json && isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    public func notice(_ text: String) { print(.notice(text)) }

    public func print(_ event: CoordinatorEvent) {
        state.withLock { state in
            if json {
                // The one encoding, as GET /api/events sends it.
                FileHandle.standardOutput.write(Data((event.json + "\n").utf8))
                return
            }
            let id = event.job ?? 0, name = event.name ?? ""
            switch event.event {
            case .started:
                state.progress[id] = (name, 0, "starting")
                line(&state, String(format: "job %lld (%@) started: attempt %d, worker pid %d, %.0f ms after it was due", id, name, event.attempt ?? 0,
                            event.pid ?? 0, (event.queuedFor ?? 0) * 1000))
            case .progress:
                state.progress[id] = (name, event.fraction ?? 0, event.phase ?? "")
                drawLive(&state, force: false)
            case .finished:
                state.progress[id] = nil
                var text = String(format: "job %lld (%@) %@ after %.1f s (attempt %d)", id, name, event.state ?? "", event.seconds ?? 0, event.attempt ?? 0)
                if let message = event.message { text += ": \(message)" }
                line(&state, text)
            case .notice:
                line(&state, event.message ?? "")
            case .submitted, .cancelled, .retried:
                line(&state, "job \(id) (\(name)) \(event.event.rawValue)" + (event.state.map { ": \($0)" } ?? ""))
            }
        }
    }

    public func finish() {
        state.withLock { _ in
            if live { FileHandle.standardOutput.write(Data("\r\u{1B}[2K".utf8)) }
        }
    }

    private func line(_ state: inout Live, _ text: String) {
        var out = live ? "\r\u{1B}[2K" : ""
        out += text + "\n"
        FileHandle.standardOutput.write(Data(out.utf8))
        drawLive(&state, force: true)
    }

    private func drawLive(_ state: inout Live, force: Bool) {
        guard live, !state.progress.isEmpty else { return }
        guard force || Date().timeIntervalSince(state.lastDraw) > 0.2 else { return }
        state.lastDraw = Date()
        let parts = state.progress.sorted { $0.key < $1.key }.map { id, p in
            let filled = Int(p.fraction * 10)
            return "\(id) \(p.name) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: 10 - filled) + "] \(p.phase)"
        }
        FileHandle.standardOutput.write(Data(("\r\u{1B}[2K" + parts.joined(separator: " | ")).prefix(200).utf8))
    }
}
