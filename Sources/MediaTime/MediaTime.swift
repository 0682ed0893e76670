/// A point or span of media time as an exact rational number of seconds: `value / timescale`.
///
/// Like CMTime: besides numeric times there are `.invalid`, `.positiveInfinity` and `.negativeInfinity`.
/// Comparison and equality are exact (1/2 == 2/4). Arithmetic is exact whenever the result fits an
/// Int64 value over an Int32 timescale; otherwise it is rounded to the larger of the operands'
/// timescales (half away from zero) and `isRounded` is set on the result.
/// Never carry time as `Double` inside the engine; `seconds` is for display and reports only.
public struct MediaTime: Sendable {
    public enum Kind: Sendable, Hashable {
        case numeric, invalid, positiveInfinity, negativeInfinity
    }

    public private(set) var value: Int64
    public private(set) var timescale: Int32
    public private(set) var kind: Kind
    /// True when this time came from arithmetic that could not be represented exactly.
    public private(set) var isRounded: Bool = false

    /// `value / timescale` seconds. `timescale` must be positive.
    public init(value: Int64, timescale: Int32) {
        precondition(timescale > 0, "MediaTime timescale must be positive, got \(timescale)")
        self.value = value
        self.timescale = timescale
        self.kind = .numeric
    }

    private init(kind: Kind) {
        self.value = 0
        self.timescale = 1
        self.kind = kind
    }

    public static let zero = MediaTime(value: 0, timescale: 1)
    public static let invalid = MediaTime(kind: .invalid)
    public static let positiveInfinity = MediaTime(kind: .positiveInfinity)
    public static let negativeInfinity = MediaTime(kind: .negativeInfinity)

    public var isValid: Bool { kind != .invalid }
    public var isNumeric: Bool { kind == .numeric }
    public var isInfinite: Bool { kind == .positiveInfinity || kind == .negativeInfinity }

    /// Seconds as a Double, for display and reports. NaN when invalid.
    public var seconds: Double {
        switch kind {
        case .numeric: return Double(value) / Double(timescale)
        case .invalid: return .nan
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        }
    }

    /// The same time with the fraction reduced to lowest terms.
    public var reduced: MediaTime {
        guard kind == .numeric, value != 0 else { return kind == .numeric ? MediaTime(value: 0, timescale: 1) : self }
        let g = gcd(value.magnitude, UInt64(timescale))
        var result = MediaTime(value: value / Int64(g), timescale: Int32(UInt64(timescale) / g))
        result.isRounded = isRounded
        return result
    }
}

// MARK: - Construction from counts in a time base

extension MediaTime {
    /// `count` ticks of `timeBase` seconds each (FFmpeg's pts in a stream time base).
    /// Exact when representable; otherwise rounded to the nearest tick of `timeBase.denominator`.
    public init(count: Int64, timeBase: Rational) {
        precondition(timeBase.numerator > 0 && timeBase.denominator > 0, "time base must be positive")
        let exact = MediaTime.fromFraction(Int128(count) * Int128(timeBase.numerator), Int128(timeBase.denominator),
                                           fallbackTimescale: timeBase.denominator)
        self = exact
    }

    /// This time as a whole number of `timeBase` ticks, rounded as asked. Nil for non-numeric times or
    /// when the count does not fit an Int64.
    public func count(in timeBase: Rational, rounding: TimeRounding = .toNearestOrAwayFromZero) -> Int64? {
        guard kind == .numeric, timeBase.numerator > 0, timeBase.denominator > 0 else { return nil }
        // ticks = value / timescale / (num / den) = value * den / (timescale * num)
        let n = Int128(value) * Int128(timeBase.denominator)
        let d = Int128(timescale) * Int128(timeBase.numerator)
        let q = Self.divide(n, d, rounding: rounding)
        return Int64(exactly: q)
    }

    /// This time expressed with `newTimescale`, rounded as asked.
    public func converted(toTimescale newTimescale: Int32,
                          rounding: TimeRounding = .toNearestOrAwayFromZero) -> MediaTime {
        guard kind == .numeric else { return self }
        guard newTimescale != timescale else { return self }
        let n = Int128(value) * Int128(newTimescale)
        let q = Self.divide(n, Int128(timescale), rounding: rounding)
        guard let v = Int64(exactly: q) else {
            return q > 0 ? .positiveInfinity : .negativeInfinity
        }
        var result = MediaTime(value: v, timescale: newTimescale)
        result.isRounded = isRounded || q * Int128(timescale) != n
        return result
    }
}

