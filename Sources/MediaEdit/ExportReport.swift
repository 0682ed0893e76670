import MediaCore
import MediaTime

/// What an export did: the figures a user checks (durations, counts, residuals, snapped cuts, time).
public struct ExportReport: Sendable, Encodable {
    public struct Video: Sendable, Encodable {
        public var codec: String
        /// Passthrough: packets copied. Constant frame rate: frames encoded.
        public var frames: Int
        /// Frames decoded from the sources (0 in passthrough).
        public var framesDecoded: Int
        public var frameDuration: MediaTime?
        public var width: Int
        public var height: Int
        /// Why the output is smaller than the source, when it is (odd sizes cropped to even).
        public var cropped: String? = nil
    }

    public struct Audio: Sendable, Encodable {
        /// "copied", "encoded", "dropped" or "none".
        public var handling: String
        /// The kept track's language, as its source tags it ("eng"), when it does.
        public var language: String? = nil
        public var codec: String?
        public var sampleRate: Int?
        public var channels: Int?
        /// Samples written (encoded audio).
        public var samples: Int?
        public var packets: Int
        public var pieces: [AudioPieceReport]?
        public var decodeErrors: Int?
        /// `export.audio.loudness`: the figures measured and what was done.
        public var loudness: LoudnessDelivery? = nil
        /// Encoded audio: the bit rate it was encoded at, and the (first) source's where its file says it,
        /// bits per second; `note` says when they differ.
        public var bitRate: Int? = nil
        public var sourceBitRate: Int? = nil
        public var note: String? = nil

        /// The report of an export that writes no audio: "none" when no source has any, else "dropped".
        static func absent(sourcesHaveAudio: Bool) -> Audio {
            Audio(handling: sourcesHaveAudio ? "dropped" : "none", codec: nil, sampleRate: nil, channels: nil, samples: nil, packets: 0,
                  pieces: nil, decodeErrors: nil)
        }

        /// What a change of bit rate says (more than 2 % either way), or nil.
        static func bitRateNote(encoded: Int, source: Int?) -> String? {
            guard let source, source > 0, abs(Double(encoded - source)) > 0.02 * Double(source) else { return nil }
            func kbps(_ b: Int) -> String { "\(Int((Double(b) / 1000).rounded())) kb/s" }
            return encoded < source
                ? "the audio was encoded again at \(kbps(encoded)), below the source's \(kbps(source)): export.audio.bitrate \(source) keeps it"
                : "the audio was encoded again at \(kbps(encoded)), above the source's \(kbps(source))"
        }
    }

    /// A text subtitle track an export wrote: its language, how containers carry text (`mov_text`, `subrip`)
    /// and how many cues it holds (a cue cut by an edit is one in each piece).
    public struct Subtitles: Sendable, Encodable, Equatable {
        public var language: String
        public var codec: String
        public var cues: Int
    }

    public struct SnappedCut: Sendable, Encodable {
        public var segment: Int
        public var requested: MediaTime
        public var snappedTo: MediaTime
    }

    /// How one edit of a passthrough export was cut.
    public struct Cut: Sendable, Encodable, Equatable {
        public enum Method: String, Sendable, Encodable {
            /// Starts on a keyframe and ends where nothing after it is needed: plain copying.
            case copied
            /// Packets from the keyframe before the start (and references after the end) are kept
            /// for decoding and hidden by the track's edit list.
            case editList
            /// Snapped back to the keyframe before it (`cuts: keyframe`): the extra frames are shown.
            case snapped
            /// The frames from the cut to the next keyframe (and, when B-frames need it, the edit's last
            /// GOP up to its end) re-encoded with the source's codec; the rest copied (no edit lists).
            case smartRendered
        }
        /// Composition segment (0-based).
        public var segment: Int
        public var method: Method
        /// The edit's source range as asked.
        public var start: MediaTime
        public var end: MediaTime
        /// Where decoding (and copying) of its video starts: the keyframe at or before `start`.
        public var decodeFrom: MediaTime?
        /// Video packets copied only to be decoded, never shown (before the start, or referenced
        /// from after the end).
        public var hiddenFrames: Int
        /// Frames decoded and encoded again (smart rendering); 0 when copied.
        public var reencodedFrames: Int = 0
    }

