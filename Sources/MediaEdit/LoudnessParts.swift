import Foundation
import MediaCore
import Synchronization

/// The parts a normalized programme is encoded in: how each is cut, encoded at its gains (on a worker
/// thread, with nothing of the normalizer's) and measured as a reader decodes it, and the threads they
/// run on. The search over gains that uses them is in LoudnessNormalizer.swift.
extension LoudnessNormalizer {
    /// The gain of a part: `first` dB up to `switchFrame`, `second` from there (ramped over 0.1 s); one
    /// gain when they are equal.
    struct GainPlan: Hashable, Sendable {
        var first: Double
        var second: Double
        var switchFrame: Int

        static func uniform(_ gain: Double) -> GainPlan { GainPlan(first: gain, second: gain, switchFrame: 0) }
        var isSplit: Bool { first != second }
        /// The mean gain over `range`, dB.
        func mean(over range: Range<Int>) -> Double {
            guard isSplit, !range.isEmpty else { return first }
            let at = min(max(switchFrame, range.lowerBound), range.upperBound)
            return (first * Double(at - range.lowerBound) + second * Double(range.upperBound - at)) / Double(range.count)
        }
    }

    /// A stretch of the programme encoded on its own: its packets, timed from the programme's start,
    /// what the limiter did there, and what the decoded packets measure (decoded after the part before,
    /// as a reader decodes them). Parts encode and measure on several threads; each is then read only.
    final class EncodedPart: @unchecked Sendable {  // unchecked: written by its one encoding thread, then only read
        let range: Range<Int>
        let plan: GainPlan
        let ceiling: Double?
        let packets: [PacketBox]
        let limitedFrames: Int
        let lowestGain: Float
        /// What the decoded packets measure, and their true peak (dBTP); nil until measured.
        let meter: LoudnessMeter?
        let truePeak: Double?

        init(range: Range<Int>, plan: GainPlan, ceiling: Double?, packets: [PacketBox], limitedFrames: Int, lowestGain: Float,
             meter: LoudnessMeter? = nil, truePeak: Double? = nil) {
            self.range = range
            self.plan = plan
            self.ceiling = ceiling
            self.packets = packets
            self.limitedFrames = limitedFrames
            self.lowestGain = lowestGain
            self.meter = meter
            self.truePeak = truePeak
        }

        /// The same packets, measured after another part.
        func measured(_ meter: LoudnessMeter) throws(FFmpegError) -> EncodedPart {
            EncodedPart(range: range, plan: plan, ceiling: ceiling, packets: packets, limitedFrames: limitedFrames, lowestGain: lowestGain,
                        meter: meter, truePeak: try LoudnessMeter.figures(of: [meter]).truePeak)
        }

        /// The 100 ms block energies of the measured part.
        var blockEnergies: [Double] { meter!.blockEnergies }
    }

    /// The figures of measured parts taken as one programme, one after the other.
    static func figures(of parts: [EncodedPart]) throws(FFmpegError) -> LoudnessFigures {
        try LoudnessMeter.figures(of: parts.map { $0.meter! })
    }

