import FarmModel
import FarmStore
import Foundation
import SafeFiles

/// The asset library (PhotoKit for a farm), in the queue's database beside the jobs. An asset's id comes
/// from its content, so the same file has the same id on every host; each host records where it keeps
/// the file (a local identifier: host and path), and `resolve` maps ids to this host's paths. Every
/// change is numbered, so another system can ask what changed since a token. A library opened with a
/// scoped token sees and submits only the assets of that token's albums.
public struct AssetLibrary: Sendable {
    public let database: any SQLDatabase
    /// This host's name in local identifiers.
    public let host: String
    public let access: LibraryAccess
    /// What learns the facts of content the library does not know yet (the media program's inspection;
    /// `.none` in a program that loads no media library).
    public let inspector: AssetInspector
    let now: @Sendable () -> Date

    public init(database: any SQLDatabase, host: String = AssetLibrary.defaultHost, access: LibraryAccess = .full,
                inspector: AssetInspector, now: @escaping @Sendable () -> Date = { Date() }) {
        self.database = database
        self.host = host
        self.access = access
        self.inspector = inspector
        self.now = now
    }

    /// The library of the queue `store` opened, with full access.
    public init(store: any JobStore, host: String = AssetLibrary.defaultHost, inspector: AssetInspector) throws(LibraryError) {
        do { self.init(database: try store.database, host: host, inspector: inspector) } catch { throw .store(error) }
    }

    /// The same library as `access` sees it (a caller whose scoped token was looked up already).
    public func seen(as access: LibraryAccess) -> AssetLibrary {
        AssetLibrary(database: database, host: host, access: access, inspector: inspector, now: now)
    }

    /// The library of the queue `store` opened, with the access `token` gives (nil: full access).
    public static func open(_ store: any JobStore, host: String = AssetLibrary.defaultHost, token: String? = nil,
                            inspector: AssetInspector) async throws(LibraryError) -> AssetLibrary {
        let library = try AssetLibrary(store: store, host: host, inspector: inspector)
        guard let token else { return library }
        return AssetLibrary(database: library.database, host: host, access: try await library.access(for: token), inspector: inspector)
    }

    /// This machine's short host name.
    public static var defaultHost: String {
        ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "localhost"
    }

    // MARK: - Transactions

