import Foundation
@testable import MediaCore
import Testing

/// The limiter against `TruePeakMeter` (libebur128's interpolator): its output's true peak stays at its
/// ceiling, every frame comes out once, and audio far from a peak is only multiplied by the gain.
@Suite struct TruePeakLimiterTests {
    /// Quiet noise with a loud click every second, stereo, two and a half seconds.
    static func clicks(rate: Int = 48_000) -> AudioSamples {
        var generator = SystemRandomNumberGenerator()
        let frames = rate * 5 / 2
        var left = [Float](repeating: 0, count: frames), right = left
        for n in 0..<frames {
            let noise = Float.random(in: -0.02...0.02, using: &generator)
            let t = Double(n) / Double(rate)
            let click: Float = n % rate < rate / 500 ? Float(0.9 * sin(2 * .pi * 3000 * t)) : 0
            left[n] = noise + click
            right[n] = noise * 0.5 - click * 0.8
        }
        return AudioSamples(channels: [left, right])
    }

    static func truePeak(_ samples: AudioSamples, rate: Int) -> Float {
        let meter = TruePeakMeter(channelCount: samples.channelCount, sampleRate: rate)
        var interleaved = [Float](repeating: 0, count: samples.count * samples.channelCount)
        interleaved.withUnsafeMutableBufferPointer { samples.interleave(from: 0, count: samples.count, into: $0) }
        interleaved.withUnsafeBufferPointer { meter.add($0.baseAddress!, frames: samples.count) }
        return meter.peaks.max() ?? 0
    }

    @Test(arguments: [44_100, 48_000])
    func theTruePeakStaysAtTheCeilingAndEveryFrameComesOutOnce(rate: Int) {
        let input = Self.clicks(rate: rate)
        let gain: Float = pow(10, 15 / 20), ceiling: Float = pow(10, -1.1 / 20)
        #expect(Self.truePeak(input, rate: rate) * gain > 4 * ceiling, "the clicks, gained, pass the ceiling")
        let limiter = TruePeakLimiter(channels: 2, sampleRate: rate, gain: gain, ceiling: ceiling)
        var output = AudioSamples(channelCount: 2)
        var offset = 0
        for size in [1, 100, 4097, 333, 48_000, 200_000] where offset < input.count {  // blocks of any size
            let n = min(size, input.count - offset)
            output.append(limiter.process(input.slice(from: offset, count: n)))
            offset += n
        }
        output.append(limiter.finish())
        #expect(output.count == input.count)
        let peak = Self.truePeak(output, rate: rate)
        #expect(peak <= ceiling * 1.01, "true peak \(20 * log10(peak)) dBTP over the ceiling of -1.1")
        #expect(limiter.limitedFrames > 0 && limiter.lowestGain < 0.25, "\(limiter.limitedFrames) frames, lowest \(limiter.lowestGain)")
        // Between the clicks (0.5 s after one: ten release time constants; 0.05 s before the next) the
        // audio is only gained.
        let from = rate + rate / 2, to = 2 * rate - rate / 20
        for c in 0..<2 {
            for n in from..<to where output.channels[c][n] != input.channels[c][n] * gain {
                Issue.record("frame \(n) of channel \(c): \(output.channels[c][n]), not \(input.channels[c][n] * gain)")
                break
            }
        }
        // In time: the output is not shifted against the input.
        #expect(abs(output.channels[0][from] - input.channels[0][from] * gain) < 1e-6)
    }

    @Test func aQuietSignalIsOnlyGained() {
        let input = AudioSamples(channels: [(0..<10_000).map { Float(sin(Double($0) / 10)) * 0.01 }])
        let limiter = TruePeakLimiter(channels: 1, sampleRate: 48_000, gain: 2, ceiling: 0.9)
        var output = limiter.process(input)
        output.append(limiter.finish())
        #expect(output.channels[0] == input.channels[0].map { $0 * 2 } && limiter.limitedFrames == 0 && limiter.lowestGain == 1)
    }
}
