import Foundation
@testable import MediaCore
import Testing

/// A programme measured in parts, one meter each, pooled as one (`LoudnessMeter.figures(of:)`), and
/// worked out from its 100 ms block energies (`gatedLoudness(of:)`): both against libebur128 measuring
/// the whole with one meter.
@Suite struct LoudnessPoolingTests {
    /// Stereo noise whose level moves over 40 dB, with quiet stretches under the relative gate and a
    /// silent one under the absolute gate: 45 s at 48 kHz.
    static func programme() -> AudioSamples {
        var state: UInt32 = 2463534242
        func random() -> Float {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            return Float(state) / Float(UInt32.max) * 2 - 1
        }
        let rate = 48_000, frames = rate * 45
        var left = [Float](repeating: 0, count: frames), right = left
        for n in 0..<frames {
            let t = Double(n) / Double(rate)
            let level = t.truncatingRemainder(dividingBy: 15) < 1.5 ? 0 : Float(0.01 + 0.3 * abs(sin(t / 3)))
            let noise = random()
            left[n] = level * noise
            right[n] = level * (0.7 * noise + 0.3 * random())
        }
        return AudioSamples(channels: [left, right])
    }

    @Test func partsPooledAndBlockEnergiesAgreeWithOneMeter() throws {
        let audio = Self.programme()
        let whole = try LoudnessMeter(sampleRate: 48_000, channelCount: 2, layoutName: nil)
        whole.keepsBlocks = true
        try whole.add(audio)
        let one = try whole.finish()
        let integrated = try #require(one.integrated)
        let fromBlocks = try #require(LoudnessMeter.gatedLoudness(of: whole.blockEnergies))
        #expect(abs(fromBlocks - integrated) < 0.01, "\(fromBlocks) from the blocks against libebur128's \(integrated)")
        #expect(LoudnessMeter.gatedLoudness(of: whole.blockEnergies.map { $0 * pow(10, 0.3) }).map { abs($0 - integrated - 3) < 0.01 } == true,
                "3 dB more energy is 3 LU louder")

        // Three parts at uneven boundaries, each its own meter.
        var meters: [LoudnessMeter] = []
        for range in [0..<617_283, 617_283..<1_450_000, 1_450_000..<audio.count] {
            let m = try LoudnessMeter(sampleRate: 48_000, channelCount: 2, layoutName: nil)
            try m.add(audio, from: range.lowerBound, count: range.count)
            meters.append(m)
        }
        let pooled = try LoudnessMeter.figures(of: meters)
        #expect(abs((pooled.integrated ?? 0) - integrated) < 0.02, "pooled \(pooled.integrated ?? .nan) against \(integrated)")
        #expect(abs((pooled.relativeGate ?? 0) - (one.relativeGate ?? 0)) < 0.05, "gate \(pooled.relativeGate ?? .nan) against \(one.relativeGate ?? .nan)")
        // The 3 s windows that straddle two meters are not measured: here 58 of some 420.
        #expect(abs(pooled.range - one.range) < 1, "range \(pooled.range) against \(one.range)")
        #expect(pooled.truePeak == one.truePeak && pooled.samplePeak == one.samplePeak)
        #expect(abs(pooled.seconds - 45) < 1e-9 && pooled.channels == one.channels)
        #expect(LoudnessMeter.gatedLoudness(of: [0, 0, 0, 0, 0]) == nil && LoudnessMeter.gatedLoudness(of: [1]) == nil, "silence and too short")
    }
}
