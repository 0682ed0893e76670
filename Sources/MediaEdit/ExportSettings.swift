import MediaCore
import MediaTime

/// How retimed audio keeps or changes its pitch, as AVAudioTimePitchAlgorithm.
public enum AudioTimePitchAlgorithm: String, Sendable, Hashable, CaseIterable, Codable {
    /// Rubber Band offline, finer (R3) engine: highest quality, for music.
    case spectral
    /// Rubber Band offline, faster (R2) engine: cheaper, for speech.
    case timeDomain
    /// Resampling: the pitch follows the rate, as tape does.
    case varispeed
}

/// What an `ExportSession` writes and how.
public struct ExportSettings: Sendable {
    public enum Mode: String, Sendable, Codable {
        /// Video packets copied and retimed, never decoded.
        case passthrough
        /// Decoded, one frame every frameDuration (sample and hold), H.264 + AAC.
        case constantFrameRate
    }

    public enum AudioPolicy: String, Sendable, Codable {
        case auto, copy, reencode, drop
    }

    /// How a passthrough export cuts where an edit does not start on a keyframe.
    public enum Cuts: String, Sendable, Codable, CaseIterable {
        /// Every edit shows exactly its frames and samples: the packets from the keyframe before a cut
        /// are kept for decoding and hidden (an MP4/QuickTime edit list).
        case exact
        /// Pure copying: a cut snaps back to the keyframe before it and the frames from there are shown.
        case keyframe
        /// Every edit shows exactly its frames and samples with no edit list to hide anything: the frames
        /// from a cut to the next keyframe are re-encoded with the source's codec ("smart rendering"), the
        /// rest copied, and the audio encoded. For readers that ignore edit lists (what Matroska gets for
        /// `exact` too).
        case smart
    }

    public var mode: Mode
    public var outputPath: String
    /// FFmpeg muxer name: "mp4", "mov" or "matroska".
    public var muxer: String
    public var faststart: Bool
    /// constantFrameRate only.
    public var frameDuration: MediaTime
    public var crf: Int
    public var preset: String
    public var threads: Int
    public var audioPolicy: AudioPolicy
    /// The sources' audio tracks kept, each a track of the output (`export.audio.languages`, `tracks`).
    public var audioTracks = AudioSelection.defaultTrack
    /// constantFrameRate only: the sources' text subtitle tracks kept by language, each a track of the output
    /// as its container carries text (`export.subtitles.languages`).
    public var subtitleLanguages: [String] = []
    /// passthrough only.
    public var cuts: Cuts
    public var audioBitRate: Int
    public var timePitch: AudioTimePitchAlgorithm
    /// The loudness the audio is brought to, or measured only; nil: neither.
    public var loudness: LoudnessGoal? = nil
    /// Carried into the output (title, ...); chapters come from the first source, remapped.
    public var metadata: [String: String]
    public var limits: SafetyLimits
    /// Runs just before the finished output is renamed to `outputPath` (given as its argument); a
    /// throw discards the output (the caller's last check that the path does not name an input).
    public var beforeCommit: (@Sendable (String) throws -> Void)? = nil
    /// Runs with the written file's temporary path before it is committed (`AtomicOutput.checkWritten`),
    /// stopped by the export's interrupter when it reads the file.
    public var checkWritten: (@Sendable (String, Interrupter) throws -> Void)? = nil
    /// constantFrameRate only: measure each encoded picture against the composition's, as it is encoded, into
    /// this log (PSNR and SSIM, `PictureFidelity`).
    public var fidelity: FidelityLog? = nil
    /// constantFrameRate only: sees each picture and audio packet as the export encodes it (its quality checks).
    public var watch: (any EncodingWatch)? = nil
    /// constantFrameRate only: encode only the output frames `lowerBound..<upperBound` of the composition
    /// (frame k shows composition time k x frameDuration), as one chunk of a chunked export: video only,
    /// its first frame a keyframe (the encoder's first), its timestamps from 0. nil: every frame.
    public var frameRange: Range<Int>? = nil

    public init(mode: Mode, outputPath: String, muxer: String, faststart: Bool = true,
                frameDuration: MediaTime = MediaTime(value: 1, timescale: 30), crf: Int = 20, preset: String = "veryfast",
                threads: Int = 0, audioPolicy: AudioPolicy = .auto, cuts: Cuts = .exact, audioBitRate: Int = 128_000,
                timePitch: AudioTimePitchAlgorithm = .spectral, metadata: [String: String] = [:], limits: SafetyLimits = .default) {
        self.mode = mode
        self.outputPath = outputPath
        self.muxer = muxer
        self.faststart = faststart
        self.frameDuration = frameDuration
        self.crf = crf
        self.preset = preset
        self.threads = threads
        self.audioPolicy = audioPolicy
        self.cuts = cuts
        self.audioBitRate = audioBitRate
        self.timePitch = timePitch
        self.metadata = metadata
        self.limits = limits
    }
}

/// Sees every source video frame a constant-frame-rate export decodes, once, in decoding order per
/// segment: (segment index, source time from the asset's start, the frame). Called on the export's
/// thread; it may keep a new reference to the frame (`Frame.reference`), not the frame itself.
public typealias DecodedFrameObserver = (Int, MediaTime, borrowing Frame) throws -> Void

/// How far an export has come, reported as it runs.
public struct ExportProgress: Sendable, Codable {
    public var fraction: Double
    public var phase: String
    public var framesPerSecond: Double?
    /// Estimated seconds left.
    public var eta: Double?
}

/// Why an export failed, in words.
public struct ExportError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The loudness an export delivers at, or only measures (`export.audio.loudness`).
public struct LoudnessGoal: Sendable, Hashable {
    /// Measure the composition's audio (and the encoded result) and report; change nothing.
    public var measureOnly: Bool
    /// Integrated loudness to deliver at, LUFS (nil only when measuring).
    public var target: Double?
    /// The highest true peak allowed, dBTP (nil only when measuring).
    public var truePeak: Double?
    /// The preset the numbers came from ("ebu-r128"), for the report.
    public var standard: String?

    public init(measureOnly: Bool, target: Double?, truePeak: Double?, standard: String?) {
        self.measureOnly = measureOnly
        self.target = target
        self.truePeak = truePeak
        self.standard = standard
    }
}
