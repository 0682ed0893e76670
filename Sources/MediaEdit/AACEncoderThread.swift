import Foundation
import MediaCore

/// Encodes planar float audio to AAC on a thread of its own (a `SampleConsumerThread`), so that
/// encoding overlaps decoding and time-stretching on the caller's thread. Samples go in with `submit`
/// (which waits while too much is queued), packets come out with `next`, in order, timed in samples
/// (time base 1/sampleRate).
final class AACEncoderThread: Sendable {
    private struct State {
        var output: [PacketBox] = []
        var done = false
        var failure: (any Error)?
    }

    private let state: Guarded<State>
    private let input: SampleConsumerThread

    init(encoder: Encoder, sampleRate: Int) {
        // Used on the consumer's thread only.
        nonisolated(unsafe) let feeder = AACFrameFeeder(encoder: encoder, sampleRate: sampleRate)
        let state = Guarded(State())
        self.state = state
        input = SampleConsumerThread(name: "mediafarm-aac", { samples in
            var packets: [PacketBox] = []
            try feeder.add(samples, into: &packets)
            Self.deliver(packets, done: false, to: state)
        }, last: {
            var packets: [PacketBox] = []
            try feeder.finish(into: &packets)
            Self.deliver(packets, done: true, to: state)
        }, failed: { error in
            state.withLock { s in
                s.failure = error
                s.done = true
            }
        })
    }

    deinit { stop() }

    /// Queues samples for encoding; waits while the queue is full.
    func submit(_ samples: AudioSamples) throws {
        try input.submit(samples)
    }

    /// No more samples: the encoder flushes what it holds.
    func finishInput() {
        input.finishInput()
    }

    /// The next packet: immediately when one is ready, else nil if `wait` is false; with `wait`, blocks
    /// until one is ready or the encoder has finished (then nil).
    func next(wait: Bool) throws -> PacketBox? {
        try state.wait(until: { s in !wait || s.failure != nil || !s.output.isEmpty || s.done }) { s in
            if let failure = s.failure { throw failure }
            return s.output.isEmpty ? nil : s.output.removeFirst()
        }
    }

    /// Stops the thread (after a failure elsewhere).
    func stop() {
        input.cancel()
    }

    private static func deliver(_ packets: [PacketBox], done finished: Bool, to state: Guarded<State>) {
        state.withLock { s in
            s.output.append(contentsOf: packets)
            if finished { s.done = true }
        }
    }
}

/// Cuts planar float audio into an AAC encoder's frames, timed in samples from 0 (time base
/// 1/sampleRate), and collects its packets; `finish` encodes the last short frame and flushes the
/// encoder. Thread-confined.
final class AACFrameFeeder {
    let encoder: Encoder
    private let sampleRate: Int
    private var pending = AudioSamples(channelCount: 0)
    private var offset = 0
    private var encoded = 0

    init(encoder: Encoder, sampleRate: Int) {
        self.encoder = encoder
        self.sampleRate = sampleRate
    }

    /// Encodes every whole frame there is with `samples`.
    func add(_ samples: AudioSamples, into packets: inout [PacketBox]) throws {
        guard samples.count > 0 else { return }
        if pending.channelCount == 0 { pending = AudioSamples(channelCount: samples.channelCount) }
        pending.append(samples)
        try encode(final: false, into: &packets)
    }

    /// Encodes what is left and flushes the encoder.
    func finish(into packets: inout [PacketBox]) throws {
        try encode(final: true, into: &packets)
        try encoder.sendEndOfStream()
        try receive(into: &packets)
    }

    private func encode(final: Bool, into packets: inout [PacketBox]) throws {
        let size = max(encoder.frameSize, 1)
        while pending.count - offset >= size || (final && pending.count > offset) {
            let n = min(size, pending.count - offset)
            var frame = try Frame(audio: pending, offset: offset, count: n, sampleRate: sampleRate)
            frame.setPTS(Int64(encoded))
            encoded += n
            offset += n
            while try encoder.send(frame) == .full { try receive(into: &packets) }
            try receive(into: &packets)
        }
        if offset >= 1 << 16 || offset == pending.count {
            pending.removeFirst(offset)
            offset = 0
        }
    }

    private func receive(into packets: inout [PacketBox]) throws {
        while true {
            let box = PacketBox()
            guard try encoder.receive(into: &box.packet) == .packet else { return }
            packets.append(box)
        }
    }
}
