import Foundation
import Logging
import MediaCore

/// Brings a composition's audio to a loudness target and encodes it to AAC.
///
/// The audio is rendered once (retimed as the composition says), kept in a `SampleSpill` and measured.
/// Then each pass reads it back, applies one gain (the target minus the measured loudness), and a
/// true-peak limiter only when the gain alone would pass the peak limit; encodes it; and measures the
/// encoded audio as a reader decodes it. A pass that lands within `tolerance` of the target with its true
/// peak `peakMargin` under the limit is kept. Otherwise the next corrects the gain by what it missed and
/// lowers the limiter's ceiling by what the codec added to the peak. The sample rate, layout and sample
/// count are the composition's, always. Blocking and thread-confined.
struct LoudnessNormalizer {
    /// How close to the target the encoded audio's integrated loudness must come, LU.
    static let tolerance = 0.05
    /// How far under the limit the encoded audio's true peak is held by this meter, dB: meters differ
    /// by a few hundredths in how they oversample.
    static let peakMargin = 0.1
    static let maxPasses = 5
    /// Frames read back from the spill at a time.
    private static let block = 1 << 16

    let audio: CompositionAudio
    let goal: LoudnessGoal
    let bitRate: Int
    let globalHeader: Bool
    let interrupter: Interrupter
    let progress: (@Sendable (ExportProgress) -> Void)?

    init(audio: CompositionAudio, goal: LoudnessGoal, bitRate: Int, globalHeader: Bool, interrupter: Interrupter,
         progress: (@Sendable (ExportProgress) -> Void)?) {
        self.audio = audio
        self.goal = goal
        self.bitRate = bitRate
        self.globalHeader = globalHeader
        self.interrupter = interrupter
        self.progress = progress
    }

    /// Every encoded packet of the track, in order (time base 1/sampleRate), and the report.
    mutating func run() throws -> ([PacketBox], LoudnessDelivery) {
        guard let target = goal.target, let limit = goal.truePeak else {
            throw ExportError("a loudness target needs its integrated loudness and its true-peak limit")
        }
        let spill = try SampleSpill(channels: audio.channels)
        let meter = try LoudnessMeter(sampleRate: audio.sampleRate, channelCount: audio.channels, layoutName: nil)
        var reported = 0
        while let samples = try audio.next() {
            try meter.add(samples)
            try spill.append(samples)
            if spill.frames - reported >= audio.sampleRate * 30 {
                reported = spill.frames
                progress?(ExportProgress(fraction: Double(spill.frames) / Double(max(audio.totalSamples, 1)), phase: "measuring loudness",
                                         framesPerSecond: nil, eta: nil))
            }
        }
        let before = try meter.finish()
        var report = LoudnessDelivery(mode: .normalized, standard: goal.standard, target: target, truePeakLimit: limit, before: before)
        guard let integrated = before.integrated else {
            // Nothing above the gate: there is no loudness to correct, and no gain to compute.
            let pass = try encode(spill, gain: 0, ceiling: nil, pass: 1)
            report.after = pass.after
            report.gain = 0
            report.passes = 1
            report.note = "the audio is silent to BS.1770 (\(before.note ?? "no block above the -70 LUFS gate")): no gain applied"
            return (pass.packets, report)
        }
        let ceilingLimit = limit - Self.peakMargin
        var gain = target - integrated
        var ceiling: Double? = (before.truePeak ?? -200) + gain > ceilingLimit ? ceilingLimit : nil
        var closest: (miss: Double, over: Double)?
        /// The last pass's gain and measured loudness: with the limiter acting, a dB of gain buys less
        /// than a dB of loudness, and the next gain follows the slope the two last passes show.
        var previous: (gain: Double, measured: Double)?
        for passNumber in 1...Self.maxPasses {
            let pass = try encode(spill, gain: gain, ceiling: ceiling, pass: passNumber)
            let measured = pass.after.integrated ?? target
            let miss = target - measured
            let over = (pass.after.truePeak ?? -200) - ceilingLimit
            Logger(label: "mediafarm.loudness").debug("loudness pass", metadata: [
                "pass": "\(passNumber)", "gain": "\(Self.decibels(gain))", "ceiling": "\(ceiling.map(Self.decibels) ?? "none")",
                "integrated": "\(Self.decibels(measured))", "truePeak": "\(pass.after.truePeak.map(Self.decibels) ?? "none")"])
            if abs(miss) <= Self.tolerance && over <= 0 {
                report.after = pass.after
                report.gain = gain
                report.limiter = pass.limiter
                report.passes = passNumber
                if pass.limiter != nil {
                    report.note = "a gain of \(Self.decibels(gain)) alone would have put the true peak at \(Self.decibels((before.truePeak ?? 0) + gain)) dBTP, "
                        + "over the limit of \(Self.decibels(limit)): the limiter held it"
                }
                return (pass.packets, report)
            }
            closest = (miss, over)
            var slope = 1.0
            if let previous, abs(gain - previous.gain) > 0.01 {
                slope = min(max((measured - previous.measured) / (gain - previous.gain), 0.5), 1.5)
            }
            previous = (gain, measured)
            gain += min(max(miss / slope, -6), 6)
            if over > 0 {
                ceiling = (ceiling ?? ceilingLimit) - over - 0.05
            } else if ceiling == nil, (before.truePeak ?? -200) + gain > ceilingLimit {
                ceiling = ceilingLimit
            }
            if let c = ceiling, c < limit - 12 { break }
        }
        let missed = closest.map { "\(Self.decibels(-$0.miss)) LU from the target" + ($0.over > 0 ? " with the true peak \(Self.decibels($0.over + Self.peakMargin)) dB over the limit" : "") } ?? ""
        throw ExportError("the audio could not be brought to \(Self.decibels(target)) LUFS with its true peak at or under \(Self.decibels(limit)) dBTP "
                          + "in \(Self.maxPasses) passes (the last was \(missed)); the codec or the material fights the limit: "
                          + "raise \"truePeak\", lower \"target\", raise \"bitrate\", or set \"loudness\": {\"measure\": true} to measure only")
    }

