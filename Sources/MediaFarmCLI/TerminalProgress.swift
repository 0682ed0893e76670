import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A one-line progress bar on stderr, drawn only when stderr is a terminal (and there is more than one
/// item); silent otherwise, so piped and `--json` output stays clean.
final class TerminalProgress: Sendable {
    private let label: String
    private let total: Int
    private let enabled: Bool
    private let lastDrawn = Mutex<Int>(-1)

    init(label: String, total: Int) {
        self.label = label
        self.total = total
        self.enabled = total > 1 && isatty(STDERR_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    func update(_ done: Int, detail: String? = nil) {
        guard enabled else { return }
        let width = 30
        let filled = total == 0 ? width : done * width / total
        lastDrawn.withLock { last in
            guard done != last else { return }
            last = done
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let count = detail.map { "\(done * 100 / max(total, 1))% \($0)" } ?? "\(done)/\(total)"
            FileHandle.standardError.write(Data("\r\u{1B}[2K\(label) [\(bar)] \(count)".utf8))
        }
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}
