import Foundation
import Synchronization

/// Wakes the tasks waiting for new work. A signal with no one waiting is kept for the next waiter, so
/// that work announced between a caller's last look at the queue and its wait is not slept through.
public final class WorkSignal: Sendable {
    private struct State {
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var next: UInt64 = 0
        var pending = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether a connection is listening now (signals can come).
    let listening = Atomic<Bool>(false)

    /// The callers waiting now (a test's condition that its waiter waits before the work it should hear of).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns at the next signal, after `seconds`, or when the task is cancelled. A signal kept for
    /// the next waiter is taken in the same step that would register this one, so that none is lost
    /// between the two.
    public func wait(upTo seconds: Double) async {
        let id = state.withLock { s -> UInt64 in
            s.next += 1
            return s.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let kept = state.withLock { s -> Bool in
                    if s.pending {
                        s.pending = false
                        return true
                    }
                    s.waiters[id] = done
                    return false
                }
                if kept {
                    done.resume()
                    return
                }
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { self.resume(id) }
                if Task.isCancelled { resume(id) }
            }
        } onCancel: {
            resume(id)
        }
    }

    public func signal() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            if s.waiters.isEmpty { s.pending = true }
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func resume(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
}

/// Runs an async call with a time limit that holds even when the call ignores cancellation (a query on
/// a connection whose peer vanished): the caller gets `Expired` at the limit, and the call is
/// cancelled and left to end on its own.
enum Deadline {
    struct Expired: Error {}

    /// `late` receives what the call returned after the caller was given `Expired` (a connection that
    /// came up too late, to be closed rather than dropped open). With a `heartbeat`, the limit is on the
    /// silence since the call's last sign of life (a transaction of many statements that each answer
    /// runs as long as its work needs), not on the call's whole time. The call's task runs on `executor`
    /// when one is given.
    static func run<T: Sendable>(seconds: Double, heartbeat: Heartbeat? = nil, executor: (any TaskExecutor)? = nil, _ body: @escaping @Sendable () async throws -> T,
                                 late: @escaping @Sendable (T) async -> Void = { _ in }) async throws -> T {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<T, any Error>) in
            let once = Once(done)
            let task = Task(executorPreference: executor) {
                let result = if let heartbeat {
                    await Heartbeat.$current.withValue(heartbeat) { await Result(catching: body) }
                } else {
                    await Result(catching: body)
                }
                if !once.resume(with: result), case .success(let value) = result { await late(value) }
            }
            // Once the call is resumed, a timer that fires does nothing (nor arms another).
            let resumed = Atomic(false)
            @Sendable func arm(after delay: Double) {
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                    guard !resumed.load(ordering: .acquiring) else { return }
                    if let heartbeat, case let silence = heartbeat.silence, silence < seconds {
                        arm(after: seconds - silence)
                    } else if once.resume(with: .failure(Expired())) {
                        task.cancel()
                    }
                }
            }
            arm(after: seconds)
            once.onResume { resumed.store(true, ordering: .releasing) }
        }
    }

    /// A continuation resumed by whichever comes first.
    private final class Once<T: Sendable>: Sendable {
        private let state: Mutex<(continuation: CheckedContinuation<T, any Error>?, cleanup: (@Sendable () -> Void)?)>

        init(_ continuation: CheckedContinuation<T, any Error>) {
            state = Mutex((continuation, nil))
        }

        func onResume(_ cleanup: @escaping @Sendable () -> Void) {
            let done = state.withLock { s -> Bool in
                if s.continuation == nil { return true }
                s.cleanup = cleanup
                return false
            }
            if done { cleanup() }
        }

        @discardableResult
        func resume(with result: Result<T, any Error>) -> Bool {
            let (continuation, cleanup) = state.withLock { s in
                defer { s = (nil, nil) }
                return s
            }
            guard let continuation else { return false }
            continuation.resume(with: result)
            cleanup?()
            return true
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// A call's last sign of life (a statement answered), for `Deadline`: the call's task finds it as
/// `Heartbeat.current`.
final class Heartbeat: Sendable {
    @TaskLocal static var current: Heartbeat?
    private let last = Mutex(DispatchTime.now().uptimeNanoseconds)

    func beat() { last.withLock { $0 = DispatchTime.now().uptimeNanoseconds } }

    /// Seconds since the last beat (or since it was made).
    var silence: Double { Double(DispatchTime.now().uptimeNanoseconds - last.withLock { $0 }) / 1e9 }
}
