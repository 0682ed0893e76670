import Foundation
import Testing
@testable import MediaTime

@Suite struct MediaTimeArithmeticTests {
    @Test func equalityIsExactAcrossTimescales() {
        #expect(MediaTime(value: 1, timescale: 2) == MediaTime(value: 2, timescale: 4))
        #expect(MediaTime(value: 1001, timescale: 30000) != MediaTime(value: 1, timescale: 30))
        #expect(Set([MediaTime(value: 1, timescale: 2), MediaTime(value: 500, timescale: 1000)]).count == 1)
    }

    @Test func orderingIsExactWhereDoublesWouldTie() {
        // 2^53 + 1 over 1 vs 2^53 over 1: equal as Doubles, not as rationals.
        let a = MediaTime(value: (1 << 53) + 1, timescale: 1), b = MediaTime(value: 1 << 53, timescale: 1)
        #expect(a.seconds == b.seconds)
        #expect(b < a)
        #expect(MediaTime.negativeInfinity < MediaTime(value: .min, timescale: 1))
        #expect(MediaTime(value: .max, timescale: 1) < .positiveInfinity)
        #expect(MediaTime.positiveInfinity < .invalid)
    }

    @Test func additionIsExactWithMixedTimescales() {
        let sum = MediaTime(value: 1, timescale: 3) + MediaTime(value: 1, timescale: 6)
        #expect(sum == MediaTime(value: 1, timescale: 2))
        #expect(!sum.isRounded)
        // 29.97 fps frames add up with no drift: 30000 frames of 1001/30000 s are exactly 1001 s.
        var t = MediaTime.zero
        let frame = MediaTime(value: 1001, timescale: 30000)
        for _ in 0..<30000 { t += frame }
        #expect(t == MediaTime(value: 1001, timescale: 1))
    }

    @Test func additionRoundsOnlyWhenItMust() {
        // Two coprime timescales near Int32.max cannot share a common timescale.
        let a = MediaTime(value: 1, timescale: 2_147_483_647), b = MediaTime(value: 1, timescale: 2_147_483_629)
        let sum = a + b
        #expect(sum.isRounded)
        #expect(abs(sum.seconds - (a.seconds + b.seconds)) < 1e-9)
    }

    @Test func specialValuesPropagate() {
        let one = MediaTime(value: 1, timescale: 1)
        #expect((MediaTime.invalid + one).kind == .invalid)
        #expect((MediaTime.positiveInfinity + one) == .positiveInfinity)
        #expect((MediaTime.positiveInfinity + .negativeInfinity).kind == .invalid)
        #expect((-MediaTime.positiveInfinity) == .negativeInfinity)
        #expect(MediaTime.invalid.seconds.isNaN)
    }

    @Test func multiplicationByRational() {
        let t = MediaTime(value: 2, timescale: 1)
        #expect(t.multiplied(by: Rational(1, 4)) == MediaTime(value: 1, timescale: 2))
        #expect(t.multiplied(by: Rational(32, 1)) == MediaTime(value: 64, timescale: 1))
        #expect(MediaTime.ratio(MediaTime(value: 1, timescale: 1), MediaTime(value: 4, timescale: 1)) == Rational(1, 4))
    }

    @Test func timeBaseConversionRoundTrips() {
        let tb = Rational(1, 15360)
        let t = MediaTime(count: 512, timeBase: tb)
        #expect(t == MediaTime(value: 1, timescale: 30))
        #expect(t.count(in: tb) == 512)
        // 1/3 s in a 1/1000 time base: 333.33 ticks, rounded as asked.
        let third = MediaTime(value: 1, timescale: 3)
        #expect(third.count(in: Rational(1, 1000)) == 333)
        #expect(third.count(in: Rational(1, 1000), rounding: .up) == 334)
        #expect(MediaTime(value: -1, timescale: 3).count(in: Rational(1, 1000), rounding: .down) == -334)
        // 90 kHz MPEG-TS ticks.
        #expect(MediaTime(count: 137250, timeBase: Rational(1, 90000)) == MediaTime(value: 61, timescale: 40))
    }

    @Test func convertingTimescaleMarksRounding() {
        let t = MediaTime(value: 1, timescale: 3).converted(toTimescale: 1000)
        #expect(t.value == 333 && t.timescale == 1000 && t.isRounded)
        let exact = MediaTime(value: 1, timescale: 2).converted(toTimescale: 1000)
        #expect(exact.value == 500 && !exact.isRounded)
    }
}

