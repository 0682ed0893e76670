import MediaTime

/// A streaming package as its players see it: how long it is, where they enter it, and each rendition with
/// the figures its presentations declare. The worker that made it says so in its result; the library keeps
/// it as the facts of the package's asset (`AssetFacts.package`), and a reused package carries it on.
public struct PackageSummary: Sendable, Hashable, Codable {
    public var duration: MediaTime
    /// Its entry points, relative to its folder: `master.m3u8` before `manifest.mpd`.
    public var entryPoints: [String]
    public var container: StreamContainer
    public var renditions: [Rendition]

    public init(duration: MediaTime, entryPoints: [String], container: StreamContainer, renditions: [Rendition]) {
        (self.duration, self.entryPoints, self.container, self.renditions) = (duration, entryPoints, container, renditions)
    }

    /// One rendition: a rung of video, an audio or a subtitle track.
    public struct Rendition: Sendable, Hashable, Codable {
        public enum Kind: String, Sendable, Hashable, Codable { case video, audio, text }
        public var kind: Kind
        /// Its folder in the package (`video-1`, `audio`).
        public var folder: String
        /// RFC 6381 (`avc1.64001f`, `mp4a.40.2`, `wvtt`).
        public var codecs: String
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
        public var channels: Int?
        public var language: String?
        /// The peak and the average rate of its segments, bits a second (HLS's BANDWIDTH and AVERAGE-BANDWIDTH
        /// are these, with the audio's added to a video rung's).
        public var peakBitRate: Int
        public var averageBitRate: Int
        public var bytes: Int64

        public init(kind: Kind, folder: String, codecs: String, peakBitRate: Int, averageBitRate: Int, bytes: Int64) {
            (self.kind, self.folder, self.codecs, self.peakBitRate, self.averageBitRate, self.bytes) = (kind, folder, codecs, peakBitRate, averageBitRate, bytes)
        }
    }

    /// The largest video rung (the first when two are as large), or nil for a package of sound alone.
    public var largestVideo: Rendition? {
        renditions.filter { $0.kind == .video }.max { ($0.width ?? 0) * ($0.height ?? 0) < ($1.width ?? 0) * ($1.height ?? 0) }
    }

    public var firstAudio: Rendition? { renditions.first { $0.kind == .audio } }

    /// Every byte of its media.
    public var bytes: Int64 { renditions.reduce(0) { $0 + $1.bytes } }
}
