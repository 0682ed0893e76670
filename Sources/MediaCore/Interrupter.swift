import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A cancellation flag and a stall detector that one blocking operation checks: FFmpeg through its
/// interrupt callback during I/O, and MediaCore's loops between units of work.
///
/// A stall is "no progress for `stallLimit`": the work marks progress (`progressed()`) whenever it
/// reads or writes a packet or produces a frame or samples, and the limit counts from the last mark.
/// It never caps how long the work may take in total: a job's total time is bounded by its own
/// timeout, which the coordinator enforces. Each operation has its own `Interrupter`: opening a file
/// marks progress on the operation that opens it and on no other.
///
/// Shared between the task that owns the work (which cancels it) and the thread doing it (which
/// checks it); all state is atomic. The clock is injectable for tests.
public final class Interrupter: Sendable {
    public enum Reason: Sendable, Equatable {
        case cancelled
        /// No progress for the stall limit.
        case stalled(after: Duration)
    }

    private let cancelled = Atomic<Bool>(false)
    private let stallNanos: UInt64
    private let lastProgress: Atomic<UInt64>
    private let clock: @Sendable () -> UInt64

    /// `stallLimit` nil: never stalls (only cancellation stops the work). `clock` returns monotonic
    /// nanoseconds.
    public init(stallLimit: Duration? = nil, clock: @escaping @Sendable () -> UInt64 = Interrupter.monotonicNanos) {
        self.stallNanos = stallLimit.map(Interrupter.nanos) ?? 0
        self.clock = clock
        self.lastProgress = Atomic(clock())
    }

    /// The stall limit, or nil when there is none.
    public var stallLimit: Duration? { stallNanos == 0 ? nil : .nanoseconds(Int64(clamping: stallNanos)) }

    public func cancel() { cancelled.store(true, ordering: .releasing) }

    /// Marks progress: the stall limit counts again from now.
    @inline(__always)
    public func progressed() { lastProgress.store(clock(), ordering: .relaxed) }

    /// Why the work should stop now, or nil to go on.
    public var reason: Reason? {
        if cancelled.load(ordering: .acquiring) { return .cancelled }
        guard stallNanos != 0 else { return nil }
        let now = clock(), last = lastProgress.load(ordering: .relaxed)
        return now > last && now - last > stallNanos ? .stalled(after: stallLimit!) : nil
    }

    static func nanos(_ d: Duration) -> UInt64 {
        UInt64(max(0, d.components.seconds)) * 1_000_000_000 + UInt64(max(0, d.components.attoseconds / 1_000_000_000))
    }

    public static func monotonicNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
