import FarmModel
import FarmStore

/// What went wrong, in words that name the thing and the problem.
public enum LibraryError: Error, Sendable, CustomStringConvertible {
    case unreadable(String, String)
    case notMedia(String, String)
    case unknownAsset(AssetID)
    case unknownPath(String)
    case unknownAlbum(String)
    case albumExists(String)
    /// A smart album is computed: it cannot be created, changed or deleted.
    case smartAlbum(String)
    case invalid(String)
    /// A scoped token may not do this.
    case notPermitted(String)
    case store(JobStoreError)

    public var description: String {
        switch self {
        case let .unreadable(path, why): "\(path): cannot be read: \(why)"
        case let .notMedia(path, why): "\(path): not media the farm can read: \(why)"
        case .unknownAsset(let id): "no asset \(id) in the library"
        case .unknownPath(let path): "\(path): not in the library on this host"
        case .unknownAlbum(let name): "no album \"\(name)\" (`mediafarm library album list` shows them)"
        case .albumExists(let name): "an album \"\(name)\" exists already"
        case .smartAlbum(let name): "\"\(name)\" is a smart album: its assets are computed, it cannot be created, changed or deleted"
        case .invalid(let message), .notPermitted(let message): message
        case .store(let error): error.description
        }
    }

    /// Exit status 2 (bad usage: a malformed id, cursor or token, a name that cannot be an album) rather than 1.
    public var isUsage: Bool {
        switch self {
        case .invalid, .smartAlbum: true
        case .store(let e): if case .invalidLocation = e { true } else { false }
        default: false
        }
    }

    static func wrap(_ error: any Error) -> LibraryError {
        if let e = error as? LibraryError { return e }
        if let e = error as? JobStoreError { return .store(e) }
        return .store(.unavailable(String(describing: error)))
    }
}
