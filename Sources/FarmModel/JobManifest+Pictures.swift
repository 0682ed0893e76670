import MediaTime

/// Pictures a job makes of its input (`"images"`, `"poster"`, `"storyboard"`), with AVAssetImageGenerator's
/// semantics: times in the input's time, tolerances before and after (none given: the nearest keyframe,
/// one frame decoded), a box the picture fits in with the display aspect kept.
extension JobManifest {
    /// How a picture is written.
    public struct PictureStyle: Sendable, Hashable {
        /// The box a picture fits in; 0 for a side leaves it unbounded.
        public var maxWidth = 0
        public var maxHeight = 0
        public var format: PictureFormat = .jpeg
        /// From 0 to 1 (JPEG, WebP).
        public var quality = 0.85
        public init() {}
    }

    /// How far from its time a picture may be; nil: any distance (the nearest keyframe).
    public struct PictureTolerance: Sendable, Hashable {
        public var before: MediaTime?
        public var after: MediaTime?
        public init(before: MediaTime? = nil, after: MediaTime? = nil) { (self.before, self.after) = (before, after) }
    }

    public enum ImageTimes: Sendable, Hashable {
        /// These times, in this order.
        case times([MediaTime])
        /// One every this long, from 0 while inside the movie.
        case every(MediaTime)
        /// This many spread over the movie, each in the middle of its part.
        case count(Int)
    }

    /// `"images"`: pictures at times, written to `output` with `{index}` (1, 2, ...) in its name.
    public struct ImagesSettings: Sendable, Hashable {
        public var times: ImageTimes
        public var tolerance = PictureTolerance()
        public var style = PictureStyle()
        /// A path (or object address) with `{index}` in its last part, unless there is one time.
        public var output: String

        public init(times: ImageTimes, output: String) { (self.times, self.output) = (times, output) }

        /// How many pictures, when the manifest says (nil: `every` over a movie whose length the job learns).
        public var staticCount: Int? {
            switch times {
            case .times(let list): list.count
            case .count(let n): n
            case .every: nil
            }
        }
    }

    /// `"poster"`: one picture that stands for the movie.
    public struct PosterSettings: Sendable, Hashable {
        /// nil: "auto", a representative frame in the middle third (not black, not a fade, not a blank card).
        public var at: MediaTime?
        public var tolerance = PictureTolerance()
        public var style = PictureStyle()
        public var output: String

        public init(at: MediaTime?, output: String) { (self.at, self.output) = (at, output) }
    }

    /// `"storyboard"`: sprite sheets of small tiles over the movie, a WebVTT file with `#xywh=` fragments
    /// (`output`, ending in .vtt) and a JSON index beside it; the sheets are `NAME-1.jpg` and on.
    public struct StoryboardSettings: Sendable, Hashable {
        /// A tile every this long; nil with `tiles` nil: 50 tiles under 15 minutes, 100 above (as Mux).
        public var every: MediaTime?
        public var tiles: Int?
        public var tileWidth = 160
        public var columns = 10
        public var rows = 10
        public var format: PictureFormat = .jpeg
        public var quality = 0.7
        public var output: String
        /// Under a coordinator: made in parts of about this much of the movie (whole sheets), each a job of
        /// its own that any worker of any host runs, then joined (`chunkSeconds`).
        public var chunkSeconds: MediaTime?
        /// One part of a storyboard made in parts: only these tiles (set by the coordinator).
        public var part: Range<Int>?
        /// The parts, made already, in order: join them into this storyboard (set by the coordinator on the
        /// last run; `frames` are their tiles).
        public var join: [JoinedChunk] = []

        public init(output: String) { self.output = output }

        /// The sheets' path pattern: `NAME-{index}.EXT` beside the WebVTT file.
        public var sheetPattern: String { Self.stem(output) + "-{index}." + format.fileExtension }
        /// The JSON index: `NAME.json` beside the WebVTT file.
        public var indexPath: String { Self.stem(output) + ".json" }

