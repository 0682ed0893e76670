import FarmModel
import Testing

/// The one parser for numbers users type: plain decimals in range, everything else refused with the range.
@Suite struct UserNumbersTests {
    @Test func secondsInRangeAreRead() throws {
        #expect(try UserNumbers.delay.parse("0").get() == 0)
        #expect(try UserNumbers.delay.parse("2.5").get() == 2.5)
        #expect(try UserNumbers.delay.parse(" 30 ").get() == 30)
        #expect(try UserNumbers.delay.parse("315360000").get() == 315_360_000)
        #expect(try UserNumbers.timeout.parse("0.5").get() == 0.5)
    }

    @Test(arguments: ["nan", "NaN", "inf", "-inf", "Infinity", "1e30", "1e300", "1E3", "-0", "-0.0", "0x10", "", " ", "2.", ".5",
                      "1_000", "--1", "315360000.5", "-1", "99999999999999999999999999999"])
    func hostileSecondsAreRefusedWithTheRange(_ text: String) {
        guard case .failure(let error) = UserNumbers.delay.parse(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(error.description == "give a number from 0 to 315360000 seconds")
        #expect(error.text == text)
    }

    @Test func anExclusiveMinimumSaysSo() {
        guard case .failure(let error) = UserNumbers.timeout.parse("0") else { Issue.record("0 accepted"); return }
        #expect(error.description == "give a number greater than 0 and at most 31536000 seconds")
    }

    @Test func integersRefuseOverflowFractionsAndNegativeZero() throws {
        #expect(try UserNumbers.priority.parse("-5").get() == -5)
        #expect(try UserNumbers.priority.parse("+7").get() == 7)
        for text in ["-0", "1.5", "1e3", "9223372036854775808", "-9223372036854775809", "1000000001", "nan", "0x1"] {
            #expect((try? UserNumbers.priority.parse(text).get()) == nil, "\(text)")
        }
        #expect(try UserNumbers.jobID.parse("9223372036854775807").get() == Int64.max)
        #expect((try? UserNumbers.jobID.parse("0").get()) == nil)
    }

    @Test func sizesTakeUnitsAndStayInRange() throws {
        #expect(try UserNumbers.bytes.parse("0").get() == 0)
        #expect(try UserNumbers.bytes.parse("512M").get() == 512 << 20)
        #expect(try UserNumbers.bytes.parse("8g").get() == 8 << 30)
        #expect(try UserNumbers.bytes.parse("1.5GiB").get() == 3 << 29)
        #expect(try UserNumbers.bytes.parse("1024P").get() == 1 << 60)
        for text in ["1025P", "20000000T", "1e30", "-1G", "-0", "inf", "nan", "G", "1X", "99999999999999999999999"] {
            guard case .failure(let error) = UserNumbers.bytes.parse(text) else { Issue.record("\(text) accepted"); continue }
            #expect(error.description.contains("from 0 to 1024P"), "\(error)")
        }
    }

    @Test func checkHoldsParsedNumbersToTheRange() {
        #expect((try? UserNumbers.wait.check(.infinity).get()) == nil)
        #expect((try? UserNumbers.wait.check(.nan).get()) == nil)
        #expect((try? UserNumbers.wait.check(10).get()) == 10)
        #expect(UserNumbers.attempts.narrowed(maximum: 3).maximum == 3)
        #expect(UserNumbers.attempts.narrowed(maximum: 5000).maximum == 1000)
    }
}
