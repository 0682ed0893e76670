import FarmModel
import FarmStore
import Foundation
import Testing

/// Jobs that wait for others, on every backend: the same contract (`JobStore`, `DependencyVerdict`).
@Suite struct DependencyConformanceTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func new(_ name: String, key: String? = nil, after: [JobReference] = [], policy: AfterPolicy = .success,
             runAt: Date? = nil) -> NewJob {
        NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data", maxAttempts: 1, runAt: runAt,
               uniqueKey: key, after: after, afterPolicy: policy)
    }

    /// Claims every due job and ends each with `outcome`; returns the ids in claim order.
    @discardableResult
    func runAll(_ store: any JobStore, at t: Date, _ outcome: AttemptOutcome = .succeeded(result: nil)) async throws -> [Int64] {
        let claimed = try await store.claim(limit: 1000, owner: "h:1:a", leaseDuration: 60, at: t)
        for job in claimed { _ = try await store.finish(id: job.id, token: job.lease!.token, outcome: outcome, at: t) }
        return claimed.map(\.id)
    }

    @Test(arguments: Backend.allCases)
    func aFanInOf500RunsTheLastJobOnceAllSucceeded(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let sources = try await store.enqueue((0..<500).map { new("part\($0)") }, at: t0).map(\.id)
        let join = try await other.enqueue([new("join", after: sources.map { .id($0) })], at: t0)[0].id
        let waiting = try #require(try await store.job(id: join))
        #expect(waiting.state == .waiting && waiting.waitingFor == 500 && waiting.after == sources && waiting.afterPolicy == .success)
        // 499 of them: still waiting, never claimed.
        let claimed = try await store.claim(limit: 1000, owner: "h:1:a", leaseDuration: 60, at: t0)
        #expect(claimed.count == 500 && !claimed.contains { $0.id == join })
        for job in claimed.dropLast() {
            _ = try await store.finish(id: job.id, token: job.lease!.token, outcome: .succeeded(result: nil), at: t0.addingTimeInterval(1))
        }
        #expect(try await store.job(id: join)?.waitingFor == 1)
        #expect(try await store.claim(limit: 10, owner: "h:1:a", leaseDuration: 60, at: t0.addingTimeInterval(2)).isEmpty)
        // The last one through the batch finish.
        let last = claimed.last!
        let results = try await other.finish([FinishedAttempt(id: last.id, token: last.lease!.token, outcome: .succeeded(result: nil))],
                                             at: t0.addingTimeInterval(3))
        #expect(results.count == 1)
        let ready = try #require(try await store.job(id: join))
        #expect(ready.state == .queued && ready.waitingFor == 0 && ready.runAt == t0.addingTimeInterval(3))
        #expect(try await runAll(store, at: t0.addingTimeInterval(3)) == [join])
    }

    @Test(arguments: Backend.allCases)
    func aChainOf100NamedByKeysRunsOneStepAtATime(backend: Backend) async throws {
        let store = try await backend.make()
        // One submission: each step names the one before by the key it was given earlier in it.
        let chain = (0..<100).map { i in new("step\(i)", key: "chain-\(i)", after: i == 0 ? [] : [.key("chain-\(i - 1)")]) }
        let ids = try await store.enqueue(chain, at: t0).map(\.id)
        #expect(try await store.counts() == [.queued: 1, .waiting: 99])
        var order: [Int64] = []
        for step in 0..<100 {
            let ran = try await runAll(store, at: t0.addingTimeInterval(Double(step)))
            #expect(ran.count == 1, "step \(step)")
            order += ran
        }
        #expect(order == ids)
        #expect(try await store.counts() == [.succeeded: 100])
    }

    @Test(arguments: Backend.allCases)
    func aFailedDependencyFailsItsDependentsAndItsRetryBringsThemBack(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let scan = try await store.enqueue([new("scan")], at: t0)[0].id
        let ok = try await store.enqueue([new("ok")], at: t0)[0].id
        let export = try await store.enqueue([new("export", after: [.id(scan), .id(ok)])], at: t0)[0].id
        let notify = try await store.enqueue([new("notify", after: [.id(export)])], at: t0)[0].id
        let cleanup = try await store.enqueue([new("cleanup", after: [.id(export)], policy: .always)], at: t0)[0].id
        let claimed = try await store.claim(limit: 10, owner: "h:1:a", leaseDuration: 60, at: t0)
        #expect(Set(claimed.map(\.id)) == [scan, ok])
        let scanJob = claimed.first { $0.id == scan }!, okJob = claimed.first { $0.id == ok }!
        _ = try await store.finish(id: ok, token: okJob.lease!.token, outcome: .succeeded(result: nil), at: t0)
        _ = try await other.finish(id: scan, token: scanJob.lease!.token, outcome: .failed(message: "no such file", result: nil), at: t0.addingTimeInterval(1))

        // The failure runs down the graph: export and notify fail naming their dependency; cleanup runs anyway.
        let failed = try #require(try await store.job(id: export))
        #expect(failed.state == .failed && failed.blockedBy == scan && failed.attempt == 0)
        #expect(failed.errors.last?.message == "dependency job \(scan) (scan) failed: no such file; retry job \(scan) to run this one after it")
        let downstream = try #require(try await store.job(id: notify))
        #expect(downstream.state == .failed && downstream.blockedBy == export)
        #expect(downstream.errors.last?.message == "dependency job \(export) (export) failed, because job \(scan) (scan) failed: no such file; retry job \(scan) to run this one after it")
        #expect(try await store.job(id: cleanup)?.state == .queued)
        #expect(try await runAll(store, at: t0.addingTimeInterval(2)) == [cleanup])

        // The dependent alone cannot be retried while its dependency stays failed.
        await #expect { try await store.retry(id: export, at: t0, by: "a test") } throws: { error in
            guard case .refused(let message) = error as? JobStoreError else { return false }
            return message.contains("retry job \(scan)")
        }
        // Retrying the dependency brings back what its failure failed; then they run in order.
        let again = try await other.retry(id: scan, at: t0.addingTimeInterval(3), by: "a test")
        #expect(again.state == .queued)
        let back = try #require(try await store.job(id: export))
        #expect(back.state == .waiting && back.waitingFor == 1 && back.blockedBy == nil && back.attempt == 0)
        #expect(try await store.job(id: notify)?.state == .waiting)
        #expect(try await runAll(store, at: t0.addingTimeInterval(4)) == [scan])
        #expect(try await runAll(store, at: t0.addingTimeInterval(5)) == [export])
        #expect(try await runAll(store, at: t0.addingTimeInterval(6)) == [notify])
        // cleanup ran once, after the first failure; it is not run again.
        #expect(try await store.job(id: cleanup)?.attempt == 1)
    }

    @Test(arguments: Backend.allCases)
    func cancellingOrLosingADependencyFailsTheDependents(backend: Backend) async throws {
        let store = try await backend.make()
        let a = try await store.enqueue([new("a")], at: t0)[0].id
        let b = try await store.enqueue([new("b", after: [.id(a)])], at: t0)[0].id
        _ = try await store.cancel(id: a, at: t0)
        let failed = try #require(try await store.job(id: b))
        #expect(failed.state == .failed && failed.errors.last?.message.hasPrefix("dependency job \(a) (a) was cancelled") == true)

        // A dependency that dies (its lease expired on its last attempt).
        let c = try await store.enqueue([new("c")], at: t0)[0].id
        let d = try await store.enqueue([new("d", after: [.id(c)])], at: t0)[0].id
        _ = try await store.claim(limit: 1, owner: "gone:1:a", leaseDuration: 10, at: t0)
        #expect(try await store.rescueExpired(at: t0.addingTimeInterval(11)).map(\.id) == [c])
        let dead = try #require(try await store.job(id: d))
        #expect(dead.state == .failed && dead.blockedBy == c && dead.errors.last?.message.contains("is dead") == true)

        // Cancelling a waiting job: cancelled, and its own dependents fail.
        let e = try await store.enqueue([new("e")], at: t0)[0].id
        let f = try await store.enqueue([new("f", after: [.id(e)])], at: t0)[0].id
        let g = try await store.enqueue([new("g", after: [.id(f)])], at: t0)[0].id
        #expect(try await store.cancel(id: f, at: t0).state == .cancelled)
        #expect(try await store.job(id: g)?.state == .failed)
        // e still runs; f does not come back by itself.
        #expect(try await runAll(store, at: t0.addingTimeInterval(20)) == [e])
        #expect(try await store.job(id: f)?.state == .cancelled)
        // Retried, f runs now (its dependency succeeded), and g follows.
        #expect(try await store.retry(id: f, at: t0.addingTimeInterval(21), by: "a test").state == .queued)
        #expect(try await store.job(id: g)?.state == .waiting)
    }

    @Test(arguments: Backend.allCases)
    func dependenciesAreCheckedAtSubmission(backend: Backend) async throws {
        let store = try await backend.make()
        // An unknown id or key refuses the whole submission: nothing is queued.
        for reference in [JobReference.id(424_242), .key("nobody")] {
            await #expect { _ = try await store.enqueue([new("fine"), new("orphan", after: [reference])], at: t0) } throws: { error in
                guard case .refused(let message) = error as? JobStoreError else { return false }
                return message.contains("orphan: waits for \(reference), which is not in the queue") && message.contains("nothing was queued")
            }
        }
        #expect(try await store.counts().isEmpty)

        // Already succeeded: queued at once. Already failed: failed at once, naming it. Always: queued.
        let done = try await store.enqueue([new("done")], at: t0)[0].id
        #expect(try await runAll(store, at: t0) == [done])
        let claimedBad = try await store.enqueue([new("bad2", key: "bad2")], at: t0)[0].id
        let token = try await store.claim(limit: 1, owner: "h:1:a", leaseDuration: 60, at: t0)[0].lease!.token
        _ = try await store.finish(id: claimedBad, token: token, outcome: .failed(message: "broken", result: nil), at: t0)
        let later = try await store.enqueue([new("after-done", after: [.id(done)]), new("after-bad", after: [.key("bad2")]),
                                             new("cleanup", after: [.key("bad2"), .id(done)], policy: .always)], at: t0)
        let jobs = try await store.jobs(ids: later.map(\.id))
        #expect(jobs.map(\.state) == [.queued, .failed, .queued])
        #expect(jobs[1].blockedBy == claimedBad && jobs[1].errors.last?.message.contains("broken") == true)
        // A waiting job holds its unique key as a live one.
        let blocker = try await store.enqueue([new("blocker")], at: t0)[0]
        let chained = try await store.enqueue([new("w", key: "w", after: [.id(blocker.id)])], at: t0)[0]
        #expect(try await store.job(id: chained.id)?.state == .waiting)
        #expect(try await store.enqueue([new("w again", key: "w")], at: t0)[0] == Enqueued(id: chained.id, inserted: false))
    }
}

