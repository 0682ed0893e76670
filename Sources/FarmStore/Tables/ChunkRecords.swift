import FarmModel
import Foundation
import GRDB

/// Chunked exports in the queue: a job split into chunk jobs (`split`), the folders their files go to,
/// and what the job's end or retry does to them. Both backends.
enum ChunkSchema {
    static func statements(_ dialect: SQLDialect) -> [String] {
        let (integer, real, prefix) = switch dialect {
        case .sqlite: ("INTEGER", "REAL", "")
        case .postgres: ("BIGINT", "DOUBLE PRECISION", "{schema}.")
        }
        return [
            "ALTER TABLE \(prefix)jobs ADD COLUMN chunk_plan TEXT",
            "ALTER TABLE \(prefix)jobs ADD COLUMN chunk_of \(integer)",
            "CREATE INDEX jobs_chunks ON \(prefix)jobs (chunk_of) WHERE chunk_of IS NOT NULL",
            // A plan's folder, until it is removed: when its job has ended, or a retry made a new plan.
            """
            CREATE TABLE \(prefix)chunk_folders (
                location TEXT PRIMARY KEY,
                job_id \(integer) NOT NULL,
                superseded \(integer) NOT NULL DEFAULT 0,
                created_at \(real) NOT NULL
            )
            """,
        ]
    }

    /// The folders to remove: their job ended (or is gone), or their plan was given up by a retry.
    static let abandoned = """
        SELECT f.location FROM chunk_folders AS f LEFT JOIN jobs AS j ON j.id = f.job_id
        WHERE f.superseded = 1 OR j.id IS NULL OR j.state IN ('succeeded', 'failed', 'cancelled', 'dead')
        ORDER BY f.created_at
        """

    /// Refuses a split unless the attempt holding `token` runs the job.
    static func checkSplit(_ job: Job, token: String, plan: ChunkPlan) throws(JobStoreError) {
        guard job.state == .running, job.lease?.token == token else {
            throw .transition(id: job.id, job.state == .running ? .staleLease : .illegal(.split(token: token, plan: plan), from: job.state))
        }
    }

    /// The chunk jobs as the queue makes them: each the chunk of job `id`.
    static func chunks(_ chunks: [NewJob], of id: Int64) -> [NewJob] {
        chunks.map { var chunk = $0; chunk.chunkOf = id; return chunk }
    }

    /// The job before a retry: its old plan let go (its chunks are not waited for any more), so that the
    /// retry plans again. Returns the chunks it waited for.
    static func detached(_ job: inout Job) -> [Int64] {
        guard let plan = job.chunkPlan else { return [] }
        job.after.removeAll { plan.jobs.contains($0) }
        job.chunkPlan = nil
        return plan.jobs
    }
}

extension SQLiteJobStore {
    public func split(id: Int64, token: String, chunks: [NewJob], plan: ChunkPlan, at now: Date) async throws(JobStoreError) -> Job {
        defer { doorbell.ring() }
        return try await write { [self] db in
            guard let job = try fetch(id, db) else { throw JobStoreError.notFound(id) }
            try ChunkSchema.checkSplit(job, token: token, plan: plan)
            var plan = plan
            for (i, chunk) in ChunkSchema.chunks(chunks, of: id).enumerated() { plan.chunks[i].job = try insert(chunk, at: now, db).id }
            let waiting = try transition(job, .split(token: token, plan: plan), now)
            try save(waiting, db)
            for chunk in plan.chunks {
                try db.execute(sql: "INSERT INTO job_dependencies (depends_on, job_id) VALUES (?, ?)", arguments: [chunk.job, id])
            }
            try db.execute(sql: "INSERT INTO chunk_folders (location, job_id, created_at) VALUES (?, ?, ?) ON CONFLICT (location) DO NOTHING",
                           arguments: [plan.folder, id, now.timeIntervalSince1970])
            return waiting
        }
    }

    public func abandonedChunkFolders(limit: Int) async throws(JobStoreError) -> [String] {
        try await read { db in try String.fetchAll(db, sql: ChunkSchema.abandoned + " LIMIT ?", arguments: [limit]) }
    }

    public func forgetChunkFolder(_ location: String) async throws(JobStoreError) {
        try await write { db in try db.execute(sql: "DELETE FROM chunk_folders WHERE location = ?", arguments: [location]) }
    }

    public func waitingChunkedJobs(limit: Int) async throws(JobStoreError) -> [(job: Job, chunks: [Job])] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.columns) FROM jobs WHERE state = 'waiting' AND chunk_plan IS NOT NULL ORDER BY id LIMIT ?",
                             arguments: [limit]).map(Self.job).map { job in
                (job, try Row.fetchAll(db, sql: "SELECT \(Self.columns) FROM jobs WHERE chunk_of = ? ORDER BY id", arguments: [job.id]).map(Self.job))
            }
        }
    }

    public func recordWaitingProgress(id: Int64, progress: Double, phase: String, at now: Date) async throws(JobStoreError) {
        try await write { db in
            try db.execute(sql: "UPDATE jobs SET progress = ?, phase = ?, updated_at = ? WHERE id = ? AND state = 'waiting'",
                           arguments: [progress, phase, now.timeIntervalSince1970, id])
        }
    }

    /// The live chunks of `parent`, which ended: cancelled (their workers stop at the next lease check).
    /// Only a job with a chunk plan has chunks (the plan and the chunks are made in one transaction, and
    /// let go in one): every other job's end is spared the lookup.
    func cancelChunks(of parent: Job, at now: Date, _ db: Database) throws {
        guard parent.chunkPlan != nil else { return }
        let live = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT \(Self.columns) FROM jobs WHERE chunk_of = ? AND state IN ('waiting', 'queued', 'running')
            """), arguments: [parent.id]).map(Self.job)
        for chunk in live { _ = try moved(chunk, .cancel, now, db) }
    }

    /// A retried job's old plan let go: its chunks no longer waited for (live ones cancelled), its folder
    /// marked for removal.
    func detachChunks(_ job: inout Job, at now: Date, _ db: Database) throws {
        let planned = job  // with its plan, whose chunks are cancelled below
        let folder = job.chunkPlan?.folder
        let chunks = ChunkSchema.detached(&job)
        guard !chunks.isEmpty else { return }
        try db.execute(sql: "DELETE FROM job_dependencies WHERE job_id = ? AND depends_on IN (\(chunks.map { String($0) }.joined(separator: ",")))",
                       arguments: [job.id])
        if let folder { try db.execute(sql: "UPDATE chunk_folders SET superseded = 1 WHERE location = ?", arguments: [folder]) }
        try cancelChunks(of: planned, at: now, db)
    }
}
