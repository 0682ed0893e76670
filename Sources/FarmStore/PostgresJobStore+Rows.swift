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

    /// Writes every mutable column of `job`, if the row is still at `revision` with the token `old`
    /// had: false when another change came first.
    func save(_ job: Job, over old: Job, revision: Int64, on c: some Queryable) async throws -> Bool {
        let rows = try await c.run("""
            UPDATE \(unescaped: table) SET state = \(job.state.rawValue), priority = \(job.priority), attempt = \(job.attempt),
                max_attempts = \(job.maxAttempts), run_at = \(job.runAt.timeIntervalSince1970), lease_owner = \(job.lease?.owner),
                lease_token = \(job.lease?.token), lease_expires_at = \(job.lease?.expiresAt.timeIntervalSince1970),
                progress = \(job.progress), phase = \(job.phase), worker_pid = \(job.workerPID.map(Int64.init)),
                started_at = \(job.startedAt?.timeIntervalSince1970), finished_at = \(job.finishedAt?.timeIntervalSince1970),
                updated_at = \(job.updatedAt.timeIntervalSince1970), result = \(job.result), errors = \(JobCoding.json(job.errors)),
                waiting_for = \(Int64(job.waitingFor)), blocked_by = \(job.blockedBy), after_ids = \(JobCoding.json(job.after)),
                chunk_plan = \(job.chunkPlan.map { JobCoding.json(object: $0) }), revision = revision + 1,
                host = COALESCE(\(job.lease.map { Job.host(ofOwner: $0.owner) }), split_part(lease_owner, ':', 1), host)
            WHERE id = \(job.id) AND revision = \(revision) AND lease_token IS NOT DISTINCT FROM \(old.lease?.token)
            RETURNING id
            """)
        return !rows.isEmpty
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
