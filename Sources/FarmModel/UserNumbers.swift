/// Numbers users type (command-line options, config keys, manifest fields, query parameters), parsed in
/// one place with their ranges. A value outside its range, `nan`, `inf`, an exponent, a negative zero or
/// an integer that overflows is refused with a message naming the range, before anything converts it
/// (a `Duration`, an `Int`, a date): nothing a user types can trap.
///
/// The grammar is plain decimal: an optional sign, digits, and for seconds an optional fraction
/// (`2.5`); sizes take a unit (`512M`, `8G`, `1.5T`, binary multiples). `-0` is refused: it means a typo.
public struct NumberRule<Value: Comparable & Sendable>: Sendable {
    /// What the number counts, for messages: "seconds", "bytes", "days"; empty for a plain count.
    public let unit: String
    public let minimum: Value
    /// The minimum itself is not allowed ("greater than 0").
    public let minimumExclusive: Bool
    public let maximum: Value
    let read: @Sendable (Substring) -> Value?
    let show: @Sendable (Value) -> String

    /// The allowed range in words: "from 0 to 86400 seconds", "greater than 0 and at most 3600 seconds".
    public var rangeDescription: String {
        let tail = unit.isEmpty || unit == "bytes" ? "" : " " + unit
        return minimumExclusive ? "greater than \(show(minimum)) and at most \(show(maximum))\(tail)"
            : "from \(show(minimum)) to \(show(maximum))\(tail)"
    }

    /// `text` as a value in range, or why not.
    public func parse(_ text: String) -> Result<Value, NumberError> {
        let trimmed = text.trimmingWhitespace
        guard let value = Self.signedZero(trimmed) ? nil : read(trimmed) else {
            return .failure(NumberError(text: text, expected: expected))
        }
        return check(value).mapError { _ in NumberError(text: text, expected: expected) }
    }

    /// The same rule with a lower maximum (a scoped token's limits), never above this one's.
    public func narrowed(maximum: Value) -> NumberRule {
        NumberRule(unit: unit, minimum: minimum, minimumExclusive: minimumExclusive, maximum: min(maximum, self.maximum), read: read, show: show)
    }

    /// `value` (a number that arrived already parsed, from JSON) when it is in range.
    public func check(_ value: Value) -> Result<Value, NumberError> {
        let low = minimumExclusive ? value > minimum : value >= minimum
        guard low, value <= maximum else { return .failure(NumberError(text: show(value), expected: expected)) }
        return .success(value)
    }

    var expected: String { unit == "bytes" ? "a size \(rangeDescription) (bytes, or with K, M, G, T, P: 512M, 8G)" : "a number \(rangeDescription)" }

    static func signedZero(_ text: Substring) -> Bool {
        guard text.first == "-" else { return false }
        return text.dropFirst().allSatisfy { $0 == "0" || $0 == "." }
    }
}

/// A number refused: what was given and what is expected.
public struct NumberError: Error, Sendable, Equatable, CustomStringConvertible {
    public var text: String
    public var expected: String
    public var description: String { "give \(expected)" }
}

extension NumberRule where Value == Double {
    /// Seconds (or another unit of time) as a plain decimal.
    public static func seconds(_ minimum: Double, _ maximum: Double, exclusive: Bool = false, unit: String = "seconds") -> NumberRule {
        NumberRule(unit: unit, minimum: minimum, minimumExclusive: exclusive, maximum: maximum,
                   read: { Self.decimal($0) }, show: { $0 == $0.rounded() && abs($0) < 1e15 ? String(Int64($0)) : String($0) })
    }

    /// Digits with an optional sign and fraction; no exponent, no `nan` or `inf`, at most 30 characters.
    static func decimal(_ text: Substring) -> Double? {
        guard !text.isEmpty, text.count <= 30 else { return nil }
        var body = text
        if body.first == "-" || body.first == "+" { body = body.dropFirst() }
        let parts = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy(\.isASCIIDigit) else { return nil }
        if parts.count == 2 { guard !parts[1].isEmpty, parts[1].allSatisfy(\.isASCIIDigit) else { return nil } }
        guard let value = Double(String(text)), value.isFinite else { return nil }
        return value
    }
}

extension NumberRule where Value: FixedWidthInteger {
    /// A whole number.
    public static func integer(_ minimum: Value, _ maximum: Value, unit: String = "") -> NumberRule {
        NumberRule(unit: unit, minimum: minimum, minimumExclusive: false, maximum: maximum,
                   read: { text in
                       var digits = text
                       if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
                       guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit) else { return nil }
                       return Value(String(text))   // nil when it overflows
                   }, show: { String($0) })
    }
}

extension NumberRule where Value == UInt64 {
    /// Bytes: digits with an optional fraction and unit (K, M, G, T, P: powers of 1024; an optional
    /// `B` or `iB` after it), "0" for none where the option allows it.
    public static func bytes(_ minimum: UInt64, _ maximum: UInt64) -> NumberRule {
        NumberRule(unit: "bytes", minimum: minimum, minimumExclusive: false, maximum: maximum,
                   read: { Self.size($0) }, show: { ByteSize.format($0) })
    }

