import Foundation
import Synchronization

/// A fixed set of dedicated threads for blocking work (FFmpeg, Rubber Band, ZBar calls), so that it
/// never occupies Swift's cooperative thread pool.
///
/// `run` suspends the calling task until the work finishes on a pool thread. Cancelling the task
/// cancels the `Interrupter` handed to the work, which FFmpeg and MediaCore's loops check; work that
/// has not started yet is dropped and throws `CancellationError`.
public final class BlockingWorkPool: Sendable {
    private struct Job: Sendable {
        let work: @Sendable () -> Void
    }

    private let state: Mutex<State>
    private let condition = NSCondition()
    public let threadCount: Int

    private struct State {
        var queue: [Job] = []
        var head = 0
    }

    /// A pool shared by everything in the process that does not ask for its own; one thread per core.
    public static let shared = BlockingWorkPool(threads: max(2, ProcessInfo.processInfo.activeProcessorCount))

    public init(threads: Int) {
        precondition(threads > 0)
        threadCount = threads
        state = Mutex(State())
        for i in 0..<threads {
            let thread = Thread { [self] in self.loop() }
            thread.name = "mediafarm-blocking-\(i)"
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    /// Runs `body` on a pool thread and returns its result. `body` receives an interrupter of its own
    /// that trips when the calling task is cancelled, or when the work makes no progress for
    /// `stallLimit` (nil: never).
    public func run<T: Sendable>(stallLimit: Duration? = nil, _ body: @escaping @Sendable (Interrupter) throws -> T) async throws -> T {
        let interrupter = Interrupter(stallLimit: stallLimit)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                enqueue(Job {
                    if interrupter.reason == .cancelled {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    interrupter.progressed()   // the limit counts from the start of the work, not its queueing
                    continuation.resume(with: Result { try body(interrupter) })
                })
            }
        } onCancel: {
            interrupter.cancel()
        }
    }

    private func enqueue(_ job: Job) {
        condition.lock()
        state.withLock { $0.queue.append(job) }
        condition.signal()
        condition.unlock()
    }

    /// True on a thread of any `BlockingWorkPool`.
    public static var isPoolThread: Bool {
        Thread.current.threadDictionary[poolThreadKey] as? Bool == true
    }

    private static let poolThreadKey = "mediafarm.blocking-work-pool"

    private func loop() {
        Thread.current.threadDictionary[BlockingWorkPool.poolThreadKey] = true
        while true {
            condition.lock()
            var job: Job?
            while job == nil {
                job = state.withLock { s -> Job? in
                    guard s.head < s.queue.count else { return nil }
                    let j = s.queue[s.head]
                    s.head += 1
                    if s.head > 64 && s.head * 2 > s.queue.count {
                        s.queue.removeFirst(s.head)
                        s.head = 0
                    }
                    return j
                }
                if job == nil { condition.wait() }
            }
            condition.unlock()
            job!.work()
        }
    }
}
