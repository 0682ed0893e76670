internal import CProcessShims
import Foundation
import ServiceLifecycle
import UnixSignals
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM and SIGINT for the commands whose SIGTERM drains (`coordinator`, `batch`) or stops foreground
/// work (`run`, `scan`, `inspect`, `loudness`), caught from the program's first instruction: CProcessShims
/// installs a handler before `main` that writes each signal to a pipe, so a signal in the first
/// milliseconds, before any Swift code could install one, is kept for the program instead of ending the
/// process with status 143. In any other program the same handler is installed when this is first used.
/// A thread of its own reads the pipe (its reads block).
public final class StopSignals: Sendable {
    public static let shared = StopSignals()

    private struct State {
        var received: [Int32] = []
        /// Each waiting task's continuation, by a number of its own: a task cancelled stops its own wait
        /// only (several service groups in one process each wait here).
        var waiters: [Int: CheckedContinuation<Int32?, Never>] = [:]
        var nextWaiter = 0
    }
    private let state = Mutex(State())
    /// Whether the signals are caught here (false only when no pipe could be made: use the lifecycle's).
    public let isInstalled: Bool

    private init() {
        let early = mf_stop_signals_fd()
        let fd = early >= 0 ? early : mf_stop_signals_install()
        isInstalled = fd >= 0
        guard isInstalled else { return }
        let thread = Thread { [self] in
            var byte: UInt8 = 0
            while true {
                let n = read(fd, &byte, 1)
                if n == 1 { deliver(Int32(byte)) } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
        thread.name = "mediafarm-stop-signals"
        thread.start()
    }

    private func deliver(_ signal: Int32) {
        let waiters = state.withLock { s -> [CheckedContinuation<Int32?, Never>] in
            s.received.append(signal)
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: signal) }
    }

    /// The first signal caught (at once when one came already), or nil when the calling task is cancelled.
    public func first() async -> Int32? {
        let id = state.withLock { s in
            defer { s.nextWaiter += 1 }
            return s.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                let ready = state.withLock { s -> Int32? in
                    if let first = s.received.first { return first }
                    // Cancelled before it waited: the handler below has run already and found no waiter.
                    if Task.isCancelled { return -1 }
                    s.waiters[id] = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready == -1 ? nil : ready) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// The signals a service group should watch itself: none when these are caught here.
    public var lifecycleSignals: [UnixSignal] { isInstalled ? [] : [.sigterm, .sigint] }

    /// A service that ends at the first SIGTERM or SIGINT, shutting its group down gracefully (give it
    /// `successTerminationBehavior: .gracefullyShutdownGroup`), and ends quietly when the group shuts down
    /// for another reason.
    public struct Watcher: Service {
        public init() {}
        public func run() async throws {
            _ = await cancelWhenGracefulShutdown { await StopSignals.shared.first() }
        }
    }
}
