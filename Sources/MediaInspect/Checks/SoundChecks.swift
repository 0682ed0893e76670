import Foundation
import MediaCore
import MediaTime
import QualityModel

/// The sound checks of one audio track, fed each decoded frame in order with its first sample's position
/// (samples from the file's start). Samples are read as 32-bit floats whatever the decoder gives.
/// Thread-confined.
final class SoundChecks {
    let track: Int
    let sampleRate: Int
    let channelCount: Int
    private let plan: CheckPlan
    private let resampler: AudioResampler
    private var silence: SilenceRuns?
    private var clipping: [ClipRuns]
    private var channels: ChannelFigures?
    private let meter: LoudnessMeter?
    private var samples = AudioSamples(channelCount: 1)
    /// The position after the last sample seen.
    private(set) var end: Int64 = 0
    /// The position of the first sample seen.
    var first: Int64 { firstSeen ?? 0 }
    private var firstSeen: Int64?

    init(plan: CheckPlan, track: Int, sampleRate: Int, channelCount: Int, layoutName: String?) throws(FFmpegError) {
        self.plan = plan
        self.track = track
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        resampler = try AudioResampler(inputRate: sampleRate, inputChannels: channelCount, outputRate: sampleRate, outputChannels: channelCount)
        silence = plan.silence.map { SilenceRuns($0, sampleRate: sampleRate, channels: channelCount) }
        clipping = plan.clipping.map { c in (0..<channelCount).map { _ in ClipRuns(c, sampleRate: sampleRate) } } ?? []
        channels = plan.channels != nil ? ChannelFigures(channels: channelCount) : nil
        meter = plan.loudness != nil ? try LoudnessMeter(sampleRate: sampleRate, channelCount: channelCount, layoutName: layoutName) : nil
    }

    /// Checks one decoded frame whose first sample is at `position` (samples from the file's start).
    func add(_ frame: borrowing Frame, position: Int64) throws(FFmpegError) {
        guard try convert(frame) else { return }
        try meter?.add(frame)
        measure(position: position)
    }

    /// Checks the samples of a decoded frame at `position` that fall in `0..<limit`: an export's encoded
    /// audio, whose encoder primes it before 0 and pads it past its end (what a file's edit list hides).
    func add(_ frame: borrowing Frame, position: Int64, limit: Int64) throws(FFmpegError) {
        guard try convert(frame) else { return }
        let from = Int(max(0, -position)), to = Int(max(0, min(Int64(samples.count), limit - position)))
        guard from < to else { return }
        if from > 0 || to < samples.count { samples = AudioSamples(channels: samples.channels.map { Array($0[from..<to]) }) }
        try meter?.add(samples)
        measure(position: position + Int64(from))
    }

    /// The frame's samples as 32-bit floats into `samples`; false for a frame without any.
    private func convert(_ frame: borrowing Frame) throws(FFmpegError) -> Bool {
        guard frame.sampleCount > 0 else { return false }
        guard frame.channelCount == channelCount else {
            throw FFmpegError(code: -22, operation: "check", detail: "the audio changed from \(channelCount) to \(frame.channelCount) channels mid-stream")
        }
        samples = AudioSamples(channelCount: channelCount)
        try resampler.convert(frame, appendingTo: &samples)
        return true
    }

    private func measure(position: Int64) {
        if firstSeen == nil { firstSeen = position }
        let count = samples.count
        silence?.add(samples, position: position)
        for c in clipping.indices { clipping[c].add(samples.channels[c], position: position) }
        channels?.add(samples)
        end = position + Int64(count)
    }

