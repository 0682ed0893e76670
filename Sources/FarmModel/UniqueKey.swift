/// A job's unique key (at most one live job holds it), in the namespace of the way it came in, so that keys
/// of different ways in never meet: a key given through the API is not the same key given on the command
/// line, nor another token's. The queue keeps `stored`; this type is the one place that spells it.
public struct UniqueKey: Sendable, Hashable, CustomStringConvertible {
    /// As the queue keeps it.
    public let stored: String
    public var description: String { stored }

    private init(_ stored: String) { self.stored = stored }

    /// A key as the queue kept it.
    public init(stored: String) { self.stored = stored }

    /// The command line's (`submit --unique-key`): the key as given.
    public static func given(_ key: String) -> UniqueKey { UniqueKey(key) }

    /// The HTTP API's: `api:KEY` with the full token, `api:NAME:KEY` with the scoped library token NAME.
    public static func api(_ key: String, scopedToken name: String?) -> UniqueKey {
        UniqueKey(name.map { "api:\($0):\(key)" } ?? "api:\(key)")
    }

    /// A watch folder's file, by its content hash; the later jobs of its chain by their step.
    public static func ingest(hash: String, step: String? = nil) -> UniqueKey {
        UniqueKey("ingest:\(hash)" + (step.map { ":" + $0 } ?? ""))
    }

    /// A capture's segment.
    public static func captureSegment(_ captureID: String, index: Int) -> UniqueKey { UniqueKey("capture:\(captureID):\(index)") }

    /// A capture's assembly of the segments from `first`.
    public static func captureAssembly(_ captureID: String, first: Int) -> UniqueKey { UniqueKey("capture:\(captureID):assembly:\(first)") }

    /// The library's poster of an asset, whoever asks for it (a scoped token's and the farm's token's requests
    /// meet the same live job), in a namespace no API key (`api:`) or ingest key (`ingest:`) is in.
    public static func posterRequest(_ id: AssetID) -> UniqueKey { UniqueKey("poster-request:" + id.rawValue) }

    /// Whether a manifest's `key` (its `"after"`, a `job:KEY#output` source) names this key: as the queue
    /// keeps it, or as an API submitter gave it (`api:KEY`, `api:NAME:KEY`).
    public func isNamed(_ key: String) -> Bool {
        stored == key || (stored.hasPrefix("api:") && stored.hasSuffix(":" + key))
    }
}

/// How a way in's manifests name other jobs' keys (`"after"`): the queue's spelling of them.
public enum KeyNamespace: Sendable, Hashable {
    /// As given: the command line, ingest, capture.
    case given
    /// The HTTP API's, of the full token (nil) or a scoped library token's name.
    case api(scopedToken: String?)

    public func key(_ name: String) -> UniqueKey {
        switch self {
        case .given: .given(name)
        case .api(let token): .api(name, scopedToken: token)
        }
    }

    /// `reference` as the queue looks it up: an id as it is, a key in this namespace.
    public func reference(_ reference: JobReference) -> JobReference {
        guard case .key(let name) = reference else { return reference }
        return .key(key(name).stored)
    }
}
