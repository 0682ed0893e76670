import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A cancellation flag and a deadline that blocking FFmpeg work checks: FFmpeg through its
/// interrupt callback during I/O, and MediaCore's loops between packets.
///
/// Shared between the task that owns the work (which cancels it) and the thread doing it (which
/// checks it); all state is atomic.
public final class Interrupter: Sendable {
    public enum Reason: Sendable, Equatable { case cancelled, timedOut }

    private let cancelled = Atomic<Bool>(false)
    private let deadlineNanos = Atomic<UInt64>(0)

    public init(timeout: Duration? = nil) {
        if let timeout { setDeadline(after: timeout) }
    }

    public func cancel() { cancelled.store(true, ordering: .releasing) }

    /// Starts (or restarts) the deadline `timeout` from now.
    public func setDeadline(after timeout: Duration) {
        let nanos = UInt64(max(0, timeout.components.seconds)) * 1_000_000_000
            + UInt64(max(0, timeout.components.attoseconds / 1_000_000_000))
        deadlineNanos.store(Interrupter.monotonicNanos() &+ nanos, ordering: .releasing)
    }

    /// Why the work should stop now, or nil to go on.
    public var reason: Reason? {
        if cancelled.load(ordering: .acquiring) { return .cancelled }
        let deadline = deadlineNanos.load(ordering: .acquiring)
        if deadline != 0 && Interrupter.monotonicNanos() > deadline { return .timedOut }
        return nil
    }

    static func monotonicNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
