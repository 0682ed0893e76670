import MediaCore
import MediaTime

/// The inspection of one input, as `mediafarm inspect --json` prints it. Fields of keys that were not
/// asked for are omitted; `error` is always present (null when the inspection succeeded).
public struct AssetReport: Sendable, Encodable {
    public var path: String
    public var error: String?
    public var duration: MediaTime?
    /// "measured" (from every packet) or "header" (large file with a plausible header).
    public var durationSource: String?
    public var isPlayable: Bool?
    public var isExportable: Bool?
    public var isReadable: Bool?
    public var isComposable: Bool?
    /// AVAsset.hasProtectedContent: some track is encrypted (then it is not playable, and that is not an error).
    public var hasProtectedContent: Bool?
    public var format: ContainerReport?
    /// For an object in S3-compatible storage: the requests made and bytes fetched to inspect it.
    public var transfer: RemoteTransfer?
    public var metadata: AssetMetadata?
    public var chapters: [Chapter]?
    public var mediaSelectionGroups: [MediaSelectionGroup]?
    public var tracks: [TrackReport]?
    /// Key `loudness`: each audio track's loudness and the tracks' as one programme.
    public var loudness: LoudnessReport?

    public struct ContainerReport: Sendable, Encodable {
        public var name: String
        public var longName: String?
        public var fileSize: Int64
        public var bitRate: Int?
    }

    public struct TrackReport: Sendable, Encodable {
        public var trackID: Int
        public var containerTrackID: Int
        public var mediaType: MediaType
        public var codec: String
        public var codecLongName: String?
        public var codecTag: String?
        public var profile: String?
        public var naturalSize: Size?
        public var preferredTransform: AffineTransform?
        public var rotation: Double?
        public var pixelFormat: String?
        public var sampleRate: Int?
        public var channelCount: Int?
        public var channelLayout: String?
        public var sampleFormat: String?
        public var nominalFrameRate: Double?
        public var minFrameDuration: MediaTime?
        public var estimatedDataRate: Int?
        public var timeRange: TimeRange?
        public var frameCount: Int?
        public var languageCode: String
        public var title: String?
        public var isDefault: Bool
        public var isDecodable: Bool?
        public var decodeError: String?
    }

    /// The failure behind `error` when the file could not be read (not encoded: for the caller's verdict,
    /// as whether object storage may answer another time).
    public var failure: MediaFileError?

    public init(path: String, error: String?) {
        self.path = path
        self.error = error
    }

    private enum Keys: String, CodingKey {
        case path, error, duration, durationSource, isPlayable, isExportable, isReadable, isComposable, hasProtectedContent
        case format, transfer, metadata, chapters, mediaSelectionGroups, tracks, loudness
    }

    public func encode(to encoder: any Swift.Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(path, forKey: .path)
        try c.encode(error, forKey: .error)
        try c.encodeIfPresent(duration, forKey: .duration)
        try c.encodeIfPresent(durationSource, forKey: .durationSource)
        try c.encodeIfPresent(isPlayable, forKey: .isPlayable)
        try c.encodeIfPresent(isExportable, forKey: .isExportable)
        try c.encodeIfPresent(isReadable, forKey: .isReadable)
        try c.encodeIfPresent(isComposable, forKey: .isComposable)
        try c.encodeIfPresent(hasProtectedContent, forKey: .hasProtectedContent)
        try c.encodeIfPresent(format, forKey: .format)
        try c.encodeIfPresent(transfer, forKey: .transfer)
        try c.encodeIfPresent(metadata, forKey: .metadata)
        try c.encodeIfPresent(chapters, forKey: .chapters)
        try c.encodeIfPresent(mediaSelectionGroups, forKey: .mediaSelectionGroups)
        try c.encodeIfPresent(tracks, forKey: .tracks)
        try c.encodeIfPresent(loudness, forKey: .loudness)
    }
}

