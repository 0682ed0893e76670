import MediaCore
import MediaTime

/// One track of an `Asset`, as AVAssetTrack. Its probe-time facts are a value snapshot; keys that need
/// timing or decoding load through the asset (`try await track.load(.timeRange)`), which the track keeps
/// alive. Identify tracks by `trackID`: each `load(.tracks)` hands out new track objects.
public final class AssetTrack: Sendable {
    /// 1-based position of the track in the file, stable for a given file.
    public let trackID: Int
    /// The container's own identifier (MP4 track_ID, Matroska track number, MPEG-TS PID).
    public let containerTrackID: Int
    public let mediaType: MediaType
    /// The stream snapshot taken when the asset was probed.
    public let stream: StreamInfo
    let asset: Asset

    init(asset: Asset, stream: StreamInfo) {
        self.asset = asset
        self.stream = stream
        self.trackID = stream.index + 1
        self.containerTrackID = stream.containerID
        self.mediaType = stream.mediaType
    }

    public func status(of key: TrackKey) -> LoadStatus {
        asset.status(of: key.stages)
    }

    /// Loads the keys (those not yet loaded) without returning values.
    public func load(keys: [TrackKey]) async throws {
        try await asset.ensure(Set(keys.flatMap(\.stages)))
    }

    /// Loads one property: `let range = try await track.load(.timeRange)`.
    public func load<Value>(_ property: TrackProperty<Value>) async throws -> Value {
        try await asset.ensure(property.key.stages)
        return try property.value(self, asset.snapshot)
    }

    /// Loads several properties at once.
    public func load<each Value>(_ property: repeat TrackProperty<each Value>) async throws -> (repeat each Value) {
        var stages: Set<LoadStage> = []
        for p in repeat each property { stages.formUnion(p.key.stages) }
        try await asset.ensure(stages)
        let snapshot = asset.snapshot
        return (repeat try (each property).value(self, snapshot))
    }
}
