import MediaTime

/// `"stream"`: an adaptive streaming package of the composition, as AVAssetWriter makes one with
/// `.mpeg4AppleHLS`: a ladder of H.264 rungs and AAC audio in CMAF segments cut at the same frames on
/// every rung, with an HLS master playlist and a DASH MPD over the same files, in one folder.
extension JobManifest {
    public struct StreamSettings: Sendable, Hashable {
        /// The package's folder: published whole, once every file in it is written.
        public var output: String
        /// `ladder`: the composition encoded into every rung; `passthrough`: the source's packets copied, cut at its keyframes.
        public var mode = StreamMode.ladder
        public var formats: [StreamFormat] = [.hls, .dash]
        /// `cmaf` (fragmented MPEG-4, for HLS and DASH) or `ts` (MPEG-TS, HLS only).
        public var container = StreamContainer.cmaf
        /// HLS's AES-128 over MPEG-TS segments; nil: in the clear.
        public var encryption: JobManifest.StreamEncryption?
        /// Each track one file (`media.mp4`, `media.ts`), its segments byte ranges of it (`singleFile`).
        public var singleFile = false
        /// Every segment but the last lasts this long, in whole frames (`segmentSeconds`).
        public var segmentDuration = MediaTime(value: 6, timescale: 1)
        /// nil: the source's own rate (a standard rate when it is within 0.5% of one).
        public var frameDuration: MediaTime?
        public var video: StreamVideo
        public var audio = StreamAudio()
        /// The source's text subtitle tracks to keep as WebVTT renditions, by language (`subtitles.languages`).
        public var subtitleLanguages: [String] = []
        /// Made in chunks of whole segments over hosts (`chunkSeconds`), one chunk (`frames`), or the join of them.
        public var chunking = JobManifest.Chunking()

        public init(output: String, video: StreamVideo) { (self.output, self.video) = (output, video) }
    }

    public struct StreamVideo: Sendable, Hashable {
        public var rungs: [StreamRung]
        /// What a rung larger than the source's picture does.
        public var larger: LargerRungPolicy = .refuse
        public var preset = "veryfast"
        /// 0: as many as there are cores.
        public var threads = 0
        public init(rungs: [StreamRung]) { self.rungs = rungs }
    }

    /// A rung: its size (a side left out follows the source's aspect; both: the largest picture inside
    /// them), H.264 rate control, profile and level (nil: the lowest that holds it).
    public struct StreamRung: Sendable, Hashable {
        public var width: Int?
        public var height: Int?
        public var bitrate: Int
        public var maxBitrate: Int?
        public var bufferSize: Int?
        /// "h264", "hevc" or "av1" (`RungCodecNames`).
        public var codec = "h264"
        public var profile = "high"
        /// 40 for 4.0.
        public var level: Int?
        public init(width: Int? = nil, height: Int? = nil, bitrate: Int) { (self.width, self.height, self.bitrate) = (width, height, bitrate) }
    }

    public struct StreamAudio: Sendable, Hashable {
        public var bitrate = 128_000
        /// AAC's channels: the source's mixed to this many (2, stereo, by default); 0: the source's own, up to 8.
        public var channels = 2
        /// The audio's language in the playlists (BCP 47: "en", "pt-BR").
        public var language: String?
        /// The source's audio tracks to keep, one rendition each: its default track, every one, or a keep
        /// list of languages (`tracks`, `languages`).
        public var tracks = AudioTracks.default
        public init() {}
    }

    /// HLS's AES-128 (RFC 8216 5.2): each media segment encrypted whole with a 16-byte key, its IV its media
    /// sequence number.
    public struct StreamEncryption: Sendable, Hashable {
        /// A file of the key's 16 bytes (`openssl rand 16 > show.key`), read on the worker's host; never copied
        /// into the package.
        public var keyFile: String
        /// Where players fetch the key (EXT-X-KEY's URI): absolute, or relative to each media playlist.
        public var keyURI: String
        public init(keyFile: String, keyURI: String) { (self.keyFile, self.keyURI) = (keyFile, keyURI) }
    }

    /// Every file the job reads by path: its sources and a package's key file (no output may replace one).
    public var readPaths: [String] { edits.map(\.source) + [stream?.encryption?.keyFile].compactMap { $0 } }

    /// The package's entry points: `master.m3u8` and `manifest.mpd` in its folder.
    public static let streamEntryPoints: [StreamFormat: String] = [.hls: "master.m3u8", .dash: "manifest.mpd"]
    /// The file that marks a folder (or an object prefix) as a package the farm made, with the attempt that made it.
    public static let packageMarker = ".mediafarm-package.json"
}

extension JobManifest.StreamSettings {
    /// The entry points of the package's presentations (`JobManifest.streamEntryPoints`).
    public var entryPoints: [String] { formats.compactMap { JobManifest.streamEntryPoints[$0] } }
}

/// How a package's segments are stored.
public enum StreamContainer: String, Sendable, Hashable, CaseIterable, Codable {
    /// CMAF: fragmented MPEG-4 (an `init.mp4` and `.m4s` segments per track), read by HLS and DASH alike.
    case cmaf
    /// MPEG-2 transport stream: `.ts` segments that stand alone, for HLS only.
    case ts

