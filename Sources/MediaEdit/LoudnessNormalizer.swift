import Foundation
import Logging
import MediaCore

/// Brings a composition's audio to a loudness target and encodes it to AAC.
///
/// The audio is rendered once (retimed as the composition says), kept in a `SampleSpill` and measured.
/// Then each pass reads it back, applies one gain (the target minus the measured loudness), and a
/// true-peak limiter only when the gain alone would pass the peak limit; encodes it; and measures the
/// encoded audio as a reader decodes it. A pass that lands within `tolerance` of the target with its true
/// peak `peakMargin` under the limit is kept. Otherwise the next corrects the gain by what it missed (along
/// the slope the passes show, inside the bracket they found) and lowers the limiter's ceiling by what the
/// codec added to the peak; after `maxPasses`, the closest pass is kept when it is within twice the
/// tolerance. The sample rate, layout and sample count are the composition's, always. Blocking and
/// thread-confined.
struct LoudnessNormalizer {
    /// How close to the target the encoded audio's integrated loudness must come, LU.
    static let tolerance = 0.05
    /// The same for programmes searched on an excerpt first (3 minutes or more), where a pass costs more.
    static let longTolerance = 0.08
    /// How far under the limit the encoded audio's true peak is held by this meter, dB: meters differ
    /// by a few hundredths in how they oversample.
    static let peakMargin = 0.1
    static let maxPasses = 8
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
    func run() throws -> ([PacketBox], LoudnessDelivery) {
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
        var trials = 0
        if spill.frames >= audio.sampleRate * Self.excerptAbove {
            (gain, ceiling, trials) = try predict(spill, integrated: integrated, truePeak: before.truePeak, target: target, gain: gain,
                                                  ceiling: ceiling, ceilingLimit: ceilingLimit)
        }
        /// The gains tried so far that came out under and over the target (a bracket), and the pass that came
        /// closest with its peak under the limit. The codec's loss of loudness changes with the level (bands
        /// fall under its threshold of hearing), so a dB of gain may buy more or less than a dB of loudness:
        /// the next gain follows the slope of the last two passes, kept inside the bracket.
        var under: (gain: Double, measured: Double)?, over: (gain: Double, measured: Double)?
        var best: (pass: Pass, plan: GainPlan, miss: Double, number: Int)?
        var closest: (miss: Double, over: Double)?
        var previous: (gain: Double, measured: Double)?
        var plan = GainPlan(first: gain, second: gain, switchFrame: 0)
        /// Blending: the fraction of the programme at the higher gain, and what it gave.
        var blend: (fraction: Double, measured: Double)?
        for passNumber in 1...Self.maxPasses {
            let pass = try encode(spill, plan: plan, ceiling: ceiling, pass: passNumber)
            let measured = pass.after.integrated ?? target
            let miss = target - measured
            let peakOver = (pass.after.truePeak ?? -200) - ceilingLimit
            Logger(label: "mediafarm.loudness").debug("loudness pass", metadata: [
                "pass": "\(passNumber)", "gain": "\(Self.decibels(plan.first))", "then": "\(Self.decibels(plan.second))",
                "from": "\(plan.switchFrame)", "ceiling": "\(ceiling.map(Self.decibels) ?? "none")",
                "integrated": "\(Self.decibels(measured))", "truePeak": "\(pass.after.truePeak.map(Self.decibels) ?? "none")"])
            if peakOver <= 0, abs(miss) < abs(best?.miss ?? .infinity) { best = (pass, plan, miss, passNumber) }
            // A long programme's pass is dear: one the excerpt aimed lands near enough at 0.08 LU.
            if abs(miss) <= (trials > 0 ? Self.longTolerance : Self.tolerance) && peakOver <= 0 { break }
            closest = (miss, peakOver)
            if peakOver > 0 {
                // The codec added to the peaks (more, the more the limiter works): lower the ceiling by that,
                // and correct the gain for the loudness missed meanwhile. The gains measured so far stay
                // nearly right (a lower ceiling takes little loudness), so the bracket is kept.
                ceiling = (ceiling ?? ceilingLimit) - peakOver - 0.05
                blend = nil
                if let c = ceiling, c < limit - 12 { break }
                if abs(miss) > Self.tolerance, !plan.isSplit {
                    let next = plan.first + min(max(miss, -6), 6)
                    plan = GainPlan(first: next, second: next, switchFrame: 0)
                }
                continue
            }
            if plan.isSplit {
                // The louder gain for the first part, the softer for the rest: move the switch by the energy missed.
                blend = (plan.fraction(of: spill.frames), measured)
            } else if miss > 0 { under = (plan.first, measured) } else { over = (plan.first, measured) }
            if let under, let over, over.gain - under.gain <= 0.1, over.measured - under.measured > 2 * Self.tolerance {
                // Gains a tenth of a dB apart land on either side of the target, too far apart: the codec's
                // loudness jumps between them (its mid/side decisions flip all at once on steady material).
                // The first part of the programme at the one, the rest at the other meets the target; the
                // step between them, under 0.1 dB and ramped over 0.1 s, cannot be heard.
                let energy = { (l: Double) in pow(10, l / 10) }
                var fraction: Double
                if let blend {
                    // Along the energy between the last blend and the end of the bracket on the other side of it.
                    let (f0, e0) = blend.measured < target ? (blend.fraction, energy(blend.measured)) : (0, energy(under.measured))
                    let (f1, e1) = blend.measured < target ? (1, energy(over.measured)) : (blend.fraction, energy(blend.measured))
                    fraction = f0 + (f1 - f0) * (energy(target) - e0) / max(e1 - e0, 1e-12)
                } else {
                    fraction = (energy(target) - energy(under.measured)) / (energy(over.measured) - energy(under.measured))
                }
                fraction = min(max(fraction, 0.01), 0.99)
                plan = GainPlan(first: over.gain, second: under.gain, switchFrame: Int(fraction * Double(spill.frames)))
                continue
            }
            var slope = 1.0
            if let previous, abs(plan.first - previous.gain) > 0.005 {
                slope = min(max((measured - previous.measured) / (plan.first - previous.gain), 0.25), 4)
            }
            previous = (plan.first, measured)
            var next = plan.first + min(max(miss / slope, -6), 6)
            if let under, let over, !(min(under.gain, over.gain)...max(under.gain, over.gain)).contains(next) {
                next = (under.gain + over.gain) / 2
            }
            plan = GainPlan(first: next, second: next, switchFrame: 0)
            if ceiling == nil, (before.truePeak ?? -200) + next > ceilingLimit { ceiling = ceilingLimit }
        }
        // The closest pass, when it is near enough: within twice the tolerance (a tenth of a LU).
        if let best, abs(best.miss) <= 2 * Self.tolerance {
            report.after = best.pass.after
            report.gain = Self.rounded(best.plan.mean(of: spill.frames))
            report.limiter = best.pass.limiter
            report.passes = best.number
            report.excerptTrials = trials > 0 ? trials : nil
            var notes: [String] = []
            if best.plan.isSplit {
                let seconds = Double(best.plan.switchFrame) / Double(audio.sampleRate)
                notes.append("the encoded loudness jumps between gains of \(Self.decibels(best.plan.second)) and \(Self.decibels(best.plan.first)) dB "
                             + "(the codec's decisions flip): the first \(String(format: "%.1f", seconds)) s are at \(Self.decibels(best.plan.first)) dB, "
                             + "the rest at \(Self.decibels(best.plan.second)) dB, ramped over 0.1 s")
            }
            if best.pass.limiter != nil {
                notes.append("a gain of \(Self.decibels(best.plan.first)) alone would have put the true peak at \(Self.decibels((before.truePeak ?? 0) + best.plan.first)) dBTP, "
                             + "over the limit of \(Self.decibels(limit)): the limiter held it")
            }
            report.note = notes.isEmpty ? nil : notes.joined(separator: "; ")
            return (best.pass.packets, report)
        }
        let missed = closest.map { "\(Self.decibels(-$0.miss)) LU from the target" + ($0.over > 0 ? " with the true peak \(Self.decibels($0.over + Self.peakMargin)) dB over the limit" : "") } ?? ""
        throw ExportError("the audio could not be brought to \(Self.decibels(target)) LUFS with its true peak at or under \(Self.decibels(limit)) dBTP "
                          + "in \(Self.maxPasses) passes (the last was \(missed)); the codec or the material fights the limit: "
                          + "raise \"truePeak\", lower \"target\", raise \"bitrate\", or set \"loudness\": {\"measure\": true} to measure only")
    }

