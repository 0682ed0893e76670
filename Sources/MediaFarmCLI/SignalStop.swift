import ArgumentParser
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C and SIGTERM for the commands that work in the foreground (`run`, `scan`, `inspect`): the
/// first SIGINT or SIGTERM cancels the work (which removes its temporary outputs on the way out), and
/// the command then exits 130 or 143, as shells expect. A second signal while stopping is ignored.
final class SignalStop: Sendable {
    private let caught = Atomic<Int32>(0)

    /// The signal that arrived, if any.
    var signal: Int32? { let s = caught.load(ordering: .acquiring); return s == 0 ? nil : s }

    /// `body` as a task that SIGINT or SIGTERM cancels.
    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await body() }
        var made: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                if caught.compareExchange(expected: 0, desired: number, ordering: .acquiringAndReleasing).exchanged {
                    task.cancel()
                }
            }
            source.resume()
            made.append(source)
        }
        defer { for source in made { source.cancel() } }
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