    public var mode: ExportSettings.Mode
    public var output: String
    public var container: String
    public var duration: MediaTime
    public var video: Video?
    /// The first audio track kept (the only one, unless more were asked for).
    public var audio: Audio
    /// The second and later audio tracks kept (`export.audio.languages`, `"tracks": "all"`), in output order.
    public var additionalAudio: [Audio]? = nil
    public var snappedCuts: [SnappedCut]
    /// The text subtitle tracks kept (`export.subtitles.languages`), in output order.
    public var subtitles: [Subtitles]? = nil
    /// Passthrough: how each edit was cut, in composition order.
    public var cuts: [Cut] = []
    public var chapters: Int
    public var seconds: Double
}

/// What an export did about loudness: the composition's audio measured before, the encoded audio as a
/// reader decodes it after, and how it was brought to the target.
public struct LoudnessDelivery: Sendable, Codable, Equatable {
    public enum Mode: String, Sendable, Codable {
        /// Measured only: the audio is unchanged.
        case measured
        /// Brought to the target by a gain, and by the limiter where the gain alone broke the peak limit.
        case normalized
    }

    /// What the limiter did, when it was needed.
    public struct Limiter: Sendable, Codable, Equatable {
        /// The true-peak ceiling it held the gained audio to, dBTP (below the limit by what the codec adds).
        public var ceiling: Double
        /// The most it took off, dB (negative).
        public var maxReduction: Double
        /// How much of the audio it touched.
        public var limitedSeconds: Double
    }

    public var mode: Mode
    public var standard: String?
    public var target: Double?
    public var truePeakLimit: Double?
    /// The composition's audio, after any retiming, before anything else.
    public var before: LoudnessFigures
    /// The encoded audio decoded again, its priming left out; nil for copied audio.
    public var after: LoudnessFigures?
    /// A stretch of the programme at one gain: from and to, seconds of the exported audio, and its gain, dB.
    public struct GainSpan: Sendable, Codable, Equatable {
        public var from: Double
        public var to: Double
        public var gain: Double
    }

    /// The gain the whole programme got, dB; absent when parts of it got different gains: then `gains`.
    public var gain: Double?
    /// When parts of the programme got different gains: each stretch at one gain, in order, from 0 to the
    /// end (each change ramped over 0.1 s from its time; the `note` says why).
    public var gains: [GainSpan]? = nil

    /// The gain over the whole programme, dB: `gain`, or the mean of `gains` weighted by their lengths.
    public var meanGain: Double? {
        if let gain { return gain }
        guard let gains, let end = gains.last?.to, end > 0 else { return nil }
        return gains.reduce(0) { $0 + $1.gain * ($1.to - $1.from) } / end
    }
    public var limiter: Limiter?
    /// Passes made to land within 0.05 LU of the target with the true peak under its limit: the first
    /// encodes the whole, a later one the whole or some of its parts again.
    public var passes: Int?
    /// Encodings of a two-minute excerpt that chose the first pass's gain (programmes of 3 minutes or more).
    public var excerptTrials: Int? = nil
    public var note: String?

    public init(mode: Mode, standard: String? = nil, target: Double? = nil, truePeakLimit: Double? = nil, before: LoudnessFigures,
                after: LoudnessFigures? = nil, gain: Double? = nil, limiter: Limiter? = nil, passes: Int? = nil, note: String? = nil) {
        self.mode = mode
        self.standard = standard
        self.target = target
        self.truePeakLimit = truePeakLimit
        self.before = before
        self.after = after
        self.gain = gain
        self.limiter = limiter
        self.passes = passes
        self.note = note
    }

    init(measuredOnly goal: LoudnessGoal, before: LoudnessFigures, after: LoudnessFigures?) {
        self.init(mode: .measured, standard: goal.standard, target: goal.target, truePeakLimit: goal.truePeak, before: before, after: after)
    }
}
