import MediaCore
import MediaTime

/// Common metadata keys (AVMetadataCommonIdentifier), read from whichever container tag carries them,
/// plus every raw tag.
public struct AssetMetadata: Sendable, Hashable, Codable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var comment: String?
    public var description: String?
    public var copyright: String?
    public var creationDate: String?
    /// ISO 6709 location ("+37.3349-122.0090/").
    public var location: String?
    public var make: String?
    public var model: String?
    public var software: String?
    /// Every container-level tag as FFmpeg names it.
    public var tags: [String: String]

    init(tags: [String: String]) {
        func first(_ names: String...) -> String? {
            for n in names { if let v = tags[n], !v.isEmpty { return v } }
            return nil
        }
        title = first("title", "com.apple.quicktime.title")
        artist = first("artist", "album_artist", "com.apple.quicktime.artist")
        album = first("album")
        comment = first("comment", "com.apple.quicktime.comment")
        description = first("description", "com.apple.quicktime.description")
        copyright = first("copyright", "com.apple.quicktime.copyright")
        creationDate = first("com.apple.quicktime.creationdate", "creation_time", "date")
        location = first("com.apple.quicktime.location.ISO6709", "location", "location-eng")
        make = first("com.apple.quicktime.make", "make")
        model = first("com.apple.quicktime.model", "model")
        software = first("com.apple.quicktime.software", "encoder", "encoding_tool")
        self.tags = tags
    }
}

/// A chapter marker in asset time.
public struct Chapter: Sendable, Hashable, Codable {
    public var title: String?
    public var start: MediaTime
    public var duration: MediaTime

    init(_ info: ChapterInfo) {
        title = info.title
        start = info.start
        duration = info.end - info.start
    }
}

/// Alternative tracks of one kind, as AVMediaSelectionGroup: audible (audio), legible (subtitles),
/// visual (video). A group is listed when the asset has at least one track of its kind.
public struct MediaSelectionGroup: Sendable, Hashable, Codable {
    public struct Option: Sendable, Hashable, Codable {
        public var trackID: Int
        public var languageCode: String
        public var title: String?
        public var isDefault: Bool
        /// AVMediaCharacteristic's values the option has (`hasMediaCharacteristic`), from the track's kind
        /// and its container's flags (FFmpeg's dispositions): "public.audible", "public.main-program-content",
        /// "public.subtitles.forced-only", "public.accessibility.transcribes-spoken-dialog", …
        public var mediaCharacteristics: [String]
    }

    public var mediaCharacteristic: String
    public var options: [Option]
    /// The option with the default disposition, else the first.
    public var defaultTrackID: Int?

    static func groups(for probe: ProbeResult) -> [MediaSelectionGroup] {
        let kinds: [(MediaType, String)] = [(.audio, "audible"), (.subtitle, "legible"), (.video, "visual")]
        return kinds.compactMap { type, name in
            let options = probe.timedStreams.filter { $0.mediaType == type }.map {
                Option(trackID: $0.index + 1, languageCode: $0.language ?? "und", title: $0.tags["title"], isDefault: $0.isDefault,
                       mediaCharacteristics: mediaCharacteristics($0, kind: "public." + name))
            }
            guard !options.isEmpty else { return nil }
            return MediaSelectionGroup(mediaCharacteristic: name, options: options,
                                       defaultTrackID: defaultTrack(options, isDefault: \.isDefault)?.trackID)
        }
    }
}

/// AVMediaCharacteristic's values a track has, from its kind and its container's flags (FFmpeg's dispositions,
/// which Matroska's FlagForced, FlagHearingImpaired, FlagVisualImpaired, FlagCommentary and FlagOriginal,
/// MP4's `kind` boxes and MPEG-TS descriptors set): a commentary track is auxiliary, every other main
/// programme content; forced subtitles are forced-only; subtitles for the hearing impaired (or captions)
/// transcribe spoken dialog and describe music and sound; audio for the visually impaired describes video.
func mediaCharacteristics(_ stream: StreamInfo, kind: String) -> [String] {
    let flags = Set(stream.dispositions)
    var found = [kind, flags.contains("comment") ? "public.auxiliary-content" : "public.main-program-content"]
    if flags.contains("original") { found.append("public.original-content") }
    if flags.contains("dub") { found += ["public.translation", "public.translation.dubbed"] }
    switch stream.mediaType {
    case .subtitle:
        if flags.contains("forced") { found.append("public.subtitles.forced-only") }
        if flags.contains("hearing_impaired") || flags.contains("captions") {
            found += ["public.accessibility.transcribes-spoken-dialog", "public.accessibility.describes-music-and-sound"]
        }
    case .audio:
        if flags.contains("visual_impaired") || flags.contains("descriptions") { found.append("public.accessibility.describes-video") }
    default: break
    }
    return found
}

/// A picture size in pixels.
public struct Size: Sendable, Hashable, Codable {
    public var width: Int
    public var height: Int
}

/// An affine transform (CGAffineTransform's a, b, c, d, tx, ty), from the container's display matrix.
public struct AffineTransform: Sendable, Hashable, Codable {
    public var a: Double, b: Double, c: Double, d: Double, tx: Double, ty: Double

    public static let identity = AffineTransform(a: 1, b: 0, c: 0, d: 1, tx: 0, ty: 0)

    public init(a: Double, b: Double, c: Double, d: Double, tx: Double, ty: Double) {
        (self.a, self.b, self.c, self.d, self.tx, self.ty) = (a, b, c, d, tx, ty)
    }

    /// The ISO BMFF matrix {a b u, c d v, x y w} with 16.16 fixed-point entries (u, v, w are 2.30).
    init(displayMatrix m: [Int32]?) {
        guard let m, m.count == 9 else { self = .identity; return }
        let f = 65536.0
        self.init(a: Double(m[0]) / f, b: Double(m[1]) / f, c: Double(m[3]) / f, d: Double(m[4]) / f,
                  tx: Double(m[6]) / f, ty: Double(m[7]) / f)
    }

    /// Clockwise rotation in degrees this transform applies for display (0, 90, 180, 270 for the usual ones).
    public var rotationDegrees: Double {
        var degrees = (atan2(b, a) * 180 / .pi).rounded()
        if degrees < 0 { degrees += 360 }
        return degrees == 360 ? 0 : degrees
    }
}

/// What a track's samples are: the codec and its parameters (CMFormatDescription's role).
public struct FormatDescription: Sendable, Hashable, Codable {
    public var mediaType: MediaType
    /// FFmpeg's codec name.
    public var codec: String
    public var codecLongName: String?
    public var codecTag: String?
    public var profile: String?
    public var pixelFormat: String?
    public var sampleRate: Int?
    public var channelCount: Int?
    public var channelLayout: String?
    public var sampleFormat: String?

    init(_ s: StreamInfo) {
        mediaType = s.mediaType
        codec = s.codecName
        codecLongName = s.codecLongName
        codecTag = s.codecTag
        profile = s.profile
        pixelFormat = s.pixelFormat
        sampleRate = s.sampleRate > 0 ? s.sampleRate : nil
        channelCount = s.channelCount > 0 ? s.channelCount : nil
        channelLayout = s.channelLayout
        sampleFormat = s.sampleFormat
    }
}

#if canImport(Glibc)
import Glibc
#endif