/// Jobs go where they can run: a claimer takes only jobs whose requirements it provides and whose library
/// assets are present on its host; the others wait (not claimed, not counted as work for it).
@Suite struct PlacementConformanceTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    @Test(arguments: Backend.allCases)
    func aJobIsClaimedOnlyWhereItCanRun(backend: Backend) async throws {
        let store = try await backend.make()
        let asset = "0123456789abcdefghjkmnpqr0"
        let gpu = try await store.enqueue([NewJob(name: "gpu", manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/", requires: ["gpu"])], at: t0)[0].id
        let onRender = try await store.enqueue([NewJob(name: "asset", manifest: #"{"version":1,"input":"asset:\#(asset)"}"#, baseDirectory: "/")], at: t0)[0].id
        #expect(try await store.job(id: gpu)?.requires == ["gpu"])
        // A coordinator that provides nothing, on a host without the asset: nothing for it.
        #expect(try await store.claim(limit: 5, owner: "laptop:1:a", leaseDuration: 30, at: t0).isEmpty)
        #expect(try await store.nextRunAt(provides: [], host: "laptop") == nil)
        #expect(try await store.hasWork(provides: [], host: "laptop") == false)
        #expect(try await store.hasWork(provides: ["gpu"], host: "laptop"))
        #expect(try await store.claim(limit: 5, owner: "laptop:1:a", leaseDuration: 30, provides: ["cpu"], at: t0).isEmpty)
        // Registered on "render" (the library's tables, beside the jobs'): claimed there only.
        let database = try store.database
        try await database.write { s in
            _ = try await s.execute("INSERT INTO assets (id, sha256, size, media_type, added_at, date_key) VALUES (?, 'x', 1, 'video', 0, 0)",
                                    [.text(asset)])
            _ = try await s.execute("""
                INSERT INTO asset_locations (asset_id, host, path, state, size, mtime, inode, device, seen_at)
                VALUES (?, 'render', '/media/a.mp4', 'present', 1, 0, 1, 1, 0)
                """, [.text(asset)])
        }
        #expect(try await store.claim(limit: 5, owner: "laptop:1:a", leaseDuration: 30, at: t0).isEmpty)
        #expect(try await store.claim(limit: 5, owner: "render:1:a", leaseDuration: 30, at: t0).map(\.id) == [onRender])
        #expect(try await store.claim(limit: 5, owner: "laptop:1:a", leaseDuration: 30, provides: ["gpu", "capture-host"], at: t0).map(\.id) == [gpu])
    }
}
