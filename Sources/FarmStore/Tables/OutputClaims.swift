import FarmModel
import Foundation
import GRDB
import PostgresNIO
import Synchronization

/// The files each job writes (`job_outputs`), so that the queue refuses a new job that would write a file a
/// live job (queued, waiting, running) writes: one of the two would fail after all its work, or, allowed to
/// replace, silently lose the other's. A job that waits for the writer (`after`) may write it too.
/// Checked in the submission's transaction; on PostgreSQL each file is locked for it first (a transaction
/// lock on its hash), so two hosts submitting at once cannot both pass.
enum OutputClaims {
    static func statements(_ dialect: SQLDialect) -> [String] {
        let (integer, prefix) = switch dialect {
        case .sqlite: ("INTEGER", "")
        case .postgres: ("BIGINT", "{schema}.")
        }
        return [
            """
            CREATE TABLE \(prefix)job_outputs (
                path TEXT NOT NULL,
                job_id \(integer) NOT NULL,
                PRIMARY KEY (path, job_id)
            )
            """,
            "CREATE INDEX job_outputs_job ON \(prefix)job_outputs (job_id)",
        ]
    }

    /// The refusal of `new` for `file`, which live job `id` (`name`, `state`) writes.
    static func refusal(_ new: NewJob, file: String, id: Int64, name: String, state: String) -> JobStoreError {
        .refused("\(new.name): \(file) is written by job \(id) (\(name)), which is \(state): two live jobs may not write one file. "
                 + "Wait for it (\"after\": [\(id)], or submit --after \(id)), or write another path; nothing was queued")
    }

    /// The query of a live writer of one of `count` files (bound first), not among the ids bound after them.
    static func liveWriter(files count: Int, excluding excluded: Int) -> String {
        """
        SELECT o.path, j.id, j.name, j.state FROM job_outputs AS o JOIN jobs AS j ON j.id = o.job_id
        WHERE o.path IN (\(Array(repeating: "?", count: count).joined(separator: ", "))) AND j.state IN ('queued', 'waiting', 'running')
        \(excluded > 0 ? "AND j.id NOT IN (\(Array(repeating: "?", count: excluded).joined(separator: ", ")))" : "") ORDER BY j.id LIMIT 1
        """
    }
}

extension SQLiteJobStore {
    /// Refuses `new` when a live job writes one of its files (its dependencies `after` aside).
    func checkOutputs(_ new: NewJob, after: [Int64], _ db: Database) throws {
        guard !new.outputs.isEmpty else { return }
        let arguments = StatementArguments(new.outputs) + StatementArguments(after)
        if let row = try Row.fetchOne(db, sql: OutputClaims.liveWriter(files: new.outputs.count, excluding: after.count), arguments: arguments) {
            throw OutputClaims.refusal(new, file: row[0], id: row[1], name: row[2], state: row[3])
        }
    }

    /// Records the files job `id` writes.
    func recordOutputs(_ new: NewJob, id: Int64, _ db: Database) throws {
        for file in new.outputs {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO job_outputs (path, job_id) VALUES (?, ?)").execute(arguments: [file, id])
        }
    }
}

/// A submission's files on PostgreSQL: their live writers, found at once for all its jobs (after locking
/// the files for the transaction), and its own jobs added as they are inserted (a later job of the same
/// submission may not write an earlier one's file either), to be recorded in one statement at the end.
/// Used inside one transaction only.
final class OutputWriters: Sendable {
    typealias Writer = (id: Int64, name: String, state: String)
    private let state = Mutex<(writers: [String: [Writer]], recorded: [(file: String, id: Int64)])>(([:], []))

    /// A live job that writes `file`, as the queue found it.
    func found(_ file: String, _ writer: Writer) {
        state.withLock { $0.writers[file, default: []].append(writer) }
    }

    /// Refuses `new` when a live job writes one of its files (its dependencies `after` aside).
    func check(_ new: NewJob, after: [Int64]) throws {
        let writers = state.withLock { $0.writers }
        for file in new.outputs {
            if let writer = writers[file]?.first(where: { !after.contains($0.id) }) {
                throw OutputClaims.refusal(new, file: file, id: writer.id, name: writer.name, state: writer.state)
            }
        }
    }

    func add(_ new: NewJob, id: Int64) {
        state.withLock { state in
            for file in new.outputs {
                state.writers[file, default: []].append((id, new.name, "queued"))
                state.recorded.append((file, id))
            }
        }
    }

    /// The files the submission's new jobs write, with their jobs.
    var recorded: [(file: String, id: Int64)] { state.withLock { $0.recorded } }
}

extension PostgresJobStore {
    /// Locks the files `jobs` write for this transaction (in order: two submissions wait, never deadlock),
    /// then finds which live jobs write them.
    func liveWriters(of jobs: [NewJob], on c: PostgresConnection) async throws -> OutputWriters {
        let writers = OutputWriters()
        let files = Array(Set(jobs.flatMap(\.outputs))).sorted()
        guard !files.isEmpty else { return writers }
        _ = try await c.run("SELECT pg_advisory_xact_lock(hashtextextended(p, 7)) FROM unnest(\(files)::text[]) AS p ORDER BY p")
        let rows = try await c.run("""
            SELECT o.path, j.id, j.name, j.state FROM \(unescaped: schemaPrefix)job_outputs AS o JOIN \(unescaped: table) AS j ON j.id = o.job_id
            WHERE o.path = ANY(\(files)::text[]) AND j.state IN ('queued', 'waiting', 'running') ORDER BY j.id
            """)
        for row in rows {
            let (file, id, name, state) = try row.decode((String, Int64, String, String).self)
            writers.found(file, (id, name, state))
        }
        return writers
    }

    /// Records the files the submission's new jobs write, in one statement.
    func recordOutputs(_ writers: OutputWriters, on c: PostgresConnection) async throws {
        let recorded = writers.recorded
        guard !recorded.isEmpty else { return }
        _ = try await c.run("""
            INSERT INTO \(unescaped: schemaPrefix)job_outputs (path, job_id)
            SELECT * FROM unnest(\(recorded.map(\.file))::text[], \(recorded.map(\.id))::int8[]) ON CONFLICT DO NOTHING
            """)
    }
}
