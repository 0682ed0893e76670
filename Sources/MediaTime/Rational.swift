/// An exact fraction with 32-bit parts: a time base, a frame rate, a playback rate.
/// The denominator is kept positive; the value is not reduced unless asked (`reduced`).
public struct Rational: Sendable, Hashable, Codable, CustomStringConvertible {
    public var numerator: Int32
    public var denominator: Int32

    public init(_ numerator: Int32, _ denominator: Int32) {
        if denominator < 0 {
            self.numerator = -numerator
            self.denominator = -denominator
        } else {
            self.numerator = numerator
            self.denominator = denominator
        }
    }

    public var isValid: Bool { denominator != 0 }
    public var doubleValue: Double { Double(numerator) / Double(denominator) }
    public var inverted: Rational { Rational(denominator, numerator) }

    public var reduced: Rational {
        guard denominator != 0, numerator != 0 else { return self }
        let g = Int32(gcd(UInt64(numerator.magnitude), UInt64(denominator.magnitude)))
        return Rational(numerator / g, denominator / g)
    }

    public var description: String { "\(numerator)/\(denominator)" }

    /// The time one unit of this rate lasts: the frame duration of a frame rate.
    public var period: MediaTime {
        guard numerator > 0, denominator > 0 else { return .invalid }
        return MediaTime(value: Int64(denominator), timescale: numerator)
    }
}