@Suite struct MediaTimeParsingTests {
    @Test(arguments: [
        ("2.5", MediaTime(value: 5, timescale: 2)),
        ("0.1", MediaTime(value: 1, timescale: 10)),
        ("10", MediaTime(value: 10, timescale: 1)),
        (".5", MediaTime(value: 1, timescale: 2)),
        ("-1.25", MediaTime(value: -5, timescale: 4)),
        ("5/2", MediaTime(value: 5, timescale: 2)),
        ("1001/30000", MediaTime(value: 1001, timescale: 30000)),
        ("00:00:02.500", MediaTime(value: 5, timescale: 2)),
        ("01:02:03", MediaTime(value: 3723, timescale: 1)),
        ("01:02.5", MediaTime(value: 125, timescale: 2)),
        (" 3 ", MediaTime(value: 3, timescale: 1)),
        ("0.000000001", MediaTime(value: 1, timescale: 1_000_000_000)),
    ])
    func parses(text: String, expected: MediaTime) throws {
        #expect(try MediaTime(parsing: text) == expected)
    }

    @Test(arguments: ["", "abc", "1/0", "1/-2", "2.5s", "1.2.3", "00:61:00", "00:00:60", "1:2:3:4",
                      "0.0000000001", "99999999999999999999", "--1", "1/", "/2", "00::01",
                      // found by fuzzing: minutes of an MM:SS timecode that overflowed when multiplied by 60
                      "2049638222634394623:000000004", "4403519635651153080:040.0", "-153722867280912931:00"])
    func rejects(text: String) {
        #expect(throws: TimeParseError.self) { try MediaTime(parsing: text) }
    }

    @Test func errorMessageSaysWhatIsAccepted() {
        do {
            _ = try MediaTime(parsing: "two seconds")
            Issue.record("parsed nonsense")
        } catch {
            #expect(error.description.contains("two seconds"))
            #expect(error.description.contains("5/2"))
        }
    }
}

@Suite struct MediaTimeCodableTests {
    @Test func encodesValueTimescaleSeconds() throws {
        let data = try JSONEncoder().encode(MediaTime(value: 1024, timescale: 1000))
        let object = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        #expect(object["value"] as? Int == 1024)
        #expect(object["timescale"] as? Int == 1000)
        #expect((object["seconds"] as? Double) == 1.024)
    }

    @Test func decodesWhatManifestAuthorsWrite() throws {
        struct Box: Decodable { let t: MediaTime }
        func decode(_ json: String) throws -> MediaTime { try JSONDecoder().decode(Box.self, from: Data(json.utf8)).t }
        #expect(try decode(#"{"t": 2.5}"#) == MediaTime(value: 5, timescale: 2))
        #expect(try decode(#"{"t": 0.1}"#) == MediaTime(value: 1, timescale: 10))
        #expect(try decode(#"{"t": 3}"#) == MediaTime(value: 3, timescale: 1))
        #expect(try decode(#"{"t": "5/2"}"#) == MediaTime(value: 5, timescale: 2))
        #expect(try decode(#"{"t": "00:00:02.500"}"#) == MediaTime(value: 5, timescale: 2))
        #expect(try decode(#"{"t": {"value": 7, "timescale": 3}}"#) == MediaTime(value: 7, timescale: 3))
        #expect(try decode(#"{"t": null}"#).kind == .invalid)
        #expect(throws: DecodingError.self) { try decode(#"{"t": "soon"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"t": {"value": 1, "timescale": 0}}"#) }
    }

    @Test func roundTrips() throws {
        for t in [MediaTime(value: 1001, timescale: 30000), .invalid, .positiveInfinity, .negativeInfinity] {
            let back = try JSONDecoder().decode(MediaTime.self, from: JSONEncoder().encode(t))
            #expect(back == t)
        }
    }
}

@Suite struct TimeRangeTests {
    @Test func halfOpenContainment() {
        let r = TimeRange(start: MediaTime(value: 2, timescale: 1), duration: MediaTime(value: 1, timescale: 1))
        #expect(r.contains(MediaTime(value: 2, timescale: 1)))
        #expect(r.contains(MediaTime(value: 299, timescale: 100)))
        #expect(!r.contains(MediaTime(value: 3, timescale: 1)))
        #expect(r.end == MediaTime(value: 3, timescale: 1))
    }

    @Test func intersectionAndUnion() {
        let a = TimeRange(start: .zero, end: MediaTime(value: 2, timescale: 1))
        let b = TimeRange(start: MediaTime(value: 1, timescale: 1), end: MediaTime(value: 3, timescale: 1))
        #expect(a.intersection(b) == TimeRange(start: MediaTime(value: 1, timescale: 1), end: MediaTime(value: 2, timescale: 1)))
        #expect(a.union(b) == TimeRange(start: .zero, end: MediaTime(value: 3, timescale: 1)))
        let c = TimeRange(start: MediaTime(value: 2, timescale: 1), end: MediaTime(value: 4, timescale: 1))
        #expect(a.intersection(c) == nil)
    }
}

@Suite struct RationalTests {
    @Test func normalisesSignAndReduces() {
        #expect(Rational(1, -2) == Rational(-1, 2))
        #expect(Rational(30000, 1001).reduced == Rational(30000, 1001))
        #expect(Rational(60, 2).reduced == Rational(30, 1))
        #expect(Rational(30, 1).period == MediaTime(value: 1, timescale: 30))
    }
}
