import Foundation

/// A gain and a lookahead true-peak limiter over planar float audio: every sample is multiplied by
/// `gain`, and where the result's true peak (BS.1770-4's oversampled peak, `TruePeakMeter`'s
/// interpolator) would pass `ceiling`, the gain is lowered smoothly around it.
///
/// For each frame n the needed gain r[n] is ceiling / peak (1 below the ceiling). The gain applied is
/// the lowest r of a window around each frame (the lookahead, plus the interpolator's delay on both
/// sides), released back towards 1 with a 50 ms time constant, then averaged over the lookahead: every
/// frame's gain is at most the r of every frame it covers, and it moves in ramps of at least 5 ms.
/// Output lags input by `delay` frames; `finish` gives the rest, so that exactly as many frames come out
/// as went in. Thread-confined.
public final class TruePeakLimiter {
    public let channels: Int
    public let gain: Float
    public let ceiling: Float
    /// Frames the output lags the input.
    public let delay: Int
    /// The lowest gain the limiter applied (1 when it never acted), beside `gain`.
    public var lowestGain: Float { gains.lowestGain }
    /// Frames whose gain the limiter lowered.
    public var limitedFrames: Int { gains.limitedFrames }
    /// The output frames `limitedFrames` and `lowestGain` count (all when nil): a part of the audio
    /// limited with some before and after it.
    public var counted: Range<Int>? {
        get { gains.counted }
        set { gains.counted = newValue }
    }

    private let interpolator: TruePeakMeter
    /// An upper bound of the interpolator's output over the largest input magnitude in its reach.
    private let interpolationBound: Float
    /// Interpolator memory per channel: the last `interpolator.memory` gained samples.
    private var history: [[Float]]
    /// Gained input waiting for its gain: planar, from frame `pendingBase`.
    private var pending: [[Float]]
    private var pendingBase = 0
    /// Frames in, frames out.
    private var received = 0
    private var emitted = 0
    private var gains: Gains

    /// The gain of each frame from the r of each: the state of the sliding minimum, the release and the
    /// average. A value, worked on as a local a block at a time (not property by property of the class).
    private struct Gains {
        let lookahead: Int
        let slack: Int
        let delay: Int
        let release: Float
        var counted: Range<Int>?
        var lowestGain: Float = 1
        var limitedFrames = 0
        /// The sliding minimum of r: a deque of (frame, r) with r increasing, as a growing array and a head.
        var dequeFrames: [Int] = []
        var dequeValues: [Float] = []
        var dequeHead = 0
        var released: Float = 1
        /// The last `lookahead` released gains (a ring) and their sum.
        var ring: [Float]
        var ringAt = 0
        var ringSum: Double
        /// How many of the ring's gains are under 1.
        var lowered = 0

        init(lookahead: Int, slack: Int, release: Float) {
            self.lookahead = lookahead
            self.slack = slack
            self.release = release
            delay = lookahead - 1 + slack
            ring = Array(repeating: 1, count: lookahead)
            ringSum = Double(lookahead)
        }

        static let placeholder = Gains(lookahead: 1, slack: 0, release: 0)

        /// The r of one frame in; the gain of the frame `delay` before it, once there is one.
        mutating func step(_ r: Float, frame: Int) -> Float? {
            // The window of frame j is [j - slack, j + lookahead - 1 + slack]: r[frame] completes j = frame - delay.
            while dequeValues.count > dequeHead && dequeValues[dequeValues.count - 1] >= r {
                dequeValues.removeLast()
                dequeFrames.removeLast()
            }
            dequeValues.append(r)
            dequeFrames.append(frame)
            // The gains of the lookahead before the first frame are worked out too (their windows reach it).
            let j = frame - delay
            guard j > -lookahead else { return nil }
            while dequeFrames[dequeHead] < j - slack { dequeHead += 1 }
            let h = dequeValues[dequeHead]
            released = min(h, released + (1 - released) * release)
            // Within 0.001 dB of 1 is 1: Float steps would never reach it.
            if released > 0.99989 { released = 1 }
            if ring[ringAt] < 1 { lowered -= 1 }
            if released < 1 { lowered += 1 }
            ringSum += Double(released) - Double(ring[ringAt])
            ring[ringAt] = released
            ringAt = ringAt == lookahead - 1 ? 0 : ringAt + 1
            if ringAt == 0 { ringSum = ring.reduce(0) { $0 + Double($1) } }
            guard j >= 0 else { return nil }
            let applied = lowered == 0 ? 1 : min(Float(ringSum / Double(lookahead)), 1)
            if applied < 1, counted?.contains(j) ?? true {
                limitedFrames += 1
                lowestGain = min(lowestGain, applied)
            }
            return applied
        }

        /// Drops the deque's dead head now and then.
        mutating func compact() {
            if dequeHead > 1 << 12 {
                dequeValues.removeFirst(dequeHead)
                dequeFrames.removeFirst(dequeHead)
                dequeHead = 0
            }
        }
    }

