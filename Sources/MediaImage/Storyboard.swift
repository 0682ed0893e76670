import Foundation
import MediaCore
import MediaTime

/// A storyboard: small pictures (tiles) of a movie at even times, laid out in sprite sheets, with a WebVTT
/// file whose cues point into the sheets (`sheet.jpg#xywh=x,y,w,h`, as Video.js, JW Player, Shaka and
/// Jellyfin read it) and a JSON index of the same. Each tile is the keyframe nearest its time: one frame
/// decoded per tile, the file read only where the tiles are.
public struct StoryboardSettings: Sendable, Hashable {
    /// One tile every this many seconds; nil: `tiles` spread over the movie.
    public var every: Double?
    /// How many tiles when `every` is nil; nil: Mux's rule, 50 for a movie under 15 minutes, 100 above.
    public var tiles: Int?
    public var tileWidth = 160
    public var columns = 10
    public var rows = 10
    public var format: StillImageFormat = .jpeg
    public var quality = 0.7

    public init() {}
}

/// A storyboard made: its sheets (encoded) and where each tile is.
public struct Storyboard: Sendable {
    public struct Tile: Codable, Sendable, Hashable {
        /// When the tile stands, in seconds: from its time to the next tile's (the last to the movie's end).
        public var start: Double
        public var end: Double
        /// The time of the frame it shows.
        public var frameTime: Double
        public var sheet: Int
        public var x: Int
        public var y: Int
    }

    /// The JSON index: the layout, the sheets' names and the tiles.
    public struct Index: Codable, Sendable, Hashable {
        public var tileWidth: Int
        public var tileHeight: Int
        public var columns: Int
        public var rows: Int
        public var duration: Double
        public var sheets: [String]
        public var tiles: [Tile]
    }

    public var tileWidth: Int
    public var tileHeight: Int
    public var columns: Int
    public var rows: Int
    public var duration: MediaTime
    public var format: StillImageFormat
    public var sheets: [[UInt8]]
    public var tiles: [Tile]

    /// The index, naming sheet `i` by `sheetName(i)`.
    public func index(sheetName: (Int) -> String) -> Index {
        Index(tileWidth: tileWidth, tileHeight: tileHeight, columns: columns, rows: rows, duration: duration.seconds,
              sheets: sheets.indices.map(sheetName), tiles: tiles)
    }

    /// The WebVTT file: a cue per tile, its text the sheet's name with the tile's rectangle.
    public func webVTT(sheetName: (Int) -> String) -> String {
        Self.webVTT(tiles: tiles, tileWidth: tileWidth, tileHeight: tileHeight, sheetName: sheetName)
    }

    /// The WebVTT file of an index (its sheets' names as it has them).
    public static func webVTT(_ index: Index) -> String {
        webVTT(tiles: index.tiles, tileWidth: index.tileWidth, tileHeight: index.tileHeight, sheetName: { index.sheets[$0] })
    }

    static func webVTT(tiles: [Tile], tileWidth: Int, tileHeight: Int, sheetName: (Int) -> String) -> String {
        var out = "WEBVTT\n"
        for tile in tiles {
            out += "\n\(Self.timestamp(tile.start)) --> \(Self.timestamp(tile.end))\n"
            out += "\(sheetName(tile.sheet))#xywh=\(tile.x),\(tile.y),\(tileWidth),\(tileHeight)\n"
        }
        return out
    }

    /// The index of a storyboard made in parts (each a range of whole sheets, in order), its sheets named
    /// by `sheetName` from 0 across the parts: what one storyboard of the whole would have.
    public static func joined(_ parts: [Index], sheetName: (Int) -> String) throws(ImageGenerationError) -> Index {
        guard let first = parts.first else { throw .unreadable("a storyboard of no parts") }
        var tiles: [Tile] = []
        var sheets = 0
        for part in parts {
            guard part.tileWidth == first.tileWidth, part.tileHeight == first.tileHeight, part.columns == first.columns, part.rows == first.rows else {
                throw .unreadable("the storyboard's parts differ in their layout (tiles \(part.tileWidth)x\(part.tileHeight), not \(first.tileWidth)x\(first.tileHeight))")
            }
            tiles += part.tiles.map { tile in var t = tile; t.sheet += sheets; return t }
            sheets += part.sheets.count
        }
        return Index(tileWidth: first.tileWidth, tileHeight: first.tileHeight, columns: first.columns, rows: first.rows,
                     duration: first.duration, sheets: (0..<sheets).map(sheetName), tiles: tiles)
    }

    /// How many tiles the storyboard of the movie at `path` has, how many a sheet holds, and how long the
    /// movie is (for cutting it into parts of whole sheets).
    public static func plan(path: String, settings: StoryboardSettings, limits: SafetyLimits = .default,
                            interrupter: Interrupter = Interrupter()) throws(ImageGenerationError) -> (tiles: Int, perSheet: Int, duration: MediaTime?) {
        var imageSettings = AssetImageGenerator.Settings()
        imageSettings.maximumWidth = settings.tileWidth
        let generator = try AssetImageGenerator(path: path, settings: imageSettings, limits: limits, interrupter: interrupter)
        return (try times(path: path, duration: generator.duration, settings: settings).count, settings.columns * settings.rows, generator.duration)
    }

