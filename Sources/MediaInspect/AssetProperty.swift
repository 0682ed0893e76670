import MediaCore
import MediaTime

/// A typed asset property for `Asset.load(_:)`, as AVAsyncProperty<AVAsset, Value>:
/// `let (duration, tracks) = try await asset.load(.duration, .tracks)`.
public struct AssetProperty<Value: Sendable>: Sendable {
    public let key: AssetKey
    let value: @Sendable (Asset.Snapshot) throws -> Value
}

/// A typed track property for `AssetTrack.load(_:)`.
public struct TrackProperty<Value: Sendable>: Sendable {
    public let key: TrackKey
    let value: @Sendable (AssetTrack, Asset.Snapshot) throws -> Value
}

extension Asset {
    /// Loads one property: `let duration = try await asset.load(.duration)`.
    public func load<Value>(_ property: AssetProperty<Value>) async throws -> Value {
        try await ensure(property.key.stages)
        return try property.value(snapshot)
    }

    /// Loads several properties at once, opening the file once: `let (d, t) = try await asset.load(.duration, .tracks)`.
    public func load<each Value>(_ property: repeat AssetProperty<each Value>) async throws -> (repeat each Value) {
        var stages: Set<LoadStage> = []
        for p in repeat each property { stages.formUnion(p.key.stages) }
        try await ensure(stages)
        let snapshot = self.snapshot
        return (repeat try (each property).value(snapshot))
    }
}

struct NotLoaded: Error {}

extension Asset.Snapshot {
    func requireProbe() throws -> ProbeResult { guard let probe else { throw NotLoaded() }; return probe }
    func requireTiming() throws -> TimingResult { guard let timing else { throw NotLoaded() }; return timing }
    func requireDecoding() throws -> DecodeResult { guard let decoding else { throw NotLoaded() }; return decoding }
}

// MARK: - Asset properties

extension AssetProperty where Value == MediaTime {
    /// Span from the earliest track start to the latest track end, measured from packet timestamps.
    public static var duration: AssetProperty<MediaTime> { .init(key: .duration) { try $0.requireTiming().duration } }
}

extension AssetProperty where Value == [AssetTrack] {
    public static var tracks: AssetProperty<[AssetTrack]> {
        .init(key: .tracks) { s in _ = try s.requireProbe(); return s.tracks }
    }
}

extension AssetProperty where Value == AssetMetadata {
    public static var metadata: AssetProperty<AssetMetadata> {
        .init(key: .metadata) { AssetMetadata(tags: try $0.requireProbe().container.tags) }
    }
}

extension AssetProperty where Value == [Chapter] {
    public static var chapters: AssetProperty<[Chapter]> {
        .init(key: .chapters) { try $0.requireProbe().container.chapters.map(Chapter.init) }
    }
}

extension AssetProperty where Value == [MediaSelectionGroup] {
    public static var mediaSelectionGroups: AssetProperty<[MediaSelectionGroup]> {
        .init(key: .mediaSelectionGroups) { MediaSelectionGroup.groups(for: try $0.requireProbe()) }
    }
}

extension AssetProperty where Value == Bool {
    /// Every audio, video and subtitle track has a decoder (and there is at least one).
    public static var isReadable: AssetProperty<Bool> {
        .init(key: .isReadable) { AssetFlags.isReadable(try $0.requireProbe()) }
    }
    /// Readable, or every audio and video track can be copied into MP4, MOV or Matroska unchanged.
    public static var isExportable: AssetProperty<Bool> {
        .init(key: .isExportable) { AssetFlags.isExportable(try $0.requireProbe()) }
    }
    /// Readable, has audio or video, and every audio and video track decoded a frame.
    public static var isPlayable: AssetProperty<Bool> {
        .init(key: .isPlayable) { AssetFlags.isPlayable(try $0.requireProbe(), try $0.requireDecoding()) }
    }
    /// Exportable, has audio or video, and a finite positive duration: it can be put in a composition.
    public static var isComposable: AssetProperty<Bool> {
        .init(key: .isComposable) { AssetFlags.isComposable(try $0.requireProbe(), try $0.requireTiming()) }
    }
}

// MARK: - Track properties

extension TrackProperty where Value == MediaType {
    public static var mediaType: TrackProperty<MediaType> { .init(key: .mediaType) { t, _ in t.mediaType } }
}

extension TrackProperty where Value == FormatDescription {
    public static var formatDescription: TrackProperty<FormatDescription> {
        .init(key: .formatDescription) { t, _ in FormatDescription(t.stream) }
    }
}

extension TrackProperty where Value == Size? {
    /// Encoded picture size (before the preferred transform); nil for tracks without pictures.
    public static var naturalSize: TrackProperty<Size?> {
        .init(key: .naturalSize) { t, _ in t.stream.width > 0 ? Size(width: t.stream.width, height: t.stream.height) : nil }
    }
}

extension TrackProperty where Value == AffineTransform {
    public static var preferredTransform: TrackProperty<AffineTransform> {
        .init(key: .preferredTransform) { t, _ in AffineTransform(displayMatrix: t.stream.displayMatrix) }
    }
}

extension TrackProperty where Value == String {
    /// ISO 639-2 code from the container, "und" when it names none.
    public static var languageCode: TrackProperty<String> {
        .init(key: .languageCode) { t, _ in t.stream.language ?? "und" }
    }
}

extension TrackProperty where Value == Double {
    /// Frames per second: measured frames over measured duration; 0 for tracks without frames.
    public static var nominalFrameRate: TrackProperty<Double> {
        .init(key: .nominalFrameRate) { t, s in TrackFacts.nominalFrameRate(t.stream, try s.requireTiming().tracks[t.stream.index]) }
    }
}

extension TrackProperty where Value == MediaTime {
    /// Shortest interval between two frames; `.invalid` when not known (audio, a single frame).
    public static var minFrameDuration: TrackProperty<MediaTime> {
        .init(key: .minFrameDuration) { t, s in try s.requireTiming().tracks[t.stream.index]?.minFrameDuration ?? .invalid }
    }
}

extension TrackProperty where Value == Int {
    /// Bits per second: measured bytes over measured duration, else the declared bit rate.
    public static var estimatedDataRate: TrackProperty<Int> {
        .init(key: .estimatedDataRate) { t, s in TrackFacts.estimatedDataRate(t.stream, try s.requireTiming().tracks[t.stream.index]) }
    }
}

extension TrackProperty where Value == TimeRange {
    public static var timeRange: TrackProperty<TimeRange> {
        .init(key: .timeRange) { t, s in try s.requireTiming().tracks[t.stream.index]?.timeRange ?? .invalid }
    }
}

extension TrackProperty where Value == Bool {
    /// A frame of this track decoded (subtitles: the decoder opened).
    public static var isDecodable: TrackProperty<Bool> {
        .init(key: .isDecodable) { t, s in try s.requireDecoding().tracks[t.stream.index]?.isDecodable ?? false }
    }
}

extension AssetTrack {
    /// Why this track could not be decoded, once `.isDecodable` is loaded and false.
    public var decodeError: MediaFileError? {
        asset.snapshot.decoding?.tracks[stream.index]?.error
    }
}