extension AssetReport {
    /// Loads `keys` (and, when tracks are asked for, every track key) and reports what loaded.
    /// Never throws: a failure becomes `error`, and whatever did load is still reported.
    public static func inspect(_ asset: Asset, keys: Set<AssetKey>, trackKeys: Set<TrackKey> = Set(TrackKey.allCases),
                               displayPath: String? = nil) async -> AssetReport {
        var report = AssetReport(path: displayPath ?? asset.path, error: nil)
        let wantTracks = keys.contains(.tracks)
        var stages = Set(keys.flatMap(\.stages))
        if wantTracks { stages.formUnion(trackKeys.flatMap(\.stages)) }
        do {
            try await asset.ensure(stages)
        } catch let error as MediaFileError {
            report.error = error.description
            report.failure = error
        } catch is CancellationError {
            report.error = "\(asset.path): cancelled"
        } catch {
            report.error = "\(asset.path): \(error)"
        }

        let s = asset.snapshot
        report.transfer = asset.transfer
        guard let probe = s.probe else { return report }
        func has(_ key: AssetKey) -> Bool { keys.contains(key) && asset.status(of: key).isLoaded }

        if report.error == nil, let truncation = s.timing?.truncation { report.error = truncation.description }
        if has(.duration), let timing = s.timing {
            report.duration = timing.duration
            report.durationSource = timing.source.rawValue
        }
        if has(.isPlayable), let d = s.decoding {
            report.isPlayable = AssetFlags.isPlayable(probe, d)
            report.hasProtectedContent = d.hasProtectedContent
        }
        if has(.isExportable) { report.isExportable = AssetFlags.isExportable(probe) }
        if has(.isReadable) { report.isReadable = AssetFlags.isReadable(probe) }
        if has(.isComposable), let t = s.timing { report.isComposable = AssetFlags.isComposable(probe, t) }
        if has(.metadata) {
            let c = probe.container
            report.format = ContainerReport(name: c.formatName, longName: c.formatLongName, fileSize: c.fileSize,
                                            bitRate: c.bitRate > 0 ? c.bitRate : nil)
            report.metadata = AssetMetadata(tags: c.tags)
        }
        if has(.chapters) { report.chapters = probe.container.chapters.map(Chapter.init) }
        if has(.mediaSelectionGroups) { report.mediaSelectionGroups = MediaSelectionGroup.groups(for: probe) }
        if has(.loudness) { report.loudness = s.loudness }
        if wantTracks {
            report.tracks = s.tracks.map { track in
                trackReport(track, timing: trackKeys.contains { $0.stages.contains(.timing) } ? s.timing : nil,
                            decoding: trackKeys.contains(.isDecodable) ? s.decoding : nil)
            }
            if report.error == nil, let failed = s.tracks.first(where: { $0.decodeError.map(isDataError) ?? false }) {
                report.error = failed.decodeError?.description
            }
        }
        return report
    }

    /// A decoder that exists but fails on the data is an inspection error; a missing decoder is not
    /// (it shows as isReadable false).
    private static func isDataError(_ e: MediaFileError) -> Bool {
        if case .undecodable(_, _, let ff) = e.reason { return ff != .decoderNotFound }
        return true
    }

    static func trackReport(_ t: AssetTrack, timing: TimingResult?, decoding: DecodeResult?) -> TrackReport {
        let s = t.stream
        let measured = timing?.tracks[s.index]
        let transform = s.mediaType == .video ? AffineTransform(displayMatrix: s.displayMatrix) : nil
        let isVideo = s.mediaType == .video && !s.isAttachedPicture
        return TrackReport(
            trackID: t.trackID, containerTrackID: t.containerTrackID, mediaType: s.mediaType,
            codec: s.codecName, codecLongName: s.codecLongName, codecTag: s.codecTag, profile: s.profile,
            naturalSize: s.width > 0 ? Size(width: s.width, height: s.height) : nil,
            preferredTransform: transform, rotation: s.mediaType == .video ? (s.rotation ?? 0) : nil,
            pixelFormat: s.pixelFormat,
            sampleRate: s.sampleRate > 0 ? s.sampleRate : nil,
            channelCount: s.channelCount > 0 ? s.channelCount : nil,
            channelLayout: s.channelLayout, sampleFormat: s.sampleFormat,
            nominalFrameRate: timing == nil || !isVideo ? nil : TrackFacts.nominalFrameRate(s, measured),
            minFrameDuration: timing == nil || !isVideo ? nil : (measured?.minFrameDuration ?? .invalid),
            estimatedDataRate: timing == nil ? nil : TrackFacts.estimatedDataRate(s, measured),
            timeRange: timing == nil ? nil : (measured?.timeRange ?? .invalid),
            frameCount: timing == nil || !isVideo || timing?.source == .header ? nil : measured?.packetCount,
            languageCode: s.language ?? "und", title: s.tags["title"], isDefault: s.isDefault,
            isDecodable: decoding.map { $0.tracks[s.index]?.isDecodable ?? false },
            decodeError: decoding?.tracks[s.index].flatMap { $0.isEncrypted ? "encrypted (protected content)" : $0.error?.problem })
    }
}
