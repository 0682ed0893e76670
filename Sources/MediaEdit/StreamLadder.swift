import MediaCore
import MediaTime

/// What a package does with a rung whose picture would be larger than the source's.
public enum LargerRungs: String, Sendable, Hashable, CaseIterable, Codable {
    /// Refuse the package before any work, naming the rung and the source's size.
    case refuse
    /// Leave the rung out (the report names it), as a per-title ladder would.
    case skip
    /// Enlarge the source to the rung's size.
    case upscale
}

/// A ladder fitted to one source: each rung's picture in the source's display aspect (its samples'
/// aspect and its rotation applied, so a portrait phone clip gives portrait rungs), never larger than
/// the source unless asked, in even sizes.
public struct StreamLadder: Sendable, Hashable {
    /// The source's picture as it is shown: square samples, upright.
    public var display: (width: Int, height: Int) { (displayWidth, displayHeight) }
    public let displayWidth: Int
    public let displayHeight: Int
    /// Clockwise quarter turns that make the stored picture upright.
    public let quarterTurns: Int
    /// The rungs made, each with its fitted size, and the ones left out (`LargerRungs.skip`), by place.
    public let rungs: [StreamRung]
    public let skipped: [Int]

    /// Fits `asked` (a side given as 0 follows the aspect; both given: the largest picture inside that box)
    /// to `source`, the first video track of the composition.
    public init(_ asked: [StreamRung], source: StreamInfo, larger: LargerRungs) throws(ExportError) {
        try self.init(asked, picture: source.shown(), larger: larger)
    }

    /// A stored `width` x `height` picture, its samples `sampleAspect` wide, shown turned by `rotation`
    /// degrees counter-clockwise (FFmpeg's sense).
    init(_ asked: [StreamRung], width: Int, height: Int, sampleAspect: Rational?, rotation: Double?, larger: LargerRungs) throws(ExportError) {
        try self.init(asked, picture: ShownPicture(width: width, height: height, sampleAspect: sampleAspect, rotation: rotation), larger: larger)
    }

    init(_ asked: [StreamRung], picture: ShownPicture, larger: LargerRungs) throws(ExportError) {
        try self.init(asked, displayWidth: picture.width, displayHeight: picture.height, quarterTurns: picture.quarterTurns, larger: larger)
    }

    /// The source's picture as shown.
    public var picture: ShownPicture { ShownPicture(width: displayWidth, height: displayHeight, quarterTurns: quarterTurns) }

    public init(_ asked: [StreamRung], displayWidth: Int, displayHeight: Int, quarterTurns: Int = 0, larger: LargerRungs) throws(ExportError) {
        guard displayWidth > 0, displayHeight > 0 else { throw ExportError("the source's picture has no size") }
        (self.displayWidth, self.displayHeight, self.quarterTurns) = (displayWidth, displayHeight, quarterTurns)
        var fitted: [StreamRung] = [], skipped: [Int] = []
        let aspect = Double(displayWidth) / Double(displayHeight)
        for (i, rung) in asked.enumerated() {
            var made = rung
            switch (rung.width, rung.height) {
            case (0, 0): (made.width, made.height) = (Self.even(Double(displayWidth)), Self.even(Double(displayHeight)))
            case (0, let h): (made.width, made.height) = (Self.even(Double(h) * aspect), h)
            case (let w, 0): (made.width, made.height) = (w, Self.even(Double(w) / aspect))
            case (let w, let h):
                let scale = min(Double(w) / Double(displayWidth), Double(h) / Double(displayHeight))
                (made.width, made.height) = (Self.even(Double(displayWidth) * scale), Self.even(Double(displayHeight) * scale))
            }
            guard (2...8192).contains(made.width), (2...8192).contains(made.height) else {
                throw ExportError("rung \(i + 1) comes out \(made.width)x\(made.height) in the source's aspect (\(displayWidth)x\(displayHeight) "
                                  + "as shown), outside 2 to 8192 a side: give it both sides, or another size")
            }
            // A side one sample over the source is its rounding to an even size, not an enlargement.
            if made.width > displayWidth + 1 || made.height > displayHeight + 1 {
                switch larger {
                case .upscale: break
                case .skip:
                    skipped.append(i)
                    continue
                case .refuse:
                    throw ExportError("rung \(i + 1) (\(made.width)x\(made.height)) is larger than the source's picture (\(displayWidth)x\(displayHeight) "
                                      + "as shown): a ladder never enlarges unless asked; leave the rung out, or set \"larger\" to \"skip\" "
                                      + "(rungs larger than each source are left out) or \"upscale\"")
                }
            }
            fitted.append(made)
        }
        guard !fitted.isEmpty else {
            throw ExportError("every rung is larger than the source's picture (\(displayWidth)x\(displayHeight) as shown), so none is left; "
                              + "add a rung at or below that size, or set \"larger\" to \"upscale\"")
        }
        (rungs, self.skipped) = (fitted, skipped)
    }