// MARK: - Equality, hashing, ordering

extension MediaTime: Hashable, Comparable {
    public static func == (a: MediaTime, b: MediaTime) -> Bool {
        guard a.kind == .numeric, b.kind == .numeric else { return a.kind == b.kind }
        return Int128(a.value) * Int128(b.timescale) == Int128(b.value) * Int128(a.timescale)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        if kind == .numeric {
            let r = reduced
            hasher.combine(r.value)
            hasher.combine(r.timescale)
        }
    }

    /// Total order: negativeInfinity < numeric times < positiveInfinity < invalid.
    public static func < (a: MediaTime, b: MediaTime) -> Bool {
        func rank(_ k: Kind) -> Int {
            switch k {
            case .negativeInfinity: return 0
            case .numeric: return 1
            case .positiveInfinity: return 2
            case .invalid: return 3
            }
        }
        if a.kind != .numeric || b.kind != .numeric { return rank(a.kind) < rank(b.kind) }
        return Int128(a.value) * Int128(b.timescale) < Int128(b.value) * Int128(a.timescale)
    }
}

// MARK: - Arithmetic

extension MediaTime {
    public static func + (a: MediaTime, b: MediaTime) -> MediaTime {
        switch (a.kind, b.kind) {
        case (.invalid, _), (_, .invalid): return .invalid
        case (.positiveInfinity, .negativeInfinity), (.negativeInfinity, .positiveInfinity): return .invalid
        case (.positiveInfinity, _), (_, .positiveInfinity): return .positiveInfinity
        case (.negativeInfinity, _), (_, .negativeInfinity): return .negativeInfinity
        case (.numeric, .numeric): break
        }
        if a.timescale == b.timescale {
            let (sum, overflow) = a.value.addingReportingOverflow(b.value)
            if !overflow {
                var r = MediaTime(value: sum, timescale: a.timescale)
                r.isRounded = a.isRounded || b.isRounded
                return r
            }
        }
        let n = Int128(a.value) * Int128(b.timescale) + Int128(b.value) * Int128(a.timescale)
        let d = Int128(a.timescale) * Int128(b.timescale)
        var r = fromFraction(n, d, fallbackTimescale: Swift.max(a.timescale, b.timescale))
        r.isRounded = r.isRounded || a.isRounded || b.isRounded
        return r
    }

    public static prefix func - (a: MediaTime) -> MediaTime {
        switch a.kind {
        case .invalid: return .invalid
        case .positiveInfinity: return .negativeInfinity
        case .negativeInfinity: return .positiveInfinity
        case .numeric:
            guard a.value != .min else { return .positiveInfinity }
            var r = MediaTime(value: -a.value, timescale: a.timescale)
            r.isRounded = a.isRounded
            return r
        }
    }

    public static func - (a: MediaTime, b: MediaTime) -> MediaTime { a + (-b) }

    public static func += (a: inout MediaTime, b: MediaTime) { a = a + b }
    public static func -= (a: inout MediaTime, b: MediaTime) { a = a - b }

    /// This time multiplied by a rational factor, exact when representable.
    public func multiplied(by factor: Rational) -> MediaTime {
        guard factor.denominator != 0 else { return .invalid }
        switch kind {
        case .invalid: return .invalid
        case .positiveInfinity, .negativeInfinity:
            if factor.numerator == 0 { return .invalid }
            return (factor.numerator > 0) == (kind == .positiveInfinity) ? .positiveInfinity : .negativeInfinity
        case .numeric:
            var n = Int128(value) * Int128(factor.numerator)
            var d = Int128(timescale) * Int128(factor.denominator)
            if d < 0 { n = -n; d = -d }
            var r = Self.fromFraction(n, d, fallbackTimescale: timescale)
            r.isRounded = r.isRounded || isRounded
            return r
        }
    }

    public func multiplied(by factor: Int32) -> MediaTime {
        multiplied(by: Rational(factor, 1))
    }