    struct Pass {
        var packets: [PacketBox]
        var after: LoudnessFigures
        var limiter: LoudnessDelivery.Limiter?
    }

    /// One encoding of the kept audio at `gain` dB, limited to `ceiling` dBTP when given.
    private func encode(_ spill: SampleSpill, gain: Double, ceiling: Double?, pass: Int) throws -> Pass {
        let encoder: Encoder
        let encodedMeter: EncodedAudioMeter
        do {
            encoder = try Encoder.aac(sampleRate: audio.sampleRate, channelCount: audio.channels, bitRate: bitRate, globalHeader: globalHeader)
            encodedMeter = try EncodedAudioMeter(encoder: encoder)
        } catch {
            throw ExportError("cannot set up the AAC encoder: \(error)")
        }
        let thread = AACEncoderThread(encoder: encoder, sampleRate: audio.sampleRate)
        defer { thread.stop() }
        let linear = Float(pow(10, gain / 20))
        let limiter = ceiling.map { TruePeakLimiter(channels: audio.channels, sampleRate: audio.sampleRate, gain: linear, ceiling: Float(pow(10, $0 / 20))) }
        var packets: [PacketBox] = []
        func collect(wait: Bool) throws {
            while let box = try thread.next(wait: wait) {
                try encodedMeter.add(box.packet)
                packets.append(box)
            }
        }
        var at = 0
        while at < spill.frames {
            var samples = try spill.read(from: at, count: Self.block)
            at += samples.count
            if let limiter {
                samples = limiter.process(samples)
            } else if linear != 1 {
                for c in 0..<samples.channelCount {
                    samples.channels[c].withUnsafeMutableBufferPointer { p in for i in p.indices { p[i] *= linear } }
                }
            }
            try thread.submit(samples)
            try collect(wait: false)
            interrupter.progressed()
            if let reason = interrupter.reason { throw MediaFileError.interrupted(path: "", reason) }
            if at % (Self.block * 16) == 0 {
                progress?(ExportProgress(fraction: Double(at) / Double(max(spill.frames, 1)), phase: "normalizing loudness (pass \(pass))",
                                         framesPerSecond: nil, eta: nil))
            }
        }
        if let limiter { try thread.submit(limiter.finish()) }
        thread.finishInput()
        try collect(wait: true)
        let after = try encodedMeter.finish()
        let limited = limiter.flatMap { l -> LoudnessDelivery.Limiter? in
            guard l.limitedFrames > 0, let ceiling else { return nil }
            return .init(ceiling: Self.rounded(ceiling), maxReduction: Self.rounded(20 * log10(Double(l.lowestGain))),
                         limitedSeconds: Self.rounded(Double(l.limitedFrames) / Double(audio.sampleRate)))
        }
        return Pass(packets: packets, after: after, limiter: limited)
    }

    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
    static func decibels(_ value: Double) -> String { String(format: "%.2f", value) }
}
