import MediaTime
import QualityModel

/// A validated job manifest, version 1: what to read, how to edit and retime it, what to scan and
/// what to export. Paths are absolute (resolved against the manifest's folder). Build one with
/// `ManifestValidator`; see `jobs/schema.json` for the JSON form.
public struct JobManifest: Sendable, Hashable {
    public var version: Int
    public var name: String
    /// The composition: pieces of sources placed end to end. `input` becomes one whole-asset edit.
    public var edits: [Edit]
    /// Scaled ranges in composition time, sorted, not overlapping.
    public var scale: [ScaleRange]
    public var audio: AudioSettings
    public var scan: ScanSettings?
    public var export: ExportSettings?
    /// An adaptive streaming package of the composition (`JobManifest+Stream.swift`).
    public var stream: StreamSettings?
    /// Pictures of the input (`JobManifest+Pictures.swift`).
    public var images: ImagesSettings?
    public var poster: PosterSettings?
    public var storyboard: StoryboardSettings?
    public var waveform: WaveformSettings?
    /// Quality checks of the input or of the export (`ManifestValidator+Checks.swift`).
    public var checks: ChecksSettings?
    /// Where the JSON report goes, when asked for.
    public var report: String?
    /// Outputs (movie, report) that already exist may be replaced. Inputs never are.
    public var overwrite: Bool
    /// The folder relative paths were resolved against.
    public var baseDirectory: String
    /// Jobs this one waits for (the queue's ids, or unique keys of earlier submissions).
    public var after: [JobReference]
    public var afterPolicy: AfterPolicy
    /// What a host must provide to run the job (`coordinator --provides`), e.g. "gpu".
    public var requires: [String]
    /// Where webhooks go when the job ends, besides the farm's own (`coordinator --webhook`); each host
    /// must be one the farm allows (`coordinator --webhook-allow-host`), which the queue checks.
    public var notify: [WebhookURL]
    /// Whether the job may be answered from an earlier job's result with the same content (and answer a
    /// later one): nil is the default (yes for a job that decodes: a constant-frame-rate export, a scan).
    public var reuse: Bool?

    /// Every field, none defaulted: a field added later does not compile until each place that makes a
    /// manifest (the validator, each derivation in `JobManifest+Derived.swift`) says what it holds.
    public init(version: Int, name: String, edits: [Edit], scale: [ScaleRange], audio: AudioSettings, scan: ScanSettings?,
                export: ExportSettings?, stream: StreamSettings?, images: ImagesSettings?, poster: PosterSettings?, storyboard: StoryboardSettings?,
                waveform: WaveformSettings?, checks: ChecksSettings?, report: String?, overwrite: Bool, baseDirectory: String, after: [JobReference],
                afterPolicy: AfterPolicy, requires: [String], notify: [WebhookURL], reuse: Bool?) {
        (self.version, self.name, self.edits, self.scale, self.audio, self.scan) = (version, name, edits, scale, audio, scan)
        (self.export, self.stream, self.images, self.poster, self.storyboard, self.waveform) = (export, stream, images, poster, storyboard, waveform)
        (self.report, self.overwrite, self.baseDirectory, self.after, self.afterPolicy) = (report, overwrite, baseDirectory, after, afterPolicy)
        (self.requires, self.notify, self.reuse, self.checks) = (requires, notify, reuse, checks)
    }

    /// A manifest with nothing but an input: inspect it and report.
    public var isInspectionOnly: Bool { export == nil && stream == nil && scan == nil && !makesPictures }

    public struct Edit: Sendable, Hashable {
        public var source: String
        public var start: MediaTime
        /// nil: to the end of the source.
        public var duration: MediaTime?
        /// Where the manifest gives the source (`$.input`, `$.edits[N].source`): errors and the scoped
        /// policy name it there; a document writes an edit at `$.input` as `"input"`.
        public var path: String

        public init(source: String, start: MediaTime = .zero, duration: MediaTime? = nil, path: String) {
            self.source = source
            self.start = start
            self.duration = duration
            self.path = path
        }
    }

