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
    struct RowWrite: Encodable {
        var id: Int64, revision: Int64, oldToken: String?
        var state: String, priority: Int, attempt: Int, maxAttempts: Int, runAt: Double
        var leaseOwner: String?, leaseToken: String?, leaseExpiresAt: Double?
        var progress: Double?, phase: String?, workerPID: Int64?
        var startedAt: Double?, finishedAt: Double?, updatedAt: Double
        var result: String?, errors: String, waitingFor: Int64, blockedBy: Int64?, afterIDs: String, chunkPlan: String?
        /// The host of the new lease (nil: the old lease's, else the row's).
        var host: String?

        enum CodingKeys: String, CodingKey {
            case id, revision, oldToken = "old_token", state, priority, attempt, maxAttempts = "max_attempts", runAt = "run_at"
            case leaseOwner = "lease_owner", leaseToken = "lease_token", leaseExpiresAt = "lease_expires_at", progress, phase
            case workerPID = "worker_pid", startedAt = "started_at", finishedAt = "finished_at", updatedAt = "updated_at"
            case result, errors, waitingFor = "waiting_for", blockedBy = "blocked_by", afterIDs = "after_ids", chunkPlan = "chunk_plan", host
        }

        init(_ job: Job, over old: Job, revision: Int64) {
            id = job.id
            self.revision = revision
            oldToken = old.lease?.token
            state = job.state.rawValue
            priority = job.priority
            attempt = job.attempt
            maxAttempts = job.maxAttempts
            runAt = job.runAt.timeIntervalSince1970
            leaseOwner = job.lease?.owner
            leaseToken = job.lease?.token
            leaseExpiresAt = job.lease?.expiresAt.timeIntervalSince1970
            progress = job.progress
            phase = job.phase
            workerPID = job.workerPID.map(Int64.init)
            startedAt = job.startedAt?.timeIntervalSince1970
            finishedAt = job.finishedAt?.timeIntervalSince1970
            updatedAt = job.updatedAt.timeIntervalSince1970
            result = job.result
            errors = JobCoding.json(job.errors)
            waitingFor = Int64(job.waitingFor)
            blockedBy = job.blockedBy
            afterIDs = JobCoding.json(job.after)
            chunkPlan = job.chunkPlan.map { JobCoding.json(object: $0) }
            host = job.lease.map { Job.host(ofOwner: $0.owner) }
        }

        /// The columns of `jsonb_to_recordset`'s rows, as the table has them.
        static let record = """
            id BIGINT, revision BIGINT, old_token TEXT, state TEXT, priority BIGINT, attempt BIGINT, max_attempts BIGINT,
            run_at DOUBLE PRECISION, lease_owner TEXT, lease_token TEXT, lease_expires_at DOUBLE PRECISION, progress DOUBLE PRECISION,
            phase TEXT, worker_pid BIGINT, started_at DOUBLE PRECISION, finished_at DOUBLE PRECISION, updated_at DOUBLE PRECISION,
            result TEXT, errors TEXT, waiting_for BIGINT, blocked_by BIGINT, after_ids TEXT, chunk_plan TEXT, host TEXT
            """
    }

    /// Writes every mutable column of each job, where its row is still as it was read (`RowWrite`), in
    /// one statement whatever their number: how many rows were written (fewer when another change came
    /// first).
    func save(_ writes: [RowWrite], on c: some Queryable) async throws -> Int {
        guard !writes.isEmpty else { return 0 }
        let json = String(decoding: try JSONEncoder().encode(writes), as: UTF8.self)
        let rows = try await c.run("""
            UPDATE \(unescaped: table) AS j SET state = u.state, priority = u.priority, attempt = u.attempt,
                max_attempts = u.max_attempts, run_at = u.run_at, lease_owner = u.lease_owner, lease_token = u.lease_token,
                lease_expires_at = u.lease_expires_at, progress = u.progress, phase = u.phase, worker_pid = u.worker_pid,
                started_at = u.started_at, finished_at = u.finished_at, updated_at = u.updated_at, result = u.result,
                errors = u.errors, waiting_for = u.waiting_for, blocked_by = u.blocked_by, after_ids = u.after_ids,
                chunk_plan = u.chunk_plan, revision = j.revision + 1, host = COALESCE(u.host, split_part(j.lease_owner, ':', 1), j.host)
            FROM jsonb_to_recordset(\(json)::jsonb) AS u(\(unescaped: RowWrite.record))
            WHERE j.id = u.id AND j.revision = u.revision AND j.lease_token IS NOT DISTINCT FROM u.old_token
            RETURNING j.id
            """)
        return rows.count
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
