import Foundation

/// State that threads share and wait on: read and changed only inside `withLock` or `wait`, which wake
/// every thread waiting when they return. The worker threads' queues (the AAC encoder, the sample consumer,
/// the scanning workers, live stills and waveforms, a kept worker process) are built on it instead of each
/// keeping its own lock discipline behind an unchecked conformance of its own: this is the one place to
/// audit. The compiler does not check what the state holds (frames, packets, closures handed from one
/// thread to another, as the queues are for): only that it is never touched outside the lock.
public final class Guarded<State>: @unchecked Sendable {  // unchecked: `state` is read and written only between the condition's lock and unlock, below
    private let condition = NSCondition()
    private var state: State

    public init(_ initial: State) { state = initial }

    /// Reads or changes the state; then every thread waiting on it checks again.
    @discardableResult
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.broadcast(); condition.unlock() }
        return try body(&state)
    }

    /// Waits until `ready` holds, then reads or changes the state as `withLock` does.
    @discardableResult
    public func wait<R>(until ready: (State) -> Bool, then body: (inout State) throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.broadcast(); condition.unlock() }
        while !ready(state) { condition.wait() }
        return try body(&state)
    }

    /// As `wait(until:then:)`, waiting no later than `deadline`; `body` hears whether `ready` held.
    @discardableResult
    public func wait<R>(until ready: (State) -> Bool, deadline: Date, then body: (inout State, Bool) throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.broadcast(); condition.unlock() }
        while !ready(state), condition.wait(until: deadline) {}
        return try body(&state, ready(state))
    }
}