    func finish() throws(FFmpegError) -> [CheckResult] {
        var results: [CheckResult] = []
        let rate = Double(sampleRate)
        func run(_ r: SampleRun) -> CheckRun {
            CheckRun(start: Double(r.start) / rate, end: Double(r.end) / rate, duration: Double(r.end - r.start) / rate, track: track,
                     channel: r.channel.map { $0 + 1 }, value: r.value, toEnd: r.toEnd)
        }
        if var silence, let p = plan.silence {
            let runs = silence.finish(end: end).map(run)
            results.append(CheckResult(check: "silence", severity: p.severity, found: !runs.isEmpty, summary: "track \(track): " + runs.said("silent"),
                                       thresholds: ["duration": p.duration, "noise": p.noise, "eachChannel": p.eachChannel ? 1 : 0], runs: runs))
        }
        if let p = plan.clipping {
            var runs: [SampleRun] = []
            for c in clipping.indices { runs += clipping[c].finish(channel: c) }
            let checkRuns = runs.sorted { ($0.start, $0.channel ?? 0) < ($1.start, $1.channel ?? 0) }.map(run)
            let clipped = runs.reduce(0) { $0 + ($1.value ?? 0) }
            let summary = checkRuns.isEmpty ? "track \(track): no \(p.samples) consecutive samples at full scale"
                : "track \(track): " + checkRuns.said("clipped") + ", \(Int(clipped)) samples at full scale"
            results.append(CheckResult(check: "clipping", severity: p.severity, found: !checkRuns.isEmpty, summary: summary,
                                       thresholds: ["level": p.level, "samples": Double(p.samples), "gap": p.gap], runs: checkRuns))
        }
        if let channels, let p = plan.channels {
            let found = channels.findings()
            let summary = found.isEmpty ? "track \(track): no channel silent throughout or an inverted copy of another" : "track \(track): " + found.joined(separator: "; ")
            results.append(CheckResult(check: "channels", severity: p.severity, found: !found.isEmpty, summary: summary,
                                       thresholds: ["silentLevel": ChannelFigures.silentLevel, "inversion": ChannelFigures.inversionLevel],
                                       figures: channels.figures()))
        }
        if let meter, let p = plan.loudness {
            let figures = try meter.finish()
            var problems: [String] = []
            if let integrated = figures.integrated {
                if abs(integrated - p.target) > p.tolerance {
                    problems.append(String(format: "integrated %.1f LUFS is outside %.1f ± %.1f LU", integrated, p.target, p.tolerance))
                }
            } else {
                problems.append("no integrated loudness: the track is silent below the -70 LUFS gate")
            }
            if let peak = figures.truePeak, peak > p.truePeak {
                problems.append(String(format: "true peak %.1f dBTP is above %.1f dBTP", peak, p.truePeak))
            }
            let said = String(format: "integrated %@ LUFS, true peak %@ dBTP, range %.1f LU",
                              figures.integrated.map { String(format: "%.1f", $0) } ?? "-", figures.truePeak.map { String(format: "%.1f", $0) } ?? "-", figures.range)
            var numbers = ["range": figures.range]
            numbers["integrated"] = figures.integrated
            numbers["truePeak"] = figures.truePeak
            numbers["shortTermMax"] = figures.shortTermMax
            results.append(CheckResult(check: "loudness", severity: p.severity, found: !problems.isEmpty,
                                       summary: "track \(track): " + (problems.isEmpty ? said : problems.joined(separator: "; ")),
                                       thresholds: ["target": p.target, "tolerance": p.tolerance, "truePeak": p.truePeak], figures: numbers))
        }
        return results
    }
}

/// A run in samples from the file's start.
struct SampleRun {
    var start: Int64
    var end: Int64
    var channel: Int?
    var value: Double?
    var toEnd = false
}

/// `silencedetect`, sample for sample: the samples are walked interleaved; a sample is silent when
/// `-n < x < n`. All channels together share one count (any loud sample resets it) unless each channel
/// is on its own (`mono=1`). A run starts `d` of silence before the sample that completes it and ends at
/// the first loud sample; one open at the end ends with the last sample.
struct SilenceRuns {
    let noise: Float
    let channels: Int
    let independent: Int
    let notify: Int64
    let durationSamples: Int64
    private var nulls: [Int64]
    private var starts: [Int64?]
    private var runs: [SampleRun] = []

    init(_ settings: CheckPlan.Silence, sampleRate: Int, channels: Int) {
        noise = Float(settings.noise)
        self.channels = channels
        independent = settings.eachChannel ? channels : 1
        // av_rescale(d µs, rate, 1e6), rounded to nearest.
        let micro = Int64((settings.duration * 1_000_000).rounded())
        // In Double: 48 hours at an absurd declared rate must not trap (exact for any real rate and duration).
        durationSamples = Int64(min((Double(micro) * Double(sampleRate) / 1_000_000).rounded(), 1e15))
        notify = durationSamples * Int64(settings.eachChannel ? 1 : channels)
        nulls = Array(repeating: 0, count: independent)
        starts = Array(repeating: nil, count: independent)
    }

    mutating func add(_ samples: AudioSamples, position: Int64) {
        let c = channels, n = noise
        let count = samples.count
        samples.channels.withUnsafeBufferPointer { planes in
            for i in 0..<count {
                for ch in 0..<c {
                    let x = planes[ch][i]
                    let k = independent == 1 ? 0 : ch
                    if x < n && x > -n {
                        if starts[k] == nil {
                            nulls[k] += 1
                            if nulls[k] >= notify {
                                // current_sample / C + 1 - d: the frame after this one, less the run's length.
                                starts[k] = position + Int64(i) + 1 - durationSamples
                            }
                        }
                    } else {
                        if let s = starts[k] {
                            runs.append(SampleRun(start: s, end: position + Int64(i), channel: independent == 1 ? nil : k))
                        }
                        nulls[k] = 0
                        starts[k] = nil
                    }
                }
            }
        }
    }