    /// The nearest even size, at least 2 (H.264 4:2:0 needs even sides).
    static func even(_ size: Double) -> Int { max(2, Int((size / 2).rounded()) * 2) }
}

extension StreamSettings {
    /// A frame rate a package is made at when none is asked: the source's average, snapped to the
    /// standard rate within 0.5% of it (a phone's 29.87 is 30000/1001), else to whole frames per second;
    /// 30 when the source does not say or says something outside 1 to 120.
    public static func frameDuration(of source: StreamInfo) -> MediaTime {
        guard let rate = source.averageFrameRate ?? source.realFrameRate, rate.denominator != 0 else { return MediaTime(value: 1, timescale: 30) }
        let fps = Double(rate.numerator) / Double(rate.denominator)
        guard fps.isFinite, fps >= 1, fps <= 120 else { return MediaTime(value: 1, timescale: 30) }
        let standard: [(Double, MediaTime)] = [(24000.0 / 1001, MediaTime(value: 1001, timescale: 24000)), (24, MediaTime(value: 1, timescale: 24)),
                                               (25, MediaTime(value: 1, timescale: 25)), (30000.0 / 1001, MediaTime(value: 1001, timescale: 30000)),
                                               (30, MediaTime(value: 1, timescale: 30)), (50, MediaTime(value: 1, timescale: 50)),
                                               (60000.0 / 1001, MediaTime(value: 1001, timescale: 60000)), (60, MediaTime(value: 1, timescale: 60))]
        if let near = standard.min(by: { abs($0.0 - fps) < abs($1.0 - fps) }), abs(near.0 - fps) / near.0 <= 0.005 { return near.1 }
        return MediaTime(value: 1, timescale: Int32(fps.rounded()))
    }
}

/// The levels of a rung's codec as their encoders take them (41 for 4.1), and the lowest that holds a rung.
public enum RungLevel {
    /// HEVC's levels (H.265 Annex A, tables A.8 and A.9, Main tier): (level, most luma samples a picture, most
    /// luma samples a second, peak bit rate and largest coded picture buffer of the Main profile, in bits).
    static let hevc: [(level: Int, pictureSamples: Int, samplesPerSecond: Int, bits: Int, buffer: Int)] = [
        (10, 36_864, 552_960, 128_000, 350_000), (20, 122_880, 3_686_400, 1_500_000, 1_500_000), (21, 245_760, 7_372_800, 3_000_000, 3_000_000),
        (30, 552_960, 16_588_800, 6_000_000, 6_000_000), (31, 983_040, 33_177_600, 10_000_000, 10_000_000),
        (40, 2_228_224, 66_846_720, 12_000_000, 10_000_000), (41, 2_228_224, 133_693_440, 20_000_000, 12_000_000),
        (50, 8_912_896, 267_386_880, 25_000_000, 25_000_000), (51, 8_912_896, 534_773_760, 40_000_000, 40_000_000),
        (52, 8_912_896, 1_069_547_520, 60_000_000, 60_000_000), (60, 35_651_584, 1_069_547_520, 60_000_000, 60_000_000),
        (61, 35_651_584, 2_139_095_040, 120_000_000, 120_000_000), (62, 35_651_584, 4_278_190_080, 240_000_000, 240_000_000)]
    /// AV1's levels (AV1 Annex A.3, Main tier): (level, most samples a picture, widest, tallest, most samples shown
    /// a second, peak bit rate in bits a second).
    static let av1: [(level: Int, pictureSamples: Int, width: Int, height: Int, samplesPerSecond: Int, bits: Int)] = [
        (20, 147_456, 2048, 1152, 4_423_680, 1_500_000), (21, 278_784, 2816, 1584, 8_363_520, 3_000_000),
        (30, 665_856, 4352, 2448, 19_975_680, 6_000_000), (31, 1_065_024, 5504, 3096, 31_950_720, 10_000_000),
        (40, 2_359_296, 6144, 3456, 70_778_880, 12_000_000), (41, 2_359_296, 6144, 3456, 141_557_760, 20_000_000),
        (50, 8_912_896, 8192, 4352, 267_386_880, 30_000_000), (51, 8_912_896, 8192, 4352, 534_773_760, 40_000_000),
        (52, 8_912_896, 8192, 4352, 1_069_547_520, 60_000_000), (53, 8_912_896, 8192, 4352, 1_069_547_520, 60_000_000),
        (60, 35_651_584, 16384, 8704, 1_069_547_520, 60_000_000), (61, 35_651_584, 16384, 8704, 2_139_095_040, 100_000_000),
        (62, 35_651_584, 16384, 8704, 4_278_190_080, 160_000_000), (63, 35_651_584, 16384, 8704, 4_278_190_080, 160_000_000)]

