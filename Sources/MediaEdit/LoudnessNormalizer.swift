import Foundation
import Logging
import MediaCore

/// Brings a composition's audio to a loudness target and encodes it to AAC.
///
/// The audio is rendered once (retimed as the composition says), kept in a `SampleSpill` and measured.
/// Then each pass reads it back in parts of about a minute, encoded on every core (`PartEncoder`): one
/// gain (the target minus the measured loudness), a true-peak limiter only when the gain alone would pass
/// the peak limit, AAC, and the encoded part measured as a reader decodes it. A pass whose parts, pooled,
/// land within `tolerance` of the target with the true peak `peakMargin` under the limit is kept.
/// Otherwise the parts whose peaks the codec pushed over are encoded again under a lower ceiling, and a
/// small miss is corrected by encoding parts again at a second gain from the start until the loudness
/// crosses the target (`mix`), a large one by another gain over the whole (along the slope the passes
/// show, inside the bracket they found). After `maxPasses`, the closest pass is kept when it is within
/// twice the tolerance. The sample rate, layout and sample count are the composition's, always.
/// Blocking; its own threads only inside a call.
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
    static let block = 1 << 16

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

    /// One encoding of every part, its figures, how far it missed the target, and which pass it was.
    typealias Pass = (parts: [EncodedPart], after: LoudnessFigures, miss: Double, number: Int)

    /// Every encoded packet of the track, in order (time base 1/sampleRate), and the report.
    func run() throws -> ([PacketBox], LoudnessDelivery) {
        guard let target = goal.target, let limit = goal.truePeak else {
            throw ExportError("a loudness target needs its integrated loudness and its true-peak limit")
        }
        let (spill, meter, before) = try measure()
        var report = LoudnessDelivery(mode: .normalized, standard: goal.standard, target: target, truePeakLimit: limit, before: before)
        guard let integrated = before.integrated else {
            // Nothing above the gate: there is no loudness to correct, and no gain to compute.
            return try silent(spill, before: before, report: report)
        }
        let ceilingLimit = limit - Self.peakMargin
        var gain = target - integrated
        var ceiling: Double? = (before.truePeak ?? -200) + gain > ceilingLimit ? ceilingLimit : nil
        var trials = 0
        if spill.frames >= audio.sampleRate * Self.excerptAbove {
            (gain, ceiling, trials) = try predict(spill, integrated: integrated, truePeak: before.truePeak, target: target, gain: gain,
                                                  ceiling: ceiling, ceilingLimit: ceilingLimit)
        }
        let (best, closest) = try search(spill, meter: meter, before: before, target: target, limit: limit, gain: gain, ceiling: ceiling,
                                         longProgramme: trials > 0)
        // The closest pass, when it is near enough: within twice the tolerance (a tenth of a LU).
        if let best, abs(best.miss) <= 2 * Self.tolerance {
            report.excerptTrials = trials > 0 ? trials : nil
            return (best.parts.flatMap(\.packets), delivered(best, report: report, before: before, limit: limit))
        }
        let missed = closest.map { "\(Self.decibels(-$0.miss)) LU from the target" + ($0.over > 0 ? " with the true peak \(Self.decibels($0.over + Self.peakMargin)) dB over the limit" : "") } ?? ""
        throw ExportError("the audio could not be brought to \(Self.decibels(target)) LUFS with its true peak at or under \(Self.decibels(limit)) dBTP "
                          + "in \(Self.maxPasses) passes (the last was \(missed)); the codec or the material fights the limit: "
                          + "raise \"truePeak\", lower \"target\", raise \"bitrate\", or set \"loudness\": {\"measure\": true} to measure only")
    }

    /// The composition's audio rendered once into a spill, and measured as it goes.
    private func measure() throws -> (SampleSpill, LoudnessMeter, LoudnessFigures) {
        let spill = try SampleSpill(channels: audio.channels)
        let meter = try LoudnessMeter(sampleRate: audio.sampleRate, channelCount: audio.channels, layoutName: nil)
        meter.keepsBlocks = true
        // Measured and kept on a thread of its own while the next is decoded and retimed here.
        // The meter is the keeper's until `finish` returns.
        nonisolated(unsafe) let measuring = meter
        let keeper = SampleConsumerThread(name: "mediafarm-loudness") { samples in
            try measuring.add(samples)
            try spill.append(samples)
        }
        var rendered = 0, reported = 0
        do {
            while let samples = try audio.next() {
                try keeper.submit(samples)
                rendered += samples.count
                if rendered - reported >= audio.sampleRate * 30 {
                    reported = rendered
                    progress?(ExportProgress(fraction: Double(rendered) / Double(max(audio.totalSamples, 1)), phase: "measuring loudness",
                                             framesPerSecond: nil, eta: nil))
                }
            }
            try keeper.finish()
        } catch {
            keeper.cancel()
            throw error
        }
        return (spill, meter, try meter.finish())
    }

    /// Audio silent to BS.1770: encoded at no gain.
    private func silent(_ spill: SampleSpill, before: LoudnessFigures, report: LoudnessDelivery) throws -> ([PacketBox], LoudnessDelivery) {
        var report = report
        let ranges = Self.parts(frames: spill.frames, sampleRate: audio.sampleRate)
        let parts = try encode(ranges, of: spill.frames, read: spill.reader, plans: ranges.map { _ in .uniform(0) },
                               ceilings: ranges.map { _ in nil }, pass: 1, base: nil)
        report.after = try Self.figures(of: parts)
        report.gain = 0
        report.passes = 1
        report.note = "the audio is silent to BS.1770 (\(before.note ?? "no block above the -70 LUFS gate")): no gain applied"
        return (parts.flatMap(\.packets), report)
    }

    /// The passes, from the first (steered when the programme has three parts or more) until one lands
    /// within the tolerance with its peaks under the limit, or `maxPasses`: the best pass whose peaks held,
    /// and how far the last one missed.
    private func search(_ spill: SampleSpill, meter: LoudnessMeter, before: LoudnessFigures, target: Double, limit: Double, gain start: Double,
                        ceiling: Double?, longProgramme: Bool) throws -> (best: Pass?, closest: (miss: Double, over: Double)?) {
        let ceilingLimit = limit - Self.peakMargin
        var gain = start
        let ranges = Self.parts(frames: spill.frames, sampleRate: audio.sampleRate)
        let read = spill.reader
        /// The limiter's ceiling of each part: lowered where the codec pushed that part's peaks over.
        var ceilings = ranges.map { _ in ceiling }
        func wholePass(_ number: Int) throws -> [EncodedPart] {
            try encode(ranges, of: spill.frames, read: read, plans: ranges.map { _ in .uniform(gain) }, ceilings: ceilings, pass: number,
                       base: nil)
        }
        var current = ranges.count >= 3
            ? try steeredPass(ranges, of: spill.frames, read: read, gain: gain, ceilings: &ceilings, ceilingLimit: ceilingLimit,
                              source: meter.blockEnergies, target: target)
            : try wholePass(1)
        /// The uniform gains tried so far that came out under and over the target, and the previous one.
        /// The codec's loss of loudness changes with the level (bands fall under its threshold of hearing,
        /// its mid/side decisions flip), so a dB of gain may buy more or less than a dB of loudness: the
        /// next gain follows the slope of the last two, kept inside the bracket.
        var under: (gain: Double, measured: Double)?, over: (gain: Double, measured: Double)?
        var previous: (gain: Double, measured: Double)?
        var best: Pass?
        var closest: (miss: Double, over: Double)?
        var passNumber = 1
        while true {
            let after = try Self.figures(of: current)
            let measured = after.integrated ?? target
            let miss = target - measured
            let peakOver = (after.truePeak ?? -200) - ceilingLimit
            Logger(label: "mediafarm.loudness").debug("loudness pass", metadata: [
                "pass": "\(passNumber)", "gains": "\(Set(current.map { Self.decibels($0.plan.first) }).sorted())",
                "ceilings": "\(Set(current.map { $0.ceiling.map(Self.decibels) ?? "none" }).sorted())",
                "integrated": "\(Self.decibels(measured))", "truePeak": "\(after.truePeak.map(Self.decibels) ?? "none")"])
            if peakOver <= 0, abs(miss) < abs(best?.miss ?? .infinity) { best = (current, after, miss, passNumber) }
            // A long programme's pass is dear: one the excerpt aimed lands near enough at 0.08 LU.
            if abs(miss) <= (longProgramme ? Self.longTolerance : Self.tolerance) && peakOver <= 0 { break }
            closest = (miss, peakOver)
            guard passNumber < Self.maxPasses else { break }
            passNumber += 1
            if peakOver > 0 {
                let again = Self.lowerCeilings(&ceilings, where: current, pushedOver: ceilingLimit)
                if ceilings.contains(where: { ($0 ?? 0) < limit - 12 }) { break }
                current = try replace(again, in: current, of: spill.frames, read: read, ceilings: ceilings, pass: passNumber)
                continue
            }
            guard Set(current.map(\.plan)).count == 1 else {
                // A mix that missed (rare: the part that switches gains came out unlike both): one gain over
                // the whole again, corrected by the miss.
                let frames = Double(max(spill.frames, 1))
                gain = current.reduce(0) { $0 + $1.plan.mean(over: $1.range) * Double($1.range.count) } / frames + min(max(miss, -6), 6)
                current = try wholePass(passNumber)
                continue
            }
            if miss > 0 { under = (gain, measured) } else { over = (gain, measured) }
            var slope = 1.0
            if let previous, abs(gain - previous.gain) > 0.005 {
                slope = min(max((measured - previous.measured) / (gain - previous.gain), 0.25), 4)
            }
            previous = (gain, measured)
            let step = miss / slope
            var next: Double
            if abs(step) > Self.largestSplit {
                // Far off: one gain over the whole again, along the slope, inside the bracket.
                next = gain + min(max(step, -6), 6)
                if let under, let over, !(min(under.gain, over.gain)...max(under.gain, over.gain)).contains(next) {
                    next = (under.gain + over.gain) / 2
                }
                gain = next
                if ceilings.allSatisfy({ $0 == nil }), (before.truePeak ?? -200) + gain > ceilingLimit { ceilings = ranges.map { _ in ceilingLimit } }
                current = try wholePass(passNumber)
                continue
            }
            // Near: a second gain past the target (at most `largestSplit` away). The parts are encoded at it
            // one after the other, from the start, until the programme crosses the target; the part where it
            // does changes from the one gain to the other inside it (ramped over 0.1 s), where the loudness
            // lands on the target.
            next = gain + min(max(Self.overshoot * step, -Self.largestSplit), Self.largestSplit)
            if let under, let over, abs(under.gain - over.gain) <= Self.largestSplit,
               !(min(under.gain, over.gain)...max(under.gain, over.gain)).contains(next) {
                next = miss > 0 ? over.gain : under.gain
            }
            if abs(next - gain) < 0.01 { next = gain + (miss > 0 ? 0.01 : -0.01) }
            if ceilings.allSatisfy({ $0 == nil }), (before.truePeak ?? -200) + max(gain, next) > ceilingLimit {
                // The second gain needs the limiter: both are limited, from the start again.
                ceilings = ranges.map { _ in ceilingLimit }
                gain = next
                current = try wholePass(passNumber)
                continue
            }
            let mixed = try mix(current, toward: next, target: target, read: read, frames: spill.frames, ceilings: ceilings, pass: passNumber)
            if mixed.crossed == nil { gain = next }
            current = mixed.parts
        }
        return (best, closest)
    }

    /// The codec added to the peaks of some parts (more, the more the limiter works): each of those is to be
    /// encoded again with its ceiling lowered by what the codec added there. A lower ceiling takes little
    /// loudness; what it takes, the mix that follows corrects. The parts to encode again.
    static func lowerCeilings(_ ceilings: inout [Double?], where parts: [EncodedPart], pushedOver ceilingLimit: Double) -> [Int] {
        var again: [Int] = []
        for (k, part) in parts.enumerated() {
            let over = (part.truePeak ?? -200) - ceilingLimit
            guard over > 0 else { continue }
            // Half as much again: the codec adds more, the harder the limiter works.
            ceilings[k] = (part.ceiling ?? ceilingLimit) - 1.5 * over - 0.05
            again.append(k)
        }
        return again
    }

    /// The report of the pass kept: its figures, its gains, its limiter, and notes on both.
    private func delivered(_ best: Pass, report: LoudnessDelivery, before: LoudnessFigures, limit: Double) -> LoudnessDelivery {
        var report = report
        report.after = best.after
        let spans = Self.gainSpans(best.parts.map { ($0.range, $0.plan) }, sampleRate: audio.sampleRate)
        (report.gain, report.gains) = spans.count == 1 ? (spans[0].gain, nil) : (nil, spans)
        report.limiter = Self.limiter(of: best.parts, sampleRate: audio.sampleRate)
        report.passes = best.number
        var notes: [String] = []
        let gains = best.parts.flatMap { [$0.plan.first, $0.plan.second] }
        let changes = best.parts.filter(\.plan.isSplit).map { Double($0.plan.switchFrame) / Double(audio.sampleRate) }
        if let top = gains.max(), let low = gains.min(), top != low {
            let at = changes.prefix(8).map { String(format: "%.1f", $0) }.joined(separator: ", ") + (changes.count > 8 ? ", ..." : "")
            notes.append("the codec's loudness moves unevenly with the level, so the gain is \(Self.decibels(low)) dB in some parts of "
                         + "the programme and \(Self.decibels(top)) dB in others: it changes \(changes.count) time\(changes.count == 1 ? "" : "s"), "
                         + "ramped over 0.1 s, at \(at) s")
        }
        if report.limiter != nil {
            let top = gains.max() ?? 0
            notes.append("a gain of \(Self.decibels(top)) alone would have put the true peak at \(Self.decibels((before.truePeak ?? 0) + top)) dBTP, "
                         + "over the limit of \(Self.decibels(limit)): the limiter held it")
        }
        report.note = notes.isEmpty ? nil : notes.joined(separator: "; ")
        return report
    }

    /// The first pass over a programme of three parts or more, steered: the parts are encoded in order,
    /// `workers` at a time, and before each batch the loudness of the whole is predicted from the parts
    /// encoded so far (measured) and the rest (their source's loudness at the gain, plus what the codec
    /// did at that gain so far). When the prediction misses the target by more than half the tolerance,
    /// the next parts go to a second gain past it (at most `largestSplit` from the first) until the
    /// prediction crosses back, and so on: each change ramped over 0.1 s at the start of a part. Most
    /// programmes then land in this one pass, whatever the codec's loudness does with the level.
    ///
    /// The peaks are steered too: when the codec pushes a part's true peak over the limit, the limiter's
    /// ceiling of the parts still to come is lowered by half as much again as it pushed.
    private func steeredPass(_ ranges: [Range<Int>], of total: Int, read: @escaping @Sendable (Int, Int) throws -> AudioSamples, gain start: Double,
                             ceilings: inout [Double?], ceilingLimit: Double, source: [Double], target: Double) throws -> [EncodedPart] {
        let blockFrames = max(audio.sampleRate / 10, 1)
        let energy = { (db: Double) in pow(10, db / 10) }
        func sourceBlocks(_ k: Int) -> ArraySlice<Double> {
            let from = min(ranges[k].lowerBound / blockFrames, source.count), to = min(ranges[k].upperBound / blockFrames, source.count)
            return source[from..<max(from, to)]
        }
        var parts: [EncodedPart] = []
        /// What the codec adds to the loudness at a gain (dB): the encoded parts at that gain against their source.
        func codecDelta(at gain: Double) -> Double? {
            let at = parts.indices.filter { !parts[$0].plan.isSplit && parts[$0].plan.first == gain }
            guard !at.isEmpty,
                  let encoded = LoudnessMeter.gatedLoudness(of: at.flatMap { parts[$0].blockEnergies }),
                  let original = LoudnessMeter.gatedLoudness(of: at.flatMap { sourceBlocks($0) }) else { return nil }
            return encoded - original - gain
        }
        /// The whole's loudness with the rest of the parts at `gain`.
        func predicted(restAt gain: Double, delta: Double) -> Double? {
            let scale = energy(gain + delta)
            var blocks = parts.flatMap(\.blockEnergies)
            for k in parts.count..<ranges.count { blocks += sourceBlocks(k).map { $0 * scale } }
            return LoudnessMeter.gatedLoudness(of: blocks)
        }
        var gain = start
        var other: Double?
        let tolerance = Self.tolerance / 2
        while parts.count < ranges.count {
            var next = gain
            if !parts.isEmpty, let delta = codecDelta(at: gain) ?? codecDelta(at: other ?? gain),
               let here = predicted(restAt: gain, delta: delta), abs(target - here) > tolerance {
                if other == nil {
                    // The rest must make up the miss: the less of the programme is left, the more gain it takes.
                    let left = Double(ranges.count - parts.count) / Double(ranges.count)
                    let step = (target - here) / max(left, 0.25)
                    other = gain + min(max(Self.overshoot * step, -Self.largestSplit), Self.largestSplit)
                }
                if let alternative = other, alternative != gain {
                    let there = predicted(restAt: alternative, delta: codecDelta(at: alternative) ?? delta) ?? here
                    // To the other gain only when it brings the whole clearly nearer the target: not back and
                    // forth around it.
                    if abs(target - there) + 2 * tolerance < abs(target - here) {
                        next = alternative
                        other = gain
                    }
                }
            }
            let batch = parts.count..<min(parts.count + Self.workers, ranges.count)
            let plans = batch.map { k in
                k == batch.lowerBound && next != gain ? GainPlan(first: gain, second: next, switchFrame: ranges[k].lowerBound) : .uniform(next)
            }
            let encoded = try encode(Array(ranges[batch]), of: total, read: read, plans: plans, ceilings: Array(ceilings[batch]), pass: 1,
                                     base: parts.last, progressBase: parts.count, progressOf: ranges.count)
            parts += encoded
            gain = next
            let over = encoded.compactMap { part in
                part.ceiling.flatMap { c in part.truePeak.map { ($0 - ceilingLimit, c) } }
            }.filter { $0.0 > 0 }
            if let worst = over.max(by: { $0.0 < $1.0 }), batch.upperBound < ranges.count {
                for k in batch.upperBound..<ranges.count {
                    ceilings[k] = min(ceilings[k] ?? ceilingLimit, worst.1 - 1.5 * worst.0 - 0.05)
                }
            }
        }
        return parts
    }

    /// How far past the target the second gain of a mix aims, as a multiple of the miss: the further, the
    /// fewer parts are encoded again, the larger the step between the gains.
    static let overshoot = 3.0
    /// The largest difference between the gains of one programme, dB: a step under half a dB, ramped over
    /// 0.1 s, is not heard as one.
    static let largestSplit = 0.5

    /// The parts of `base` (one gain) encoded again at `gain`, from the first, until the programme's
    /// loudness crosses the target; the part that crosses it is encoded with the change of gain inside it,
    /// where the energy puts the target. All parts at `gain` when it never crosses.
    private func mix(_ base: [EncodedPart], toward gain: Double, target: Double, read: @escaping @Sendable (Int, Int) throws -> AudioSamples,
                     frames: Int, ceilings: [Double?], pass: Int) throws -> (parts: [EncodedPart], crossed: Int?) {
        let energy = { (l: Double) in pow(10, l / 10) }
        var replaced: [EncodedPart] = []
        var last = try Self.figures(of: base).integrated ?? target
        let workers = Self.workers
        while replaced.count < base.count {
            let batch = replaced.count..<min(replaced.count + workers, base.count)
            let encoded = try encode(base[batch].map(\.range), of: frames, read: read, plans: batch.map { _ in .uniform(gain) },
                                     ceilings: Array(ceilings[batch]), pass: pass, base: replaced.last, progressBase: replaced.count,
                                     progressOf: base.count)
            for part in encoded {
                let j = replaced.count
                replaced.append(part)
                let now = try Self.figures(of: replaced + base[(j + 1)...]).integrated ?? target
                guard (target - now) * (target - last) <= 0 else { last = now; continue }
                // Part j crosses: its first `fraction` at `gain`, the rest at the base's, the fraction found
                // along the energy between the two ends (and between the nearest tries that bracket it).
                let range = part.range
                let tolerance = Self.tolerance / 2
                var low = (fraction: 0.0, loudness: last), high = (fraction: 1.0, loudness: now)
                var parts: [EncodedPart] = []
                for _ in 1...4 {
                    let fraction = min(max(low.fraction + (high.fraction - low.fraction)
                                           * (energy(target) - energy(low.loudness)) / (energy(high.loudness) - energy(low.loudness)), 0), 1)
                    let plan = GainPlan(first: gain, second: base[j].plan.first,
                                        switchFrame: range.lowerBound + Int(fraction * Double(range.count)))
                    parts = Array(replaced.dropLast())
                    parts += try encode([range], of: frames, read: read, plans: [plan], ceilings: [ceilings[j]], pass: pass, base: parts.last)
                    if j + 1 < base.count {
                        parts.append(try base[j + 1].measured(measure(base[j + 1], after: parts.last)))
                        parts += base[(j + 2)...]
                    }
                    let split = try Self.figures(of: parts).integrated ?? target
                    if abs(split - target) <= tolerance { break }
                    if (target - split) * (target - low.loudness) > 0 { low = (fraction, split) } else { high = (fraction, split) }
                }
                return (parts, j)
            }
        }
        return (replaced, nil)
    }

    /// What the limiter did over the parts; its ceiling the lowest any part needed.
    private static func limiter(of parts: [EncodedPart], sampleRate: Int) -> LoudnessDelivery.Limiter? {
        let limited = parts.reduce(0) { $0 + $1.limitedFrames }
        guard limited > 0, let ceiling = parts.compactMap(\.ceiling).min() else { return nil }
        let lowest = parts.map(\.lowestGain).min() ?? 1
        return .init(ceiling: rounded(ceiling), maxReduction: rounded(20 * log10(Double(lowest))),
                     limitedSeconds: rounded(Double(limited) / Double(sampleRate)))
    }

    /// Programmes of at least this many seconds are searched on an excerpt first.
    static let excerptAbove = 180
    /// The excerpt: this many windows of `excerptWindow` seconds, one in each of as many equal stretches
    /// of the programme, each at its own place in its stretch (not all at the same place: a programme
    /// with a period, a break every five minutes, would be sampled at one phase of it).
    static let excerptWindows = 24
    static let excerptWindow = 5

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
            // The golden ratio's fractional multiples: spread over the stretch, the same every run.
            let place = (Double(i) * 0.6180339887498949 + 0.5).truncatingRemainder(dividingBy: 1)
            let stretch = Double(spill.frames) / Double(Self.excerptWindows)
            let from = max(0, min(Int((Double(i) + place) * stretch) - window / 2, spill.frames - window))
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
        let whole = excerpt
        let read: @Sendable (Int, Int) -> AudioSamples = { at, count in whole.slice(from: at, count: min(count, whole.count - at)) }
        let ranges = Self.parts(frames: excerpt.count, sampleRate: rate)
        var gain = start, ceiling = ceilingStart
        var previous: (gain: Double, predicted: Double)?
        var trials = 0
        for _ in 1...6 {
            trials += 1
            let parts = try encode(ranges, of: excerpt.count, read: read, plans: ranges.map { _ in .uniform(gain) },
                                   ceilings: ranges.map { _ in ceiling }, pass: 0, base: nil)
            let after = try Self.figures(of: parts)
            guard let encoded = after.integrated else { break }
            // What the limiter and the codec did to the excerpt, added to the whole's loudness at this gain.
            let predicted = integrated + gain + (encoded - (excerptLoudness + gain))
            let miss = target - predicted
            Logger(label: "mediafarm.loudness").debug("loudness excerpt trial", metadata: [
                "gain": "\(Self.decibels(gain))", "ceiling": "\(ceiling.map(Self.decibels) ?? "none")", "predicted": "\(Self.decibels(predicted))",
                "truePeak": "\(after.truePeak.map(Self.decibels) ?? "none")"])
            let peakOver = (after.truePeak ?? -200) - ceilingLimit
            if peakOver > 0, ceiling != nil { ceiling = ceiling! - peakOver - 0.05 }
            if abs(miss) <= Self.tolerance && (peakOver <= 0 || ceiling == nil) { break }
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

    /// Encodes `ranges` of a programme of `total` frames, each at its plan's gains and limited to its
    /// ceiling (dBTP) when it has one, on `workers` threads; then measures each as decoded after the one
    /// before (the first after `base`, the part before it, when there is one).
    private func encode(_ ranges: [Range<Int>], of total: Int, read: @escaping @Sendable (Int, Int) throws -> AudioSamples,
                        plans: [GainPlan], ceilings: [Double?], pass: Int, base: EncodedPart?, progressBase: Int = 0,
                        progressOf: Int? = nil) throws -> [EncodedPart] {
        let parts = try encodeOnly(ranges, of: total, read: read, plans: plans, ceilings: ceilings, pass: pass, progressBase: progressBase,
                                   progressOf: progressOf)
        return try measured(parts, at: Array(parts.indices), base: base)
    }

    private func encodeOnly(_ ranges: [Range<Int>], of total: Int, read: @escaping @Sendable (Int, Int) throws -> AudioSamples,
                            plans: [GainPlan], ceilings: [Double?], pass: Int, progressBase: Int = 0, progressOf: Int? = nil) throws -> [EncodedPart] {
        let setup = partEncoder
        let results = Results<EncodedPart>(count: ranges.count)
        let progress = self.progress
        let of = progressOf ?? ranges.count
        try Self.inParallel(ranges.count) { i in
            results[i] = try setup.encode(ranges[i], of: total, read: read, plan: plans[i], ceiling: ceilings[i])
            if let progress, pass > 0 {
                progress(ExportProgress(fraction: Double(progressBase + results.done) / Double(max(of, 1)),
                                        phase: "normalizing loudness (pass \(pass))", framesPerSecond: nil, eta: nil))
            }
        }
        return results.all
    }

    /// `parts` with those at `indices` measured (again) after the part before each (the first after `base`).
    private func measured(_ parts: [EncodedPart], at indices: [Int], base: EncodedPart?) throws -> [EncodedPart] {
        let setup = partEncoder
        let meters = Results<LoudnessMeter>(count: indices.count)
        try Self.inParallel(indices.count) { n in
            let i = indices[n]
            meters[n] = try setup.measure(parts[i], after: i == 0 ? base : parts[i - 1])
        }
        var result = parts
        for (i, meter) in zip(indices, meters.all) { result[i] = try parts[i].measured(meter) }
        return result
    }

    /// `parts` with those at `indices` encoded again at their plans and at `ceilings`; they and the parts
    /// after them measured again.
    private func replace(_ indices: [Int], in parts: [EncodedPart], of total: Int, read: @escaping @Sendable (Int, Int) throws -> AudioSamples,
                         ceilings: [Double?], pass: Int) throws -> [EncodedPart] {
        let encoded = try encodeOnly(indices.map { parts[$0].range }, of: total, read: read, plans: indices.map { parts[$0].plan },
                                     ceilings: indices.map { ceilings[$0] }, pass: pass)
        var result = parts
        for (n, i) in indices.enumerated() { result[i] = encoded[n] }
        let again = Set(indices.flatMap { [$0, $0 + 1] }).filter { $0 < parts.count }.sorted()
        return try measured(result, at: again, base: nil)
    }

    private var partEncoder: PartEncoder {
        PartEncoder(sampleRate: audio.sampleRate, channels: audio.channels, bitRate: bitRate, globalHeader: globalHeader, interrupter: interrupter)
    }

    /// The packets of `part` measured as decoded after `previous`'s last.
    private func measure(_ part: EncodedPart, after previous: EncodedPart?) throws -> LoudnessMeter {
        try partEncoder.measure(part, after: previous)
    }

    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

    /// The stretches of a programme at one gain, from its parts' plans in order: a part split at its switch
    /// frame is two stretches, and neighbours at the same gain (to a thousandth of a dB) are one.
    static func gainSpans(_ parts: [(range: Range<Int>, plan: GainPlan)], sampleRate: Int) -> [LoudnessDelivery.GainSpan] {
        let rate = Double(max(sampleRate, 1))
        var spans: [LoudnessDelivery.GainSpan] = []
        func add(_ frames: Range<Int>, _ gain: Double) {
            guard !frames.isEmpty else { return }
            let (from, to, gain) = (Self.rounded(Double(frames.lowerBound) / rate), Self.rounded(Double(frames.upperBound) / rate), Self.rounded(gain))
            if let last = spans.indices.last, spans[last].gain == gain {
                spans[last].to = to
            } else {
                spans.append(LoudnessDelivery.GainSpan(from: from, to: to, gain: gain))
            }
        }
        for (range, plan) in parts {
            let at = plan.isSplit ? min(max(plan.switchFrame, range.lowerBound), range.upperBound) : range.upperBound
            add(range.lowerBound..<at, plan.first)
            add(at..<range.upperBound, plan.second)
        }
        return spans
    }
    static func decibels(_ value: Double) -> String { String(format: "%.2f", value) }
}
