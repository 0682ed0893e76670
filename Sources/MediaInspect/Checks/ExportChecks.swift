import Foundation
import MediaCore
import MediaTime
import QualityModel

/// An export's checks run as it encodes (an `EncodingWatch`), so an export is checked in the pass that makes
/// it, not in a second read of the written file: the picture checks see each picture as it is handed to the
/// encoder (what the encoder then lost is what fidelity measures); the sound checks see each audio track as
/// written, its encoder's packets decoded at once (cheap beside video), the priming before 0 and the padding
/// past the end left out as the file's edit list leaves them out. They run on a thread of their own beside the
/// encoders, at most a few pictures behind. `CheckReport.check(path:plan:watched:)` says what they found,
/// with the spec and the length of the written file.
public final class ExportChecks: EncodingWatch {
    private let worker: Worker

    public init(plan: CheckPlan) { worker = Worker(plan: plan) }

    deinit { worker.stop() }

    /// Whether an export began feeding the checks (a passthrough export or a join does not: its file is read back).
    public var began: Bool { worker.queue.withLock { $0.began } }

    public func begin(frameDuration: MediaTime, audio: [WatchedAudio]) throws {
        let fd = frameDuration.reduced
        let timeBase = Rational(Int32(clamping: fd.value), fd.timescale)
        worker.pictures = worker.plan.needsVideo
            ? PictureChecks(plan: worker.plan, timeBase: timeBase, origin: 0, frameRate: Rational(fd.timescale, Int32(clamping: fd.value))) : nil
        if worker.plan.needsAudio {
            for a in audio {
                worker.sounds[a.stream] = Worker.Sound(
                    checks: try SoundChecks(plan: worker.plan, track: a.stream + 1, sampleRate: a.sampleRate, channelCount: a.channels, layoutName: nil),
                    readBack: try EncodedReadBack(a.encoder), samples: a.samples)
                worker.sounds[a.stream]?.next = -Int64(worker.sounds[a.stream]?.readBack.leadingSamples ?? 0)
            }
        }
        worker.start()
    }

    public func picture(_ frame: borrowing Frame, index: Int64) throws {
        guard worker.pictures != nil else { return }
        let box = Worker.FrameBox()
        try box.frame.reference(frame)
        box.frame.setAsExported(duration: 1)  // one frame long, in frames
        try worker.put(.picture(box, index))
    }

    public func audioPacket(stream: Int, _ packet: borrowing Packet) throws {
        guard worker.sounds[stream] != nil else { return }
        let box = PacketBox()
        box.packet.reference(packet)
        try worker.put(.packet(stream, box))
    }

    public func abandon() { worker.stop() }

    /// Waits until everything handed over is checked: the picture checks and each audio stream's sound checks.
    func finish() throws -> (pictures: PictureChecks?, sounds: [Int: SoundChecks]) {
        try worker.finish()
        return (worker.pictures, worker.sounds.mapValues(\.checks))
    }

    /// The checks' state and their thread. `pictures` and `sounds` are set by `begin` before the thread starts,
    /// then touched by the thread alone until `finish` has seen it end.
    private final class Worker: @unchecked Sendable {  // unchecked: the checks' state is handed from `begin` to the thread to `finish`, one at a time, through `queue`'s lock
        final class FrameBox { var frame = Frame() }
        enum Item { case picture(FrameBox, Int64), packet(Int, PacketBox) }
        struct Queue {
            var items: [Item] = []
            var pictures = 0
            var began = false, finished = false, stopped = false, done = false
            var failure: (any Error)?
        }
        final class Sound {
            let checks: SoundChecks
            let readBack: EncodedReadBack
            let samples: Int64
            /// Where the next decoded samples go when they are not timed: after the last, from the priming's start.
            var next: Int64 = 0
            init(checks: SoundChecks, readBack: EncodedReadBack, samples: Int64) {
                (self.checks, self.readBack, self.samples) = (checks, readBack, samples)
            }
        }

        let plan: CheckPlan
        let queue = Guarded(Queue())
        var pictures: PictureChecks?
        var sounds: [Int: Sound] = [:]
        /// At most this many pictures wait (each a reference to a picture the encoder holds anyway, or about to).
        private let maxPictures = 8

        init(plan: CheckPlan) { self.plan = plan }

        func start() {
            queue.withLock { $0.began = true }
            let thread = Thread { [self] in run() }
            thread.name = "mediafarm-checks"
            thread.start()
        }

        func put(_ item: Item) throws {
            let isPicture = if case .picture = item { true } else { false }
            let maxPictures = self.maxPictures
            try queue.wait(until: { !isPicture || $0.pictures < maxPictures || $0.done }) { q in
                if let failure = q.failure { throw failure }
                q.items.append(item)
                if isPicture { q.pictures += 1 }
            }
        }

        func finish() throws {
            guard queue.withLock({ $0.began }) else { return }
            queue.withLock { $0.finished = true }
            if let failure = queue.wait(until: { $0.done }, then: { $0.failure }) { throw failure }
        }

        /// The export failed or was let go: the thread ends without checking what is left.
        func stop() {
            queue.withLock { q in
                q.stopped = true
                q.items.removeAll()
            }
        }

        private func run() {
            do {
                while let item = next() {
                    switch item {
                    case let .picture(box, index):
                        try pictures?.add(box.frame, pts: index)
                    case let .packet(stream, box):
                        if let sound = sounds[stream] { try sound.readBack.decode(box.packet) { try add($0, to: sound) } }
                    }
                }
                if !queue.withLock({ $0.stopped }) {
                    for sound in sounds.values { try sound.readBack.finish { try add($0, to: sound) } }
                }
                queue.withLock { $0.done = true }
            } catch {
                queue.withLock { q in
                    q.failure = error
                    q.items.removeAll()
                    q.done = true
                }
            }
        }

        /// The next item, or nil once no more will come.
        private func next() -> Item? {
            queue.wait(until: { !$0.items.isEmpty || $0.finished || $0.stopped }) { q in
                guard !q.stopped, !q.items.isEmpty else { return nil }
                let item = q.items.removeFirst()
                if case .picture = item { q.pictures -= 1 }
                return item
            }
        }

        /// Decoded samples, timed from the encoder's first (its priming before 0).
        private func add(_ frame: borrowing Frame, to sound: Sound) throws(FFmpegError) {
            let position = frame.pts ?? sound.next
            sound.next = position + Int64(frame.sampleCount)
            try sound.checks.add(frame, position: position, limit: sound.samples)
        }
    }
}
