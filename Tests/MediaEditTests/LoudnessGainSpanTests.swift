import Testing
@testable import MediaEdit

/// The report's gain: one number when the whole programme got one gain, else the stretches at each gain,
/// which is what the `note` says in words (a mean of the two disagreed with it).
@Suite struct LoudnessGainSpanTests {
    typealias Plan = LoudnessNormalizer.GainPlan

    @Test func oneGainIsOneSpan() {
        let spans = LoudnessNormalizer.gainSpans([(0..<480_000, .uniform(21.31)), (480_000..<960_000, .uniform(21.31))], sampleRate: 48_000)
        #expect(spans == [LoudnessDelivery.GainSpan(from: 0, to: 20, gain: 21.31)])
    }

    @Test func partsAtTwoGainsAreListedWhereTheyChange() {
        // The third part switches to the second gain a second in; the fourth stays there; the fifth is back.
        let parts: [(range: Range<Int>, plan: Plan)] = [
            (0..<480_000, .uniform(21.31)), (480_000..<960_000, .uniform(21.31)),
            (960_000..<1_440_000, Plan(first: 21.31, second: 21.81, switchFrame: 1_008_000)),
            (1_440_000..<1_920_000, .uniform(21.81)), (1_920_000..<2_400_000, .uniform(21.31)),
        ]
        let spans = LoudnessNormalizer.gainSpans(parts, sampleRate: 48_000)
        #expect(spans == [LoudnessDelivery.GainSpan(from: 0, to: 21, gain: 21.31), LoudnessDelivery.GainSpan(from: 21, to: 40, gain: 21.81),
                          LoudnessDelivery.GainSpan(from: 40, to: 50, gain: 21.31)])
    }
}
