import FarmModel
import FarmStore
import Foundation
import QualityModel

/// A code a scan found in an asset.
public struct LibraryCode: Sendable, Hashable, Codable {
    public var symbology: String
    public var payload: String?
    public var payloadBase64: String?

    public init(symbology: String, payload: String?, payloadBase64: String? = nil) {
        self.symbology = symbology
        self.payload = payload
        self.payloadBase64 = payloadBase64
    }
}

/// An asset as fetches return it (PHAsset).
public struct LibraryAsset: Sendable, Hashable, Codable {
    public var id: AssetID
    public var sha256: String
    public var facts: AssetFacts
    public var subtypes: [String]
    /// The creation date from the file's metadata, else when it was added: what `--sort date` orders by.
    public var date: Date
    public var addedAt: Date
    public var codes: [LibraryCode]
    /// Where this host keeps it (the first path, when there are several); nil when not on this host.
    public var path: String?
    /// The verdict of the last quality checks of it (a job's `"checks"` of it as an input, or of it as the
    /// export they made); nil when none ran.
    public var verdict: CheckVerdict?
}

/// What to fetch (PHFetchOptions): predicates on the facts, a sort, and a page.
public struct FetchOptions: Sendable, Hashable {
    public enum Sort: String, Sendable, CaseIterable {
        case date, duration, added
        var column: String {
            switch self {
            case .date: "a.date_key"
            case .duration: "a.duration"
            case .added: "a.added_at"
            }
        }
    }

    public var album: String?
    public var mediaType: LibraryMediaType?
    /// On or after (the asset's date).
    public var since: Date?
    /// Before (the asset's date).
    public var until: Date?
    public var minDuration: Double?
    public var maxDuration: Double?
    public var codec: String?
    public var hasCodes: Bool?
    public var slowMotion: Bool?
    /// Only assets whose last quality checks gave this verdict.
    public var verdict: CheckVerdict?
    public var sort: Sort = .date
    public var descending = false
    public var limit: Int?
    /// The `nextCursor` of the page before.
    public var after: String?
    /// Only these assets (those the caller may see among them).
    public var ids: [AssetID]?
    /// The farm's pictures too: posters, storyboards and waveforms are representations of the assets they
    /// show (as a PhotoKit thumbnail is), so the whole library and its smart albums leave them out; a user
    /// album lists what was put in it.
    public var pictures = false

    public init() {}
}

/// One page of a fetch.
public struct FetchResult: Sendable, Hashable, Codable {
    public var assets: [LibraryAsset]
    /// Give it as `after` for the next page; nil on the last one.
    public var nextCursor: String?
}

extension AssetLibrary {
    static let assetColumns = "a.id, a.sha256, a.facts, a.added_at, a.date_key, a.codes, a.verdict"
    /// An asset `a` that is no picture the farm made of another (`FetchOptions.pictures`).
    static let notAPicture = "NOT EXISTS (SELECT 1 FROM asset_representations p WHERE p.output_id = a.id AND p.kind IN ("
        + RepresentationKind.pictures.map { "'\($0.rawValue)'" }.joined(separator: ", ") + "))"

