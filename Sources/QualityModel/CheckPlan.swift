/// What a quality check does with what it finds (the manifest's `severity`).
public enum CheckSeverity: String, Sendable, Codable, Hashable, CaseIterable {
    /// A finding fails the job: nothing is published.
    case fail
    /// A finding is a warning in the result and the report.
    case warn
    /// Figures only: a finding changes no verdict.
    case measure
}

/// The quality checks to run in one decode, with their thresholds. Each is off when nil. The defaults
/// are FFmpeg's filters' (`blackdetect`, `freezedetect`, `silencedetect`), so a run agrees with the
/// filter a user would otherwise script.
public struct CheckPlan: Sendable, Hashable {
    /// Black runs (`blackdetect`).
    public struct Black: Sendable, Hashable {
        public var severity: CheckSeverity = .fail
        /// Shortest run reported, seconds (`d`, 2).
        public var duration = 2.0
        /// Share of a picture's pixels that must be black (`pic_th`, 0.98).
        public var pictureRatio = 0.98
        /// Luma at or below this share of the legal range is black (`pix_th`, 0.10).
        public var pixelThreshold = 0.10
        public init() {}
    }

    /// Frozen runs (`freezedetect`).
    public struct Freeze: Sendable, Hashable {
        public var severity: CheckSeverity = .fail
        /// Shortest run reported, seconds (`d`, 2).
        public var duration = 2.0
        /// Mean absolute difference, as a share of full scale, at or below which two pictures are the same (`n`, 0.001 = -60 dB).
        public var noise = 0.001
        public init() {}
    }

    /// Luma or chroma outside the legal range (`signalstats` BRNG: Y 16–235, U and V 16–240 at 8 bits).
    public struct Levels: Sendable, Hashable {
        public var severity: CheckSeverity = .warn
        /// A picture is out of range when more than this share of its pixels is (EBU R 103 allows 1%).
        public var pixelShare = 0.01
        /// Shortest run reported, seconds (0: any picture).
        public var duration = 0.0
        public init() {}
    }

    /// Interlaced pictures in a video whose pictures say they are progressive (`idet`'s multi-frame detection).
    public struct Interlace: Sendable, Hashable {
        public var severity: CheckSeverity = .warn
        /// Shortest run of interlaced pictures reported, seconds.
        public var duration = 1.0
        /// How much stronger one field order's combing must be than the other's (`intl_thres`): FFmpeg's 1.04
        /// types moving progressive test patterns as interlaced; 1.2 does not, and still finds woven fields.
        public var threshold = 1.2
        public init() {}
    }

    /// Pictures that are not where a constant frame rate puts them: a gap of more than one frame
    /// (dropped) or two pictures at one time (duplicated).
    public struct Cadence: Sendable, Hashable {
        public var severity: CheckSeverity = .warn
        public init() {}
    }

    /// Silence runs (`silencedetect`).
    public struct Silence: Sendable, Hashable {
        public var severity: CheckSeverity = .warn
        /// Shortest run reported, seconds (`d`, 2).
        public var duration = 2.0
        /// Amplitude below which a sample is silent (`n`, 0.001 = -60 dBFS).
        public var noise = 0.001
        /// Each channel on its own (`mono=1`); otherwise a run needs every channel silent.
        public var eachChannel = false
        public init() {}
    }

    /// Clipping: runs of consecutive samples at full scale.
    public struct Clipping: Sendable, Hashable {
        public var severity: CheckSeverity = .fail
        /// A sample whose magnitude reaches this is at full scale (0.999 = -0.009 dBFS).
        public var level = 0.999
        /// Consecutive samples at full scale that make a clip (3, as broadcast QC counts them).
        public var samples = 3
        /// Clips closer than this, seconds, are one run.
        public var gap = 0.1
        public init() {}
    }

    /// Channels that are digitally silent throughout, or phase-inverted copies of one another.
    public struct Channels: Sendable, Hashable {
        public var severity: CheckSeverity = .warn
        public init() {}
    }

    /// Loudness against a target: integrated within the tolerance, true peak at most the limit.
    public struct Loudness: Sendable, Hashable {
        public var severity: CheckSeverity = .fail
        /// LUFS.
        public var target: Double
        /// LU either side of the target.
        public var tolerance: Double
        /// dBTP.
        public var truePeak: Double
        public init(target: Double, tolerance: Double, truePeak: Double) {
            self.target = target
            self.tolerance = tolerance
            self.truePeak = truePeak
        }
    }

    /// Duration and picture count against expected values.
    public struct Length: Sendable, Hashable {
        public var severity: CheckSeverity = .fail
        /// Seconds, with its tolerance.
        public var duration: Double?
        public var durationTolerance = 0.0
        /// Pictures, with its tolerance.
        public var frames: Int?
        public var frameTolerance = 0
        public init() {}
    }

