import Foundation
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
    /// The rung's video codec (`RungCodec`).
    public typealias Codec = RungCodec

    public var codec: Codec
    /// The codec's profile (H.264: "high", "main", "baseline"; HEVC and AV1: "main") and level (40 for 4.0;
    /// nil: the lowest that holds the rung's picture, frame rate and peak, chosen once the ladder is fitted).
    public var profile: String
    public var level: Int?

    public init(width: Int, height: Int, bitRate: Int, maxBitRate: Int? = nil, bufferSize: Int? = nil,
                codec: Codec = .h264, profile: String? = nil, level: Int? = nil) {
        self.width = width
        self.height = height
        self.bitRate = bitRate
        let peak = maxBitRate ?? Int(min(Double(bitRate) * 1.5, Double(Int32.max)))
        self.maxBitRate = peak
        // HEVC's Main tier holds a buffer of about a second at its level's peak: two would raise the level.
        self.bufferSize = bufferSize ?? Int(min(Double(peak) * (codec == .hevc ? 1 : 2), Double(Int32.max)))
        self.codec = codec
        self.profile = profile ?? codec.profiles[0]
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
    /// nil: the first source's own rate (`frameDuration(of:)`).
    public var frameDuration: MediaTime?
    /// What a rung larger than the source's picture does.
    public var larger: LargerRungs
    public var audioBitRate: Int
    public var preset: String
    public var threads: Int
    public var timePitch: AudioTimePitchAlgorithm
    /// The audio's language in the playlists (ISO 639), when known.
    public var audioLanguage: String?
    /// The source's audio tracks to package, one rendition each: its default track (labelled
    /// `audioLanguage`), every track, or those in the languages asked for (every source must have each).
    public var audioTracks = AudioSelection.defaultTrack
    /// AAC's channels: the source's mixed to this many; 0: the source's own, up to 8.
    public var audioChannels = 2
    /// The source's text subtitle tracks to package as WebVTT, by language (every source must have each).
    public var subtitleLanguages: [String] = []
    /// One chunk of a package made in chunks: only these frames (whole segments, end excluded), their video,
    /// its segments numbered and timed as in the whole, and for the chunk from frame 0 the package's whole audio
    /// (`StreamPackager.join` joins the chunks).
    public var frames: Range<Int>?
    /// How the segments are stored: CMAF (HLS and DASH) or MPEG-TS (HLS only).
    public var container = SegmentContainer.cmaf
    /// HLS's AES-128: each media segment encrypted whole (nil: in the clear).
    public var encryption: SegmentEncryption?
    /// Each track in one file (`media.mp4`, `media.ts`), its pieces byte ranges of it; false: a file each.
    public var singleFile = false
    /// Packaging without encoding: the source's H.264 video and AAC audio copied, cut at its keyframes
    /// (`rungs`, `frameDuration`, the audio's bit rate and channels do not apply).
    public var passthrough = false
    public var limits: SafetyLimits

    public init(folder: String, rungs: [StreamRung], segmentDuration: MediaTime = MediaTime(value: 6, timescale: 1),
                frameDuration: MediaTime? = nil, larger: LargerRungs = .refuse, audioBitRate: Int = 128_000, preset: String = "veryfast",
                threads: Int = 0, timePitch: AudioTimePitchAlgorithm = .spectral, audioLanguage: String? = nil, limits: SafetyLimits = .default) {
        self.folder = folder
        self.rungs = rungs
        self.segmentDuration = segmentDuration
        self.frameDuration = frameDuration
        self.larger = larger
        self.audioBitRate = audioBitRate
        self.preset = preset
        self.threads = threads
        self.timePitch = timePitch
        self.audioLanguage = audioLanguage
        self.limits = limits
    }

    /// Refuses what no encoder or player takes, naming the setting and its range (before any work).
    public func check() throws(ExportError) {
        guard !rungs.isEmpty || passthrough else { throw ExportError("a package needs at least one rung of video") }
        for (i, rung) in rungs.enumerated() {
            let name = "rung \(i + 1) (\(rung.width)x\(rung.height))"
            // A side of 0 follows the source's aspect (`StreamLadder`).
            guard rung.width != 0 || rung.height != 0 else { throw ExportError("rung \(i + 1): give its height, its width or both") }
            guard rung.width == 0 || (2...8192).contains(rung.width), rung.height == 0 || (2...8192).contains(rung.height),
                  rung.width % 2 == 0, rung.height % 2 == 0 else {
                throw ExportError("\(name): H.264 4:2:0 needs even sizes from 2 to 8192")
            }
            guard (1_000...1_000_000_000).contains(rung.bitRate), (rung.bitRate...2_000_000_000).contains(rung.maxBitRate),
                  (1_000...Int(Int32.max)).contains(rung.bufferSize) else {
                throw ExportError("\(name): the bit rate must be 1000 to 1000000000, the peak from it to 2000000000, the buffer 1000 to \(Int32.max) bits")
            }
            let levels = RungLevel.known(rung.codec)
            guard rung.level.map(levels.contains) ?? true, rung.codec.profiles.contains(rung.profile) else {
                throw ExportError("\(name): the \(rung.codec.name) profile must be \(rung.codec.profiles.joined(separator: " or ")) and the level one of "
                                  + "\(rung.codec.name)'s (\(levels.map(RungLevel.name).joined(separator: ", ")))")
            }
            guard rung.codec == .h264 || container == .cmaf else {
                throw ExportError("\(name): an \(rung.codec.name) rung is packaged in CMAF only (Apple's HLS authoring specification asks fMP4 of HEVC, "
                                  + "and FFmpeg's MPEG-TS muxer carries no AV1): leave out \"container\", or make the rung H.264")
            }
        }
        let frameDuration = self.frameDuration ?? MediaTime(value: 1, timescale: 120)
        guard frameDuration.isNumeric, frameDuration > .zero, segmentDuration.isNumeric, segmentDuration >= frameDuration,
              segmentDuration <= MediaTime(value: 60, timescale: 1) else {
            throw ExportError("the segment duration must be from one frame to 60 s (it is \(segmentDuration.seconds) s)")
        }
        guard encryption == nil || container == .transportStream else {
            throw ExportError("AES-128 encrypts MPEG-TS segments: over CMAF, players disagree on whether the initialization is encrypted")
        }
        guard !singleFile || frames == nil else {
            throw ExportError("a single-file package is made whole: its chunks would have to be copied into one file at the join")
        }
        guard [0, 1, 2, 4, 5, 6, 8].contains(audioChannels) else {
            throw ExportError("the audio's channels must be one of AAC's channel configurations, 1, 2, 4, 5, 6 or 8, or 0 (the source's own); it is \(audioChannels)")
        }
        var asked = [audioLanguage].compactMap { $0 } + subtitleLanguages
        if case .languages(let languages) = audioTracks { asked += languages }
        for language in asked
        where language.range(of: "^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*\\z", options: .regularExpression) == nil {
            throw ExportError("the audio language \"\(language)\" is not a language tag (en, fra, pt-BR)")
        }
    }

    /// Frames per segment: the segment duration in whole frames, at least one.
    public var framesPerSegment: Int {
        let frameDuration = self.frameDuration ?? MediaTime(value: 1, timescale: 30)
        let tb = Rational(Int32(clamping: frameDuration.value), frameDuration.timescale)
        return max(1, Int(segmentDuration.count(in: tb) ?? 1))
    }
}