    /// The assets the options select, in their order, a page at a time.
    public func fetch(_ options: FetchOptions) async throws(LibraryError) -> FetchResult {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        func add(_ sql: String, _ values: [SQLValue] = []) {
            conditions.append(sql)
            binds += values
        }
        if let scope = access.filter("a.id") { add(scope.sql, scope.binds) }
        if let album = options.album {
            if let smart = SmartAlbum(rawValue: album) {
                let condition = smart.condition(now: now())
                add(condition.sql, condition.binds)
            } else {
                try access.require(album: album)
                add("a.id IN (SELECT asset_id FROM album_assets WHERE album = ?)", [.text(album)])
            }
        }
        if !options.pictures && (options.album.map { SmartAlbum(rawValue: $0) != nil } ?? true) { add(Self.notAPicture) }
        if let ids = options.ids { add("a.id IN (\((["''"] + ids.map { _ in "?" }).joined(separator: ", ")))", ids.map { .text($0.rawValue) }) }
        if let type = options.mediaType { add("a.media_type = ?", [.text(type.rawValue)]) }
        if let since = options.since { add("a.date_key >= ?", [SQLValue(since)]) }
        if let until = options.until { add("a.date_key < ?", [SQLValue(until)]) }
        if let min = options.minDuration { add("a.duration >= ?", [.real(min)]) }
        if let max = options.maxDuration { add("a.duration <= ?", [.real(max)]) }
        if let codec = options.codec { add("a.codec = ?", [.text(codec)]) }
        if let hasCodes = options.hasCodes { add("a.has_codes = ?", [SQLValue(hasCodes)]) }
        if let slowMotion = options.slowMotion { add("a.slow_motion = ?", [SQLValue(slowMotion)]) }
        if let verdict = options.verdict { add("a.verdict = ?", [.text(verdict.rawValue)]) }
        let key = options.sort.column
        if let cursor = options.after {
            let (sort, value, id) = try Self.parseCursor(cursor)
            guard sort == options.sort.rawValue else {
                throw .invalid("the cursor continues a listing sorted by \(sort), not by \(options.sort.rawValue)")
            }
            add("(\(key), a.id) \(options.descending ? "<" : ">") (?, ?)", [.real(value), .text(id.rawValue)])
        }
        if let limit = options.limit, limit < 1 { throw .invalid("--limit must be at least 1") }
        let order = options.descending ? "DESC" : "ASC"
        // Where this host reaches it: its own file, else the object every host reads (host '*').
        var sql = "SELECT \(Self.assetColumns), \(key), COALESCE((SELECT MIN(l.path) FROM asset_locations l WHERE l.asset_id = a.id AND l.host = ? AND l.state = 'present'), "
            + "(SELECT MIN(l.path) FROM asset_locations l WHERE l.asset_id = a.id AND l.host = '\(Self.everyHost)' AND l.state = 'present')) FROM assets a"
        binds.insert(.text(host), at: 0)
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += " ORDER BY \(key) \(order), a.id \(order)"
        if let limit = options.limit {
            sql += " LIMIT ?"
            binds.append(.integer(Int64(limit) + 1))
        }
        if let album = options.album, SmartAlbum(rawValue: album) == nil {
            let exists = try await read { s in try await s.value("SELECT 1 FROM albums WHERE name = ?", [.text(album)]) != nil }
            guard exists else { throw .unknownAlbum(album) }
        }
        let query = sql
        let values = binds
        let rows = try await read { s in try await s.rows(query, values) }
        var assets: [LibraryAsset] = []
        var keys: [Double] = []
        for row in rows.prefix(options.limit ?? rows.count) {
            guard var asset = Self.asset(row) else { continue }
            asset.path = row[8].string
            assets.append(asset)
            keys.append(row[7].double ?? 0)
        }
        let more = options.limit.map { rows.count > $0 } ?? false
        let next = more ? assets.last.map { Self.cursor(options.sort.rawValue, keys.last ?? 0, $0.id) } : nil
        return FetchResult(assets: assets, nextCursor: next)
    }

    /// An asset from `assetColumns`.
    static func asset(_ row: SQLRow) -> LibraryAsset? {
        guard let id = row[0].string.flatMap(AssetID.init), let facts = decode(AssetFacts.self, row[2].string) else { return nil }
        return LibraryAsset(id: id, sha256: row[1].string ?? "", facts: facts, subtypes: facts.subtypes,
                            date: row[4].date ?? .distantPast, addedAt: row[3].date ?? .distantPast,
                            codes: decode([LibraryCode].self, row[5].string) ?? [], path: nil,
                            verdict: row[6].string.flatMap(CheckVerdict.init(rawValue:)))
    }

    static func cursor(_ sort: String, _ key: Double, _ id: AssetID) -> String {
        Data("\(sort)|\(key)|\(id)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func parseCursor(_ text: String) throws(LibraryError) -> (String, Double, AssetID) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let parts = Data(base64Encoded: base64).map { String(decoding: $0, as: UTF8.self) }?.split(separator: "|").map(String.init) ?? []
        guard parts.count == 3, let key = Double(parts[1]), let id = AssetID(parts[2]) else {
            throw .invalid("\"\(text)\" is not a cursor (give the nextCursor a listing printed)")
        }
        return (parts[0], key, id)
    }
}
