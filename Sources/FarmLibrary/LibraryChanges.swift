import FarmModel
import FarmStore
import Foundation

/// One change to the library (PHPersistentChange), numbered in the order it was committed.
public struct LibraryChange: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case assetAdded, assetUpdated, assetRemoved
        case locationAdded, locationMissing, locationChanged, locationRemoved
        case albumCreated, albumDeleted, albumAssetAdded, albumAssetRemoved
        case representationAdded
        case tokenCreated, tokenRevoked
    }

    /// The change token just after this change.
    public var token: String
    public var at: Date
    public var kind: Kind
    public var assetID: AssetID?
    public var album: String?
    public var host: String?
    public var path: String?
    public var detail: String?
}

/// What `changes(since:)` returns: the changes after a token, and the token to ask from next time.
public struct ChangeList: Sendable, Hashable, Codable {
    public var changes: [LibraryChange]
    /// Everything up to here has been listed (more may follow when `more` is set).
    public var token: String
    public var more: Bool
}

extension AssetLibrary {
    /// The library's id (in every change token) and its last change's number.
    func position() async throws(LibraryError) -> (library: String, seq: Int64) {
        try await read { s in
            let id = try await s.value("SELECT value FROM library_meta WHERE key = 'id'")?.string ?? "library"
            let seq = try await s.value("SELECT MAX(seq) FROM library_changes")?.int ?? 0
            return (id, seq)
        }
    }

    /// The token for "now": changes made after this call are listed by `changes(since:)`.
    public func currentToken() async throws(LibraryError) -> String {
        let (library, seq) = try await position()
        return "\(library).\(seq)"
    }

    /// The changes committed after `token`, oldest first, at most `limit`; nil lists from the library's start.
    /// A scoped token sees the changes of the assets and albums it may see.
    public func changes(since token: String?, limit: Int = 10_000) async throws(LibraryError) -> ChangeList {
        let (library, last) = try await position()
        var after: Int64 = 0
        if let token {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let seq = Int64(parts[1]), seq >= 0 else {
                throw .invalid("\"\(token)\" is not a change token (give one `library changes` printed)")
            }
            guard parts[0] == library else { throw .invalid("the change token \(token) is from another library (this one is \(library))") }
            guard seq <= last else { throw .invalid("the change token \(token) is ahead of this library's last change (\(library).\(last))") }
            after = seq
        }
        var sql = "SELECT seq, at, kind, asset_id, album, host, path, detail FROM library_changes c WHERE seq > ?"
        var binds: [SQLValue] = [.integer(after)]
        if let albums = access.albums {
            let marks = Self.marks(albums.count)
            sql += " AND (c.album IN (\(marks)) OR c.asset_id IN (SELECT asset_id FROM album_assets WHERE album IN (\(marks))))"
            binds += albums.map { .text($0) } + albums.map { .text($0) }
        }
        sql += " ORDER BY seq LIMIT ?"
        binds.append(.integer(Int64(limit) + 1))
        let query = sql
        let values = binds
        let rows = try await read { s in try await s.rows(query, values) }
        let changes = rows.prefix(limit).compactMap { r -> LibraryChange? in
            guard let seq = r[0].int, let kind = r[2].string.flatMap(LibraryChange.Kind.init) else { return nil }
            return LibraryChange(token: "\(library).\(seq)", at: r[1].date ?? .distantPast, kind: kind, assetID: r[3].string.flatMap(AssetID.init),
                                 album: r[4].string, host: r[5].string, path: r[6].string, detail: r[7].string)
        }
        let more = rows.count > limit
        let end = more ? (rows[limit - 1][0].int ?? last) : last
        return ChangeList(changes: changes, token: "\(library).\(end)", more: more)
    }
}
