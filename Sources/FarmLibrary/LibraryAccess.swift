import Crypto
import FarmModel
import FarmStore
import Foundation

/// What a caller may see (PHAuthorizationStatus): everything, or only the assets of some albums (a
/// scoped token, PHAuthorizationStatus.limited). Enforced by the library's own queries, so every way in
/// (the command line, the HTTP API) inherits it.
public enum LibraryAccess: Sendable, Hashable {
    case full
    /// A scoped token, by its name, and the albums it may see.
    case limited(name: String, albums: [String])

    public var albums: [String]? {
        if case .limited(_, let albums) = self { return albums }
        return nil
    }

    func requireFull(_ what: String) throws(LibraryError) {
        if case .limited(let name, _) = self { throw .notPermitted("the scoped token \"\(name)\" may not \(what)") }
    }

    func require(album: String) throws(LibraryError) {
        if case .limited(let name, let albums) = self, !albums.contains(album) {
            throw .notPermitted("the scoped token \"\(name)\" has no access to the album \"\(album)\" (only \(albums.map { "\"\($0)\"" }.joined(separator: ", ")))")
        }
    }

    /// A condition on `column` (an asset id) that keeps only visible assets, with its binds; nil for full access.
    func filter(_ column: String) -> (sql: String, binds: [SQLValue])? {
        guard let albums else { return nil }
        return ("\(column) IN (SELECT asset_id FROM album_assets WHERE album IN (\(AssetLibrary.marks(albums.count))))", albums.map { .text($0) })
    }
}

/// A scoped token as `library token list` shows it (never the secret itself).
public struct ScopedToken: Sendable, Hashable, Codable {
    public var name: String
    public var albums: [String]
    public var createdAt: Date
}

extension AssetLibrary {
    /// Makes a token that sees only `albums` (which must exist); returns the secret, shown once: the
    /// library keeps only its SHA-256.
    public func createToken(name: String, albums: [String]) async throws(LibraryError) -> String {
        try access.requireFull("make tokens")
        guard !name.isEmpty, name.count <= 100 else { throw .invalid("a token's name is 1 to 100 characters") }
        guard !albums.isEmpty else { throw .invalid("a scoped token needs at least one album (--album NAME)") }
        var random = SystemRandomNumberGenerator()
        let secret = "mfl_" + (0..<4).map { _ in String(random.next() as UInt64, radix: 16).leftPadded(16) }.joined()
        let time = now()
        try await write { s in
            for album in albums {
                guard try await s.value("SELECT 1 FROM albums WHERE name = ?", [.text(album)]) != nil else { throw LibraryError.unknownAlbum(album) }
            }
            guard try await s.value("SELECT 1 FROM library_tokens WHERE name = ?", [.text(name)]) == nil else {
                throw LibraryError.invalid("a token named \"\(name)\" exists already (revoke it first)")
            }
            try await s.execute("INSERT INTO library_tokens (hash, name, albums, created_at) VALUES (?, ?, ?, ?)",
                                [.text(Self.tokenHash(secret)), .text(name), .text(Self.json(albums)), SQLValue(time)])
            try await record(s, .tokenCreated, detail: name, at: time)
        }
        return secret
    }

    public func tokens() async throws(LibraryError) -> [ScopedToken] {
        try access.requireFull("list tokens")
        return try await read { s in
            try await s.rows("SELECT name, albums, created_at FROM library_tokens ORDER BY name").map { r in
                ScopedToken(name: r[0].string ?? "", albums: Self.decode([String].self, r[1].string) ?? [], createdAt: r[2].date ?? .distantPast)
            }
        }
    }

    public func revokeToken(name: String) async throws(LibraryError) {
        try access.requireFull("revoke tokens")
        let time = now()
        try await write { s in
            guard !(try await s.rows("DELETE FROM library_tokens WHERE name = ? RETURNING name", [.text(name)])).isEmpty else {
                throw LibraryError.invalid("no token named \"\(name)\"")
            }
            try await record(s, .tokenRevoked, detail: name, at: time)
        }
    }

    /// The access a token's secret gives; an unknown secret is refused (never full access).
    func access(for secret: String) async throws(LibraryError) -> LibraryAccess {
        let hash = Self.tokenHash(secret.trimmingCharacters(in: .whitespacesAndNewlines))
        let row = try await read { s in try await s.rows("SELECT name, albums FROM library_tokens WHERE hash = ?", [.text(hash)]).first }
        guard let row, let name = row[0].string, let albums = Self.decode([String].self, row[1].string) else {
            throw .notPermitted("the library token is not valid (unknown or revoked)")
        }
        return .limited(name: name, albums: albums)
    }

    static func tokenHash(_ secret: String) -> String {
        SHA256.hash(data: Data(secret.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