/// How a package's media segments are stored.
public enum SegmentContainer: String, Sendable, Hashable, Codable {
    /// CMAF: fragmented MPEG-4, an `init.mp4` and `1.m4s`, `2.m4s`, … per track, for HLS and DASH alike.
    case cmaf
    /// MPEG-2 transport stream: `1.ts`, `2.ts`, … per track, each beginning with its PAT and PMT, for HLS.
    case transportStream = "ts"

    var muxer: String { self == .cmaf ? "mp4" : "mpegts" }
    var fileExtension: String { self == .cmaf ? "m4s" : "ts" }
    /// The presentation's 0 in MPEG-TS's 90 kHz clock, on every track: 1.4 s, where FFmpeg's own muxers
    /// begin, leaving room before it for B-frames' delay and AAC's priming. WebVTT's X-TIMESTAMP-MAP names it.
    public static let transportOrigin: Int64 = 126_000
}

/// A chunk of a package, written with `StreamSettings.frames`: its folder (a track's files in a folder
/// of the track's name, as in the package) and what it reported.
public struct StreamChunk: Sendable {
    public var folder: String
    public var frames: Range<Int>
    public var report: StreamReport

    public init(folder: String, frames: Range<Int>, report: StreamReport) {
        self.folder = folder
        self.frames = frames
        self.report = report
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
    /// Where it begins in `file`, the track's one media file (a single-file package); nil: the file is its own.
    public var offset: Int?
}

/// One track of a package (a rung of video, or the audio), with every segment it has.
public struct StreamTrack: Sendable, Hashable, Codable {
    /// `text`: WebVTT subtitles, in segments and in one whole file (`initialization` names it).
    public enum Kind: String, Sendable, Codable { case video, audio, text }
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
    /// nil: CMAF (an `init.mp4` and `.m4s` segments); `.transportStream`: `.ts` segments that stand alone.
    public var container: SegmentContainer?
    /// Where players fetch the key of its encrypted segments (HLS AES-128); nil: in the clear.
    public var keyURI: String?
    /// A single-file CMAF track: the initialization's size at the start of its one file (`initialization`).
    public var initializationBytes: Int?