    mutating func finish(end: Int64) -> [SampleRun] {
        for k in 0..<independent {
            if let s = starts[k] { runs.append(SampleRun(start: s, end: end, channel: independent == 1 ? nil : k, toEnd: true)) }
            starts[k] = nil
        }
        return runs.sorted { ($0.start, $0.channel ?? 0) < ($1.start, $1.channel ?? 0) }
    }
}

/// Clipping in one channel: a clip is at least `samples` consecutive samples whose magnitude reaches
/// `level`; clips less than `gap` apart make one run, whose value is its samples at full scale.
struct ClipRuns {
    let level: Float
    let minimum: Int
    let gapSamples: Int64
    private var streak = 0
    private var streakStart: Int64 = 0
    private var open: SampleRun?
    private var runs: [SampleRun] = []

    init(_ settings: CheckPlan.Clipping, sampleRate: Int) {
        level = Float(settings.level)
        minimum = settings.samples
        gapSamples = Int64((settings.gap * Double(sampleRate)).rounded())
    }

    mutating func add(_ channel: [Float], position: Int64) {
        channel.withUnsafeBufferPointer { x in
            for i in 0..<x.count {
                if abs(x[i]) >= level {
                    if streak == 0 { streakStart = position + Int64(i) }
                    streak += 1
                } else if streak > 0 {
                    clip(end: position + Int64(i))
                }
            }
        }
    }

    private mutating func clip(end: Int64) {
        defer { streak = 0 }
        guard streak >= minimum else { return }
        if var run = open, streakStart - run.end <= gapSamples {
            run.end = end
            run.value = (run.value ?? 0) + Double(streak)
            open = run
        } else {
            if let run = open { runs.append(run) }
            open = SampleRun(start: streakStart, end: end, value: Double(streak))
        }
    }

    mutating func finish(channel: Int) -> [SampleRun] {
        if streak > 0 { clip(end: streakStart + Int64(streak)) }
        if let run = open { runs.append(run); open = nil }
        return runs.map { var r = $0; r.channel = channel; return r }
    }
}

/// Whole-track figures of each channel: its peak (a channel whose every sample is below one 16-bit step is
/// digitally silent) and, for each pair, how much of their energy is left when they are added (an
/// inverted copy leaves nothing).
struct ChannelFigures {
    /// Below one step of 16-bit audio.
    static let silentLevel = 1.0 / 32768
    /// The pair's sum keeps at most this share of their energy (-40 dB): one is the other inverted.
    static let inversionLevel = 1e-4
    let channels: Int
    private var peaks: [Float]
    private var energy: [Double]
    /// Energy of a + b for each pair (a < b), in pair order.
    private var sums: [Double]

    init(channels: Int) {
        self.channels = channels
        peaks = Array(repeating: 0, count: channels)
        energy = Array(repeating: 0, count: channels)
        sums = Array(repeating: 0, count: channels * (channels - 1) / 2)
    }

    mutating func add(_ samples: AudioSamples) {
        for c in 0..<channels {
            var peak = peaks[c], e = 0.0
            for x in samples.channels[c] { peak = max(peak, abs(x)); e += Double(x) * Double(x) }
            peaks[c] = peak
            energy[c] += e
        }
        var k = 0
        for a in 0..<channels {
            for b in (a + 1)..<max(a + 1, channels) {
                var e = 0.0
                let xa = samples.channels[a], xb = samples.channels[b]
                for i in 0..<min(xa.count, xb.count) { let s = Double(xa[i]) + Double(xb[i]); e += s * s }
                sums[k] += e
                k += 1
            }
        }
    }

    func findings() -> [String] {
        var said: [String] = []
        for c in 0..<channels where Double(peaks[c]) < Self.silentLevel {
            said.append("channel \(c + 1) is digitally silent throughout")
        }
        var k = 0
        for a in 0..<channels {
            for b in (a + 1)..<max(a + 1, channels) {
                defer { k += 1 }
                let both = energy[a] + energy[b]
                guard Double(peaks[a]) >= Self.silentLevel, Double(peaks[b]) >= Self.silentLevel, both > 0 else { continue }
                if sums[k] / both <= Self.inversionLevel {
                    said.append(String(format: "channels %d and %d are phase-inverted copies (their sum keeps %.1f dB of their energy)",
                                       a + 1, b + 1, 10 * log10(max(sums[k] / both, 1e-30))))
                }
            }
        }
        return said
    }

    func figures() -> [String: Double] {
        var f: [String: Double] = [:]
        for c in 0..<channels { f["peak\(c + 1)"] = peaks[c] > 0 ? 20 * log10(Double(peaks[c])) : -.infinity }
        return f.mapValues { $0.isFinite ? $0 : -200 }
    }
}