    /// The presentations made when a manifest names none: both over CMAF, HLS alone over MPEG-TS.
    public var defaultFormats: [StreamFormat] { self == .ts ? [.hls] : [.hls, .dash] }
}

/// How a package's media is made.
public enum StreamMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Decoded once and encoded into every rung of the ladder.
    case ladder
    /// The source's H.264 and AAC copied, no frame encoded (as `ffmpeg -c copy -f hls`), each segment cut at a keyframe.
    case passthrough
}

/// A presentation of a package.
public enum StreamFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case hls, dash
}

/// What a package does with a rung whose picture would be larger than the source's.
public enum LargerRungPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    /// Refuse the job before any work, naming the rung and the source's size.
    case refuse
    /// Leave the rung out (the report names it), as a per-title ladder would.
    case skip
    /// Enlarge the source to the rung's size.
    case upscale
}

/// A rung's codecs, and each one's profiles and levels, as a manifest names them (the engine's `RungCodec` and
/// `RungLevel`, which `RungCodecNamesTests` holds these to).
public enum RungCodecNames {
    public static let codecs = ["h264", "hevc", "av1"]

    /// The codec's profiles, its default first.
    public static func profiles(_ codec: String) -> [String] { codec == "h264" ? ["high", "main", "baseline"] : ["main"] }

    public static func levels(_ codec: String) -> [String] {
        switch codec {
        case "hevc": ["1.0", "2.0", "2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1", "5.2", "6.0", "6.1", "6.2"]
        case "av1": ["2.0", "2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1", "5.2", "5.3", "6.0", "6.1", "6.2", "6.3"]
        default: ["1.0", "1.1", "1.2", "1.3", "2.0", "2.1", "2.2", "3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0", "5.1", "5.2", "6.0", "6.1", "6.2"]
        }
    }

    /// How reports and errors name it.
    public static func name(_ codec: String) -> String { ["h264": "H.264", "hevc": "HEVC", "av1": "AV1"][codec] ?? codec }

    /// 40 for "4.0", "4" or 4; nil for a name that is not one of `codec`'s levels.
    public static func level(_ text: String, codec: String = "h264") -> Int? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let major = Int(parts[0]), parts.count == 1 || parts[1].count == 1,
              let minor = parts.count == 2 ? Int(parts[1]) : 0 else { return nil }
        let name = "\(major).\(minor)"
        return levels(codec).contains(name) ? major * 10 + minor : nil
    }
}

extension JobManifest.StreamSettings {
    /// The section as a manifest writes it, defaults left out.
    public var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("output", .string(output))]
        if mode != .ladder { members.append(("mode", .string(mode.rawValue))) }
        if formats != container.defaultFormats { members.append(("formats", .array(formats.map { .string($0.rawValue) }))) }
        if container != .cmaf { members.append(("container", .string(container.rawValue))) }
        if singleFile { members.append(("singleFile", .bool(true))) }
        if let encryption {
            members.append(("encryption", .object([("method", .string("aes-128")), ("keyFile", .string(encryption.keyFile)),
                                                   ("keyURI", .string(encryption.keyURI))])))
        }
        if segmentDuration != MediaTime(value: 6, timescale: 1) { members.append(("segmentSeconds", segmentDuration.document)) }
        if let frameDuration { members.append(("frameDuration", frameDuration.document)) }
        var video: [(key: String, value: JSONValue)] = [("rungs", .array(self.video.rungs.map(\.document)))]
        if self.video.larger != .refuse { video.append(("larger", .string(self.video.larger.rawValue))) }
        if self.video.preset != "veryfast" { video.append(("preset", .string(self.video.preset))) }
        if self.video.threads != 0 { video.append(("threads", .whole(self.video.threads))) }
        if mode == .ladder { members.append(("video", .object(video))) }
        var audio: [(key: String, value: JSONValue)] = []
        if self.audio.bitrate != 128_000 { audio.append(("bitrate", .whole(self.audio.bitrate))) }
        if self.audio.channels != 2 { audio.append(("channels", .whole(self.audio.channels))) }
        if let language = self.audio.language { audio.append(("language", .string(language))) }
        audio += self.audio.tracks.members
        if !audio.isEmpty { members.append(("audio", .object(audio))) }
        if !subtitleLanguages.isEmpty { members.append(("subtitles", .object([("languages", .array(subtitleLanguages.map(JSONValue.string)))]))) }
        members += chunking.members
        return .object(members)
    }
}

extension JobManifest.StreamRung {
    var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let width { members.append(("width", .whole(width))) }
        if let height { members.append(("height", .whole(height))) }
        members.append(("bitrate", .whole(bitrate)))
        if let maxBitrate { members.append(("maxBitrate", .whole(maxBitrate))) }
        if let bufferSize { members.append(("bufferSize", .whole(bufferSize))) }
        if codec != "h264" { members.append(("codec", .string(codec))) }
        if profile != RungCodecNames.profiles(codec)[0] { members.append(("profile", .string(profile))) }
        if let level { members.append(("level", .string("\(level / 10).\(level % 10)"))) }
        return .object(members)
    }
}