    /// A transaction that records changes: PostgreSQL writers of changes take turns (so change numbers
    /// are committed in order and a change token never skips one still to commit); SQLite's write lock
    /// already does that.
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws(LibraryError) -> T {
        do {
            return try await database.write { s in
                if s.dialect == .postgres { try await s.execute("LOCK TABLE library_changes IN EXCLUSIVE MODE") }
                return try await body(s)
            }
        } catch {
            throw LibraryError.wrap(error)
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws(LibraryError) -> T {
        do {
            return try await database.read(body)
        } catch {
            throw LibraryError.wrap(error)
        }
    }

    /// Appends one change.
    func record(_ s: any SQLSession, _ kind: LibraryChange.Kind, asset: AssetID? = nil, album: String? = nil, path: String? = nil,
                detail: String? = nil, at time: Date) async throws {
        try await s.execute("INSERT INTO library_changes (at, kind, asset_id, album, host, path, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                            [SQLValue(time), .text(kind.rawValue), SQLValue(asset?.rawValue), SQLValue(album), path == nil ? .null : .text(host),
                             SQLValue(path), SQLValue(detail)])
    }

    /// `?, ?, ?` for `count` values.
    static func marks(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    // MARK: - Adding

    /// Registers media files (folders are walked; hidden entries skipped): each is hashed (unless this
    /// host registered the same path with the same size, modification time and inode), inspected when
    /// its content is new to the library, and recorded at this host's path. A file that is not media is
    /// refused with the reason; the others are still added.
    public func add(_ paths: [String], album: String? = nil, progress: (@Sendable (AddOutcome) -> Void)? = nil) async throws(LibraryError) -> [AddOutcome] {
        if let album {
            try Self.checkAlbumName(album)
            try access.require(album: album)
        } else if case .limited = access {
            throw .notPermitted("a scoped token adds only into one of its albums: give --album")
        }
        // The queue's own files, when a folder holding them is added.
        let queueFile = database.dialect == .sqlite ? Self.realPath(database.location) : nil
        var outcomes: [AddOutcome] = []
        for path in paths {
            let files = path.hasPrefix("s3://") ? await Self.objects(at: path) : Self.files(at: path)
            for file in files {
                if case .success(let real) = file, let queueFile, real.hasPrefix(queueFile),
                   ["", "-wal", "-shm", "-journal"].contains(String(real.dropFirst(queueFile.count))) { continue }
                let outcome: AddOutcome
                switch file {
                case .failure(let refusal): outcome = refusal
                case .success(let real):
                    do {
                        outcome = real.hasPrefix("s3://") ? try await registerObject(real, album: album) : try await register(real, album: album)
                    } catch let error where error.isPerFile {
                        outcome = AddOutcome(path: real, status: .refused, reason: error.reasonOnly)
                    }
                }
                progress?(outcome)
                outcomes.append(outcome)
            }
        }
        try await maintain()
        return outcomes
    }

    /// Keeps SQLite's query planner informed: after the number of assets has doubled (or halved) since its
    /// statistics were gathered, they are gathered again (ANALYZE: tens of milliseconds for 100,000 assets).
    /// Without them SQLite may sort a whole codec's assets instead of walking the duration index (30 ms
    /// against 1 ms, measured by bench/library). PostgreSQL's autovacuum does this by itself.
    public func maintain() async throws(LibraryError) {
        guard database.dialect == .sqlite else { return }
        try await write { s in
            let count = try await s.value("SELECT COUNT(*) FROM assets")?.int ?? 0
            guard count >= 1000 else { return }
            let hasStatistics = try await s.value("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")?.int == 1
            let analyzed = hasStatistics
                ? try await s.value("SELECT stat FROM sqlite_stat1 WHERE idx = 'assets_duration'")?.string?.split(separator: " ").first.flatMap { Int64($0) }
                : nil
            if let analyzed, count < analyzed * 2, count * 2 > analyzed { return }
            try await s.execute("ANALYZE")
        }
    }

    /// The regular files at `path` (itself, or under it when it is a folder), each as its real path; or
    /// why a path cannot be added.
    static func files(at path: String) -> [Result<String, AddOutcome>] {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return [.failure(AddOutcome(path: path, status: .refused, reason: String(cString: strerror(errno))))]
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            guard (info.st_mode & S_IFMT) == S_IFREG else { return [.failure(AddOutcome(path: path, status: .refused, reason: "not a regular file"))] }
            return [.success(realPath(path))]
        }
        let walk = FolderWalk(realPath(path))
        var result: [Result<String, AddOutcome>] = walk.entries.compactMap { entry in
            entry.kind == .regular && !entry.name.hasPrefix(".") ? .success(entry.path) : nil
        }
        result += walk.unreadable.map { .failure(AddOutcome(path: $0, status: .refused, reason: "a folder that cannot be read")) }
        return result
    }

    static func realPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Registers one file at its real path.
    func register(_ path: String, album: String?) async throws(LibraryError) -> AddOutcome {
        guard let stamp = FileStamp(path: path) else { throw .unreadable(path, "no regular file there") }
        let host = host
        let known = try await read { s in
            try await s.rows("SELECT asset_id, size, mtime, inode, device FROM asset_locations WHERE host = ? AND path = ? AND state = 'present'",
                             [.text(host), .text(path)]).first
        }
        if let known, let id = known[0].string.flatMap(AssetID.init),
           FileStamp(known, from: 1) == stamp {
            if let album { _ = try await write { s in try await insertMembers(s, album: album, [id], creating: true, checked: false, at: now()) } }
            return AddOutcome(path: path, id: id, status: .unchanged)
        }
        let hash = try await ContentHash.reading(path)
        let status = try await record(hash, at: path, stamp: stamp, album: album)
        return AddOutcome(path: path, id: hash.id, status: status, previous: known?[0].string.flatMap(AssetID.init).flatMap { $0 == hash.id ? nil : $0 })
    }

    /// Registers a file whose content hash the caller computed, with its facts when it inspected it too
    /// (ingest, capture): nothing is read again unless the content is new and `facts` is nil.
    @discardableResult
    public func register(_ path: String, hash: ContentHash, facts: AssetFacts? = nil, album: String? = nil) async throws(LibraryError) -> AddOutcome {
        if let album { try Self.checkAlbumName(album) }
        let real = Self.realPath(path)
        guard let stamp = FileStamp(path: real) else { throw .unreadable(path, "no regular file there") }
        let status = try await record(hash, at: real, stamp: stamp, facts: facts, album: album)
        if status == .added { try await maintain() }
        return AddOutcome(path: real, id: hash.id, status: status)
    }

    /// Records content at a path of this host: its facts are inspected only when the library does not
    /// know the content yet (and the caller has none).
    func record(_ hash: ContentHash, at path: String, stamp: FileStamp, facts given: AssetFacts? = nil,
                album: String?, host placeHost: String? = nil, etag: String? = nil) async throws(LibraryError) -> AddOutcome.Status {
        let known = try await read { s in try await s.value("SELECT 1 FROM assets WHERE id = ?", [.text(hash.id.rawValue)]) != nil }
        var facts: AssetFacts?
        if !known {
            if var given {
                given.size = stamp.size  // the file's own, whatever the caller knew
                facts = given
            } else {
                facts = try await inspector.facts(path, stamp.size)
            }
        }
        return try await place(hash, facts: facts, at: path, stamp: stamp, album: album, host: placeHost, etag: etag)
    }

    /// Records the asset (when new), its location on this host (marking another asset that was at the
    /// same path as changed) and its album, in one transaction.
    /// `placeHost`: another host than this one (`everyHost` for an object), and `etag` the object's.
    func place(_ hash: ContentHash, facts: AssetFacts?, at path: String, stamp: FileStamp, album: String?,
               host placeHost: String? = nil, etag: String? = nil) async throws(LibraryError) -> AddOutcome.Status {
        let time = now()
        let host = placeHost ?? host
        return try await write { s in
            var inserted = false
            if let facts {
                let rows = try await s.rows("""
                    INSERT INTO assets (id, sha256, size, media_type, duration, codec, frame_rate, width, height, has_audio, rotated,
                                        slow_motion, created, location, make, model, facts, added_at, date_key)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO NOTHING RETURNING id
                    """, [.text(hash.id.rawValue), .text(hash.sha256), .integer(facts.size), .text(facts.mediaType.rawValue),
                          .real(facts.duration.seconds), SQLValue(facts.codec), SQLValue(facts.frameRate), SQLValue(facts.width),
                          SQLValue(facts.height), SQLValue(facts.hasAudio), SQLValue(facts.isRotated), SQLValue(facts.isSlowMotion),
                          SQLValue(facts.creationDate), SQLValue(facts.location), SQLValue(facts.make), SQLValue(facts.model),
                          .text(Self.json(facts)), SQLValue(time), SQLValue(facts.creationDate ?? time)])
                if !rows.isEmpty {
                    inserted = true
                    try await record(s, .assetAdded, asset: hash.id, path: path, at: time)
                }
            }
            let displaced = try await s.rows("""
                UPDATE asset_locations SET state = 'changed', seen_at = ?
                WHERE host = ? AND path = ? AND state = 'present' AND asset_id <> ? RETURNING asset_id
                """, [SQLValue(time), .text(host), .text(path), .text(hash.id.rawValue)])
            for row in displaced {
                if let old = row[0].string.flatMap(AssetID.init) {
                    try await record(s, .locationChanged, asset: old, path: path, detail: "now holds \(hash.id)", at: time)
                }
            }
            let before = try await s.value("SELECT state FROM asset_locations WHERE asset_id = ? AND host = ? AND path = ?",
                                           [.text(hash.id.rawValue), .text(host), .text(path)])
            try await s.execute("""
                INSERT INTO asset_locations (asset_id, host, path, state, size, mtime, inode, device, seen_at, etag)
                VALUES (?, ?, ?, 'present', ?, ?, ?, ?, ?, ?)
                ON CONFLICT (asset_id, host, path) DO UPDATE SET state = 'present', size = excluded.size, mtime = excluded.mtime,
                    inode = excluded.inode, device = excluded.device, seen_at = excluded.seen_at, etag = excluded.etag
                """, [.text(hash.id.rawValue), .text(host), .text(path), .integer(stamp.size), .real(stamp.mtime), .integer(stamp.inode),
                      .integer(stamp.device), SQLValue(time), SQLValue(etag)])
            let wasPresent = before?.string == "present"
            if !wasPresent && !inserted { try await record(s, .locationAdded, asset: hash.id, path: path, at: time) }
            if let album { _ = try await insertMembers(s, album: album, [hash.id], creating: true, checked: false, at: time) }
            return !displaced.isEmpty ? .changed : inserted ? .added : wasPresent ? .unchanged : .located
        }
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "{}"  // the library's values always encode
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String?) -> T? {
        guard let text else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(type, from: Data(text.utf8))  // a column this version cannot read is shown as absent
    }

    // MARK: - Removing

    /// Forgets where this host keeps `path` (the asset stays, with its other locations).
    public func forget(path: String) async throws(LibraryError) -> AssetID {
        try access.requireFull("forget a path")
        let real = Self.realPath(path)
        let host = host
        let time = now()
        return try await write { s in
            let rows = try await s.rows("DELETE FROM asset_locations WHERE host = ? AND path IN (?, ?) RETURNING asset_id",
                                        [.text(host), .text(real), .text(path)])
            guard let id = rows.first?[0].string.flatMap(AssetID.init) else { throw LibraryError.unknownPath(path) }
            try await record(s, .locationRemoved, asset: id, path: real, at: time)
            return id
        }
    }

    /// Removes an asset from the library: its locations on every host, its album memberships and
    /// representations (the files are not touched).
    public func remove(_ id: AssetID) async throws(LibraryError) {
        try access.requireFull("remove an asset")
        let time = now()
        try await write { s in
            let rows = try await s.rows("DELETE FROM assets WHERE id = ? RETURNING id", [.text(id.rawValue)])
            guard !rows.isEmpty else { throw LibraryError.unknownAsset(id) }
            try await s.execute("DELETE FROM asset_locations WHERE asset_id = ?", [.text(id.rawValue)])
            try await s.execute("DELETE FROM album_assets WHERE asset_id = ?", [.text(id.rawValue)])
            try await s.execute("DELETE FROM asset_representations WHERE source_id = ? OR output_id = ?", [.text(id.rawValue), .text(id.rawValue)])
            try await record(s, .assetRemoved, asset: id, at: time)
        }
    }
}

/// What `add` did with one file.
public struct AddOutcome: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Hashable, Codable {
        /// New content: a new asset.
        case added
        /// Content the library knew, at a path new to this host.
        case located
        /// Already registered here, unchanged (not hashed again).
        case unchanged
        /// The path held other content before: a new asset there, the old one now missing on this host.
        case changed
        /// Not added, for `reason`.
        case refused
    }

    public var path: String
    public var id: AssetID?
    public var status: Status
    public var reason: String?
    /// With `changed`: the asset the path held before.
    public var previous: AssetID?

    public init(path: String, id: AssetID? = nil, status: Status, reason: String? = nil, previous: AssetID? = nil) {
        self.path = path
        self.id = id
        self.status = status
        self.reason = reason
        self.previous = previous
    }
}

extension AddOutcome: Error {}

extension LibraryError {
    /// Errors about one file (refused, the others still added), not about the library.
    var isPerFile: Bool {
        switch self {
        case .unreadable, .notMedia: true
        default: false
        }
    }

    /// The reason without the path in front.
    public var reasonOnly: String {
        switch self {
        case .unreadable(_, let why): "cannot be read: \(why)"
        case .notMedia(_, let why): "not media the farm can read: \(why)"
        default: description
        }
    }
}

extension FileStamp {
    /// The stamp in four columns of a row from `index` on: size, mtime, inode, device (as asset_locations keeps them).
    init(_ row: SQLRow, from index: Int) {
        self.init(size: row[index].int ?? -1, mtime: row[index + 1].double ?? -1, inode: row[index + 2].int ?? -1, device: row[index + 3].int ?? -1)
    }
}
