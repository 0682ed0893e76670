import CEbur128
import Foundation
@testable import MediaCore
import Testing

/// MediaCore's true peak is libebur128's own (the same interpolator, run a block at a time with vector
/// arithmetic): on signals whose peaks fall between samples, at the three oversampling factors.
@Suite struct TruePeakMeterTests {
    /// libebur128's true peak of `samples` (interleaved), per channel, linear.
    static func reference(_ samples: [Float], channels: Int, rate: Int) -> [Double] {
        var state = ebur128_init(UInt32(channels), UInt(rate), Int32(EBUR128_MODE_TRUE_PEAK.rawValue))
        defer { ebur128_destroy(&state) }
        var offset = 0
        while offset < samples.count / channels {
            let n = min(4800, samples.count / channels - offset)
            samples.withUnsafeBufferPointer { _ = ebur128_add_frames_float(state, $0.baseAddress! + offset * channels, n) }
            offset += n
        }
        return (0..<channels).map { c in
            var peak = 0.0
            _ = ebur128_true_peak(state, UInt32(c), &peak)
            return peak
        }
    }

    @Test(arguments: [44_100, 48_000, 96_000, 192_000])
    func theTruePeakIsLibebur128s(rate: Int) {
        // A sine at a quarter of the rate, 45 degrees out of phase with the samples (its peaks fall
        // between them: 3 dB above the sample peak), in one channel; a chirp with a click in the other.
        let frames = rate / 2
        var samples = [Float](repeating: 0, count: frames * 2)
        for n in 0..<frames {
            samples[2 * n] = 0.5 * Float(sin(Double.pi / 2 * Double(n) + .pi / 4))
            let t = Double(n) / Double(rate)
            samples[2 * n + 1] = 0.3 * Float(sin(2 * .pi * (200 + 8000 * t) * t)) + (n == frames / 3 ? 0.6 : 0)
        }
        let meter = TruePeakMeter(channelCount: 2, sampleRate: rate)
        var offset = 0
        for size in [1, 7, 4800, 333, 100_000] where offset < frames {  // blocks of any size, some not a multiple of 8
            let n = min(size, frames - offset)
            samples.withUnsafeBufferPointer { meter.add($0.baseAddress! + offset * 2, frames: n) }
            offset += n
        }
        if offset < frames { samples.withUnsafeBufferPointer { meter.add($0.baseAddress! + offset * 2, frames: frames - offset) } }
        let expected = Self.reference(samples, channels: 2, rate: rate)
        for c in 0..<2 {
            // libebur128 gives the higher of its interpolated and its sample peak.
            let ours = max(Double(meter.peaks[c]), Double(samples.enumerated().filter { $0.offset % 2 == c }.map { abs($0.element) }.max() ?? 0))
            #expect(abs(20 * log10(ours) - 20 * log10(expected[c])) < 0.001, "channel \(c) at \(rate) Hz: \(ours) against \(expected[c])")
        }
        // The sine's samples peak at 0.5 x sin(45°); between them it reaches 0.5: 3 dB more.
        if rate < 96_000 { #expect(20 * log10(Double(meter.peaks[0]) / (0.5 * sin(Double.pi / 4))) > 2.9, "the inter-sample peak: \(meter.peaks[0])") }
    }
}
