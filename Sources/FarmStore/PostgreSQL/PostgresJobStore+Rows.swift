import FarmModel
import Foundation
import PostgresNIO

/// The PostgreSQL queue's rows: a job read, moved by the state machine and written back fenced by its
/// revision and lease token.
extension PostgresJobStore {
    /// Locks the row, applies the transition and follows it through the jobs that wait for it, in one
    /// transaction.
    func change(_ id: Int64, _ t: JobTransition, at now: Date) async throws(JobStoreError) -> Job {
        try await transaction { [self] c in
            let rows = try await c.run("SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE id = \(id) FOR UPDATE")
            guard let (job, revision) = try decodeJobs(rows).first else { throw JobStoreError.notFound(id) }
            let (next, due) = try await moved(job, revision: revision, t, at: now, on: c)
            if due { _ = try await c.run("SELECT pg_notify(\(channel), '')") }
            return next
        }
    }

    func transition(_ job: Job, _ t: JobTransition, _ now: Date) throws(JobStoreError) -> Job {
        do {
            return try machine.apply(t, to: job, at: now, jitter: Double.random(in: 0...1))
        } catch {
            throw .transition(id: job.id, error)
        }
    }

    func fetch(_ id: Int64) async throws(JobStoreError) -> (job: Job, revision: Int64)? {
        try decodeJobs(try await run("SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE id = \(id)")).first
    }

    /// A job's columns to write over the row it was read from: the row must still be at `revision`, with
    /// the lease token `old` had.
    struct RowWrite: Sendable {
        var next: Job, old: Job, revision: Int64

        init(_ next: Job, over old: Job, revision: Int64) {
            (self.next, self.old, self.revision) = (next, old, revision)
        }

        /// The fence, then every mutable column, then the host of the new lease (nil: the old lease's, else the row's).
        static let columns: [BoundColumn<RowWrite>] = [
            .init("id", "int8") { $0.next.id }, .init("revision", "int8") { $0.revision }, .init("old_token", "text") { $0.old.lease?.token },
            .init("state", "text") { $0.next.state.rawValue }, .init("priority", "int8") { $0.next.priority },
            .init("attempt", "int8") { $0.next.attempt }, .init("max_attempts", "int8") { $0.next.maxAttempts },
            .init("run_at", "float8") { $0.next.runAt.timeIntervalSince1970 }, .init("lease_owner", "text") { $0.next.lease?.owner },
            .init("lease_token", "text") { $0.next.lease?.token },
            .init("lease_expires_at", "float8") { $0.next.lease?.expiresAt.timeIntervalSince1970 },
            .init("progress", "float8") { $0.next.progress }, .init("phase", "text") { $0.next.phase },
            .init("worker_pid", "int8") { $0.next.workerPID.map(Int64.init) },
            .init("started_at", "float8") { $0.next.startedAt?.timeIntervalSince1970 },
            .init("finished_at", "float8") { $0.next.finishedAt?.timeIntervalSince1970 },
            .init("updated_at", "float8") { $0.next.updatedAt.timeIntervalSince1970 }, .init("result", "text") { $0.next.result },
            .init("errors", "text") { JobCoding.json($0.next.errors) }, .init("waiting_for", "int8") { Int64($0.next.waitingFor) },
            .init("blocked_by", "int8") { $0.next.blockedBy }, .init("after_ids", "text") { JobCoding.json($0.next.after) },
            .init("chunk_plan", "text") { $0.next.chunkPlan.map { JobCoding.json(object: $0) } },
            .init("host", "text") { $0.next.lease.map { Job.host(ofOwner: $0.owner) } },
        ]
        static let set = (columns.map(\.name).filter { !["id", "revision", "old_token", "host"].contains($0) }.map { "\($0) = u.\($0)" }
                          + ["revision = j.revision + 1", "host = COALESCE(u.host, split_part(j.lease_owner, ':', 1), j.host)"])
            .joined(separator: ", ")
    }

    /// Writes every mutable column of each job, where its row is still as it was read (`RowWrite`), a
    /// statement for up to 1,000: how many rows were written (fewer when another change came first).
    func save(_ writes: [RowWrite], on c: some Queryable) async throws -> Int {
        var written = 0
        for start in stride(from: 0, to: writes.count, by: 1_000) {
            let (values, binds) = BoundColumn.values(writes[start..<min(start + 1_000, writes.count)], RowWrite.columns)
            written += try await c.run(PostgresQuery(unsafeSQL: """
                UPDATE \(table) AS j SET \(RowWrite.set)
                FROM (VALUES \(values)) AS u(\(RowWrite.columns.map(\.name).joined(separator: ", ")))
                WHERE j.id = u.id AND j.revision = u.revision AND j.lease_token IS NOT DISTINCT FROM u.old_token
                RETURNING j.id
                """, binds: binds)).count
        }
        return written
    }

