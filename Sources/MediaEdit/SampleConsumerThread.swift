import Foundation
import MediaCore

/// Hands audio to work on a thread of its own (measuring and keeping it, while the caller decodes and
/// time-stretches the next): `submit` queues a block (waiting while too much is queued), `finish` waits
/// until every block is done and throws the work's error, if any. The work owns what it touches.
final class SampleConsumerThread: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var queue: [AudioSamples] = []
    private var queuedSamples = 0
    private var inputFinished = false
    private var done = false
    private var failure: (any Error)?
    /// At most this many samples wait (about 4 s at 48 kHz).
    private let maxQueued = 1 << 18

    init(name: String, _ work: @escaping @Sendable (AudioSamples) throws -> Void) {
        let thread = Thread { [self] in run(work) }
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

    /// Waits until every queued block is done.
    func finish() throws {
        condition.lock()
        defer { condition.unlock() }
        inputFinished = true
        condition.broadcast()
        while !done { condition.wait() }
        if let failure { throw failure }
    }

    /// Stops taking blocks (the caller failed): the thread ends after the block in hand.
    func cancel() {
        condition.lock()
        inputFinished = true
        queue.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    private func run(_ work: (AudioSamples) throws -> Void) {
        while true {
            condition.lock()
            while queue.isEmpty && !inputFinished { condition.wait() }
            if queue.isEmpty {
                done = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let block = queue.removeFirst()
            queuedSamples -= block.count
            condition.broadcast()
            condition.unlock()
            do {
                try work(block)
            } catch {
                condition.lock()
                failure = error
                queue.removeAll()
                done = true
                condition.broadcast()
                condition.unlock()
                return
            }
        }
    }
}
