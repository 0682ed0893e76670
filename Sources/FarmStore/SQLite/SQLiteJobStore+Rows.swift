import FarmModel
import Foundation
import GRDB

/// A job as a row: reading one, writing its mutable columns back, a transition applied and saved.
extension SQLiteJobStore {
    func change(_ id: Int64, _ transition: JobTransition, at now: Date) async throws(JobStoreError) -> Job {
        let (job, due) = try await write { [self] db in
            guard let job = try fetch(id, db) else { throw JobStoreError.notFound(id) }
            return try moved(job, transition, now, db)
        }
        if due { doorbell.ring() }
        return job
    }

    func transition(_ job: Job, _ t: JobTransition, _ now: Date) throws -> Job {
        do {
            return try machine.apply(t, to: job, at: now, jitter: Double.random(in: 0...1))
        } catch {
            throw JobStoreError.transition(id: job.id, error)
        }
    }

    func fetch(_ id: Int64, _ db: Database) throws -> Job? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.columns) FROM jobs WHERE id = ?"), arguments: [id]).map(Self.job)
    }

    /// Writes every mutable column of `job` (identity and manifest never change).
    func save(_ job: Job, _ db: Database) throws {
        try db.cachedStatement(sql: """
            UPDATE jobs SET state = ?, priority = ?, attempt = ?, max_attempts = ?, run_at = ?, lease_owner = ?, lease_token = ?,
                lease_expires_at = ?, progress = ?, phase = ?, worker_pid = ?, started_at = ?, finished_at = ?, updated_at = ?,
                result = ?, errors = ?, waiting_for = ?, blocked_by = ?, after_ids = ?, chunk_plan = ?,
                host = COALESCE(?, substr(lease_owner, 1, instr(lease_owner || ':', ':') - 1), host)
            WHERE id = ?
            """).execute(arguments: [
                job.state.rawValue, job.priority, job.attempt, job.maxAttempts, job.runAt.timeIntervalSince1970,
                job.lease?.owner, job.lease?.token, job.lease?.expiresAt.timeIntervalSince1970, job.progress, job.phase,
                job.workerPID.map { Int64($0) }, job.startedAt?.timeIntervalSince1970, job.finishedAt?.timeIntervalSince1970,
                job.updatedAt.timeIntervalSince1970, job.result, JobCoding.json(job.errors), job.waitingFor, job.blockedBy,
                JobCoding.json(job.after), job.chunkPlan.map { JobCoding.json(object: $0) }, job.lease.map { Job.host(ofOwner: $0.owner) }, job.id,
            ])
    }

    /// The columns `job(_:)` reads, in its order (read by index: a name lookup per column costs more
    /// than the rest of the row).
    static let columns = """
        id, name, manifest, base_directory, output_roots, priority, max_attempts, run_at, unique_key, timeout, created_at, \
        state, attempt, lease_owner, lease_token, lease_expires_at, progress, phase, worker_pid, started_at, finished_at, \
        updated_at, result, errors, after_ids, after_policy, waiting_for, blocked_by, requires, chunk_plan, chunk_of, host
        """

    static func job(_ row: Row) -> Job {
        func date(_ i: Int) -> Date? { (row[i] as Double?).map(Date.init(timeIntervalSince1970:)) }
        var job = Job(id: row[0], name: row[1], manifest: row[2], baseDirectory: row[3],
                      outputRoots: JobCoding.decode([String].self, row[4]) ?? [], priority: row[5],
                      maxAttempts: row[6], runAt: date(7), uniqueKey: row[8],
                      timeout: row[9], createdAt: date(10) ?? Date(timeIntervalSince1970: 0))
        job.state = JobState(rawValue: row[11]) ?? .dead
        job.attempt = row[12]
        if let owner: String = row[13], let token: String = row[14], let expiry = date(15) {
            job.lease = Job.Lease(owner: owner, token: token, expiresAt: expiry)
        }
        job.progress = row[16]
        job.phase = row[17]
        job.workerPID = (row[18] as Int64?).map { Int32(truncatingIfNeeded: $0) }
        job.startedAt = date(19)
        job.finishedAt = date(20)
        job.updatedAt = date(21) ?? job.createdAt
        job.result = row[22]
        job.errors = JobCoding.decode([Job.AttemptError].self, row[23]) ?? []
        job.after = JobCoding.decode([Int64].self, row[24]) ?? []
        job.afterPolicy = (row[25] as String?).flatMap(AfterPolicy.init(rawValue:)) ?? .success
        job.waitingFor = row[26]
        job.blockedBy = row[27]
        job.requires = JobCoding.decode([String].self, row[28]) ?? []
        job.chunkPlan = JobCoding.decode(object: ChunkPlan.self, row[29])
        job.chunkOf = row[30]
        job.host = row[31]
        return job
    }

    static func newToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(g.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
