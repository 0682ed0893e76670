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

    /// The refusal of `new` for its claim clashing with `held`, which live job `id` (`name`, `state`) writes.
    static func refusal(_ new: NewJob, held: String, id: Int64, name: String, state: String) -> JobStoreError {
        let mine = new.outputs.first { OutputClaim.clash($0, held) } ?? held
        let what = OutputClaim.bare(mine) == OutputClaim.bare(held) ? "\(held) is written"
            : OutputClaim.keys(mine).contains(held) ? "\(mine) is inside \(held), written" : "\(mine) holds \(held), written"
        return .refused("\(new.name): \(what) by job \(id) (\(name)), which is \(state): two live jobs may not write one file, or one into the other's package. "
                        + "Wait for it (\"after\": [\(id)], or submit --after \(id)), or write another path; nothing was queued")
    }

    /// The query of a live writer of a claim clashing with one of `keys` claims (bound first) or inside one of
    /// `ranges` folders (each bound as its two ends), not among the `excluded` ids bound after them.
    static func liveWriter(keys: Int, ranges: Int, excluding excluded: Int) -> String {
        let inside = Array(repeating: " OR (o.path >= ? AND o.path < ?)", count: ranges).joined()
        return """
        SELECT o.path, j.id, j.name, j.state FROM job_outputs AS o JOIN jobs AS j ON j.id = o.job_id
        WHERE (o.path IN (\(Array(repeating: "?", count: keys).joined(separator: ", ")))\(inside)) AND j.state IN ('queued', 'waiting', 'running')
        \(excluded > 0 ? "AND j.id NOT IN (\(Array(repeating: "?", count: excluded).joined(separator: ", ")))" : "") ORDER BY j.id LIMIT 1
        """
    }
}

extension SQLiteJobStore {
    /// Refuses `new` when a live job writes one of its files (its dependencies `after` aside).
    func checkOutputs(_ new: NewJob, after: [Int64], _ db: Database) throws {
        guard !new.outputs.isEmpty else { return }
        let keys = Array(Set(new.outputs.flatMap(OutputClaim.keys))).sorted()
        let ranges = new.outputs.compactMap(OutputClaim.inside)
        let arguments = StatementArguments(keys) + StatementArguments(ranges.flatMap { [$0.from, $0.to] }) + StatementArguments(after)
        let sql = OutputClaims.liveWriter(keys: keys.count, ranges: ranges.count, excluding: after.count)
        if let row = try Row.fetchOne(db, sql: sql, arguments: arguments) {
            throw OutputClaims.refusal(new, held: row[0], id: row[1], name: row[2], state: row[3])
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
    private let state = Mutex<(writers: OutputClaimIndex<Writer>, recorded: [(file: String, id: Int64)])>((OutputClaimIndex(), []))

    /// A live job that writes `file`, as the queue found it.
    func found(_ file: String, _ writer: Writer) {
        state.withLock { $0.writers.add(file, writer) }
    }

    /// Refuses `new` when a live job writes a claim clashing with one of its own (its dependencies `after` aside).
    func check(_ new: NewJob, after: [Int64]) throws {
        let writers = state.withLock { $0.writers }
        for file in new.outputs {
            if let (held, writer) = writers.clashing(file).first(where: { !after.contains($0.holder.id) }) {
                throw OutputClaims.refusal(new, held: held, id: writer.id, name: writer.name, state: writer.state)
            }
        }
    }

    func add(_ new: NewJob, id: Int64) {
        state.withLock { state in
            for file in new.outputs {
                state.writers.add(file, (id, new.name, "queued"))
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
        // Each claim's own path locked exclusively and the folders it is in shared: a package and a file
        // inside it meet at the package's folder, so two hosts submitting them at once wait for each other,
        // while siblings (every job under one output root) do not.
        let claims = jobs.flatMap(\.outputs)
        let locks = OutputClaim.locks(claims)
        guard !locks.isEmpty else { return writers }
        _ = try await c.run("""
            SELECT CASE WHEN x THEN pg_advisory_xact_lock(hashtextextended(p, 7))::text ELSE pg_advisory_xact_lock_shared(hashtextextended(p, 7))::text END
            FROM unnest(\(locks.map(\.key))::text[], \(locks.map(\.exclusive))::bool[]) AS l(p, x) ORDER BY p
            """)
        // By name through the primary key; what is inside a package's folder, only for a package.
        let keys = Array(Set(claims.flatMap(OutputClaim.keys))).sorted()
        var rows = Array(try await c.run("""
            SELECT o.path, j.id, j.name, j.state FROM \(unescaped: schemaPrefix)job_outputs AS o JOIN \(unescaped: table) AS j ON j.id = o.job_id
            WHERE o.path = ANY(\(keys)::text[]) AND j.state IN ('queued', 'waiting', 'running') ORDER BY j.id
            """))
        let folders = Array(Set(claims.filter(OutputClaim.isFolder))).sorted()
        if !folders.isEmpty {
            rows += try await c.run("""
                SELECT o.path, j.id, j.name, j.state FROM \(unescaped: schemaPrefix)job_outputs AS o JOIN \(unescaped: table) AS j ON j.id = o.job_id
                WHERE EXISTS (SELECT 1 FROM unnest(\(folders)::text[]) AS f WHERE starts_with(o.path, f)) AND j.state IN ('queued', 'waiting', 'running')
                ORDER BY j.id
                """)
        }
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
