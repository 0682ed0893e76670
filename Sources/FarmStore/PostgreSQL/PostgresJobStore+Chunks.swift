import FarmModel
import Foundation
import PostgresNIO

/// Chunked exports in the PostgreSQL queue (`ChunkSchema`).
extension PostgresJobStore {
    public func split(id: Int64, token: String, chunks: [NewJob], plan: ChunkPlan, at now: Date) async throws(JobStoreError) -> Job {
        try await transaction { [self] c in
            let rows = try await c.run("SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE id = \(id) FOR UPDATE")
            guard let (job, revision) = try decodeJobs(rows).first else { throw JobStoreError.notFound(id) }
            try ChunkSchema.checkSplit(job, token: token, plan: plan)
            var plan = plan
            for (i, chunk) in ChunkSchema.chunks(chunks, of: id).enumerated() { plan.chunks[i].job = try await insert(chunk, at: now, on: c).id }
            let waiting = try transition(job, .split(token: token, plan: plan), now)
            try await saveLocked(waiting, over: job, revision: revision, on: c)
            _ = try await c.run("INSERT INTO \(unescaped: edges) (depends_on, job_id) SELECT unnest(\(plan.jobs)::int8[]), \(id)")
            _ = try await c.run("""
                INSERT INTO chunk_folders (location, job_id, created_at) VALUES (\(plan.folder), \(id), \(now.timeIntervalSince1970))
                ON CONFLICT (location) DO NOTHING
                """)
            _ = try await c.run("SELECT pg_notify(\(channel), '')")
            return waiting
        }
    }

    public func abandonedChunkFolders(limit: Int) async throws(JobStoreError) -> [String] {
        try await run("\(unescaped: ChunkSchema.abandoned) LIMIT \(limit)") { try $0.decode(String.self) }
    }

    public func forgetChunkFolder(_ location: String) async throws(JobStoreError) {
        _ = try await run("DELETE FROM chunk_folders WHERE location = \(location)") { _ in () }
    }

    public func waitingChunkedJobs(limit: Int) async throws(JobStoreError) -> [(job: Job, chunks: [Job])] {
        let parents = try decodeJobs(try await run("""
            SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE state = 'waiting' AND chunk_plan IS NOT NULL ORDER BY id LIMIT \(limit)
            """)).map(\.job)
        guard !parents.isEmpty else { return [] }
        let chunks = try decodeJobs(try await run("""
            SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE chunk_of = ANY(\(parents.map(\.id))) ORDER BY id
            """)).map(\.job)
        return parents.map { parent in (parent, chunks.filter { $0.chunkOf == parent.id }) }
    }

    public func recordWaitingProgress(id: Int64, progress: Double, phase: String, at now: Date) async throws(JobStoreError) {
        _ = try await run("""
            UPDATE \(unescaped: table) SET progress = \(progress), phase = \(phase), updated_at = \(now.timeIntervalSince1970),
                revision = revision + 1
            WHERE id = \(id) AND state = 'waiting'
            """) { _ in () }
    }

    /// The live chunks of `parent`, which ended: cancelled (their workers stop at the next lease check).
    /// Only a job with a chunk plan has chunks: every other job's end is spared the round trip.
    func cancelChunks(of parent: Job, at now: Date, on c: PostgresConnection) async throws {
        guard parent.chunkPlan != nil else { return }
        let rows = try await c.run("""
            SELECT \(unescaped: Self.columns()) FROM \(unescaped: table)
            WHERE chunk_of = \(parent.id) AND state IN ('waiting', 'queued', 'running') ORDER BY id FOR UPDATE
            """)
        for (chunk, revision) in try decodeJobs(rows) { _ = try await moved(chunk, revision: revision, .cancel, at: now, on: c) }
    }

    /// A retried job's old plan let go: its chunks no longer waited for (live ones cancelled), its folder
    /// marked for removal.
    func detachChunks(_ job: inout Job, at now: Date, on c: PostgresConnection) async throws {
        let planned = job  // with its plan, whose chunks are cancelled below
        let folder = job.chunkPlan?.folder
        let chunks = ChunkSchema.detached(&job)
        guard !chunks.isEmpty else { return }
        _ = try await c.run("DELETE FROM \(unescaped: edges) WHERE job_id = \(job.id) AND depends_on = ANY(\(chunks))")
        if let folder { _ = try await c.run("UPDATE chunk_folders SET superseded = 1 WHERE location = \(folder)") }
        try await cancelChunks(of: planned, at: now, on: c)
    }
}