    public static func known(_ codec: StreamRung.Codec) -> [Int] {
        switch codec {
        case .h264: H264Level.known
        case .hevc: hevc.map(\.level)
        case .av1: av1.map(\.level)
        }
    }

    /// "4.1" for 41.
    public static func name(_ level: Int) -> String { "\(level / 10).\(level % 10)" }

    /// The lowest level of `codec` that holds `width` x `height` at `framesPerSecond` with a peak of
    /// `maxBitRate` (and for HEVC, a buffer of `bufferSize` bits: x265 otherwise signals the High tier, or
    /// shrinks the buffer); nil when none does.
    public static func lowest(_ codec: StreamRung.Codec, width: Int, height: Int, framesPerSecond: Double, maxBitRate: Int, bufferSize: Int,
                              profile: String) -> Int? {
        let samples = width * height, perSecond = Double(samples) * framesPerSecond
        switch codec {
        case .h264:
            return H264Level.lowest(width: width, height: height, framesPerSecond: framesPerSecond, maxBitRate: maxBitRate, profile: profile)
        case .hevc:
            // A side at most the square root of 8 pictures' samples (A.4.1).
            return hevc.first { l in
                let side = Int((8 * Double(l.pictureSamples)).squareRoot())
                return samples <= l.pictureSamples && width <= side && height <= side && perSecond <= Double(l.samplesPerSecond) && maxBitRate <= l.bits
                    && bufferSize <= l.buffer
            }?.level
        case .av1:
            return av1.first { l in
                samples <= l.pictureSamples && width <= l.width && height <= l.height && perSecond <= Double(l.samplesPerSecond) && maxBitRate <= l.bits
            }?.level
        }
    }
}

/// H.264's levels (Annex A, table A-1) as the encoder takes them (40 for 4.0).
public enum H264Level {
    /// (level, most macroblocks a second, most macroblocks a frame, peak bit rate in kbit/s for Baseline
    /// and Main; High may go 1.25 times higher).
    static let table: [(level: Int, macroblocksPerSecond: Int, macroblocksPerFrame: Int, kilobits: Int)] = [
        (10, 1485, 99, 64), (11, 3000, 396, 192), (12, 6000, 396, 384), (13, 11880, 396, 768), (20, 11880, 396, 2000),
        (21, 19800, 792, 4000), (22, 20250, 1620, 4000), (30, 40500, 1620, 10000), (31, 108000, 3600, 14000),
        (32, 216000, 5120, 20000), (40, 245760, 8192, 20000), (41, 245760, 8192, 50000), (42, 522240, 8704, 50000),
        (50, 589824, 22080, 135000), (51, 983040, 36864, 240000), (52, 2073600, 36864, 240000), (60, 4177920, 139264, 240000),
        (61, 8355840, 139264, 480000), (62, 16711680, 139264, 800000)]

    public static let known = table.map(\.level)

    /// "4.0" for 40.
    public static func name(_ level: Int) -> String { "\(level / 10).\(level % 10)" }

    /// The lowest level that holds `width` x `height` at `framesPerSecond` with a peak of `maxBitRate`; nil
    /// when none does.
    public static func lowest(width: Int, height: Int, framesPerSecond: Double, maxBitRate: Int, profile: String) -> Int? {
        let frame = ((width + 15) / 16) * ((height + 15) / 16)
        let perSecond = Double(frame) * framesPerSecond
        let factor = profile == "high" ? 1.25 : 1
        return table.first { l in
            frame <= l.macroblocksPerFrame && perSecond <= Double(l.macroblocksPerSecond) && Double(maxBitRate) <= Double(l.kilobits) * 1000 * factor
        }?.level
    }
}
