import FarmModel
import Testing

/// The line `run` prints for a normalised export: one gain, or both when parts of the programme got
/// different gains.
@Suite struct LoudnessOutcomeTests {
    @Test func theRunLineSaysBothGains() {
        let split = LoudnessOutcome(before: -44.3, after: -23, target: -23, gain: nil, gains: [21.31, 21.81, 21.31], limiterReduction: nil)
        #expect(split.gain == nil && split.gainsFrom == 21.31 && split.gainsTo == 21.81)
        #expect(split.summary == "-44.3 → -23.0 LUFS (target -23.0), gain +21.31 to +21.81 dB by part, no limiting", "\(split.summary)")
        let whole = LoudnessOutcome(before: -29.4, after: -23, target: -23, gain: 6.6, gains: [], limiterReduction: -1.2)
        #expect(whole.summary == "-29.4 → -23.0 LUFS (target -23.0), gain +6.6 dB, limiter up to -1.2 dB" && whole.gainsFrom == nil)
    }
}