    /// The ratio of two numeric times as a reduced rational, when it fits Int32/Int32.
    public static func ratio(_ a: MediaTime, _ b: MediaTime) -> Rational? {
        guard a.isNumeric, b.isNumeric, b.value != 0 else { return nil }
        var n = Int128(a.value) * Int128(b.timescale)
        var d = Int128(b.value) * Int128(a.timescale)
        if d < 0 { n = -n; d = -d }
        let g = gcd128(n.magnitude, d.magnitude)
        if g > 1 { n /= Int128(g); d /= Int128(g) }
        guard let nn = Int32(exactly: n), let dd = Int32(exactly: d) else { return nil }
        return Rational(nn, dd)
    }

    public static func min(_ a: MediaTime, _ b: MediaTime) -> MediaTime { b < a ? b : a }
    public static func max(_ a: MediaTime, _ b: MediaTime) -> MediaTime { a < b ? b : a }
}

// MARK: - Helpers

extension MediaTime {
    /// n / d (d > 0) as a MediaTime: exact when the reduced fraction fits, else rounded to `fallbackTimescale`.
    static func fromFraction(_ n: Int128, _ d: Int128, fallbackTimescale: Int32) -> MediaTime {
        precondition(d > 0)
        if n == 0 { return .zero }
        let g = gcd128(n.magnitude, d.magnitude)
        let rn = n / Int128(g), rd = d / Int128(g)
        if let v = Int64(exactly: rn), let t = Int32(exactly: rd) {
            return MediaTime(value: v, timescale: t)
        }
        let scaled = divide(n * Int128(fallbackTimescale), d, rounding: .toNearestOrAwayFromZero)
        guard let v = Int64(exactly: scaled) else { return n > 0 ? .positiveInfinity : .negativeInfinity }
        var r = MediaTime(value: v, timescale: fallbackTimescale)
        r.isRounded = true
        return r
    }

    /// Integer division with a rounding rule; d must be non-zero.
    static func divide(_ n: Int128, _ d: Int128, rounding: TimeRounding) -> Int128 {
        var n = n, d = d
        if d < 0 { n = -n; d = -d }
        let q = n / d, r = n % d   // truncates toward zero
        if r == 0 { return q }
        switch rounding {
        case .towardZero: return q
        case .down: return n < 0 ? q - 1 : q
        case .up: return n > 0 ? q + 1 : q
        case .awayFromZero: return n < 0 ? q - 1 : q + 1
        case .toNearestOrEven:
            let twice = 2 * r.magnitude
            if twice > d.magnitude || (twice == d.magnitude && q % 2 != 0) { return n < 0 ? q - 1 : q + 1 }
            return q
        case .toNearestOrAwayFromZero:
            return 2 * r.magnitude >= d.magnitude ? (n < 0 ? q - 1 : q + 1) : q
        }
    }
}

func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
    var a = a, b = b
    while b != 0 { (a, b) = (b, a % b) }
    return a
}

func gcd128(_ a: UInt128, _ b: UInt128) -> UInt128 {
    var a = a, b = b
    while b != 0 { (a, b) = (b, a % b) }
    return a == 0 ? 1 : a
}

extension MediaTime: CustomStringConvertible {
    /// "5/2 (2.5s)", "+inf", "invalid".
    public var description: String {
        switch kind {
        case .invalid: return "invalid"
        case .positiveInfinity: return "+inf"
        case .negativeInfinity: return "-inf"
        case .numeric: return "\(value)/\(timescale) (\(MediaTime.formatSeconds(seconds))s)"
        }
    }

    /// Seconds with at most 6 decimals and no trailing zeros: 2.5, 0.033367, 10.
    public static func formatSeconds(_ s: Double) -> String {
        guard s.isFinite else { return s.isNaN ? "nan" : (s > 0 ? "inf" : "-inf") }
        var text = String(format6: s)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text == "-0" ? "0" : text
    }
}

extension String {
    /// A fixed six-decimal rendering without Foundation.
    init(format6 value: Double) {
        let negative = value < 0
        let micros = (abs(value) * 1_000_000).rounded()
        guard micros < 9e18 else { self = negative ? "-\(abs(value))" : "\(value)"; return }
        let m = UInt64(micros)
        let whole = m / 1_000_000, frac = m % 1_000_000
        var f = String(frac)
        while f.count < 6 { f = "0" + f }
        self = (negative ? "-" : "") + "\(whole).\(f)"
    }
}

/// How a time that falls between two ticks is rounded.
public enum TimeRounding: Sendable, Hashable {
    case toNearestOrAwayFromZero, toNearestOrEven, towardZero, awayFromZero, down, up
}
