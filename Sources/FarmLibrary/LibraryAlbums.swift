import FarmModel
import FarmStore
import Foundation

/// Albums (PHAssetCollection): user albums with members, and smart albums computed from facts when asked.
public enum SmartAlbum: String, Sendable, CaseIterable, Codable {
    case videos = "Videos"
    case audio = "Audio"
    case slowMotion = "Slo-mo"
    case recentlyAdded = "Recently Added"
    case withCodes = "With Codes"
    case failedJobsInputs = "Failed Jobs' Inputs"

    /// Recently Added: the last 30 days, as Photos keeps it.
    public static let recentDays = 30.0

    /// The condition on assets `a` that selects the album's members, with its binds.
    func condition(now: Date) -> (sql: String, binds: [SQLValue]) {
        switch self {
        case .videos: ("a.media_type = 'video'", [])
        case .audio: ("a.media_type = 'audio'", [])
        case .slowMotion: ("a.slow_motion = 1", [])
        case .recentlyAdded: ("a.added_at >= ?", [SQLValue(now.addingTimeInterval(-Self.recentDays * 86400))])
        case .withCodes: ("a.has_codes = 1", [])
        case .failedJobsInputs:
            ("a.id IN (SELECT i.asset_id FROM job_inputs i JOIN jobs j ON j.id = i.job_id WHERE j.state IN ('failed', 'dead'))", [])
        }
    }
}

/// An album as `album list` shows it.
public struct AlbumInfo: Sendable, Hashable, Codable {
    public var name: String
    public var smart: Bool
    public var count: Int
    public var createdAt: Date?
}

extension AssetLibrary {
    static func checkAlbumName(_ name: String) throws(LibraryError) {
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 200,
              !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalid("\"\(name)\" cannot be an album's name: 1 to 200 characters, no control characters")
        }
        if SmartAlbum(rawValue: name) != nil { throw .smartAlbum(name) }
    }

    public func createAlbum(_ name: String) async throws(LibraryError) {
        try access.requireFull("create albums")
        try Self.checkAlbumName(name)
        let time = now()
        try await write { s in
            guard !(try await s.rows("INSERT INTO albums (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING RETURNING name",
                                     [.text(name), SQLValue(time)])).isEmpty else { throw LibraryError.albumExists(name) }
            try await record(s, .albumCreated, album: name, at: time)
        }
    }

    /// Deletes a user album (its assets stay in the library).
    public func deleteAlbum(_ name: String) async throws(LibraryError) {
        try access.requireFull("delete albums")
        if SmartAlbum(rawValue: name) != nil { throw .smartAlbum(name) }
        let time = now()
        try await write { s in
            try await s.execute("DELETE FROM album_assets WHERE album = ?", [.text(name)])
            guard !(try await s.rows("DELETE FROM albums WHERE name = ? RETURNING name", [.text(name)])).isEmpty else {
                throw LibraryError.unknownAlbum(name)
            }
            try await record(s, .albumDeleted, album: name, at: time)
        }
    }

    /// Adds assets to a user album (each must be in the library and visible); returns how many were new to it.
    @discardableResult
    public func addToAlbum(_ name: String, _ ids: [AssetID], creating: Bool = false) async throws(LibraryError) -> Int {
        if SmartAlbum(rawValue: name) != nil { throw .smartAlbum(name) }
        try access.require(album: name)
        let time = now()
        return try await write { s in try await insertMembers(s, album: name, ids, creating: creating, at: time) }
    }

    /// - Parameter checked: each id must be visible to this caller (not when the caller has just added the file).
    func insertMembers(_ s: any SQLSession, album: String, _ ids: [AssetID], creating: Bool, checked: Bool = true, at time: Date) async throws -> Int {
        if try await s.value("SELECT 1 FROM albums WHERE name = ?", [.text(album)]) == nil {
            guard creating else { throw LibraryError.unknownAlbum(album) }
            try access.requireFull("create albums")
            try await s.execute("INSERT INTO albums (name, created_at) VALUES (?, ?)", [.text(album), SQLValue(time)])
            try await record(s, .albumCreated, album: album, at: time)
        }
        var added = 0
        for id in ids {
            if checked, !(try await visible(s, id)) { throw LibraryError.unknownAsset(id) }
            let rows = try await s.rows("""
                INSERT INTO album_assets (album, asset_id, added_at) VALUES (?, ?, ?) ON CONFLICT (album, asset_id) DO NOTHING RETURNING album
                """, [.text(album), .text(id.rawValue), SQLValue(time)])
            if !rows.isEmpty {
                added += 1
                try await record(s, .albumAssetAdded, asset: id, album: album, at: time)
            }
        }
        return added
    }

    /// Removes assets from a user album; returns how many were in it.
    @discardableResult
    public func removeFromAlbum(_ name: String, _ ids: [AssetID]) async throws(LibraryError) -> Int {
        if SmartAlbum(rawValue: name) != nil { throw .smartAlbum(name) }
        try access.require(album: name)
        let time = now()
        return try await write { s in
            guard try await s.value("SELECT 1 FROM albums WHERE name = ?", [.text(name)]) != nil else { throw LibraryError.unknownAlbum(name) }
            var removed = 0
            for id in ids {
                let rows = try await s.rows("DELETE FROM album_assets WHERE album = ? AND asset_id = ? RETURNING album", [.text(name), .text(id.rawValue)])
                if !rows.isEmpty {
                    removed += 1
                    try await record(s, .albumAssetRemoved, asset: id, album: name, at: time)
                }
            }
            return removed
        }
    }

    /// User albums (those a scoped token names, for one) with their sizes, then the smart albums.
    public func albums() async throws(LibraryError) -> [AlbumInfo] {
        let access = access
        let time = now()
        return try await read { s in
            var binds: [SQLValue] = []
            var sql = "SELECT b.name, b.created_at, (SELECT COUNT(*) FROM album_assets m WHERE m.album = b.name) FROM albums b"
            if let albums = access.albums {
                sql += " WHERE b.name IN (\(Self.marks(albums.count)))"
                binds = albums.map { .text($0) }
            }
            var result = try await s.rows(sql + " ORDER BY b.name", binds).map { r in
                AlbumInfo(name: r[0].string ?? "", smart: false, count: Int(r[2].int ?? 0), createdAt: r[1].date)
            }
            for smart in SmartAlbum.allCases {
                var condition = smart.condition(now: time)
                condition.sql += " AND " + Self.notAPicture
                if let scope = access.filter("a.id") {
                    condition = ("\(condition.sql) AND \(scope.sql)", condition.binds + scope.binds)
                }
                let count = try await s.value("SELECT COUNT(*) FROM assets a WHERE \(condition.sql)", condition.binds)?.int ?? 0
                result.append(AlbumInfo(name: smart.rawValue, smart: true, count: Int(count), createdAt: nil))
            }
            return result
        }
    }

    /// Whether the asset exists and this caller may see it.
    func visible(_ s: any SQLSession, _ id: AssetID) async throws -> Bool {
        var sql = "SELECT 1 FROM assets a WHERE a.id = ?"
        var binds: [SQLValue] = [.text(id.rawValue)]
        if let scope = access.filter("a.id") {
            sql += " AND " + scope.sql
            binds += scope.binds
        }
        return try await s.value(sql, binds) != nil
    }
}