    /// Programmes of at least this many seconds are searched on an excerpt first.
    static let excerptAbove = 180
    /// The excerpt: this many windows of `excerptWindow` seconds, evenly spread.
    static let excerptWindows = 12
    static let excerptWindow = 10

    /// The gain and ceiling that bring an excerpt of the programme (12 windows of 10 s, evenly spread,
    /// faded in and out over 10 ms) to the target once encoded, as the whole programme's: what the codec
    /// and the limiter change on the excerpt, they change on the whole, so the whole lands at its own
    /// loudness plus that change. A trial costs a fiftieth of a pass over an hour; most programmes then
    /// need one full pass.
    private func predict(_ spill: SampleSpill, integrated: Double, truePeak: Double?, target: Double, gain start: Double, ceiling ceilingStart: Double?,
                         ceilingLimit: Double) throws -> (gain: Double, ceiling: Double?, trials: Int) {
        let rate = audio.sampleRate
        let window = rate * Self.excerptWindow
        var excerpt = AudioSamples(channelCount: audio.channels)
        let fade = rate / 100
        for i in 0..<Self.excerptWindows {
            let from = max(0, Int((Double(i) + 0.5) * Double(spill.frames) / Double(Self.excerptWindows)) - window / 2)
            var piece = try spill.read(from: from, count: window)
            for c in 0..<piece.channelCount {
                for k in 0..<min(fade, piece.count) {
                    let g = Float(k) / Float(fade)
                    piece.channels[c][k] *= g
                    piece.channels[c][piece.count - 1 - k] *= g
                }
            }
            excerpt.append(piece)
        }
        let raw = try LoudnessMeter(sampleRate: rate, channelCount: audio.channels, layoutName: nil)
        try raw.add(excerpt)
        guard let excerptLoudness = try raw.finish().integrated else { return (start, ceilingStart, 0) }
        let read = { (at: Int) -> AudioSamples in excerpt.slice(from: at, count: min(Self.block, excerpt.count - at)) }
        var gain = start, ceiling = ceilingStart
        var previous: (gain: Double, predicted: Double)?
        var trials = 0
        for _ in 1...6 {
            trials += 1
            let trial = try encode(frames: excerpt.count, read: read, plan: GainPlan(first: gain, second: gain, switchFrame: 0),
                                   ceiling: ceiling, pass: 0, keepPackets: false)
            guard let encoded = trial.after.integrated else { break }
            // What the limiter and the codec did to the excerpt, added to the whole's loudness at this gain.
            let predicted = integrated + gain + (encoded - (excerptLoudness + gain))
            let miss = target - predicted
            Logger(label: "mediafarm.loudness").debug("loudness excerpt trial", metadata: [
                "gain": "\(Self.decibels(gain))", "ceiling": "\(ceiling.map(Self.decibels) ?? "none")", "predicted": "\(Self.decibels(predicted))",
                "truePeak": "\(trial.after.truePeak.map(Self.decibels) ?? "none")"])
            let peakOver = (trial.after.truePeak ?? -200) - ceilingLimit
            if peakOver > 0, ceiling != nil { ceiling = ceiling! - peakOver - 0.05 }
            if abs(miss) <= Self.tolerance / 2 && (peakOver <= 0 || ceiling == nil) { break }
            var slope = 1.0
            if let previous, abs(gain - previous.gain) > 0.005 {
                slope = min(max((predicted - previous.predicted) / (gain - previous.gain), 0.25), 4)
            }
            previous = (gain, predicted)
            gain += min(max(miss / slope, -6), 6)
            if ceiling == nil, let peak = truePeak, peak + gain > ceilingLimit { ceiling = ceilingLimit }
        }
        return (gain, ceiling, trials)
    }