    /// `gain` and `ceiling` are linear (not dB); `ceiling` > 0.
    public init(channels: Int, sampleRate: Int, gain: Float, ceiling: Float) {
        self.channels = channels
        self.gain = gain
        self.ceiling = ceiling
        interpolator = TruePeakMeter(channelCount: 1, sampleRate: sampleRate)
        interpolationBound = max(1, interpolator.phases.map { $0.reduce(0) { $0 + abs($1.coefficient) } }.max() ?? 1)
        gains = Gains(lookahead: max(1, sampleRate / 200), slack: interpolator.memory + 2, release: Float(1 - exp(-1 / (0.05 * Double(sampleRate)))))
        delay = gains.delay
        history = Array(repeating: Array(repeating: 0, count: interpolator.memory), count: channels)
        pending = Array(repeating: [], count: channels)
    }

    /// Takes input and returns the output that is ready (`delay` frames behind).
    public func process(_ input: AudioSamples) -> AudioSamples {
        precondition(input.channelCount == channels, "the limiter takes \(channels) channels")
        let n = input.count
        var gained = input
        if gain != 1 {
            for c in 0..<channels { gained.channels[c].withUnsafeMutableBufferPointer { p in for i in p.indices { p[i] *= gain } } }
        }
        let needed = neededGains(gained)
        for c in 0..<channels { pending[c].append(contentsOf: gained.channels[c]) }
        var state = Gains.placeholder
        swap(&state, &gains)
        var applied: [Float] = []
        applied.reserveCapacity(n)
        for k in 0..<n {
            if let g = state.step(needed[k], frame: received + k) { applied.append(g) }
        }
        state.compact()
        swap(&state, &gains)
        received += n
        let output = emit(applied)
        compact()
        return output
    }

    /// The output still held: after it, exactly as many frames came out as went in.
    public func finish() -> AudioSamples {
        var state = Gains.placeholder
        swap(&state, &gains)
        var applied: [Float] = []
        var frame = received
        while emitted + applied.count < received {
            if let g = state.step(1, frame: frame) { applied.append(g) }
            frame += 1
        }
        swap(&state, &gains)
        return emit(applied)
    }

    /// The next `applied.count` pending frames at their gains.
    private func emit(_ applied: [Float]) -> AudioSamples {
        var output = AudioSamples(channelCount: channels)
        let start = emitted - pendingBase
        for c in 0..<channels {
            var out = [Float](repeating: 0, count: applied.count)
            pending[c].withUnsafeBufferPointer { p in
                applied.withUnsafeBufferPointer { g in
                    out.withUnsafeMutableBufferPointer { o in
                        for i in 0..<max(0, min(g.count, p.count - start)) { o[i] = p[start + i] * g[i] }
                    }
                }
            }
            output.channels[c] = out
        }
        emitted += applied.count
        return output
    }

    /// r for every frame of a block of gained input: ceiling over its true peak where that passes the
    /// ceiling, else 1. The interpolation runs only where the input comes near enough to matter.
    private func neededGains(_ gained: AudioSamples) -> [Float] {
        let n = gained.count
        var needed = [Float](repeating: 1, count: n)
        let memory = interpolator.memory
        let threshold = ceiling / interpolationBound
        let block = 64
        var work = [Float](repeating: 0, count: memory + n)
        for c in 0..<channels {
            work.withUnsafeMutableBufferPointer { x in
                for i in 0..<memory { x[i] = history[c][i] }
                gained.channels[c].withUnsafeBufferPointer { g in
                    for i in 0..<n { x[memory + i] = g[i] }
                }
                var start = 0
                while start < n {
                    let end = min(start + block, n)
                    var loudest: Float = 0
                    for i in start..<(memory + end) { loudest = max(loudest, abs(x[i])) }
                    if loudest >= threshold {
                        // Eight frames at a time, as TruePeakMeter runs the same filter.
                        needed.withUnsafeMutableBufferPointer { r in
                            let base = x.baseAddress! + memory
                            var i = start
                            while i < end {
                                let lanes = min(8, end - i)
                                var peak = SIMD8<Float>(repeating: 0)
                                if lanes == 8 {
                                    let own = UnsafeRawPointer(base + i).loadUnaligned(as: SIMD8<Float>.self)
                                    peak = own.replacing(with: -own, where: own .< 0)
                                    for taps in interpolator.phases {
                                        var sum = SIMD8<Float>(repeating: 0)
                                        for tap in taps {
                                            sum += tap.coefficient * UnsafeRawPointer(base + i - tap.back).loadUnaligned(as: SIMD8<Float>.self)
                                        }
                                        let magnitude = sum.replacing(with: -sum, where: sum .< 0)
                                        peak.replace(with: magnitude, where: magnitude .> peak)
                                    }
                                } else {
                                    for k in 0..<lanes {
                                        var p = abs(base[i + k])
                                        for taps in interpolator.phases {
                                            var sum: Float = 0
                                            for tap in taps { sum += tap.coefficient * base[i + k - tap.back] }
                                            p = max(p, abs(sum))
                                        }
                                        peak[k] = p
                                    }
                                }
                                for k in 0..<lanes where peak[k] > ceiling { r[i + k] = min(r[i + k], ceiling / peak[k]) }
                                i += lanes
                            }
                        }
                    }
                    start = end
                }
                for i in 0..<memory { history[c][i] = x[n + i] }
            }
        }
        return needed
    }

    /// Drops consumed input now and then.
    private func compact() {
        let consumed = emitted - pendingBase
        if consumed > 1 << 16 {
            for c in 0..<channels { pending[c].removeFirst(consumed) }
            pendingBase = emitted
        }
    }
}