    /// How many columns `columns()` names (the revision last).
    static let columnCount = columns().split(separator: ",").count

    /// The columns `decodeJobs` reads, in its order: the job's, then the revision.
    static func columns(_ alias: String? = nil) -> String {
        let names = SQLiteJobStore.columns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } + ["revision"]
        return names.map { name in alias.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }

    func decodeJobs(_ rows: [PostgresRow]) throws(JobStoreError) -> [(job: Job, revision: Int64)] {
        do {
            return try rows.map { row in
                let r = row.makeRandomAccess()
                func date(_ i: Int) throws -> Date? { try r[i].decode(Double?.self).map(Date.init(timeIntervalSince1970:)) }
                var job = Job(id: try r[0].decode(Int64.self), name: try r[1].decode(String.self), manifest: try r[2].decode(String.self),
                              baseDirectory: try r[3].decode(String.self),
                              outputRoots: JobCoding.decode([String].self, try r[4].decode(String.self)) ?? [],
                              priority: try r[5].decode(Int.self), maxAttempts: try r[6].decode(Int.self), runAt: try date(7),
                              uniqueKey: try r[8].decode(String?.self), timeout: try r[9].decode(Double?.self),
                              createdAt: try date(10) ?? Date(timeIntervalSince1970: 0))
                job.state = JobState(rawValue: try r[11].decode(String.self)) ?? .dead
                job.attempt = try r[12].decode(Int.self)
                if let owner = try r[13].decode(String?.self), let token = try r[14].decode(String?.self), let expiry = try date(15) {
                    job.lease = Job.Lease(owner: owner, token: token, expiresAt: expiry)
                }
                job.progress = try r[16].decode(Double?.self)
                job.phase = try r[17].decode(String?.self)
                job.workerPID = try r[18].decode(Int64?.self).map { Int32(truncatingIfNeeded: $0) }
                job.startedAt = try date(19)
                job.finishedAt = try date(20)
                job.updatedAt = try date(21) ?? job.createdAt
                job.result = try r[22].decode(String?.self)
                job.errors = JobCoding.decode([Job.AttemptError].self, try r[23].decode(String.self)) ?? []
                job.after = JobCoding.decode([Int64].self, try r[24].decode(String.self)) ?? []
                job.afterPolicy = try r[25].decode(String?.self).flatMap(AfterPolicy.init(rawValue:)) ?? .success
                job.waitingFor = try r[26].decode(Int.self)
                job.blockedBy = try r[27].decode(Int64?.self)
                job.requires = JobCoding.decode([String].self, try r[28].decode(String?.self)) ?? []
                job.chunkPlan = JobCoding.decode(object: ChunkPlan.self, try r[29].decode(String?.self))
                job.chunkOf = try r[30].decode(Int64?.self)
                job.host = try r[31].decode(String?.self)
                return (job, try r[32].decode(Int64.self))
            }
        } catch {
            throw .unavailable("\(location): a job row could not be read: \(Self.describe(error))")
        }
    }

    /// What `SucceedStatement` returned: the job, whether a dependent became due, whether a webhook
    /// delivery was recorded; nil when the attempt no longer held the job (the caller says why).
    func succeeded(_ rows: [PostgresRow]) throws(JobStoreError) -> (job: Job, released: Bool, recorded: Bool)? {
        guard let done = try decodeJobs(rows).first, let row = rows.first?.makeRandomAccess() else { return nil }
        do {
            return (done.job, try row[Self.columnCount].decode(Int64.self) > 0, try row[Self.columnCount + 1].decode(Int64.self) > 0)
        } catch {
            throw .unavailable("\(location): a job row could not be read: \(Self.describe(error))")
        }
    }
}

/// A column a statement of many rows binds for each row: its name, its SQL type (each placeholder is cast to
/// it, so that a column of NULLs has the table's type) and its value in a row.
struct BoundColumn<Row>: Sendable {
    let name: String
    let type: String
    let bind: @Sendable (Row, inout PostgresBindings) -> Void

    init<T: PostgresDynamicTypeEncodable>(_ name: String, _ type: String, _ value: @escaping @Sendable (Row) -> T?) {
        (self.name, self.type) = (name, type)
        bind = { row, binds in binds.append(value(row)) }
    }

    /// `(…), (…)` of `rows` for a VALUES list, with their binds.
    static func values(_ rows: some Collection<Row>, _ columns: [BoundColumn<Row>]) -> (sql: String, binds: PostgresBindings) {
        var binds = PostgresBindings(capacity: rows.count * columns.count)
        var sql = ""
        for row in rows {
            sql += sql.isEmpty ? "(" : ", ("
            for (i, column) in columns.enumerated() {
                column.bind(row, &binds)
                sql += "\(i == 0 ? "" : ", ")$\(binds.count)::\(column.type)"
            }
            sql += ")"
        }
        return (sql, binds)
    }
}
