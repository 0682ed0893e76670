import MediaCore
import MediaTime

/// One rung of a streaming ladder: its picture size and H.264 rate control.
public struct StreamRung: Sendable, Hashable, Codable {
    public var width: Int
    public var height: Int
    /// The target bit rate, bits per second.
    public var bitRate: Int
    /// The peak the encoder's buffer model holds to, bits per second, and the buffer's size in bits.
    public var maxBitRate: Int
    public var bufferSize: Int
    /// H.264 profile ("high", "main", "baseline") and level (40 for 4.0).
    public var profile: String
    public var level: Int

    public init(width: Int, height: Int, bitRate: Int, maxBitRate: Int? = nil, bufferSize: Int? = nil,
                profile: String = "high", level: Int = 40) {
        self.width = width
        self.height = height
        self.bitRate = bitRate
        self.maxBitRate = maxBitRate ?? bitRate * 3 / 2
        self.bufferSize = bufferSize ?? 2 * (maxBitRate ?? bitRate * 3 / 2)
        self.profile = profile
        self.level = level
    }
}

/// What a streaming package is made of, and where its files go.
public struct StreamSettings: Sendable {
    /// The folder the package's files are written into (the caller publishes it).
    public var folder: String
    public var rungs: [StreamRung]
    /// Every segment but the last lasts this long, rounded to whole frames.
    public var segmentDuration: MediaTime
    public var frameDuration: MediaTime
    public var audioBitRate: Int
    public var preset: String
    public var threads: Int
    public var timePitch: AudioTimePitchAlgorithm
    /// The audio's language in the playlists (ISO 639), when known.
    public var audioLanguage: String?
    public var limits: SafetyLimits

    public init(folder: String, rungs: [StreamRung], segmentDuration: MediaTime = MediaTime(value: 6, timescale: 1),
                frameDuration: MediaTime = MediaTime(value: 1, timescale: 30), audioBitRate: Int = 128_000, preset: String = "veryfast",
                threads: Int = 0, timePitch: AudioTimePitchAlgorithm = .spectral, audioLanguage: String? = nil, limits: SafetyLimits = .default) {
        self.folder = folder
        self.rungs = rungs
        self.segmentDuration = segmentDuration
        self.frameDuration = frameDuration
        self.audioBitRate = audioBitRate
        self.preset = preset
        self.threads = threads
        self.timePitch = timePitch
        self.audioLanguage = audioLanguage
        self.limits = limits
    }

    /// Frames per segment: the segment duration in whole frames, at least one.
    public var framesPerSegment: Int {
        let tb = Rational(Int32(clamping: frameDuration.value), frameDuration.timescale)
        return max(1, Int(segmentDuration.count(in: tb) ?? 1))
    }
}

/// One media segment of a track, as it was written: its time in the track's timescale and its bytes.
public struct StreamSegment: Sendable, Hashable, Codable {
    /// Its file, relative to the track's folder.
    public var file: String
    /// Its first decode time and its duration, in the track's timescale.
    public var start: Int64
    public var duration: Int64
    public var bytes: Int
    /// Video: the bytes from the segment's start through its first (IDR) picture, the byte range an
    /// I-frame playlist names.
    public var keyframeBytes: Int?
}

/// One track of a package (a rung of video, or the audio), with every segment it has.
public struct StreamTrack: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable { case video, audio }
    public var kind: Kind
    /// Its folder, relative to the package's.
    public var folder: String
    public var initialization: String
    /// RFC 6381, from the encoder's own header (`avc1.64001f`, `mp4a.40.2`).
    public var codecs: String
    public var timescale: Int
    /// The media time presented first (track ticks): how much later than presented its packets are timed
    /// in its files (its edit list; DASH's presentationTimeOffset).
    public var presentationOffset: Int64 = 0
    public var width: Int?
    public var height: Int?
    public var frameRate: Rational?
    public var sampleRate: Int?
    public var channels: Int?
    public var language: String?
    public var segments: [StreamSegment]

    /// The highest bit rate of any segment (bits per second): what HLS calls BANDWIDTH.
    public var peakBitRate: Int {
        segments.map { Int((Double($0.bytes) * 8 * Double(timescale) / Double(max($0.duration, 1))).rounded(.up)) }.max() ?? 0
    }

    /// Every byte over the whole duration (bits per second): AVERAGE-BANDWIDTH.
    public var averageBitRate: Int {
        let ticks = segments.reduce(Int64(0)) { $0 + $1.duration }
        let bytes = segments.reduce(0) { $0 + $1.bytes }
        return Int((Double(bytes) * 8 * Double(timescale) / Double(max(ticks, 1))).rounded(.up))
    }

    /// The whole track's duration, in seconds.
    public var seconds: Double { Double(segments.reduce(Int64(0)) { $0 + $1.duration }) / Double(timescale) }
}

/// What a package holds: its tracks, each cut at the same times.
public struct StreamReport: Sendable, Hashable, Codable {
    public var duration: MediaTime
    public var segmentDuration: MediaTime
    public var tracks: [StreamTrack]
    public var framesDecoded: Int
    public var seconds: Double
}