    static func size(_ text: Substring) -> UInt64? {
        var body = Substring(text.uppercased())
        if body.hasSuffix("IB") { body = body.dropLast(2) } else if body.hasSuffix("B") { body = body.dropLast() }
        var scale: Double = 1
        if let last = body.last, let power = "KMGTP".firstIndex(of: last) {
            scale = Double(UInt64(1) << (10 * ("KMGTP".distance(from: "KMGTP".startIndex, to: power) + 1)))
            body = body.dropLast()
        }
        guard body.first != "-", body.first != "+", let number = NumberRule<Double>.decimal(body) else { return nil }
        let bytes = (number * scale).rounded(.down)
        // Past what UInt64 holds: the range check refuses it (UInt64(bytes) would trap).
        return bytes < 1.8e19 ? UInt64(bytes) : .max
    }
}

/// Sizes in words: 8G, 512M, 1000.
public enum ByteSize {
    public static func format(_ bytes: UInt64) -> String {
        for (power, unit) in zip([50, 40, 30, 20, 10], ["P", "T", "G", "M", "K"]) where bytes >= 1 << power && bytes % (1 << power) == 0 {
            return "\(bytes >> power)\(unit)"
        }
        return String(bytes)
    }
}

/// The ranges of every number MediaFarm takes from users. The command line, configs, manifests, the
/// HTTP API and the OpenAPI document use these.
public enum UserNumbers {
    /// Ten years: no date past what RFC 3339 (year 9999) and both queues hold.
    public static let delay = NumberRule<Double>.seconds(0, 315_360_000)
    /// One attempt's time: up to a year.
    public static let timeout = NumberRule<Double>.seconds(0, 31_536_000, exclusive: true)
    public static let grace = NumberRule<Double>.seconds(0, 86_400)
    /// `coordinator --exit-after-idle`.
    public static let idleExit = NumberRule<Double>.seconds(0, 86_400)
    public static let lease = NumberRule<Double>.seconds(1, 86_400)
    /// A short wait (a stall, a read, a request, a backoff): above 0, up to a day.
    public static let wait = NumberRule<Double>.seconds(0, 86_400, exclusive: true)
    /// A media duration or a length of time to keep going: up to ten years.
    public static let duration = NumberRule<Double>.seconds(0, 315_360_000)
    public static let positiveDuration = NumberRule<Double>.seconds(0, 315_360_000, exclusive: true)
    public static let chunkSeconds = NumberRule<Double>.seconds(2, 3600)
    public static let keepDays = NumberRule<Double>.seconds(0, 36_500, unit: "days")
    public static let retryHours = NumberRule<Double>.seconds(0, 8760, exclusive: true, unit: "hours")
    /// How long a browser session may go unused: a minute to a week.
    public static let sessionIdleMinutes = NumberRule<Double>.seconds(1, 10_080, unit: "minutes")
    /// The slowest a request's body may arrive, in bytes a second (0: no floor).
    public static let bodyRate = NumberRule<Double>.seconds(0, 1_073_741_824, unit: "bytes a second")
    /// Memory, file and disk sizes: up to 1 EiB (0 where an option says "0: none").
    public static let bytes = NumberRule<UInt64>.bytes(0, 1 << 60)
    public static let priority = NumberRule<Int>.integer(-1_000_000_000, 1_000_000_000)
    public static let attempts = NumberRule<Int>.integer(1, 1000)
    public static let workers = NumberRule<Int>.integer(1, 1024)
    public static let cpuSeconds = NumberRule<UInt64>.integer(0, 31_536_000, unit: "seconds")
    public static let threads = NumberRule<Int>.integer(1, 256)
    public static let jobsPerWorker = NumberRule<Int>.integer(1, 1_000_000)
    public static let claimAhead = NumberRule<Int>.integer(0, 1000)
    public static let limit = NumberRule<Int>.integer(1, 1_000_000)
    public static let maxCodes = NumberRule<Int>.integer(1, 1000)
    public static let jobID = NumberRule<Int64>.integer(1, Int64.max)
    /// A still picture's quality, from 0 (smallest) to 1 (best).
    public static let quality = NumberRule<Double>.seconds(0, 1, unit: "")
    /// A side of a picture's bounding box in pixels; 0 for no bound.
    public static let pictureSide = NumberRule<Int>.integer(0, 16_384, unit: "pixels")
    /// How many pictures one request makes.
    public static let pictureCount = NumberRule<Int>.integer(1, 100_000)
    /// A storyboard tile's width in pixels.
    public static let tileWidth = NumberRule<Int>.integer(16, 3840, unit: "pixels")
    /// Tiles across or down a storyboard sheet.
    public static let sheetTiles = NumberRule<Int>.integer(1, 100)
    /// Seconds between a live recording's stills.
    public static let stillInterval = NumberRule<Double>.seconds(0.1, 86_400)
    /// A time in a file to see a still picture at (48 hours, as a manifest's times).
    public static let stillTime = NumberRule<Double>.seconds(0, 172_800)
    /// Seconds between a live recording's levels events.
    public static let levelsInterval = NumberRule<Double>.seconds(0.05, 3600)
    /// A waveform's columns and rows.
    public static let waveformWidth = NumberRule<Int>.integer(16, 16_384, unit: "pixels")
    public static let waveformHeight = NumberRule<Int>.integer(16, 4096, unit: "pixels")
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension String {
    var trimmingWhitespace: Substring {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s = s.dropFirst() }
        while let c = s.last, c.isWhitespace { s = s.dropLast() }
        return s
    }
}