    /// The `asset:ID` sources, at their JSON paths.
    public var assetReferences: [(path: String, id: AssetID)] {
        edits.compactMap { edit in
            guard case .success(let id)? = AssetID.reference(edit.source) else { return nil }
            return (edit.path, id)
        }
    }

    /// `[start, start + duration)` of composition time plays in `toDuration`: rate = duration / toDuration.
    public struct ScaleRange: Sendable, Hashable {
        public var start: MediaTime
        public var duration: MediaTime
        public var toDuration: MediaTime

        public init(start: MediaTime, duration: MediaTime, toDuration: MediaTime) {
            self.start = start
            self.duration = duration
            self.toDuration = toDuration
        }

        public var range: TimeRange { TimeRange(start: start, duration: duration) }
        /// Playback rate: 0.25 is four times slower.
        public var rate: Rational? { MediaTime.ratio(duration, toDuration) }
    }

    public struct AudioSettings: Sendable, Hashable {
        public var timePitch: TimePitchAlgorithm = .spectral
        public init(timePitch: TimePitchAlgorithm = .spectral) { self.timePitch = timePitch }
    }

    public struct ScanSettings: Sendable, Hashable {
        public var symbologies: [String]
        public var regionOfInterest: NormalizedRect?
        /// 0: every frame.
        public var interval: MediaTime
        public var maxCodesPerFrame: Int
        /// A picture of the frame where each code was first seen (`scan.images`).
        public var images: ScanImages?
    }

    /// `scan.images`: the frame where each code was first seen, as a picture; `output` has `{index}`, the
    /// code's place in the report's `scan.codes` (from 1).
    public struct ScanImages: Sendable, Hashable {
        public var style = PictureStyle()
        public var output: String
        public init(output: String) { self.output = output }
    }

    public struct NormalizedRect: Sendable, Hashable, Codable {
        public var x: Double, y: Double, width: Double, height: Double
        public init(x: Double, y: Double, width: Double, height: Double) {
            (self.x, self.y, self.width, self.height) = (x, y, width, height)
        }
    }

    public struct ExportSettings: Sendable, Hashable {
        public var mode: ExportMode
        public var output: String
        public var fileType: ContainerType
        /// constantFrameRate only.
        public var frameDuration: MediaTime?
        public var video: VideoSettings
        public var audio: AudioExportSettings
        /// constantFrameRate only: the sources' text subtitle tracks kept, by language, each a track of the
        /// output (`subtitles.languages`): 3GPP text in MP4 and MOV, SubRip in Matroska.
        public var subtitleLanguages: [String] = []
        /// Put the MP4/MOV index first (default for mp4 and mov).
        public var faststart: Bool
        /// passthrough only: how edits that do not start on a keyframe are cut.
        public var cuts: CutMode = .exact
        /// constantFrameRate only: encode the export in chunks, each a job of its own that any worker of any
        /// host may run, then join them (`chunkSeconds`, `chunkAbove`, `frames`, `join`).
        public var chunking = Chunking()
        public var chunkDuration: MediaTime? { get { chunking.duration } set { chunking.duration = newValue } }
        public var chunkAbove: MediaTime? { get { chunking.above } set { chunking.above = newValue } }
        /// Only these output frames (end excluded), video only, timed from 0: one chunk of a chunked export.
        public var frames: Range<Int>? { get { chunking.frames } set { chunking.frames = newValue } }
        /// The export's chunks, encoded already, in order: join them into `output` instead of encoding (set by
        /// the coordinator on a chunked job's last run).
        public var join: [JoinedChunk] { get { chunking.join } set { chunking.join = newValue } }
        /// A poster of the exported movie (`export.poster`), made from it once it is written.
        public var poster: PosterSettings?
    }

