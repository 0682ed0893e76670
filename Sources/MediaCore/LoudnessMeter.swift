internal import CEbur128
internal import CFFmpeg
import Foundation

/// What a loudness measurement found (ITU-R BS.1770-4, EBU R128), as libebur128 computes it.
/// Loudness in LUFS, ranges in LU, peaks in dBTP/dBFS. A figure is nil where the programme gives none:
/// integrated loudness of audio that is all below the absolute gate (silence), a peak of digital silence.
public struct LoudnessFigures: Sendable, Codable, Equatable {
    /// Integrated (programme) loudness, gated; nil when every block is below the -70 LUFS absolute gate.
    public var integrated: Double?
    /// Loudness range (EBU Tech 3342), from the short-term loudness distribution; 0 when too short.
    public var range: Double
    /// The highest true peak of any channel (4x oversampled below 96 kHz), dBTP.
    public var truePeak: Double?
    /// The highest sample peak of any channel, dBFS.
    public var samplePeak: Double?
    /// The loudest short-term (3 s window) loudness, measured every 100 ms.
    public var shortTermMax: Double?
    /// The loudest momentary (400 ms window) loudness, measured every 100 ms.
    public var momentaryMax: Double?
    /// The relative gate the integrated loudness used (integrated - 10 LU); nil with it.
    public var relativeGate: Double?
    /// The audio measured: seconds, its rate and its channels with the weight BS.1770 gives each
    /// (1 for L, R, C; 1.41 for the surrounds; 0 for LFE).
    public var seconds: Double
    public var sampleRate: Int
    public var channels: [Channel]
    /// Why `integrated` is nil, when it is.
    public var note: String?

    public struct Channel: Sendable, Codable, Equatable {
        public var name: String
        public var weight: Double

        public init(name: String, weight: Double) {
            self.name = name
            self.weight = weight
        }
    }

    /// The gating BS.1770-4 prescribes, as every report states it.
    public static let gating = "BS.1770-4: 400 ms blocks overlapping by 75%, absolute gate -70 LUFS, relative gate -10 LU; "
        + "loudness range from 3 s windows every 100 ms, gated at -70 LUFS and -20 LU, 10th to 95th percentile"
}

/// Measures the loudness of one stream of audio frames (one libebur128 state). Feed it decoded frames of
/// any sample format; it converts them to interleaved float itself, keeping the stream's layout.
/// Thread-confined.
public final class LoudnessMeter {
    private var state: UnsafeMutablePointer<ebur128_state>?
    private var resampler: OpaquePointer?
    private let sampleRate: Int
    private let channelCount: Int
    private var layout = AVChannelLayout()
    private var inputFormat: Int32 = -1
    private var inputLayout = AVChannelLayout()
    /// Interleaved float samples not yet given to libebur128 (less than one 100 ms block).
    private var pending: [Float] = []
    private let block: Int
    private var measuredFrames = 0
    private var shortTermMax = -Double.infinity
    private var momentaryMax = -Double.infinity
    /// The mean weighted energy of each of the last 30 whole 100 ms blocks (a ring), from which the 3 s
    /// short-term and 400 ms momentary loudness are made: libebur128 sums every sample of the window at
    /// each reading, 34 times the work of reading each block once (it was 90% of a measurement's time).
    private var energies = [Double](repeating: 0, count: 30)
    /// Every 100 ms block's mean weighted energy, in order, when `keepsBlocks` (else empty): what a
    /// caller needs to work out the loudness of the audio at another gain, or of a part of it
    /// (`gatedLoudness(of:)`).
    public private(set) var blockEnergies: [Double] = []
    public var keepsBlocks = false
    private let truePeak: TruePeakMeter
    private var blocks = 0
    /// The 400 ms gating blocks above the absolute gate: their energies' sum and their number, from which
    /// the relative gate of several meters taken as one programme is made.
    private var gatedEnergy = 0.0
    private var gatedBlocks = 0
    public let channels: [LoudnessFigures.Channel]

