import Foundation
import MediaCore

/// Hands audio to work on a thread of its own (encoding it, or measuring and keeping it, while the
/// caller decodes and time-stretches the next): `submit` queues a block (waiting while too much is
/// queued), `finishInput` says no more will come (`last` then runs on the thread), `finish` also waits
/// until everything is done and throws the work's error, if any. `failed` hears that error on the
/// thread. The work owns what it touches.
final class SampleConsumerThread: Sendable {
    private struct State {
        var queue: [AudioSamples] = []
        var queuedSamples = 0
        var inputFinished = false
        var done = false
        var failure: (any Error)?
        var cancelled = false
    }

    private let state = Guarded(State())
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
        let maxQueued = self.maxQueued
        try state.wait(until: { $0.queuedSamples < maxQueued || $0.failure != nil || $0.done }) { s in
            if let failure = s.failure { throw failure }
            s.queue.append(samples)
            s.queuedSamples += samples.count
        }
    }

    /// No more blocks: the thread does those queued, then `last`.
    func finishInput() {
        state.withLock { $0.inputFinished = true }
    }

    /// Waits until every queued block, and `last`, is done.
    func finish() throws {
        finishInput()
        if let failure = state.wait(until: { $0.done }, then: { $0.failure }) { throw failure }
    }

    /// Stops taking blocks (the caller failed): the thread ends after the block in hand, without `last`.
    func cancel() {
        state.withLock { s in
            s.inputFinished = true
            s.queue.removeAll()
            s.queuedSamples = 0
            s.cancelled = true
        }
    }

    private func run(_ work: (AudioSamples) throws -> Void, last: () throws -> Void, failed: (any Error) -> Void) {
        do {
            while true {
                // The next block, or nil once the input is finished and nothing is left (cancelled: true).
                let next: (block: AudioSamples?, cancelled: Bool) = state.wait(until: { !$0.queue.isEmpty || $0.inputFinished }) { s in
                    guard !s.queue.isEmpty else { return (nil, s.cancelled) }
                    let block = s.queue.removeFirst()
                    s.queuedSamples -= block.count
                    return (block, false)
                }
                guard let block = next.block else {
                    if !next.cancelled { try last() }
                    break
                }
                try work(block)
            }
            state.withLock { $0.done = true }
        } catch {
            state.withLock { s in
                s.failure = error
                s.queue.removeAll()
                s.queuedSamples = 0
                s.done = true
            }
            failed(error)
        }
    }
}