    /// How a long export or package is made in chunks over hosts, the same members in both sections: split
    /// (`chunkSeconds`, `chunkAbove`), one chunk (`frames`) or the join of them (`join`, which the coordinator sets).
    public struct Chunking: Sendable, Hashable {
        /// Make it in chunks of about this much output, each a job of its own that any worker of any host may run,
        /// then join them (`chunkSeconds`).
        public var duration: MediaTime?
        /// With `duration`: split only when the composition is longer than this (`chunkAbove`; a coordinator's
        /// `--chunk-above`); a shorter one is made whole.
        public var above: MediaTime?
        /// One chunk: only these output frames (end excluded), video only; a package's chunk from frame 0 makes
        /// the package's whole audio too.
        public var frames: Range<Int>?
        /// The chunks, made already, in order: join them (set by the coordinator on the split job's last run).
        public var join: [JoinedChunk] = []

        public init() {}

        /// Whether this is the section as submitted: neither a chunk nor a join.
        public var isWhole: Bool { frames == nil && join.isEmpty }
    }

    /// One chunk a joining run copies: its file and the output frames it holds.
    public struct JoinedChunk: Sendable, Hashable, Codable {
        public var output: String
        public var frames: Range<Int>
        /// The chunk's job and the attempts it took, for the report.
        public var job: Int64?
        public var attempts: Int?

        public init(output: String, frames: Range<Int>, job: Int64? = nil, attempts: Int? = nil) {
            self.output = output
            self.frames = frames
            self.job = job
            self.attempts = attempts
        }
    }

    public struct VideoSettings: Sendable, Hashable {
        public var codec: String = "h264"
        public var crf: Int = 20
        public var preset: String = "veryfast"
        /// 0: as many as there are cores.
        public var threads: Int = 0
        public init() {}
    }

    public struct AudioExportSettings: Sendable, Hashable {
        public var policy: AudioPolicy = .auto
        /// The sources' audio tracks kept, each a track of the output (`tracks`, `languages`).
        public var tracks = AudioTracks.default
        public var codec: String = "aac"
        public var bitrate: Int = 128_000
        /// Deliver at a loudness, or measure it only (`export.audio.loudness`).
        public var loudness: LoudnessSettings?
        public init() {}
    }

    /// `export.audio.loudness`: a target integrated loudness and true-peak limit (a standard's, or numbers),
    /// or measuring only.
    public struct LoudnessSettings: Sendable, Hashable {
        /// Measure and report; the audio is not changed.
        public var measure: Bool
        public var standard: LoudnessStandard?
        /// LUFS, -70...0: the standard's unless given.
        public var target: Double?
        /// dBTP, -20...0: the standard's unless given.
        public var truePeak: Double?

        public init(measure: Bool = false, standard: LoudnessStandard? = nil, target: Double? = nil, truePeak: Double? = nil) {
            self.measure = measure
            self.standard = standard
            self.target = target
            self.truePeak = truePeak
        }
    }
}

/// A delivery specification's loudness: its integrated loudness and its true-peak limit.
public enum LoudnessStandard: String, Sendable, Hashable, CaseIterable, Codable {
    /// EBU R128: -23 LUFS, -1 dBTP.
    case ebuR128 = "ebu-r128"
    /// ATSC A/85: -24 LKFS, -2 dBTP.
    case atscA85 = "atsc-a85"
    /// Streaming services at -14 LUFS, -1 dBTP.
    case streaming14 = "streaming-14"
    /// Streaming services at -16 LUFS, -1 dBTP.
    case streaming16 = "streaming-16"

    public var target: Double {
        switch self {
        case .ebuR128: -23
        case .atscA85: -24
        case .streaming14: -14
        case .streaming16: -16
        }
    }

    public var truePeak: Double {
        switch self {
        case .ebuR128, .streaming14, .streaming16: -1
        case .atscA85: -2
        }
    }

    /// LU either side of the target a checked programme may be: ±1 LU for EBU R128 (Tech 3343's allowance where
    /// exact normalisation is not possible; ±0.5 is its aim), ±2 dB for ATSC A/85 (RP's tolerance), ±1 LU for streaming.
    public var tolerance: Double {
        switch self {
        case .ebuR128, .streaming14, .streaming16: 1
        case .atscA85: 2
        }
    }
}