    struct Pass {
        var packets: [PacketBox]
        var after: LoudnessFigures
        var limiter: LoudnessDelivery.Limiter?
    }

    /// The gain of a pass: `first` dB up to `switchFrame`, `second` from there (ramped over 0.1 s); one
    /// gain when they are equal.
    struct GainPlan {
        var first: Double
        var second: Double
        var switchFrame: Int

        var isSplit: Bool { first != second }
        func fraction(of frames: Int) -> Double { Double(switchFrame) / Double(max(frames, 1)) }
        func mean(of frames: Int) -> Double { isSplit ? first * fraction(of: frames) + second * (1 - fraction(of: frames)) : first }
    }

    /// One encoding of the kept audio at `gain` dB, limited to `ceiling` dBTP when given.
    private func encode(_ spill: SampleSpill, gain: Double, ceiling: Double?, pass: Int) throws -> Pass {
        try encode(spill, plan: GainPlan(first: gain, second: gain, switchFrame: 0), ceiling: ceiling, pass: pass)
    }

    /// One encoding of the kept audio at the plan's gains, limited to `ceiling` dBTP when given.
    private func encode(_ spill: SampleSpill, plan: GainPlan, ceiling: Double?, pass: Int) throws -> Pass {
        try encode(frames: spill.frames, read: { try spill.read(from: $0, count: Self.block) }, plan: plan, ceiling: ceiling, pass: pass,
                   keepPackets: true)
    }

    /// One encoding of `frames` frames, read a block at a time from a frame position.
    private func encode(frames: Int, read: (Int) throws -> AudioSamples, plan: GainPlan, ceiling: Double?, pass: Int,
                        keepPackets: Bool) throws -> Pass {
        let gain = plan.first
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
                if keepPackets { packets.append(box) }
            }
        }
        var at = 0
        while at < frames {
            var samples = try read(at)
            guard samples.count > 0 else { break }
            if plan.isSplit { Self.apply(plan, to: &samples, from: at, sampleRate: audio.sampleRate) }
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
            if keepPackets, at % (Self.block * 16) == 0 {
                progress?(ExportProgress(fraction: Double(at) / Double(max(frames, 1)), phase: "normalizing loudness (pass \(pass))",
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

    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
    static func decibels(_ value: Double) -> String { String(format: "%.2f", value) }
}
