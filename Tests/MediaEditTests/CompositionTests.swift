import MediaTime
import Testing
@testable import MediaEdit

private func t(_ v: Int64, _ s: Int32 = 1) -> MediaTime { MediaTime(value: v, timescale: s) }
private func range(_ a: MediaTime, _ b: MediaTime) -> TimeRange { TimeRange(start: a, end: b) }

@Suite struct CompositionTests {
    @Test func slowMotionSection() throws {
        var c = Composition()
        try c.insert(range(.zero, t(10)), of: "a.mp4")
        try c.scale(range(t(2), t(4)), toDuration: t(8))        // rate 0.25
        #expect(c.duration == t(16))
        let m = c.timeMapping
        #expect(m.pieces.map(\.target) == [range(.zero, t(2)), range(t(2), t(10)), range(t(10), t(16))])
        #expect(m.pieces.map(\.source) == [range(.zero, t(2)), range(t(2), t(4)), range(t(4), t(10))])
        #expect(m.pieces[1].rate == Rational(1, 4))
        // Both directions, inside the scaled piece and after it.
        #expect(m.sourceTime(at: t(6))?.time == t(3))
        #expect(m.sourceTime(at: t(12))?.time == t(6))
        #expect(m.targetTime(segment: 0, source: t(3)) == t(6))
        #expect(m.targetTime(segment: 0, source: t(1, 60) + t(2)) == t(2) + t(4, 60))   // one frame becomes four
    }

    @Test func scalesComposeLikeAVMutableComposition() throws {
        var c = Composition()
        try c.insert(range(.zero, t(10)), of: "a.mp4")
        try c.scale(range(t(6), t(8)), toDuration: t(1))        // rate 2, applied first at 6..8
        try c.scale(range(t(2), t(3)), toDuration: t(4))        // rate 1/4 earlier: later pieces shift
        #expect(c.duration == t(12))
        // [0,2) 0-2 | [2,6) 2-3 | [6,9) 3-6 | [9,10) 6-8 | [10,12) 8-10
        #expect(c.timeMapping.sourceTime(at: t(19, 2))?.time == t(7))
        #expect(c.timeMapping.sourceTime(at: t(10))?.time == t(8))
    }

    @Test func joinWithAScaleAcrossTheJoin() throws {
        var c = Composition()
        try c.insert(range(t(1), t(4)), of: "a.mp4")            // 3 s of a
        try c.insert(range(.zero, t(2)), of: "b.mp4")           // then 2 s of b
        try c.scale(range(t(2), t(4)), toDuration: t(4))        // half speed across the join at 3 s
        let m = c.timeMapping
        #expect(c.duration == t(7))
        #expect(m.pieces.map(\.segment) == [0, 0, 1, 1])
        #expect(m.pieces.map(\.target) == [range(.zero, t(2)), range(t(2), t(4)), range(t(4), t(6)), range(t(6), t(7))])
        #expect(m.pieces.map(\.source) == [range(t(1), t(3)), range(t(3), t(4)), range(.zero, t(1)), range(t(1), t(2))])
        #expect(m.sourceTime(at: t(5))! == (1, t(1, 2)))
    }

    @Test func extremeRatesAreExact() throws {
        var c = Composition()
        try c.insert(range(.zero, t(64)), of: "a.mp4")
        try c.scale(range(.zero, t(1)), toDuration: t(32))      // 1/32
        try c.scale(range(t(40), t(72)), toDuration: t(1))      // 32, range given in the new time
        #expect(c.duration == t(32 + 7 + 1 + 24))
        #expect(c.timeMapping.pieces.filter(\.isScaled).compactMap(\.rate) == [Rational(1, 32), Rational(32, 1)])
    }

    @Test func rejectsWhatAVFoundationWouldNot() throws {
        var c = Composition()
        try c.insert(range(.zero, t(10)), of: "a.mp4")
        #expect(throws: CompositionError.self) { try c.scale(range(t(8), t(12)), toDuration: t(4)) }   // past the end
        #expect(throws: CompositionError.self) { try c.scale(range(.zero, t(1)), toDuration: t(33)) }  // rate 1/33
        #expect(throws: CompositionError.self) { try c.insert(range(t(2), t(2)), of: "a.mp4") }        // empty
    }

    @Test func snappingKeepsScaledContent() throws {
        var c = Composition()
        try c.insert(range(t(1), t(4)), of: "a.mp4")
        try c.insert(range(t(5), t(7)), of: "b.mp4")
        try c.scale(range(t(3), t(4)), toDuration: t(2))        // b's 5..6 at half speed
        // b's cut at 5 s snaps back to a keyframe at 4.5 s; a's at 1 s to 0.
        let snapped = try c.withSegmentStarts([.zero, t(9, 2)])
        let m = snapped.timeMapping
        #expect(snapped.duration == t(1) + c.duration + t(1, 2))
        let scaled = try #require(m.pieces.first { $0.isScaled })
        #expect(scaled.segment == 1 && scaled.source == range(t(5), t(6)) && scaled.target.duration == t(2))
        #expect(m.pieces.first?.source == range(.zero, t(4)))
    }

    @Test func thirdsStayExact() throws {
        var c = Composition()
        try c.insert(range(.zero, t(1)), of: "a.mp4")
        try c.scale(range(t(1, 3), t(2, 3)), toDuration: t(1))  // 1/3 s plays in 1 s
        #expect(c.duration == t(5, 3))
        #expect(c.timeMapping.sourceTime(at: t(4, 3))?.time == t(2, 3))
        #expect(!c.duration.isRounded)
    }
}
