import FarmModel
import FarmStore
import Foundation
import Testing

/// Chunked exports in the queue, on every backend: a running job split into chunk jobs waits for them
/// and is queued again to join them; a chunk that fails fails it and the live chunks are cancelled; a
/// retry plans again; the chunks' folder is listed for removal once the job ended or was planned again.
@Suite struct ChunkConformanceTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func new(_ name: String) -> NewJob {
        NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data", maxAttempts: 1)
    }

    func plan(_ folder: String, chunks: Int) -> ChunkPlan {
        ChunkPlan(folder: folder, frameCount: chunks * 100, chunks: (0..<chunks).map {
            ChunkPlan.Chunk(frames: ($0 * 100)..<($0 * 100 + 100), output: "\(folder)/chunk-\($0).mp4")
        })
    }

    /// Claims `id` (it must be due) and returns its token.
    func claim(_ store: any JobStore, _ id: Int64, at t: Date) async throws -> String {
        let claimed = try await store.claim(limit: 100, owner: "h:1:a", leaseDuration: 60, at: t)
        return try #require(claimed.first { $0.id == id }?.lease?.token, "job \(id) was not claimed: \(claimed.map(\.id))")
    }

    @Test(arguments: Backend.allCases)
    func aSplitJobWaitsForItsChunksThenJoinsThem(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let id = try await store.enqueue([new("long")], at: t0)[0].id
        let token = try await claim(store, id, at: t0)
        // Only the attempt holding the lease splits the job.
        await #expect { try await other.split(id: id, token: "stale", chunks: [new("x")], plan: plan("/out/.a.chunks-1", chunks: 1), at: t0) } throws: {
            ($0 as? JobStoreError)?.isStaleLease == true
        }
        let waiting = try await other.split(id: id, token: token, chunks: (1...3).map { new("long [chunk \($0)/3]") },
                                            plan: plan("/out/.a.chunks-1", chunks: 3), at: t0.addingTimeInterval(1))
        let chunks = try #require(waiting.chunkPlan?.jobs)
        #expect(chunks.count == 3 && Set(chunks).count == 3 && !chunks.contains(0))
        #expect(waiting.state == .waiting && waiting.waitingFor == 3 && waiting.after == chunks && waiting.attempt == 0 && waiting.lease == nil)
        let stored = try #require(try await store.job(id: id))
        #expect(stored.chunkPlan == waiting.chunkPlan && stored.state == .waiting)
        for chunk in try await store.jobs(ids: chunks) { #expect(chunk.chunkOf == id && chunk.state == .queued) }
        // The job's progress while it waits (recorded by a coordinator), nothing once it no longer waits.
        try await store.recordWaitingProgress(id: id, progress: 0.4, phase: "encoding chunks: 1 of 3 done", at: t0.addingTimeInterval(2))
        let listed = try await other.waitingChunkedJobs(limit: 10)
        #expect(listed.map(\.job.id) == [id] && listed.first?.chunks.map(\.id) == chunks && listed.first?.job.progress == 0.4)
        #expect(try await store.abandonedChunkFolders(limit: 10).isEmpty)

        // The chunks run (not the job); when the last succeeded, the job is due, with its plan.
        let ran = try await store.claim(limit: 100, owner: "h:2:b", leaseDuration: 60, at: t0.addingTimeInterval(3))
        #expect(Set(ran.map(\.id)) == Set(chunks))
        for job in ran { _ = try await other.finish(id: job.id, token: job.lease!.token, outcome: .succeeded(result: nil), at: t0.addingTimeInterval(4)) }
        let joining = try await store.claim(limit: 100, owner: "h:1:a", leaseDuration: 60, at: t0.addingTimeInterval(5))
        #expect(joining.map(\.id) == [id] && joining.first?.attempt == 1 && joining.first?.chunkPlan?.jobs == chunks)
        try await store.recordWaitingProgress(id: id, progress: 0.1, phase: "no", at: t0.addingTimeInterval(5))
        #expect(try await store.job(id: id)?.progress == 0)
        _ = try await store.finish(id: id, token: joining[0].lease!.token, outcome: .succeeded(result: nil), at: t0.addingTimeInterval(6))
        // Ended: its folder is to be removed, once.
        #expect(try await other.abandonedChunkFolders(limit: 10) == ["/out/.a.chunks-1"])
        try await other.forgetChunkFolder("/out/.a.chunks-1")
        #expect(try await store.abandonedChunkFolders(limit: 10).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func aFailedChunkFailsTheJobAndARetryPlansAgain(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let id = try await store.enqueue([new("long")], at: t0)[0].id
        let token = try await claim(store, id, at: t0)
        let chunks = try #require(try await store.split(id: id, token: token, chunks: (1...3).map { new("c\($0)") },
                                                        plan: plan("/out/.a.chunks-1", chunks: 3), at: t0).chunkPlan?.jobs)
        let running = try await other.claim(limit: 2, owner: "h:2:b", leaseDuration: 60, at: t0.addingTimeInterval(1))
        #expect(running.map(\.id) == Array(chunks.prefix(2)))
        _ = try await other.finish(id: chunks[0], token: running[0].lease!.token, outcome: .failed(message: "disk full", result: nil),
                                   at: t0.addingTimeInterval(2))
        let failed = try #require(try await store.job(id: id))
        #expect(failed.state == .failed && failed.blockedBy == nil)
        #expect(failed.errors.last?.message == "chunk job \(chunks[0]) (frames 0..<100) failed: disk full; retry job \(id) to encode its chunks again")
        // Its other chunks are cancelled, the running one too (its lease is gone).
        #expect(try await store.jobs(ids: Array(chunks.dropFirst())).map(\.state) == [.cancelled, .cancelled])
        #expect(try await other.lostLeases([chunks[1]: running[1].lease!.token], at: t0.addingTimeInterval(2)) == [chunks[1]])
        #expect(try await store.abandonedChunkFolders(limit: 10) == ["/out/.a.chunks-1"])

        // A retry of the job plans again: no plan, no chunk waited for; the old folder stays listed.
        let retried = try await other.retry(id: id, at: t0.addingTimeInterval(3), by: "a test")
        #expect(retried.state == .queued && retried.chunkPlan == nil && retried.after.isEmpty && retried.waitingFor == 0)
        let again = try await claim(store, id, at: t0.addingTimeInterval(4))
        let second = try await store.split(id: id, token: again, chunks: [new("d1"), new("d2")], plan: plan("/out/.a.chunks-2", chunks: 2),
                                           at: t0.addingTimeInterval(5))
        #expect(second.after == second.chunkPlan?.jobs && second.waitingFor == 2)
        #expect(try await store.abandonedChunkFolders(limit: 10) == ["/out/.a.chunks-1"])
        // Cancelled: its chunks go with it, and so does the new folder.
        _ = try await other.cancel(id: id, at: t0.addingTimeInterval(6))
        #expect(try await store.jobs(ids: second.chunkPlan?.jobs ?? []).allSatisfy { $0.state == .cancelled })
        #expect(Set(try await store.abandonedChunkFolders(limit: 10)) == ["/out/.a.chunks-1", "/out/.a.chunks-2"])
    }
}
