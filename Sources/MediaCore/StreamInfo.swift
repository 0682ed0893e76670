import MediaTime

/// What kind of media a stream carries.
public enum MediaType: String, Sendable, Codable, Hashable {
    case video, audio, subtitle, data, attachment, unknown
}

/// A value snapshot of one stream of an `InputFile`, taken after probing. It stays valid after the
/// file is closed. Times are in seconds as `MediaTime`; `timeBase` is the stream's tick.
public struct StreamInfo: Sendable, Hashable {
    public var index: Int
    /// The container's own track identifier (MP4 track_ID, Matroska track number), when it has one.
    public var containerID: Int
    public var mediaType: MediaType
    /// FFmpeg's codec name ("h264", "aac").
    public var codecName: String
    public var codecLongName: String?
    /// The four-character code from the container, when present ("avc1").
    public var codecTag: String?
    public var profile: String?
    /// The codec level as the stream declares it (H.264: 31 for 3.1; HEVC: 93 for 3.1); <= 0 when unknown.
    public var level: Int
    public var timeBase: Rational
    /// From the container header; `.invalid` when absent.
    public var startTime: MediaTime
    /// From the container header; `.invalid` when absent. May lie (fragmented MP4).
    public var headerDuration: MediaTime
    /// From the container header; 0 when unknown.
    public var headerFrameCount: Int
    /// Bits per second declared by the codec parameters; 0 when unknown.
    public var bitRate: Int
    public var averageFrameRate: Rational?
    public var realFrameRate: Rational?
    public var width: Int
    public var height: Int
    public var pixelFormat: String?
    public var sampleAspectRatio: Rational?
    /// The display matrix (3x3, 16.16 fixed point as in ISO BMFF `tkhd`), when the container has one.
    public var displayMatrix: [Int32]?
    /// Counter-clockwise rotation in degrees from the display matrix, as FFmpeg reports it.
    public var rotation: Double?
    public var sampleRate: Int
    /// Audio samples per packet when the codec's is fixed (1024 for AAC); 0 when unknown or variable.
    public var frameSize: Int
    public var channelCount: Int
    public var channelLayout: String?
    public var sampleFormat: String?
    public var tags: [String: String]
    /// Every disposition FFmpeg read for the stream, by FFmpeg's names ("default", "forced", "hearing_impaired",
    /// "visual_impaired", "captions", "descriptions", "comment", "dub", "original", …).
    public var dispositions: [String]
    public var isAttachedPicture: Bool
    /// FFmpeg has a decoder for this codec.
    public var hasDecoder: Bool
    /// Containers this stream's packets can be copied into without re-encoding ("mp4", "mov", "matroska").
    public var passthroughContainers: [String]
    /// The codec's out-of-band configuration (avcC, AudioSpecificConfig): streams can be joined by
    /// copying packets only when it is identical.
    public var extradata: [UInt8] = []

    /// The stream is flagged to be chosen when nothing else decides (FFmpeg's "default" disposition).
    public var isDefault: Bool { dispositions.contains("default") }

    public var language: String? {
        tags["language"].flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// A value snapshot of a chapter marker.
public struct ChapterInfo: Sendable, Hashable {
    public var id: Int64
    public var start: MediaTime
    public var end: MediaTime
    public var title: String?
    public var tags: [String: String]

    public init(id: Int64, start: MediaTime, end: MediaTime, title: String?, tags: [String: String] = [:]) {
        self.id = id
        self.start = start
        self.end = end
        self.title = title
        self.tags = tags
    }
}

/// A value snapshot of the container-level facts of an `InputFile`.
public struct ContainerInfo: Sendable, Hashable {
    public var formatName: String
    public var formatLongName: String?
    public var startTime: MediaTime
    /// From the header; `.invalid` when absent. May lie (fragmented MP4).
    public var headerDuration: MediaTime
    public var bitRate: Int
    public var fileSize: Int64
    public var tags: [String: String]
    public var chapters: [ChapterInfo]
}

/// AVMediaSelectionGroup's default option among a kind's tracks: the one flagged default, else the first.
/// The one rule for exports (the audio they keep), waveforms, the library's facts and the inspection's groups.
public func defaultTrack<Track>(_ tracks: [Track], isDefault: (Track) -> Bool) -> Track? {
    tracks.first(where: isDefault) ?? tracks.first
}

extension Array where Element == StreamInfo {
    /// The default audio track (`defaultTrack`); nil without audio. Exports keep it and waveforms draw it.
    public var defaultAudio: StreamInfo? {
        defaultTrack(filter { $0.mediaType == .audio }, isDefault: \.isDefault)
    }
}