    /// The segment's duration as presented (track ticks): without what comes before the programme's 0
    /// (AAC's priming, which the track's edit takes away), so that HLS's EXTINFs sum to the programme.
    public func presentedDuration(_ segment: StreamSegment) -> Int64 {
        max(0, segment.start + segment.duration - max(segment.start, presentationOffset))
    }

    /// The longest segment as presented rounded to the nearest second, at least 1: HLS's EXT-X-TARGETDURATION.
    public var targetDuration: Int {
        max(1, segments.map { Int((Double(presentedDuration($0)) / Double(timescale)).rounded()) }.max() ?? 1)
    }

    /// The peak segment bit rate (bits per second), as RFC 8216 (4.3.4.2) measures it for BANDWIDTH: the
    /// highest rate of any run of consecutive segments lasting 0.5 to 1.5 target durations, so a short last
    /// segment (nearly all keyframe) does not stand for the rung; the whole track when it is shorter.
    /// Each segment's bytes over its duration as presented (its `EXTINF`): a first segment's AAC priming or
    /// B-frame delay, which the edit takes away, is no time a player spends on it.
    public var peakBitRate: Int { Self.peak(segments.map { (presentedDuration($0), $0.bytes) }, timescale: timescale, target: targetDuration) }

    /// The peak rate of `(duration, bytes)` runs, as `peakBitRate` measures it.
    static func peak(_ parts: [(duration: Int64, bytes: Int)], timescale: Int, target: Int) -> Int {
        let low = Double(target) * 0.5, high = Double(target) * 1.5
        func rate(_ bytes: Int, _ seconds: Double) -> Int { Int((Double(bytes) * 8 / max(seconds, 1e-9)).rounded(.up)) }
        var best: Int?
        for i in parts.indices {
            var seconds = 0.0, bytes = 0
            for part in parts[i...] {
                seconds += Double(part.duration) / Double(timescale)
                bytes += part.bytes
                if seconds > high { break }
                if seconds >= low { best = max(best ?? 0, rate(bytes, seconds)) }
            }
        }
        if let best { return best }
        let total = parts.reduce(0.0) { $0 + Double($1.duration) / Double(timescale) }
        return rate(parts.reduce(0) { $0 + $1.bytes }, total)
    }

    /// Every byte over the whole duration as presented (bits per second): AVERAGE-BANDWIDTH.
    public var averageBitRate: Int {
        let ticks = segments.reduce(Int64(0)) { $0 + presentedDuration($1) }
        let bytes = segments.reduce(0) { $0 + $1.bytes }
        return Int((Double(bytes) * 8 * Double(timescale) / Double(max(ticks, 1))).rounded(.up))
    }

    /// The whole track's duration as presented, in seconds.
    public var seconds: Double { Double(segments.reduce(Int64(0)) { $0 + presentedDuration($1) }) / Double(timescale) }
}

/// What a package holds: its tracks, each cut at the same times.
public struct StreamReport: Sendable, Hashable, Codable {
    public var duration: MediaTime
    public var segmentDuration: MediaTime
    public var tracks: [StreamTrack]
    public var framesDecoded: Int
    public var seconds: Double
    /// The first source's picture as shown (what the ladder was fitted to), and the turns that made it upright.
    public var sourcePicture: Picture?
    /// The rungs left out as larger than the source (`LargerRungs.skip`), by their place from 1.
    public var skippedRungs: [Int]?

    public struct Picture: Sendable, Hashable, Codable {
        public var width: Int
        public var height: Int
        public var quarterTurns: Int
    }
}
