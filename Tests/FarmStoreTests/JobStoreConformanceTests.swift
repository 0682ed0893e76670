import FarmModel
import FarmStore
import Foundation
import FarmTestSupport
import GRDB
import Testing

/// Every backend of `JobStore`: the suite below runs unchanged against each.
enum Backend: String, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// A new, empty queue, and a second connection to the same queue (another process would have one).
    func makePair(policy: RetryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 5, maxDelay: 60, jitter: 0)) async throws -> (any JobStore, any JobStore) {
        switch self {
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-store-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let path = folder + "/queue.sqlite"
            return (try SQLiteJobStore(path: path, policy: policy), try SQLiteJobStore(path: path, create: false, policy: policy))
        case .postgres:
            // A schema of its own: an empty queue in the server script/test started. The first store
            // has a pool (as a coordinator), the second one connection (as a command line).
            let location = try QueueLocation.parse(try TestPostgres.url(freshSchema: true))
            let first = try await JobStores.open(location, migrate: true, policy: policy, connections: 4)
            return (first, try await JobStores.open(location, policy: policy, connections: 1))
        }
    }

    func make() async throws -> any JobStore { try await makePair().0 }
}

@Suite struct JobStoreConformanceTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func new(_ name: String, priority: Int = 0, runAt: Date? = nil, key: String? = nil, maxAttempts: Int = 3) -> NewJob {
        NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data", outputRoots: ["/data/out"],
               priority: priority, maxAttempts: maxAttempts, runAt: runAt, uniqueKey: key, timeout: 60)
    }

    @Test(arguments: Backend.allCases)
    func enqueueKeepsEverythingSubmitted(backend: Backend) async throws {
        let store = try await backend.make()
        let ids = try await store.enqueue([new("a", priority: 3, key: "k"), new("b")], at: t0)
        #expect(ids.map(\.inserted) == [true, true] && ids[0].id != ids[1].id)
        let a = try #require(try await store.job(id: ids[0].id))
        #expect(a.name == "a" && a.state == .queued && a.priority == 3 && a.uniqueKey == "k" && a.attempt == 0 && a.maxAttempts == 3)
        #expect(a.manifest == #"{"version":1,"input":"a.mp4"}"# && a.baseDirectory == "/data" && a.outputRoots == ["/data/out"])
        #expect(a.timeout == 60 && a.createdAt == t0 && a.runAt == t0 && a.errors.isEmpty && a.lease == nil)
        #expect(try await store.jobs(ids: nil).map(\.name) == ["a", "b"])
        #expect(try await store.jobs(ids: [ids[1].id, 999]).map(\.name) == ["b"])
        #expect(try await store.job(id: 999) == nil)
        #expect(try await store.counts() == [.queued: 2])
    }

    /// A submission of thousands (PostgreSQL inserts those with no key and no dependency many to a
    /// statement): ids rise in the submission's order, and every column arrives as given.
    @Test(arguments: Backend.allCases)
    func aLargeSubmissionKeepsItsOrderAndEveryValue(backend: Backend) async throws {
        let store = try await backend.make()
        defer { Task { await store.close() } }
        var jobs = (0..<2_500).map { new("n\($0)") }
        jobs[1_200] = new("keyed", key: "k-1200")
        var odd = NewJob(name: "odd \"é\" \u{1F600}\t\\", manifest: #"{"version":1,"input":"dir/\u00e9 \"x\".mp4","tab":"\t"}"#,
                         baseDirectory: "/data/é", outputRoots: ["/data/out", "/data/ö"], priority: -5, maxAttempts: 7,
                         runAt: t0.addingTimeInterval(0.123456789), timeout: 12.5)
        odd.requires = ["gpu", "hevc"]
        jobs[7] = odd
        let ids = try await store.enqueue(jobs, at: t0)
        #expect(ids.allSatisfy(\.inserted) && zip(ids, ids.dropFirst()).allSatisfy { $0.id < $1.id })
        #expect(try await store.jobs(ids: nil).map(\.name) == jobs.map(\.name))
        let got = try #require(try await store.job(id: ids[7].id))
        #expect(got.name == odd.name && got.manifest == odd.manifest && got.baseDirectory == odd.baseDirectory)
        #expect(got.outputRoots == odd.outputRoots && got.priority == -5 && got.maxAttempts == 7 && got.timeout == 12.5)
        #expect(got.runAt.timeIntervalSince1970 == odd.runAt?.timeIntervalSince1970 && got.createdAt == t0 && got.updatedAt == t0 && got.requires == ["gpu", "hevc"])
        #expect(got.state == .queued && got.attempt == 0 && got.errors.isEmpty && got.uniqueKey == nil && got.after.isEmpty)
        #expect(try await store.job(id: ids[1_200].id)?.uniqueKey == "k-1200")
    }

    @Test(arguments: Backend.allCases)
    func oneLiveJobPerUniqueKey(backend: Backend) async throws {
        let store = try await backend.make()
        let first = try await store.enqueue([new("a", key: "k"), new("b", key: "k"), new("c", key: "other")], at: t0)
        #expect(first[1] == Enqueued(id: first[0].id, inserted: false) && first[2].inserted)
        // Still live while running.
        let claimed = try await store.claim(limit: 1, owner: "o", leaseDuration: 30, at: t0)
        #expect(claimed.map(\.id) == [first[0].id])
        #expect(try await store.enqueue([new("d", key: "k")], at: t0)[0] == Enqueued(id: first[0].id, inserted: false))
        // Finished: the key is free again.
        _ = try await store.finish(id: first[0].id, token: claimed[0].lease!.token, outcome: .succeeded(result: nil), at: t0)
        let again = try await store.enqueue([new("e", key: "k")], at: t0)[0]
        #expect(again.inserted && again.id != first[0].id)
        // A retry may not bring a second live job under the key.
        let cancelled = try await store.cancel(id: first[2].id, at: t0)
        #expect(cancelled.state == .cancelled)
        #expect(try await store.enqueue([new("f", key: "other")], at: t0)[0].inserted)
        // The caller's conflict, not the queue's fault (an API answers 409, not 503).
        do {
            _ = try await store.retry(id: first[2].id, at: t0, by: "a test")
            Issue.record("a retry brought a second live job under the key")
        } catch {
            guard case .refused(let message) = error else { Issue.record("\(error) is not a refusal"); return }
            #expect(message.contains("another live job holds its unique key"), "\(message)")
        }
    }

    @Test(arguments: Backend.allCases)
    func claimTakesPriorityThenRunAtAndNothingEarly(backend: Backend) async throws {
        let store = try await backend.make()
        let ids = try await store.enqueue([new("low"), new("high", priority: 5), new("later", priority: 9, runAt: t0.addingTimeInterval(60)),
                                     new("low2")], at: t0).map(\.id)
        let first = try await store.claim(limit: 2, owner: "o", leaseDuration: 30, at: t0)
        #expect(first.map(\.name) == ["high", "low"])
        #expect(first.allSatisfy { $0.state == .running && $0.attempt == 1 && $0.lease?.owner == "o" && $0.lease?.expiresAt == t0.addingTimeInterval(30) })
        #expect(Set(first.compactMap(\.lease?.token)).count == 2)
        #expect(try await store.claim(limit: 5, owner: "o", leaseDuration: 30, at: t0).map(\.name) == ["low2"])
        #expect(try await store.claim(limit: 5, owner: "o", leaseDuration: 30, at: t0).isEmpty)
        #expect(try await store.nextRunAt() == t0.addingTimeInterval(60))
        #expect(try await store.claim(limit: 5, owner: "o", leaseDuration: 30, at: t0.addingTimeInterval(60)).map(\.id) == [ids[2]])
        #expect(try await store.claim(limit: 0, owner: "o", leaseDuration: 30, at: t0.addingTimeInterval(60)).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func concurrentClaimersNeverShareAJob(backend: Backend) async throws {
        let (a, b) = try await backend.makePair()
        _ = try await a.enqueue((0..<200).map { new("j\($0)") }, at: t0)
        let claims = await withTaskGroup(of: [Int64].self) { group in
            for i in 0..<8 {
                let store = i % 2 == 0 ? a : b
                group.addTask {
                    await Task.detached {
                        var mine: [Int64] = []
                        while let batch = try? await store.claim(limit: 3, owner: "c\(i)", leaseDuration: 30, at: self.t0), !batch.isEmpty {
                            mine += batch.map(\.id)
                        }
                        return mine
                    }.value
                }
            }
            var all: [Int64] = []
            for await ids in group { all += ids }
            return all
        }
        #expect(claims.count == 200 && Set(claims).count == 200)
        #expect(try await a.counts() == [.running: 200])
    }

    /// The uploads a worker began are recorded only under the attempt's lease, replace an earlier
    /// attempt's record of the same output, are forgotten one by one (not one a newer attempt made since),
    /// and go with their job when it is pruned.
    @Test(arguments: Backend.allCases)
    func uploadsAreRecordedUnderTheLeaseAndForgotten(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let id = try await store.enqueue([new("u", maxAttempts: 3)], at: t0)[0].id
        let first = try #require(try await store.claim(limit: 1, owner: "o", leaseDuration: 10, at: t0).first?.lease?.token)
        let movie = RecordedUpload(jobID: id, address: "s3://b/out/m.mp4", uploadID: "one", attempt: 1)
        let report = RecordedUpload(jobID: id, address: "s3://b/out/m.json", uploadID: "r1", attempt: 1)
        #expect(try await store.recordUpload(movie, token: first, at: t0))
        #expect(try await other.recordUpload(report, token: first, at: t0))
        #expect(try await store.recordUpload(RecordedUpload(jobID: id, address: "s3://b/x", uploadID: "x", attempt: 1), token: "stale", at: t0) == false)
        #expect(try await other.recordedUploads(of: id) == [report, movie])
        // The attempt crashed; the next one begins another upload of the movie: it replaces the record.
        _ = try await store.finish(id: id, token: first, outcome: .crashed(message: "killed"), at: t0.addingTimeInterval(1))
        #expect(try await store.recordUpload(movie, token: first, at: t0) == false)
        let second = try #require(try await store.claim(limit: 1, owner: "o", leaseDuration: 10, at: t0.addingTimeInterval(100)).first?.lease?.token)
        let again = RecordedUpload(jobID: id, address: movie.address, uploadID: "two", attempt: 2)
        #expect(try await store.recordUpload(again, token: second, at: t0.addingTimeInterval(100)))
        #expect(try await store.recordedUploads(of: id) == [report, again])
        // Forgetting the first attempt's movie upload leaves the second's record.
        try await store.forgetUploads([movie, report])
        #expect(try await store.recordedUploads(of: id) == [again])
        _ = try await store.finish(id: id, token: second, outcome: .failed(message: "no", result: nil), at: t0.addingTimeInterval(101))
        #expect(try await store.prune(finishedBefore: t0.addingTimeInterval(200), limit: 10) == 1)
        #expect(try await store.recordedUploads(of: id).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func onlyTheCurrentLeaseHolderRenewsAndFinishes(backend: Backend) async throws {
        let store = try await backend.make()
        let id = try await store.enqueue([new("a")], at: t0)[0].id
        let job = try await store.claim(limit: 1, owner: "o", leaseDuration: 10, at: t0)[0]
        let token = try #require(job.lease?.token)
        let lost = try await store.renew([LeaseRenewal(id: id, token: token, progress: 0.4, phase: "encoding", workerPID: 1234),
                                    LeaseRenewal(id: 999, token: "x")], leaseDuration: 10, at: t0.addingTimeInterval(5))
        #expect(lost == [999])
        let renewed = try #require(try await store.job(id: id))
        #expect(renewed.lease?.expiresAt == t0.addingTimeInterval(15) && renewed.progress == 0.4 && renewed.phase == "encoding" && renewed.workerPID == 1234)
        #expect(try await store.lostLeases([id: token], at: t0) == [])
        #expect(try await store.lostLeases([id: "stale"], at: t0) == [id])
        #expect(try await store.renew([LeaseRenewal(id: id, token: "stale")], leaseDuration: 10, at: t0) == [id])
        await #expect {
            try await store.finish(id: id, token: "stale", outcome: .succeeded(result: nil), at: t0)
        } throws: { ($0 as? JobStoreError)?.isStaleLease == true }
        let done = try await store.finish(id: id, token: token, outcome: .succeeded(result: #"{"ok":true}"#), at: t0.addingTimeInterval(6))
        #expect(done.state == .succeeded && done.result == #"{"ok":true}"# && done.finishedAt == t0.addingTimeInterval(6) && done.lease == nil)
        // Finished: the lease is gone, a second completion is refused.
        #expect(try await store.lostLeases([id: token], at: t0) == [id])
        await #expect(throws: JobStoreError.self) { try await store.finish(id: id, token: token, outcome: .succeeded(result: nil), at: t0) }
    }

    @Test(arguments: Backend.allCases)
    func expiredLeasesAreRescuedAndTheOldHolderIsFencedOff(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let id = try await store.enqueue([new("a")], at: t0)[0].id
        let old = try await store.claim(limit: 1, owner: "dead-coordinator", leaseDuration: 10, at: t0)[0]
        #expect(try await other.rescueExpired(at: t0.addingTimeInterval(9)).isEmpty)
        let rescued = try await other.rescueExpired(at: t0.addingTimeInterval(10))
        #expect(rescued.map(\.id) == [id] && rescued[0].lease?.token == old.lease?.token)
        let queued = try #require(try await store.job(id: id))
        #expect(queued.state == .queued && queued.errors.count == 1 && queued.errors[0].message.contains("dead-coordinator"))
        // Backoff of 5 s after attempt 1.
        #expect(queued.runAt == t0.addingTimeInterval(15))
        let new = try await other.claim(limit: 1, owner: "new-coordinator", leaseDuration: 10, at: t0.addingTimeInterval(15))[0]
        #expect(new.attempt == 2 && new.lease?.token != old.lease?.token)
        // The stale holder comes back: nothing it says is accepted.
        #expect(try await store.renew([LeaseRenewal(id: id, token: old.lease!.token)], leaseDuration: 10, at: t0.addingTimeInterval(16)) == [id])
        await #expect(throws: JobStoreError.self) {
            try await store.finish(id: id, token: old.lease!.token, outcome: .succeeded(result: "stale"), at: t0.addingTimeInterval(16))
        }
        let done = try await other.finish(id: id, token: new.lease!.token, outcome: .succeeded(result: "fresh"), at: t0.addingTimeInterval(17))
        #expect(done.state == .succeeded && done.result == "fresh" && done.attempt == 2)
    }

    /// The leases of coordinators known to be gone end at once: their jobs are rescued now, fenced as for
    /// an expiry; the leases of others (and jobs not running) are left alone.
    @Test(arguments: Backend.allCases)
    func theLeasesOfAGoneCoordinatorEndAtOnce(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let ids = try await store.enqueue([new("dead's"), new("alive's"), new("queued")], at: t0).map(\.id)
        let dead = try await store.claim(limit: 1, owner: "a:1:dead", leaseDuration: 60, at: t0)[0]
        _ = try await store.claim(limit: 1, owner: "a:2:alive", leaseDuration: 60, at: t0)
        #expect(try await other.expireLeases(ofOwners: [], at: t0.addingTimeInterval(1)) == 0)
        #expect(try await other.expireLeases(ofOwners: ["a:1:dead", "a:3:none"], at: t0.addingTimeInterval(1)) == 1)
        let rescued = try await other.rescueExpired(at: t0.addingTimeInterval(1))
        #expect(rescued.map(\.id) == [dead.id] && dead.id == ids[0])
        let back = try #require(try await store.job(id: ids[0]))
        #expect(back.state == .queued && back.errors.count == 1 && back.errors[0].message.contains("a:1:dead"))
        #expect(try await store.job(id: ids[1])?.state == .running)
        #expect(try await store.job(id: ids[2])?.state == .queued)
        await #expect(throws: JobStoreError.self) {
            try await store.finish(id: dead.id, token: dead.lease!.token, outcome: .succeeded(result: "stale"), at: t0.addingTimeInterval(2))
        }
    }

    @Test(arguments: Backend.allCases)
    func anAttemptThatWasPublishingIsSparedForItsGraceAndListed(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let ids = try await store.enqueue([new("publishing"), new("encoding")], at: t0).map(\.id)
        let jobs = try await store.claim(limit: 2, owner: "gone:1:a", leaseDuration: 10, at: t0)
        let tokens = Dictionary(uniqueKeysWithValues: jobs.map { ($0.id, $0.lease!.token) })
        #expect(try await store.renew([LeaseRenewal(id: ids[0], token: tokens[ids[0]]!, progress: 1, phase: "publishing", result: #"{"ok":1}"#)],
                                      leaseDuration: 10, at: t0) == [])
        #expect(try await other.expiredPublications(at: t0.addingTimeInterval(9)).isEmpty)
        let listed = try await other.expiredPublications(at: t0.addingTimeInterval(10))
        #expect(listed.map(\.id) == [ids[0]] && listed[0].result == #"{"ok":1}"# && listed[0].lease?.token == tokens[ids[0]])
        // Within the grace only the other job is rescued; after it, both.
        #expect(try await other.rescueExpired(at: t0.addingTimeInterval(12), publishingGrace: 5).map(\.id) == [ids[1]])
        // A rescuer completes the publication under the expired lease's token; a second one is refused.
        let done = try await other.finish(id: ids[0], token: tokens[ids[0]]!, outcome: .succeeded(result: listed[0].result), at: t0.addingTimeInterval(13))
        #expect(done.state == .succeeded && done.attempt == 1 && done.result == #"{"ok":1}"#)
        await #expect(throws: JobStoreError.self) {
            try await store.finish(id: ids[0], token: tokens[ids[0]]!, outcome: .succeeded(result: nil), at: t0.addingTimeInterval(13))
        }
        #expect(try await other.rescueExpired(at: t0.addingTimeInterval(30), publishingGrace: 5).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func queriesStatsAndPruningAreDoneByTheDatabase(backend: Backend) async throws {
        let store = try await backend.make()
        let ids = try await store.enqueue((0..<6).map { new("j\($0)") }, at: t0).map(\.id)
        let claimed = try await store.claim(limit: 3, owner: "alpha:1:a", leaseDuration: 30, at: t0)
        _ = try await store.finish(id: claimed[0].id, token: claimed[0].lease!.token, outcome: .succeeded(result: nil), at: t0.addingTimeInterval(1))
        _ = try await store.finish(id: claimed[1].id, token: claimed[1].lease!.token, outcome: .failed(message: "no", result: nil),
                                   at: t0.addingTimeInterval(100))
        _ = try await store.cancel(id: ids[5], at: t0.addingTimeInterval(2))
        #expect(try await store.jobs(matching: JobQuery(states: [.queued])).map(\.id) == [ids[3], ids[4]])
        #expect(try await store.jobs(matching: JobQuery(states: [.succeeded, .cancelled])).map(\.id) == [ids[0], ids[5]])
        #expect(try await store.jobs(matching: JobQuery(limit: 2, newest: true)).map(\.id) == [ids[4], ids[5]])
        // Paging newest first: the page after ids[4] holds the two before it.
        #expect(try await store.jobs(matching: JobQuery(limit: 2, newest: true, before: ids[4])).map(\.id) == [ids[2], ids[3]])
        #expect(try await store.jobs(matching: JobQuery(states: [.queued], newest: true, before: ids[4])).map(\.id) == [ids[3]])
        #expect(try await store.jobs(matching: JobQuery(ids: [ids[1], ids[3]], states: [.queued])).map(\.id) == [ids[3]])
        let stats = try await store.stats(at: t0.addingTimeInterval(10))
        #expect(stats.counts == ["succeeded": 1, "failed": 1, "running": 1, "queued": 2, "cancelled": 1] && stats.total == 6)
        #expect(stats.runningByHost == ["alpha": 1] && stats.oldestDueAt == t0 && stats.dead == 0)
        // Finished before t0+50: the success and the cancellation; the failure (t0+100) stays.
        #expect(try await store.prune(finishedBefore: t0.addingTimeInterval(50), limit: 1) == 1)
        #expect(try await store.prune(finishedBefore: t0.addingTimeInterval(50), limit: 10) == 1)
        #expect(try await store.jobs(ids: nil).map(\.id) == [ids[1], ids[2], ids[3], ids[4]])
    }

    /// A queued job whose time has not come is delayed: counted apart from the due ones, and listed by the
    /// due time's side of the query.
    @Test(arguments: Backend.allCases)
    func delayedJobsAreCountedApart(backend: Backend) async throws {
        let store = try await backend.make()
        let ids = try await store.enqueue([new("now"), new("later", runAt: t0.addingTimeInterval(3600))], at: t0).map(\.id)
        let stats = try await store.stats(at: t0.addingTimeInterval(1))
        #expect(stats.counts["queued"] == 2 && stats.delayed == 1)
        #expect(stats.shown[.queued] == 1 && stats.shown[.delayed] == 1 && stats.shown[.running] == 0)
        var delayed = JobQuery(states: [.queued])
        delayed.runAfter = t0.addingTimeInterval(1)
        #expect(try await store.jobs(matching: delayed).map(\.id) == [ids[1]])
        // Its time come, it is queued like the other.
        #expect(try await store.stats(at: t0.addingTimeInterval(3601)).shown[.queued] == 2)
        let later = try #require(try await store.job(id: ids[1]))
        #expect(ShownState(later, at: t0) == .delayed && ShownState(later, at: t0.addingTimeInterval(3600)) == .queued)
    }

    /// The queue's list of coordinators: reports from two connections, updated in place, left on stop, and
    /// a row a day old forgotten by anyone's next report.
    @Test(arguments: Backend.allCases)
    func coordinatorsReportTheirSlotsAndLeave(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let a = CoordinatorRegistry(try store.database)
        let b = CoordinatorRegistry(try other.database)
        let alpha = CoordinatorPresence(owner: "alpha:1:a", host: "alpha", slots: 4, busy: 1, draining: false, startedAt: t0, seenAt: t0,
                                        provides: ["gpu", "capture-host"])
        var beta = CoordinatorPresence(owner: "beta:2:b", host: "beta", slots: 2, busy: 0, draining: false, startedAt: t0, seenAt: t0)
        try await b.report(beta)
        try await a.report(alpha)
        #expect(try await a.all() == [alpha, beta])
        beta.busy = 2
        beta.draining = true
        beta.seenAt = t0.addingTimeInterval(5)
        var restarted = beta
        restarted.startedAt = t0.addingTimeInterval(5)
        try await b.report(restarted)
        // Updated in place; the start is the first report's.
        #expect(try await b.all() == [alpha, beta])
        try await b.leave(owner: beta.owner)
        #expect(try await a.all() == [alpha])
        let gamma = CoordinatorPresence(owner: "gamma:3:c", host: "gamma", slots: 1, busy: 0, draining: false,
                                        startedAt: t0, seenAt: t0.addingTimeInterval(CoordinatorRegistry.forgetAfter + 1))
        try await b.report(gamma)
        #expect(try await a.all() == [gamma])
    }

    @Test(arguments: Backend.allCases)
    func crashesRetryThenDieWithOneErrorPerAttempt(backend: Backend) async throws {
        let store = try await backend.make()
        let id = try await store.enqueue([new("a", maxAttempts: 2)], at: t0)[0].id
        var now = t0
        for attempt in 1...2 {
            let job = try #require(try await store.claim(limit: 1, owner: "o", leaseDuration: 10, at: now).first)
            #expect(job.attempt == attempt)
            let after = try await store.finish(id: id, token: job.lease!.token, outcome: .crashed(message: "killed by SIGSEGV"), at: now)
            now = after.runAt
            #expect(try await store.claim(limit: 1, owner: "o", leaseDuration: 10, at: now.addingTimeInterval(-0.001)).isEmpty)
        }
        let dead = try #require(try await store.job(id: id))
        #expect(dead.state == .dead && dead.errors.map(\.attempt) == [1, 2] && dead.errors.allSatisfy { $0.message == "killed by SIGSEGV" })
        let again = try await store.retry(id: id, at: now, by: "a test")
        #expect(again.state == .queued && again.attempt == 0 && again.errors.count == 2)
    }

    @Test(arguments: Backend.allCases)
    func failureReleaseAndCancel(backend: Backend) async throws {
        let store = try await backend.make()
        let ids = try await store.enqueue([new("fails"), new("released"), new("cancelled-running"), new("cancelled-queued")], at: t0).map(\.id)
        let jobs = try await store.claim(limit: 3, owner: "o", leaseDuration: 10, at: t0)
        let token = Dictionary(uniqueKeysWithValues: jobs.map { ($0.id, $0.lease!.token) })
        let failed = try await store.finish(id: ids[0], token: token[ids[0]]!, outcome: .failed(message: "in.mp4: no such file", result: "{}"), at: t0)
        #expect(failed.state == .failed && failed.errors.map(\.message) == ["in.mp4: no such file"])
        let released = try await store.finish(id: ids[1], token: token[ids[1]]!, outcome: .released, at: t0)
        #expect(released.state == .queued && released.attempt == 0 && released.errors.isEmpty)
        let cancelled = try await store.cancel(id: ids[2], at: t0)
        #expect(cancelled.state == .cancelled && cancelled.lease == nil)
        #expect(try await store.lostLeases([ids[2]: token[ids[2]]!], at: t0) == [ids[2]])
        #expect(try await store.cancel(id: ids[3], at: t0).state == .cancelled)
        await #expect(throws: JobStoreError.self) { try await store.cancel(id: ids[0], at: t0) }
        await #expect(throws: JobStoreError.self) { try await store.cancel(id: 12345, at: t0) }
        #expect(try await store.counts() == [.failed: 1, .queued: 1, .cancelled: 2])
    }

    @Test(arguments: Backend.allCases)
    func batchedFinishFencesEachAttempt(backend: Backend) async throws {
        let store = try await backend.make()
        _ = try await store.enqueue([new("a"), new("b"), new("c")], at: t0)
        let jobs = try await store.claim(limit: 3, owner: "o", leaseDuration: 10, at: t0)
        let results = try await store.finish([FinishedAttempt(id: jobs[0].id, token: jobs[0].lease!.token, outcome: .succeeded(result: nil)),
                                        FinishedAttempt(id: jobs[1].id, token: "stale", outcome: .succeeded(result: nil)),
                                        FinishedAttempt(id: jobs[2].id, token: jobs[2].lease!.token, outcome: .crashed(message: "x")),
                                        FinishedAttempt(id: 999, token: "t", outcome: .released)], at: t0)
        #expect(results.count == 4)
        #expect((try? results[0].get())?.state == .succeeded)
        #expect((try? results[2].get())?.state == .queued)
        if case .failure(let e) = results[1] { #expect(e.isStaleLease) } else { Issue.record("a stale token was accepted") }
        if case .failure(.notFound(999)) = results[3] {} else { Issue.record("a missing job was not reported") }
        #expect(try await store.counts() == [.succeeded: 1, .running: 1, .queued: 1])
    }

    @Test func aFileThatIsNotAQueueIsRefusedAndLeftAlone() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/notes.txt"
        let text = Data(String(repeating: "shopping list\n", count: 100).utf8)
        FileManager.default.createFile(atPath: path, contents: text)
        #expect {
            _ = try SQLiteJobStore(path: path)
        } throws: { "\($0)".contains("notes.txt: not a MediaFarm queue") }
        #expect(FileManager.default.contents(atPath: path) == text)
        #expect {
            _ = try SQLiteJobStore(path: folder + "/missing.sqlite", create: false)
        } throws: { "\($0)".contains("no queue there") }
        #expect(!FileManager.default.fileExists(atPath: folder + "/missing.sqlite"))
    }

    /// Another process's write transaction: a writer waits for it asleep (holding no thread, even when its
    /// task is cancelled), then commits after it; one that would wait longer than its busy timeout fails,
    /// saying why.
    @Test func aWriterWaitsForAnotherProcesssLockThenGivesUp() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/queue.sqlite"
        let store = try SQLiteJobStore(path: path)
        let impatient = try SQLiteJobStore(path: path, create: false, busyTimeout: 0.2)
        let other = try DatabaseQueue(path: path)
        let locked = DispatchSemaphore(value: 0)
        let impatientDone = DispatchSemaphore(value: 0)
        let released = Flag()
        // A thread of its own (not the test's task pool, which other tests may keep busy). It holds the
        // lock until the impatient writer has given up (however late the busy test pool lets it try),
        // then a second longer, while the patient writer waits.
        let holder = Thread {
            try? other.inTransaction(.immediate) { _ in
                locked.signal()
                _ = impatientDone.wait(timeout: .now() + 600)  // signalled as soon as it gave up; the bound only ends a test gone wrong
                Thread.sleep(forTimeInterval: 1)
                released.set()
                return .commit
            }
        }
        holder.start()
        locked.wait()
        await #expect {
            _ = try await impatient.enqueue([new("x")], at: t0)
        } throws: { "\($0)".contains("stayed locked by another process") }
        impatientDone.signal()
        let waiting = Task { try await store.enqueue([new("a")], at: t0) }
        waiting.cancel()
        #expect(try await waiting.value.count == 1)
        #expect(released.isSet)
        #expect(try await store.jobs(ids: nil).map(\.name) == ["a"])
    }
}

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
