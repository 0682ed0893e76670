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
        public var codec: String?
        public var sampleRate: Int?
        public var channels: Int?
        /// Samples written (encoded audio).
        public var samples: Int?
        public var packets: Int
        public var pieces: [AudioPieceReport]?
        public var decodeErrors: Int?
    }

    public struct SnappedCut: Sendable, Encodable {
        public var segment: Int
        public var requested: MediaTime
        public var snappedTo: MediaTime
    }

    public var mode: ExportSettings.Mode
    public var output: String
    public var container: String
    public var duration: MediaTime
    public var video: Video?
    public var audio: Audio
    public var snappedCuts: [SnappedCut]
    public var chapters: Int
    public var seconds: Double
}
