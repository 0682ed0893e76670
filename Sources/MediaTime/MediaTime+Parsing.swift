/// Why a time string did not parse; the message is meant for a user who typed it.
public struct TimeParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public let reason: String
    public var description: String { "\"\(text)\" is not a time: \(reason) (use seconds like 2.5, a fraction like 5/2, or a timecode like 00:00:02.500)" }
}

extension MediaTime {
    /// Parses seconds ("2.5", "-1", "10"), a rational ("5/2", "1001/30000") or a timecode
    /// ("00:00:02.500", "01:02.5", hours:minutes:seconds with optional fraction). Exact: "0.1" is 1/10.
    /// At most 9 decimal places.
    public init(parsing text: String) throws(TimeParseError) {
        let trimmed = text.trimmingSpaces
        guard !trimmed.isEmpty else { throw TimeParseError(text: text, reason: "it is empty") }
        if trimmed.contains("/") {
            self = try Self.parseRational(trimmed, original: text)
        } else if trimmed.contains(":") {
            self = try Self.parseTimecode(trimmed, original: text)
        } else {
            self = try Self.parseDecimal(trimmed, original: text)
        }
    }

    private static func parseRational(_ s: String, original: String) throws(TimeParseError) -> MediaTime {
        let parts = s.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2,
              let n = Int64(parts[0].trimmingSpaces),
              let d = Int64(parts[1].trimmingSpaces) else {
            throw TimeParseError(text: original, reason: "a fraction needs two whole numbers, like 5/2")
        }
        guard d > 0 else { throw TimeParseError(text: original, reason: "the denominator must be positive") }
        guard let ts = Int32(exactly: d) else {
            throw TimeParseError(text: original, reason: "the denominator must be at most \(Int32.max)")
        }
        return MediaTime(value: n, timescale: ts).reduced
    }

    private static func parseDecimal(_ s: String, original: String) throws(TimeParseError) -> MediaTime {
        var digits = Substring(s)
        var negative = false
        if digits.first == "-" || digits.first == "+" {
            negative = digits.first == "-"
            digits = digits.dropFirst()
        }
        let pieces = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count <= 2, !(pieces.first ?? "").isEmpty || pieces.count == 2 else {
            throw TimeParseError(text: original, reason: "it is not a number")
        }
        let wholeText = pieces[0].isEmpty ? "0" : pieces[0]
        let fracText = pieces.count == 2 ? pieces[1] : ""
        guard wholeText.allSatisfy(\.isASCIIDigit), fracText.allSatisfy(\.isASCIIDigit),
              !(pieces.count == 2 && fracText.isEmpty && pieces[0].isEmpty) else {
            throw TimeParseError(text: original, reason: "it is not a number")
        }
        guard fracText.count <= 9 else {
            throw TimeParseError(text: original, reason: "at most 9 decimal places are allowed")
        }
        guard let whole = Int64(wholeText) else { throw TimeParseError(text: original, reason: "it is too large") }
        var scale: Int64 = 1
        for _ in 0..<fracText.count { scale *= 10 }
        let frac = fracText.isEmpty ? 0 : Int64(fracText)!
        let (scaled, o1) = whole.multipliedReportingOverflow(by: scale)
        let (total, o2) = scaled.addingReportingOverflow(frac)
        guard !o1, !o2 else { throw TimeParseError(text: original, reason: "it is too large") }
        return MediaTime(value: negative ? -total : total, timescale: Int32(scale)).reduced
    }

    private static func parseTimecode(_ s: String, original: String) throws(TimeParseError) -> MediaTime {
        var body = Substring(s)
        var negative = false
        if body.first == "-" { negative = true; body = body.dropFirst() }
        let fields = body.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 2 || fields.count == 3 else {
            throw TimeParseError(text: original, reason: "a timecode is HH:MM:SS or MM:SS, with an optional fraction")
        }
        var wholeFields: [Int64] = []
        for f in fields.dropLast() {
            guard !f.isEmpty, f.allSatisfy(\.isASCIIDigit), let v = Int64(f) else {
                throw TimeParseError(text: original, reason: "\"\(f)\" is not a whole number of hours or minutes")
            }
            wholeFields.append(v)
        }
        let secondsField = fields.last!
        guard !secondsField.isEmpty, secondsField.first != "-", secondsField.first != "+" else {
            throw TimeParseError(text: original, reason: "the seconds field is missing")
        }
        let seconds = try parseDecimal(String(secondsField), original: original)
        let minutes = wholeFields.last!
        let hours = wholeFields.count == 2 ? wholeFields[0] : 0
        if fields.count == 3 || wholeFields.count == 2 {
            guard minutes < 60 else { throw TimeParseError(text: original, reason: "minutes must be below 60") }
        }
        guard seconds < MediaTime(value: 60, timescale: 1) else {
            throw TimeParseError(text: original, reason: "seconds must be below 60")
        }
        // MM:SS leaves the minutes unbounded: keep both fields where the sum cannot overflow.
        guard hours < 1_000_000, minutes < 60_000_000 else { throw TimeParseError(text: original, reason: "it is too large") }
        let total = MediaTime(value: hours * 3600 + minutes * 60, timescale: 1) + seconds
        return negative ? -total : total
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
