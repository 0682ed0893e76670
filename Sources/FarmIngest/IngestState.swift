import Foundation
import GRDB

/// What ingest remembers between passes, in an SQLite file of its own: each file seen (by path, with the
/// size, modification time and inode it had, and what became of it), and every content hash ingested.
/// An unchanged file is recognised by its row alone: never re-hashed, never re-inspected.
final class IngestState: Sendable {
    enum Status: String, Sendable {
        /// Seen with this identity since `seenAt`; enqueued once it has stayed so for the settle time.
        case settling
        case ingested
        case duplicate
        case quarantined
        /// Its job could not be made (the template's manifest is invalid for it).
        case rejected
    }

    /// A file's size, modification time and inode; an object's size and entity tag (the other fields 0).
    struct Identity: Sendable, Hashable {
        var size: Int64
        var mtimeNanoseconds: Int64
        var inode: UInt64
        var device: UInt64
        var etag: String? = nil

        static func object(size: Int64, etag: String) -> Identity {
            Identity(size: size, mtimeNanoseconds: 0, inode: 0, device: 0, etag: etag)
        }
    }

    struct Row: Sendable {
        var identity: Identity
        var seenAt: Double
        var status: Status
        var hash: String?
        /// When a pass first missed the file (it is forgotten `forgetGoneAfterDays` later); nil while it is there.
        var goneSince: Double?
    }

    let queue: DatabaseQueue

    /// Opens (creating unless `readOnly`) the state at `path`. A read-only open of a state that does not
    /// exist yet is nil: everything is new.
    static func open(_ path: String, readOnly: Bool) throws -> IngestState? {
        if readOnly && !FileManager.default.fileExists(atPath: path) { return nil }
        if !readOnly {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        }
        var configuration = Configuration()
        configuration.readonly = readOnly
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            if !readOnly { try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL") }
        }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        if !readOnly { try migrator.migrate(queue) }
        return IngestState(queue: queue)
    }

    private init(queue: DatabaseQueue) { self.queue = queue }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE files (
                    path TEXT PRIMARY KEY,
                    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, device INTEGER NOT NULL,
                    seen_at REAL NOT NULL,
                    status TEXT NOT NULL,
                    hash TEXT, job_id INTEGER, reason TEXT,
                    updated_at REAL NOT NULL
                );
                CREATE TABLE hashes (
                    hash TEXT PRIMARY KEY,
                    path TEXT NOT NULL, job_id INTEGER, at REAL NOT NULL
                );
                """)
        }
        migrator.registerMigration("v2: files that are gone") { db in
            try db.execute(sql: "ALTER TABLE files ADD COLUMN gone_since REAL")
        }
        migrator.registerMigration("v3: objects' entity tags") { db in
            try db.execute(sql: "ALTER TABLE files ADD COLUMN etag TEXT")
        }
        return migrator
    }

    /// Every file row, by path (one read per pass).
    func rows() async throws -> [String: Row] {
        try await queue.read { db in
            var rows: [String: Row] = [:]
            let cursor = try GRDB.Row.fetchCursor(db, sql: "SELECT path, size, mtime_ns, inode, device, seen_at, status, hash, gone_since, etag FROM files")
            while let r = try cursor.next() {
                let identity = Identity(size: r[1], mtimeNanoseconds: r[2], inode: UInt64(bitPattern: r[3]), device: UInt64(bitPattern: r[4]),
                                        etag: r[9])
                rows[r[0]] = Row(identity: identity, seenAt: r[5], status: Status(rawValue: r[6]) ?? .settling, hash: r[7],
                                 goneSince: r[8])
            }
            return rows
        }
    }

    /// The path that content was ingested from, if it was.
    func hashIsKnown(_ hash: String) async throws -> String? {
        try await queue.read { db in try String.fetchOne(db, sql: "SELECT path FROM hashes WHERE hash = ?", arguments: [hash]) }
    }

    /// One change to the state, applied with others in one transaction.
    enum Change: Sendable {
        case seen(path: String, Identity, at: Double)
        case ended(path: String, Identity, status: Status, hash: String?, jobID: Int64?, reason: String?, at: Double)
        case ingested(hash: String, path: String, jobID: Int64, at: Double)
        case forget(path: String)
        case forgetHash(String)
        /// The file was not in its watch folder at `at` (kept: a folder that cannot be read leaves its rows alone).
        case gone(path: String, at: Double)
        /// A file missed before is there again, unchanged.
        case back(path: String)
        /// Ingested content is now at `path` (the file was renamed).
        case renamed(hash: String, path: String)
    }

    /// Applies `changes` in one transaction, off the caller's thread (GRDB's async access).
    func apply(_ changes: [Change]) async throws {
        guard !changes.isEmpty else { return }
        try await queue.writeWithoutTransaction { db in try db.inTransaction(.immediate) {
            for change in changes {
                switch change {
                case let .seen(path, id, at):
                    try db.execute(sql: """
                        INSERT OR REPLACE INTO files (path, size, mtime_ns, inode, device, etag, seen_at, status, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, 'settling', ?)
                        """, arguments: [path, id.size, id.mtimeNanoseconds, Int64(bitPattern: id.inode), Int64(bitPattern: id.device), id.etag,
                                         at, at])
                case let .ended(path, id, status, hash, jobID, reason, at):
                    try db.execute(sql: """
                        INSERT OR REPLACE INTO files (path, size, mtime_ns, inode, device, etag, seen_at, status, hash, job_id, reason, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, arguments: [path, id.size, id.mtimeNanoseconds, Int64(bitPattern: id.inode), Int64(bitPattern: id.device), id.etag,
                                         at, status.rawValue, hash, jobID, reason, at])
                case let .ingested(hash, path, jobID, at):
                    try db.execute(sql: "INSERT OR REPLACE INTO hashes (hash, path, job_id, at) VALUES (?, ?, ?, ?)",
                                   arguments: [hash, path, jobID, at])
                case .forget(let path):
                    try db.execute(sql: "DELETE FROM files WHERE path = ?", arguments: [path])
                case .forgetHash(let hash):
                    try db.execute(sql: "DELETE FROM hashes WHERE hash = ?", arguments: [hash])
                case let .gone(path, at):
                    try db.execute(sql: "UPDATE files SET gone_since = ? WHERE path = ? AND gone_since IS NULL", arguments: [at, path])
                case .back(let path):
                    try db.execute(sql: "UPDATE files SET gone_since = NULL WHERE path = ?", arguments: [path])
                case let .renamed(hash, path):
                    try db.execute(sql: "UPDATE hashes SET path = ? WHERE hash = ?", arguments: [path, hash])
                }
            }
            return .commit
        } }
    }
}
