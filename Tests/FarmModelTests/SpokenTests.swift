import FarmModel
import Testing

/// Counts and durations as people read them: "1 worker" (not "1 workers", "1 sheet(s)"), a delay of an
/// hour as "1 h 0 min" (not "3600 s").
@Suite struct SpokenTests {
    @Test func countsAreSingularForOne() {
        #expect(Spoken.count(1, "worker") == "1 worker" && Spoken.count(2, "worker") == "2 workers" && Spoken.count(0, "sheet") == "0 sheets")
        #expect(Spoken.count(1, "sheet") == "1 sheet" && Spoken.count(3, "child", "children") == "3 children")
    }

    @Test func durationsAreSaidInTheirLargestUnits() {
        #expect(Spoken.duration(0.4) == "0 s" && Spoken.duration(59.6) == "1 min 0 s" && Spoken.duration(61) == "1 min 1 s")
        #expect(Spoken.duration(3600) == "1 h 0 min" && Spoken.duration(7322) == "2 h 2 min")
        #expect(Spoken.duration(nil) == "–" && Spoken.duration(.nan) == "–" && Spoken.duration(-1) == "–" && Spoken.duration(1e30) == "–")
    }
}
