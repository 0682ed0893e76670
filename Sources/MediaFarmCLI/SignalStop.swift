import ArgumentParser
import FarmRuntime
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C and SIGTERM for the commands that work in the foreground (`run`, `scan`, `inspect`,
/// `loudness`): the first SIGINT or SIGTERM cancels the work (which removes its temporary outputs on the
/// way out), and the command then exits 130 or 143, as shells expect. A second signal while stopping is
/// ignored.
final class SignalStop: Sendable {
    private let caught = Atomic<Int32>(0)

    /// The signal that arrived, if any.
    var signal: Int32? { let s = caught.load(ordering: .acquiring); return s == 0 ? nil : s }

    /// `body` as a task that SIGINT or SIGTERM cancels. The signals have been caught since before `main`
    /// (`StopSignals`), so one sent while the program was still loading stops the work as soon as it starts.
    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await body() }
        let watcher = Task { [self] in
            guard let number = await StopSignals.shared.first() else { return }
            // The first signal is the one the command reports.
            _ = caught.compareExchange(expected: 0, desired: number, ordering: .acquiringAndReleasing)
            task.cancel()
        }
        defer { watcher.cancel() }
        return try await task.value
    }

    /// After the work: when a signal stopped it, says so on stderr for `command` and exits 128 + signal.
    func exitIfStopped(_ command: String) throws {
        guard let signal else { return }
        FileHandle.standardError.write(Data("\(command): stopped by \(Self.name(signal))\n".utf8))
        throw Self.exitCode(signal)
    }

    /// "SIGINT" / "SIGTERM".
    static func name(_ signal: Int32) -> String { signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal \(signal)" }

    /// Exits as a shell expects after a signal: 128 + its number (130 for SIGINT, 143 for SIGTERM).
    static func exitCode(_ signal: Int32) -> ExitCode { ExitCode(128 + signal) }
}