    /// `layoutName` is FFmpeg's name of the stream's channel layout ("stereo", "5.1(side)"), or nil to take
    /// the default layout of `channelCount` channels.
    public init(sampleRate: Int, channelCount: Int, layoutName: String?) throws(FFmpegError) {
        guard sampleRate > 0, (1...64).contains(channelCount) else {
            throw FFmpegError(code: -22, operation: "loudness", detail: "\(channelCount) channels at \(sampleRate) Hz cannot be measured")
        }
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        block = sampleRate / 10
        truePeak = TruePeakMeter(channelCount: channelCount, sampleRate: sampleRate)
        if let layoutName, av_channel_layout_from_string(&layout, layoutName) == 0, Int(layout.nb_channels) == channelCount {
        } else {
            av_channel_layout_uninit(&layout)
            av_channel_layout_default(&layout, Int32(channelCount))
        }
        // The true peak is TruePeakMeter's (libebur128's filter, run faster); the sample peak libebur128's.
        let mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue | EBUR128_MODE_SAMPLE_PEAK.rawValue)
        guard let made = ebur128_init(UInt32(channelCount), UInt(sampleRate), mode) else {
            throw FFmpegError(code: -12, operation: "ebur128_init", detail: "libebur128 could not be set up for \(channelCount) channels at \(sampleRate) Hz")
        }
        state = made
        var names: [LoudnessFigures.Channel] = []
        for i in 0..<channelCount {
            let channel = av_channel_layout_channel_from_index(&layout, UInt32(i))
            let (role, weight) = Self.role(of: channel, channelCount: channelCount)
            _ = ebur128_set_channel(made, UInt32(i), Int32(role.rawValue))
            var buffer = [CChar](repeating: 0, count: 32)
            av_channel_name(&buffer, buffer.count, channel)
            names.append(.init(name: String(cString: buffer), weight: weight))
        }
        channels = names
        pending.reserveCapacity((block + 4096) * channelCount)
    }

    deinit {
        ebur128_destroy(&state)
        swr_free(&resampler)
        av_channel_layout_uninit(&layout)
        av_channel_layout_uninit(&inputLayout)
    }

    /// BS.1770-4's weighting of a channel: front left, right and centre 1.0; the surrounds 1.41; LFE not
    /// counted; any other channel 1.0 (as libebur128 counts its M±SC, M±060... positions).
    static func role(of channel: AVChannel, channelCount: Int) -> (channel, Double) {
        switch channel {
        case AV_CHAN_FRONT_LEFT: (EBUR128_LEFT, 1)
        case AV_CHAN_FRONT_RIGHT: (EBUR128_RIGHT, 1)
        case AV_CHAN_FRONT_CENTER: (channelCount == 1 ? EBUR128_LEFT : EBUR128_CENTER, 1)
        case AV_CHAN_LOW_FREQUENCY, AV_CHAN_LOW_FREQUENCY_2: (EBUR128_UNUSED, 0)
        case AV_CHAN_BACK_LEFT, AV_CHAN_SIDE_LEFT: (EBUR128_LEFT_SURROUND, 1.41)
        case AV_CHAN_BACK_RIGHT, AV_CHAN_SIDE_RIGHT: (EBUR128_RIGHT_SURROUND, 1.41)
        default: (EBUR128_CENTER, 1)
        }
    }

    /// Measures one decoded frame of the stream.
    public func add(_ frame: borrowing Frame) throws(FFmpegError) {
        let f = frame.pointer
        let count = Int(f.pointee.nb_samples)
        guard count > 0 else { return }
        guard Int(f.pointee.ch_layout.nb_channels) == channelCount else {
            throw FFmpegError(code: -22, operation: "loudness",
                              detail: "the audio changed from \(channelCount) to \(f.pointee.ch_layout.nb_channels) channels mid-stream")
        }
        if f.pointee.format != inputFormat || av_channel_layout_compare(&f.pointee.ch_layout, &inputLayout) != 0 || resampler == nil {
            inputFormat = f.pointee.format
            av_channel_layout_uninit(&inputLayout)
            av_channel_layout_copy(&inputLayout, &f.pointee.ch_layout)
            swr_free(&resampler)
            // The same layout, rate and channel order in and out: only the sample format changes, no mixing.
            var ctx: OpaquePointer?
            var outLayout = AVChannelLayout()
            av_channel_layout_copy(&outLayout, &f.pointee.ch_layout)
            defer { av_channel_layout_uninit(&outLayout) }
            var r = swr_alloc_set_opts2(&ctx, &outLayout, AV_SAMPLE_FMT_FLT, Int32(sampleRate),
                                        &inputLayout, AVSampleFormat(rawValue: inputFormat), Int32(f.pointee.sample_rate), 0, nil)
            if r < 0 { throw .capture(r, "swr_alloc_set_opts2") }
            r = swr_init(ctx)
            if r < 0 { swr_free(&ctx); throw .capture(r, "swr_init") }
            resampler = ctx
        }
        let start = pending.count
        let room = count + 256
        pending.append(contentsOf: repeatElement(0, count: room * channelCount))
        let converted = pending.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var out: UnsafeMutablePointer<UInt8>? = UnsafeMutableRawPointer(buffer.baseAddress! + start).assumingMemoryBound(to: UInt8.self)
            let input = UnsafeMutableRawPointer(f.pointee.extended_data!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
            return swr_convert(resampler, &out, Int32(room), input, Int32(count))
        }
        if converted < 0 {
            pending.removeLast(room * channelCount)
            throw .capture(converted, "swr_convert")
        }
        pending.removeLast((room - Int(converted)) * channelCount)
        try drain(final: false)
    }

    /// Measures planar float samples (`AudioSamples`), `count` of them from `offset`, in the meter's
    /// channel order.
    public func add(_ samples: AudioSamples, from offset: Int = 0, count: Int? = nil) throws(FFmpegError) {
        let n = count ?? samples.count - offset
        guard n > 0 else { return }
        guard samples.channelCount == channelCount, offset >= 0, offset + n <= samples.count else {
            throw FFmpegError(code: -22, operation: "loudness", detail: "\(samples.channelCount) channels given to a meter of \(channelCount)")
        }
        let start = pending.count
        pending.append(contentsOf: repeatElement(0, count: n * channelCount))
        pending.withUnsafeMutableBufferPointer { samples.interleave(from: offset, count: n, into: $0, at: start) }
        try drain(final: false)
    }

    /// Gives libebur128 the pending samples in 100 ms blocks, reading the short-term and momentary
    /// loudness after each (their maxima); `final` gives the rest too.
    private func drain(final: Bool) throws(FFmpegError) {
        var offset = 0
        let available = pending.count / channelCount
        while available - offset >= block || (final && offset < available) {
            let n = min(block, available - offset)
            let r = pending.withUnsafeBufferPointer { buffer in
                truePeak.add(buffer.baseAddress! + offset * channelCount, frames: n)
                return ebur128_add_frames_float(state, buffer.baseAddress! + offset * channelCount, n)
            }
            if r != 0 { throw FFmpegError(code: -12, operation: "ebur128_add_frames_float", detail: "libebur128 refused the samples (\(r))") }
            offset += n
            measuredFrames += n
            guard n == block else { continue }
            var value = 0.0
            guard ebur128_loudness_window(state, 100, &value) == 0 else { continue }
            // Loudness -0.691 + 10 log10(energy): back to the energy, 0 for a silent block.
            energies[blocks % 30] = value.isFinite ? pow(10, (value + 0.691) / 10) : 0
            if keepsBlocks { blockEnergies.append(energies[blocks % 30]) }
            blocks += 1
            if blocks >= 4 {
                let momentary = (1...4).reduce(0.0) { $0 + energies[(blocks - $1) % 30] } / 4
                if momentary > 0 { momentaryMax = max(momentaryMax, -0.691 + 10 * log10(momentary)) }
                if momentary > Self.absoluteGateEnergy {
                    gatedEnergy += momentary
                    gatedBlocks += 1
                }
            }
            if blocks >= 30 {
                let shortTerm = energies.reduce(0, +) / 30
                if shortTerm > 0 { shortTermMax = max(shortTermMax, -0.691 + 10 * log10(shortTerm)) }
            }
        }
        if offset > 0 { pending.removeFirst(offset * channelCount) }
    }

    /// The energy of a block at the absolute gate, -70 LUFS.
    private static let absoluteGateEnergy = pow(10, (-70 + 0.691) / 10)

    /// The figures of everything measured.
    public func finish() throws(FFmpegError) -> LoudnessFigures {
        try Self.figures(of: [self])
    }

    /// BS.1770's gated integrated loudness of audio given as the mean weighted energies of its 100 ms
    /// blocks (`blockEnergies`, of one meter or of several one after the other): 400 ms blocks every
    /// 100 ms, the absolute gate at -70 LUFS, the relative 10 LU under the loudness above it. Nil when
    /// nothing passes the gates.
    public static func gatedLoudness(of blocks: [Double]) -> Double? {
        guard blocks.count >= 4 else { return nil }
        var windows: [Double] = []
        windows.reserveCapacity(blocks.count - 3)
        var sum = blocks[0] + blocks[1] + blocks[2]
        for i in 3..<blocks.count {
            sum += blocks[i]
            windows.append(sum / 4)
            sum -= blocks[i - 3]
        }
        let loud = windows.filter { $0 > absoluteGateEnergy }
        guard !loud.isEmpty else { return nil }
        let gate = loud.reduce(0, +) / Double(loud.count) / 10
        let kept = loud.filter { $0 > gate }
        guard !kept.isEmpty else { return nil }
        return -0.691 + 10 * log10(kept.reduce(0, +) / Double(kept.count))
    }

    /// The figures of several meters' audio taken as one programme, one after the other: each meter's
    /// gated blocks pooled, as BS.1770 gates one programme (the few blocks that would straddle two
    /// meters' audio are not measured), the highest peaks and maxima, the seconds added up.
    public static func figures(of meters: [LoudnessMeter]) throws(FFmpegError) -> LoudnessFigures {
        guard let first = meters.first else {
            throw FFmpegError(code: -22, operation: "loudness", detail: "no audio was measured")
        }
        for m in meters { try m.drain(final: true) }
        var integrated = 0.0, range = 0.0, gate = 0.0
        if meters.count == 1 {
            _ = ebur128_loudness_global(first.state, &integrated)
            _ = ebur128_loudness_range(first.state, &range)
            _ = ebur128_relative_threshold(first.state, &gate)
        } else {
            (integrated, range) = combinedFigures(meters)
            let blocks = meters.reduce(0) { $0 + $1.gatedBlocks }
            gate = blocks == 0 ? -.infinity : -0.691 + 10 * log10(meters.reduce(0) { $0 + $1.gatedEnergy } / Double(blocks)) - 10
        }
        var truePeak = 0.0, samplePeak = 0.0
        for m in meters {
            for i in 0..<m.channelCount where m.channels[i].weight > 0 || m.channelCount == 1 {
                var peak = 0.0
                // As libebur128 gives it: the interpolated peak, or the sample peak when that is higher.
                if ebur128_sample_peak(m.state, UInt32(i), &peak) == 0 {
                    samplePeak = max(samplePeak, peak)
                    truePeak = max(truePeak, peak, Double(m.truePeak.peaks[i]))
                }
            }
        }
        let measuredFrames = meters.reduce(0) { $0 + $1.measuredFrames }
        let shortTermMax = meters.map(\.shortTermMax).max()!, momentaryMax = meters.map(\.momentaryMax).max()!
        let silent = !integrated.isFinite
        return LoudnessFigures(
            integrated: silent ? nil : integrated, range: range.isFinite ? range : 0,
            truePeak: truePeak > 0 ? 20 * log10(truePeak) : nil, samplePeak: samplePeak > 0 ? 20 * log10(samplePeak) : nil,
            shortTermMax: shortTermMax.isFinite ? shortTermMax : nil, momentaryMax: momentaryMax.isFinite ? momentaryMax : nil,
            relativeGate: silent || !gate.isFinite ? nil : gate,
            seconds: Double(measuredFrames) / Double(first.sampleRate), sampleRate: first.sampleRate, channels: first.channels,
            note: silent ? (measuredFrames < first.block * 4
                            ? "shorter than one 400 ms block: no integrated loudness"
                            : "every 400 ms block is below the absolute gate of -70 LUFS (silence): no integrated loudness") : nil)
    }

    /// The integrated loudness and range of several meters' audio taken as one programme (each meter's
    /// gated blocks pooled, as BS.1770 gates one programme).
    public static func combined(_ meters: [LoudnessMeter]) -> (integrated: Double?, range: Double) {
        let (integrated, range) = combinedFigures(meters)
        return (integrated.isFinite ? integrated : nil, range.isFinite ? range : 0)
    }

    private static func combinedFigures(_ meters: [LoudnessMeter]) -> (integrated: Double, range: Double) {
        var states: [UnsafeMutablePointer<ebur128_state>?] = meters.map(\.state)
        var integrated = 0.0, range = 0.0
        _ = states.withUnsafeMutableBufferPointer { ebur128_loudness_global_multiple($0.baseAddress, $0.count, &integrated) }
        _ = states.withUnsafeMutableBufferPointer { ebur128_loudness_range_multiple($0.baseAddress, $0.count, &range) }
        return (integrated, range)
    }
}
