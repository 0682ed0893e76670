/// The properties of an `Asset` that load asynchronously, as in AVAsset.
public enum AssetKey: String, Sendable, CaseIterable, Hashable, Codable {
    case duration, tracks, metadata, chapters, mediaSelectionGroups
    case isPlayable, isExportable, isReadable, isComposable
    /// The audio's loudness (BS.1770-4, EBU R128): every audio sample decoded, so asked for by name only.
    case loudness

    /// What an inspection loads unless told otherwise: every key but `loudness`, which decodes all the audio.
    public static let standard: Set<AssetKey> = Set(allCases).subtracting([.loudness])

    /// The loading stages this key's value is computed from.
    var stages: Set<LoadStage> {
        switch self {
        case .tracks, .metadata, .chapters, .mediaSelectionGroups, .isReadable, .isExportable: return [.probe]
        case .duration, .isComposable: return [.probe, .timing]
        case .isPlayable: return [.probe, .decoding]
        case .loudness: return [.probe, .loudness]
        }
    }
}

/// The properties of an `AssetTrack` that load asynchronously, as in AVAssetTrack.
public enum TrackKey: String, Sendable, CaseIterable, Hashable, Codable {
    case mediaType, formatDescription, naturalSize, preferredTransform, languageCode
    case nominalFrameRate, minFrameDuration, estimatedDataRate, timeRange
    case isDecodable

    var stages: Set<LoadStage> {
        switch self {
        case .mediaType, .formatDescription, .naturalSize, .preferredTransform, .languageCode: return [.probe]
        case .nominalFrameRate, .minFrameDuration, .estimatedDataRate, .timeRange: return [.probe, .timing]
        case .isDecodable: return [.probe, .decoding]
        }
    }
}

/// The work behind the keys. Each stage runs at most once per asset (unless cancelled) and needs the
/// file opened; one `load` call runs all the stages it needs on one opening.
enum LoadStage: Int, Sendable, CaseIterable, Hashable, Comparable {
    /// Open the container and read stream parameters (FFmpeg's probing).
    case probe
    /// Measure timing from packet timestamps: durations, frame intervals, data rates.
    case timing
    /// Decode the first frame of every audio and video track.
    case decoding
    /// Decode every audio sample and measure its loudness.
    case loudness

    static func < (a: LoadStage, b: LoadStage) -> Bool { a.rawValue < b.rawValue }
}

/// The load state of one key, as AVKeyValueStatus / AVAsyncProperty.Status.
public enum LoadStatus: Sendable, CustomStringConvertible {
    case notYetLoaded
    case loading
    case loaded
    case failed(any Error)
    case cancelled

    public var description: String {
        switch self {
        case .notYetLoaded: return "notYetLoaded"
        case .loading: return "loading"
        case .loaded: return "loaded"
        case .failed(let e): return "failed(\(e))"
        case .cancelled: return "cancelled"
        }
    }

    public var isLoaded: Bool { if case .loaded = self { return true } else { return false } }
}
