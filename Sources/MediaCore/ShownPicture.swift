import MediaTime

/// A video track's picture as it is shown: its samples widened (or narrowed) by their aspect ratio, then
/// turned upright as the track says. The one place the display size is worked out, for pictures and for
/// streaming ladders alike.
public struct ShownPicture: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    /// Clockwise quarter turns that make the stored picture upright (0 to 3).
    public var quarterTurns: Int

    public init(width: Int, height: Int, quarterTurns: Int) {
        (self.width, self.height, self.quarterTurns) = (width, height, quarterTurns)
    }

    /// A stored `width` x `height` picture, its samples `sampleAspect` wide, turned by `rotation` degrees
    /// counter-clockwise (FFmpeg's sense; the display turns it back, clockwise); nil: not turned.
    public init(width: Int, height: Int, sampleAspect: Rational?, rotation: Double?) {
        let sar = sampleAspect.map { Double($0.numerator) / Double($0.denominator) } ?? 1
        var shownWidth = Double(width) * (sar > 0 && sar.isFinite ? sar : 1), shownHeight = Double(height)
        let turns = rotation.map { ((Int((-$0 / 90).rounded()) % 4) + 4) % 4 } ?? 0
        if turns % 2 == 1 { swap(&shownWidth, &shownHeight) }
        // A sample aspect no picture has (a crafted file's 2147483647:1) is held to what fits the arithmetic.
        (self.width, self.height, quarterTurns) = (Int(min(shownWidth.rounded(), 1e9)), Int(min(shownHeight.rounded(), 1e9)), turns)
    }

    public var description: String { "\(width)x\(height)" + (quarterTurns == 0 ? "" : " turned \(quarterTurns * 90)°") }
}

extension StreamInfo {
    /// The track's picture as shown; `turned` false: its rotation is not applied.
    public func shown(turned: Bool = true) -> ShownPicture {
        ShownPicture(width: width, height: height, sampleAspect: sampleAspectRatio, rotation: turned ? rotation : nil)
    }
}