    /// Fidelity of an export to its composition (or of a file to a reference picture for picture): PSNR and
    /// SSIM of each picture, as FFmpeg's `psnr` and `ssim` filters measure them. A picture below either
    /// minimum is a finding.
    public struct Fidelity: Sendable, Hashable {
        public var severity: CheckSeverity = .fail
        /// The lowest PSNR a picture may have, dB (30: visibly damaged); nil: not held to one.
        public var psnr: Double? = 30
        /// The lowest SSIM a picture may have (0.9); nil: not held to one.
        public var ssim: Double? = 0.9
        public init() {}
    }

    /// A file spec, as MediaConch's policies are: container, codecs, profile and level, sizes, rates, scan type,
    /// sound layout, bit rates. Each field is an allowed list or a range; a field left out is not checked.
    public struct Spec: Sendable, Hashable {
        public struct Video: Sendable, Hashable {
            public var codec: [String]?
            public var profile: [String]?
            /// As the codec numbers it: 4.1 for H.264, 4 or 5.1 for HEVC (FFmpeg's 41 and 120 or 153).
            public var level: SpecRange?
            public var width: SpecRange?
            public var height: SpecRange?
            public var pixelFormat: [String]?
            /// Pictures a second, each within 0.1%.
            public var frameRate: [Double]?
            /// "progressive" or "interlaced", as the decoded pictures say.
            public var scanType: String?
            /// Bits a second, measured from the track's packets.
            public var bitRate: SpecRange?
            public init() {}
        }
        public struct Audio: Sendable, Hashable {
            public var codec: [String]?
            public var profile: [String]?
            public var sampleRate: [Int]?
            public var channels: SpecRange?
            /// FFmpeg's layout names: "mono", "stereo", "5.1(side)".
            public var channelLayout: [String]?
            public var bitRate: SpecRange?
            public init() {}
        }
        public var severity: CheckSeverity = .fail
        /// Any of the demuxer's names for the container ("mp4", "mov", "matroska", "webm", "mpegts", "wav").
        public var container: [String]?
        /// Bytes.
        public var size: SpecRange?
        /// The whole file's bits a second (its size over its duration).
        public var bitRate: SpecRange?
        public var video: Video?
        /// Every audio track is held to it.
        public var audio: Audio?
        public init() {}
    }

    public var black: Black?
    public var freeze: Freeze?
    public var levels: Levels?
    public var interlace: Interlace?
    public var cadence: Cadence?
    public var silence: Silence?
    public var clipping: Clipping?
    public var channels: Channels?
    public var loudness: Loudness?
    public var length: Length?
    public var spec: Spec?
    public var fidelity: Fidelity?

    public init(black: Black? = nil, freeze: Freeze? = nil, levels: Levels? = nil, interlace: Interlace? = nil, cadence: Cadence? = nil, silence: Silence? = nil,
                clipping: Clipping? = nil, channels: Channels? = nil, loudness: Loudness? = nil, length: Length? = nil, spec: Spec? = nil,
                fidelity: Fidelity? = nil) {
        self.black = black
        self.freeze = freeze
        self.levels = levels
        self.interlace = interlace
        self.cadence = cadence
        self.silence = silence
        self.clipping = clipping
        self.channels = channels
        self.loudness = loudness
        self.length = length
        self.spec = spec
        self.fidelity = fidelity
    }

    /// Every picture and sound check at its defaults (no loudness target, no expected length).
    public static let standard = CheckPlan(black: Black(), freeze: Freeze(), levels: Levels(), interlace: Interlace(), cadence: Cadence(), silence: Silence(),
                                           clipping: Clipping(), channels: Channels())

    /// The duration is measured from the pictures and samples decoded: a length or a whole file's bit rate needs both.
    private var needsDuration: Bool { length != nil || spec?.bitRate != nil }
    public var needsVideo: Bool {
        black != nil || freeze != nil || levels != nil || interlace != nil || cadence != nil || spec?.video != nil || fidelity != nil || needsDuration
    }
    public var needsAudio: Bool { silence != nil || clipping != nil || channels != nil || loudness != nil || spec?.audio != nil || needsDuration }
}

/// A spec's range of numbers, both ends included; an exact value is both.
public struct SpecRange: Sendable, Hashable, CustomStringConvertible {
    public var min: Double?
    public var max: Double?
    public init(min: Double?, max: Double?) { (self.min, self.max) = (min, max) }

    public func contains(_ value: Double) -> Bool { (min.map { value >= $0 } ?? true) && (max.map { value <= $0 } ?? true) }

    public var description: String {
        func n(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v) }
        switch (min, max) {
        case let (a?, b?) where a == b: return n(a)
        case let (a?, b?): return "\(n(a)) to \(n(b))"
        case let (a?, nil): return "at least \(n(a))"
        case let (nil, b?): return "at most \(n(b))"
        case (nil, nil): return "any"
        }
    }
}