    /// Parts are about this long (a whole number of AAC frames): a long programme encodes on every core,
    /// and a second gain re-encodes only the parts it must.
    static let partSeconds = 60
    /// Frames encoded before a part's start and dropped, so that the encoder's and the limiter's state
    /// there is near what it would be in one encoding of the whole: the limiter's release settles within
    /// a tenth of this, FFmpeg's AAC rate control and psychoacoustic model take seconds (with 16 frames,
    /// the codec's noise on pure tones just after a join was 200 times a continuous encoding's; with
    /// 256, 5.5 s at 48 kHz, some 60 times, and 9% more to encode). A whole number of AAC frames.
    static let preroll = 256 * 1024
    /// The threads a pass runs on.
    static var workers: Int { min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 8) }

    /// The parts of a programme of `frames` frames: every boundary on the AAC frame grid, the last part
    /// taking the rest; one part under one and a half lengths.
    static func parts(frames: Int, sampleRate: Int) -> [Range<Int>] {
        let length = max(1, (partSeconds * sampleRate + 512) / 1024) * 1024
        let count = max(1, Int((Double(frames) / Double(length)).rounded()))
        return (0..<count).map { k in k * length ..< (k == count - 1 ? max(frames, k * length) : (k + 1) * length) }
    }

    /// Runs `body(0..<count)` on up to `workers` threads (the caller's one of them); the first error
    /// stops the rest and is thrown.
    static func inParallel(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
        let state = Mutex<(next: Int, failure: (any Error)?)>((0, nil))
        DispatchQueue.concurrentPerform(iterations: min(workers, count)) { _ in
            while true {
                let i: Int? = state.withLock { s in
                    guard s.failure == nil, s.next < count else { return nil }
                    s.next += 1
                    return s.next - 1
                }
                guard let i else { return }
                do { try body(i) } catch { state.withLock { if $0.failure == nil { $0.failure = error } } }
            }
        }
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    /// Results filled in by index from several threads.
    final class Results<T>: Sendable {
        private let values: Guarded<(values: [T?], done: Int)>

        init(count: Int) { values = Guarded((Array(repeating: nil, count: count), 0)) }

        var done: Int { values.withLock { $0.done } }

        subscript(i: Int) -> T? {
            get { values.withLock { $0.values[i] } }
            set { values.withLock { $0.values[i] = newValue; $0.done += 1 } }
        }

        var all: [T] { values.withLock { $0.values.map { $0! } } }
    }

    /// How a part is encoded and measured: everything a worker thread needs, and nothing of the
    /// normalizer's.
    struct PartEncoder: Sendable {
        let sampleRate: Int
        let channels: Int
        let bitRate: Int
        let globalHeader: Bool
        let interrupter: Interrupter

        private func makeEncoder() throws -> Encoder {
            do {
                // Without noise substitution: its noise is each decoder's own random numbers, so the true peak
                // would be the decoder's, and a part decoded from its start would not be the whole's.
                return try Encoder.aac(sampleRate: sampleRate, channelCount: channels, bitRate: bitRate, globalHeader: globalHeader,
                                       noiseSubstitution: false)
            } catch {
                throw ExportError("cannot set up the AAC encoder: \(error)")
            }
        }

        /// Encodes frames `range` of `total`: from `preroll` frames before it (the gain, the limiter and
        /// the encoder all run over them) to two AAC frames after it (the last kept packet's window reaches
        /// one frame past the end, and the limiter's tail one more), keeping the packets that decode to
        /// `range` (the first part also its priming packet, the last part everything to the end).
        func encode(_ range: Range<Int>, of total: Int, read: (Int, Int) throws -> AudioSamples, plan: GainPlan,
                    ceiling: Double?) throws -> EncodedPart {
            let encoder = try makeEncoder()
            let frameSize = max(encoder.frameSize, 1)
            let start = max(0, range.lowerBound - LoudnessNormalizer.preroll)
            let isLast = range.upperBound >= total
            let end = isLast ? total : min(total, range.upperBound + 2 * frameSize)
            let feeder = AACFrameFeeder(encoder: encoder, sampleRate: sampleRate)
            let linear = Float(pow(10, plan.first / 20))
            let limiter = ceiling.map { TruePeakLimiter(channels: channels, sampleRate: sampleRate, gain: linear, ceiling: Float(pow(10, $0 / 20))) }
            limiter?.counted = (range.lowerBound - start)..<(range.upperBound - start)
            var packets: [PacketBox] = []
            var at = start
            while at < end {
                var samples = try read(at, min(LoudnessNormalizer.block, end - at))
                guard samples.count > 0 else { break }
                if plan.isSplit { LoudnessNormalizer.apply(plan, to: &samples, from: at, sampleRate: sampleRate) }
                at += samples.count
                if let limiter {
                    samples = limiter.process(samples)
                } else if linear != 1 {
                    for c in 0..<samples.channelCount {
                        samples.channels[c].withUnsafeMutableBufferPointer { p in for i in p.indices { p[i] *= linear } }
                    }
                }
                try feeder.add(samples, into: &packets)
                interrupter.progressed()
                if let reason = interrupter.reason { throw MediaFileError.interrupted(path: "", reason) }
            }
            if let limiter { try feeder.add(limiter.finish(), into: &packets) }
            try feeder.finish(into: &packets)
            // Packets are timed from `start`; a packet at pts p decodes to frames p ..< p + frameSize.
            let from = range.lowerBound == 0 ? Int.min : range.lowerBound
            let to = isLast ? Int.max : range.upperBound
            let kept = packets.filter { box in
                let pts = Int(box.packet.pts ?? 0) + start
                return pts >= from && pts < to
            }
            for box in kept {
                let pts = (box.packet.pts ?? 0) + Int64(start)
                box.packet.retime(pts: pts, dts: (box.packet.dts ?? 0) + Int64(start), duration: box.packet.duration,
                                  streamIndex: box.packet.streamIndex)
            }
            return EncodedPart(range: range, plan: plan, ceiling: ceiling, packets: kept, limitedFrames: limiter?.limitedFrames ?? 0,
                               lowestGain: limiter?.lowestGain ?? 1)
        }

        /// The part's packets decoded after the last of `previous` (the decoder overlaps the two), measured.
        func measure(_ part: EncodedPart, after previous: EncodedPart?) throws -> LoudnessMeter {
            do {
                let meter = try EncodedAudioMeter(encoder: makeEncoder(), after: previous?.packets.last)
                meter.meter.keepsBlocks = true
                for box in part.packets { try meter.add(box.packet) }
                _ = try meter.finish()
                return meter.meter
            } catch let error as ExportError {
                throw error
            } catch {
                throw ExportError("measuring the encoded audio: \(error)")
            }
        }
    }

    /// Multiplies the frames from `start` by the second gain over the first (the first is applied with
    /// the limiter, or after), with a linear ramp over the 0.1 s from the switch.
    static func apply(_ plan: GainPlan, to samples: inout AudioSamples, from start: Int, sampleRate: Int) {
        let ramp = max(sampleRate / 10, 1)
        let ratio = Float(pow(10, (plan.second - plan.first) / 20))
        for i in 0..<samples.count {
            let frame = start + i
            guard frame >= plan.switchFrame else { continue }
            let done = min(Float(frame - plan.switchFrame) / Float(ramp), 1)
            let factor = 1 + (ratio - 1) * done
            for c in 0..<samples.channelCount { samples.channels[c][i] *= factor }
        }
    }
}