    /// The tiles' times, in seconds.
    static func times(path: String, duration: MediaTime?, settings: StoryboardSettings) throws(ImageGenerationError) -> [Double] {
        guard let duration, duration > .zero else {
            throw .unreadable("\(path): the movie does not say how long it is, so its storyboard cannot be spread over it")
        }
        let seconds = duration.seconds
        // Counted before any is made: a tiny interval over a long movie must not fill the memory with times.
        if let every = settings.every, (seconds / every).rounded(.up) > Double(maximumTiles) {
            throw .tooManyPictures(Int(min((seconds / every).rounded(.up), 1e15)), limit: maximumTiles)
        }
        if let tiles = settings.tiles, tiles > maximumTiles { throw .tooManyPictures(tiles, limit: maximumTiles) }
        if let every = settings.every { return stride(from: 0.0, to: seconds, by: every).map { $0 } }
        let n = settings.tiles ?? (seconds < 15 * 60 ? 50 : 100)
        return (0..<n).map { seconds * Double($0) / Double(n) }
    }

    /// hh:mm:ss.ttt, as WebVTT writes a time.
    static func timestamp(_ seconds: Double) -> String {
        let ms = Int64((max(0, seconds) * 1000).rounded())
        return String(format: "%02lld:%02lld:%02lld.%03lld", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }

    /// The most tiles one storyboard has.
    public static let maximumTiles = 100_000

    /// Makes the storyboard of the movie at `path`. `progress` is called with the fraction done.
    /// `part`: only these tiles (a range of whole sheets, from `plan`), their sheets numbered from 0: one part
    /// of a storyboard made in parts (`joined`).
    public static func make(path: String, settings: StoryboardSettings, part: Range<Int>? = nil, limits: SafetyLimits = .default,
                            interrupter: Interrupter = Interrupter(),
                            progress: (Double) -> Void = { _ in }) throws(ImageGenerationError) -> Storyboard {
        var imageSettings = AssetImageGenerator.Settings()
        imageSettings.maximumWidth = settings.tileWidth
        let generator = try AssetImageGenerator(path: path, settings: imageSettings, limits: limits, interrupter: interrupter)
        let times = try Self.times(path: path, duration: generator.duration, settings: settings)
        let duration = generator.duration!
        let seconds = duration.seconds
        let range = part ?? 0..<times.count
        guard range.lowerBound >= 0, range.upperBound <= times.count, !range.isEmpty,
              range.lowerBound % (settings.columns * settings.rows) == 0 else {
            throw .unreadable("\(path): tiles \(range.lowerBound)..<\(range.upperBound) are not whole sheets of its \(times.count) tiles")
        }
        // Tiles are made small: a tile is as wide as asked (never wider than the movie) and as high as the display's aspect gives.
        let (tw, th) = generator.imageSize
        let perSheet = settings.columns * settings.rows
        var sheets: [[UInt8]] = []
        var tiles: [Tile] = []
        let converter = PictureConverter()
        var sheet = Frame()
        var tile = Frame()
        var inSheet = 0
        func finishSheet() throws(ImageGenerationError) {
            guard inSheet > 0 else { return }
            do {
                sheets.append(try StillImageEncoder.encode(sheet, as: settings.format, quality: settings.quality, converter: converter))
            } catch {
                throw .encoding("\(path): storyboard sheet \(sheets.count + 1) could not be encoded: \(error)")
            }
            inSheet = 0
        }
        for i in range {
            let time = times[i]
            if inSheet == 0 {
                // The last sheet holds only the rows it needs.
                let left = range.upperBound - i
                let rows = min(settings.rows, (left + settings.columns - 1) / settings.columns)
                let columns = min(settings.columns, left)
                do { sheet = try Frame(width: columns * tw, height: rows * th, pixelFormat: "rgb24") } catch {
                    throw .encoding("\(path): a \(columns * tw)x\(rows * th) storyboard sheet cannot be made: \(error)")
                }
                Self.clear(&sheet)
            }
            let actual = try generator.pixels(at: MediaTime(value: Int64((time * 1000).rounded()), timescale: 1000), into: &tile)
            let x = (inSheet % settings.columns) * tw, y = (inSheet / settings.columns) * th
            Self.place(tile, in: &sheet, x: x, y: y)
            tiles.append(Tile(start: time, end: i + 1 < times.count ? times[i + 1] : seconds, frameTime: actual.seconds,
                              sheet: sheets.count, x: x, y: y))
            inSheet += 1
            if inSheet == perSheet { try finishSheet() }
            progress(Double(i + 1 - range.lowerBound) / Double(range.count))
        }
        try finishSheet()
        return Storyboard(tileWidth: tw, tileHeight: th, columns: settings.columns, rows: settings.rows, duration: duration,
                          format: settings.format, sheets: sheets, tiles: tiles)
    }

    /// Copies the picture `tile` (rgb24) into `sheet` at `x`, `y`.
    static func place(_ tile: borrowing Frame, in sheet: inout Frame, x: Int, y: Int) {
        let w = tile.width, h = tile.height
        _ = tile.withPlane(0) { src, srcStride in
            sheet.withMutablePlane(0) { dst, dstStride in
                for row in 0..<h {
                    (dst + (y + row) * dstStride + x * 3).update(from: src + row * srcStride, count: w * 3)
                }
            }
        }
    }

    /// Black, where no tile goes.
    static func clear(_ sheet: inout Frame) {
        let h = sheet.height
        _ = sheet.withMutablePlane(0) { dst, stride in (dst).update(repeating: 0, count: stride * h) }
    }
}