extension JobManifest {
    /// `"checks"`: the quality checks to run, and whether on the job's input or on its export.
    public struct ChecksSettings: Sendable, Hashable {
        public enum Subject: String, Sendable, Hashable, CaseIterable {
            /// The job's input, read once (as `scan` and `loudness` read it).
            case input
            /// The export, after it is written and before it is published.
            case export
        }
        /// nil: the export when the job has one, else the input.
        public var of: Subject?
        public var plan: CheckPlan

        public init(of: Subject?, plan: CheckPlan) { (self.of, self.plan) = (of, plan) }

        /// What is checked in a job that has an export or not.
        public func subject(hasExport: Bool) -> Subject { of ?? (hasExport ? .export : .input) }
    }
}

/// How retimed audio keeps or changes its pitch (AVAudioTimePitchAlgorithm).
public enum TimePitchAlgorithm: String, Sendable, Hashable, CaseIterable, Codable {
    /// Highest quality, for music: Rubber Band's finer (R3) engine, offline.
    case spectral
    /// Cheaper, for speech: Rubber Band's faster (R2) engine, offline.
    case timeDomain
    /// Pitch follows the rate, as tape does: resampling.
    case varispeed
}

public enum ExportMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Copy video packets, retimed; never decode them.
    case passthrough
    /// Decode and emit one frame every frameDuration; encode H.264 and AAC.
    case constantFrameRate
}

public enum ContainerType: String, Sendable, Hashable, CaseIterable, Codable {
    case mp4, mov, mkv

    /// FFmpeg's muxer name.
    public var muxerName: String {
        switch self {
        case .mp4: return "mp4"
        case .mov: return "mov"
        case .mkv: return "matroska"
        }
    }

    public init?(fileExtension: String) {
        switch fileExtension.lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov", "qt": self = .mov
        case "mkv": self = .mkv
        default: return nil
        }
    }
}

/// How a passthrough export cuts an edit that does not start on a keyframe.
public enum CutMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Exactly the frames and samples asked for: the decoding lead-in is kept and hidden by edit lists
    /// (mp4, mov). Matroska has none: there an edit must start on a keyframe.
    case exact
    /// Pure copying: snap back to the keyframe before the cut and show the frames from there.
    case keyframe
    /// Exactly the frames and samples asked for with no edit list hiding anything: the frames from a cut
    /// to the next keyframe are re-encoded with the source's codec, the rest copied, the audio encoded.
    case smart
}

/// Which of the sources' audio tracks an export or a package keeps, as AVMediaSelectionGroup's audible
/// options: `"tracks": "default"` (the one flagged default, else the first), `"tracks": "all"`, or a keep
/// list, `"languages": ["en", "fr"]` ("en" finds "eng" and "en-GB"; every source must have each); or, in a
/// package, `"tracks": "none"` (video only; an export says `"policy": "drop"`).
public enum AudioTracks: Sendable, Hashable {
    case `default`
    case all
    case languages([String])
    case none

    /// Its members in an `audio` object: none for the default.
    public var members: [(key: String, value: JSONValue)] {
        switch self {
        case .default: []
        case .all: [("tracks", .string("all"))]
        case .none: [("tracks", .string("none"))]
        case .languages(let languages): [("languages", .array(languages.map(JSONValue.string)))]
        }
    }
}

/// What happens to audio in a passthrough export.
public enum AudioPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    /// Copy audio when nothing retimes it; otherwise re-encode it through the time-pitch algorithm.
    case auto
    /// Copy audio packets; fail if any audio is retimed.
    case copy
    /// Always decode and re-encode.
    case reencode
    /// No audio in the output.
    case drop
}

/// The symbology names a manifest may ask for (AVMetadataObject.ObjectType names).
public enum KnownSymbology {
    public static let names: [String] = ["qr", "aztec", "dataMatrix", "pdf417", "code128", "code39", "code93",
                                         "ean8", "ean13", "upce", "interleaved2of5", "itf14", "codabar", "databar"]

    /// The name as `names` spells it, whatever the case of `name` ("QR", "datamatrix"); nil when unknown.
    public static func canonical(_ name: String) -> String? {
        names.first { $0.lowercased() == name.lowercased() }
    }
}
