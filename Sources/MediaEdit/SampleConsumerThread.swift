import Foundation
import MediaCore

/// Hands audio to work on a thread of its own (encoding it, or measuring and keeping it, while the
/// caller decodes and time-stretches the next): `submit` queues a block (waiting while too much is
/// queued), `finishInput` says no more will come (`last` then runs on the thread), `finish` also waits
/// until everything is done and throws the work's error, if any. `failed` hears that error on the
/// thread. The work owns what it touches.
final class SampleConsumerThread: @unchecked Sendable {  // unchecked: its queue behind `condition`; the work owns what it touches
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var queue: [AudioSamples] = []
    private var queuedSamples = 0
    private var inputFinished = false
    private var done = false
    private var failure: (any Error)?
    private var cancelled = false
    /// At most this many samples wait (about 4 s at 48 kHz).
    private let maxQueued = 1 << 18

    init(name: String, _ work: @escaping @Sendable (AudioSamples) throws -> Void, last: @escaping @Sendable () throws -> Void = {},
         failed: @escaping @Sendable (any Error) -> Void = { _ in }) {
        let thread = Thread { [self] in run(work, last: last, failed: failed) }
        thread.name = name
        thread.start()
    }

    /// Queues a block; waits while the queue is full. Throws the work's error once it has failed.
    func submit(_ samples: AudioSamples) throws {
        guard samples.count > 0 else { return }
        condition.lock()
        defer { condition.unlock() }
        while queuedSamples >= maxQueued && failure == nil && !done { condition.wait() }
        if let failure { throw failure }
        queue.append(samples)
        queuedSamples += samples.count
        condition.broadcast()
    }

    /// No more blocks: the thread does those queued, then `last`.
    func finishInput() {
        condition.lock()
        inputFinished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every queued block, and `last`, is done.
    func finish() throws {
        finishInput()
        condition.lock()
        defer { condition.unlock() }
        while !done { condition.wait() }
        if let failure { throw failure }
    }

    /// Stops taking blocks (the caller failed): the thread ends after the block in hand, without `last`.
    func cancel() {
        condition.lock()
        inputFinished = true
        queue.removeAll()
        queuedSamples = 0
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    private func run(_ work: (AudioSamples) throws -> Void, last: () throws -> Void, failed: (any Error) -> Void) {
        do {
            var wasCancelled = false
            while true {
                condition.lock()
                while queue.isEmpty && !inputFinished { condition.wait() }
                if queue.isEmpty {
                    wasCancelled = cancelled
                    condition.unlock()
                    break
                }
                let block = queue.removeFirst()
                queuedSamples -= block.count
                condition.broadcast()
                condition.unlock()
                try work(block)
            }
            if !wasCancelled { try last() }
            condition.lock()
            done = true
            condition.broadcast()
            condition.unlock()
        } catch {
            condition.lock()
            failure = error
            queue.removeAll()
            queuedSamples = 0
            done = true
            condition.broadcast()
            condition.unlock()
            failed(error)
        }
    }
}