        static func stem(_ vtt: String) -> String { vtt.hasSuffix(".vtt") ? String(vtt.dropLast(4)) : vtt }
    }

    /// `"waveform"`: a picture of the input's sound (PNG or SVG, by `output`'s extension), and its peaks as
    /// JSON (`peaks`, audiowaveform's format).
    public struct WaveformSettings: Sendable, Hashable {
        public var width = 1800
        public var height = 140
        public var output: String
        public var peaks: String?
        public init(output: String) { self.output = output }
        public var isSVG: Bool { output.lowercased().hasSuffix(".svg") }
    }

    /// Whether the job makes any picture of its input.
    public var makesPictures: Bool { images != nil || poster != nil || storyboard != nil || waveform != nil }
    /// Whether it writes any picture: of its input, or of its export (`export.poster`).
    public var writesPictures: Bool { makesPictures || export?.poster != nil || scan?.images != nil }

    /// Every file the job writes, and every pattern of its numbered files (with `{index}`), as the manifest
    /// resolved them, and a package's folder as a folder (`OutputClaim`): two live jobs may not write one
    /// (the queue refuses the second at submission).
    public var writes: [String] {
        var files: [String] = []
        if let output = export?.output { files.append(output) }
        if let package = stream?.output { files.append(OutputClaim.folder(package)) }
        if let report { files.append(report) }
        if let poster { files.append(poster.output) }
        if let exportPoster = export?.poster { files.append(exportPoster.output) }
        if let waveform { files += [waveform.output] + (waveform.peaks.map { [$0] } ?? []) }
        if let storyboard { files += [storyboard.output, storyboard.indexPath, storyboard.sheetPattern] }
        if let images { files.append(images.output) }
        if let scanImages = scan?.images { files.append(scanImages.output) }
        var seen = Set<String>()
        return files.filter { seen.insert($0).inserted }
    }
}

/// A still picture's file format.
public enum PictureFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case jpeg, png, webp

    public var fileExtension: String { self == .jpeg ? "jpg" : rawValue }

    /// The format a file's name gives: .jpg or .jpeg, .png, .webp, in any case; nil for any other name.
    public init?(fileName: String) {
        let name = fileName.split(separator: "/").last.map(String.init) ?? fileName
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "webp": self = .webp
        default: return nil
        }
    }
}

/// Outputs a job writes whose number it learns as it runs (pictures every N seconds, a storyboard's
/// sheets): their names are the manifest's pattern with `{index}` from 1, so the coordinator derives
/// every name from the manifest and the counts the worker reports, never from names the worker gives.
public struct NumberedOutputs: Sendable, Codable, Hashable {
    /// `images.output`'s pictures.
    public var images: Int?
    /// `storyboard`'s sheets.
    public var sheets: Int?
    /// `scan.images`: a picture per code found.
    public var codes: Int?

    public init(images: Int? = nil, sheets: Int? = nil, codes: Int? = nil) { (self.images, self.sheets, self.codes) = (images, sheets, codes) }

    /// The most of either one job may write.
    public static let limit = 100_000

    /// `pattern` with `{index}` replaced by `index` (1-based).
    public static func path(_ pattern: String, index: Int) -> String {
        pattern.replacingOccurrences(of: "{index}", with: String(index))
    }

    /// Whether `path` is `pattern` with `{index}` a whole number from 1.
    public static func matches(_ path: String, pattern: String) -> Bool {
        guard let range = pattern.range(of: "{index}") else { return path == pattern }
        let head = pattern[..<range.lowerBound], tail = pattern[range.upperBound...]
        guard path.hasPrefix(head), path.hasSuffix(tail), path.count > head.count + tail.count else { return false }
        let middle = path.dropFirst(head.count).dropLast(tail.count)
        return middle.allSatisfy(\.isASCII) && middle.allSatisfy(\.isNumber) && middle.first != "0"
    }
}
