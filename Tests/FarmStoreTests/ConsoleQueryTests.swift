import FarmModel
import FarmStore
import Foundation
import Testing

/// The console's filters as both queues answer them: a name's beginning, jobs that are nobody's chunk,
/// a job's chunks, the jobs that wait for one, delayed and due jobs, with the pages newest first.
@Suite struct ConsoleQueryTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func new(_ name: String, runAt: Date? = nil, after: [Int64] = [], chunkOf: Int64? = nil) -> NewJob {
        var job = NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data", outputRoots: ["/data/out"],
                         runAt: runAt, after: after.map { .id($0) })
        job.chunkOf = chunkOf
        return job
    }

    @Test(arguments: Backend.allCases)
    func theConsolesFiltersSelectTheSameJobsOnBothQueues(backend: Backend) async throws {
        let store = try await backend.make()
        defer { Task { await store.close() } }
        let ids = try await store.enqueue([new("ingest-a"), new("ingest-b"), new("Ingest-c"), new("export-1", runAt: t0.addingTimeInterval(3600))], at: t0).map(\.id)
        let chunks = try await store.enqueue([new("export-1 chunk 1", chunkOf: ids[3]), new("export-1 chunk 2", chunkOf: ids[3])], at: t0).map(\.id)
        let waiting = try await store.enqueue([new("after-a", after: [ids[0]])], at: t0).map(\.id)

        func names(_ configure: (inout JobQuery) -> Void) async throws -> [String] {
            var query = JobQuery(newest: true)
            configure(&query)
            return try await store.jobs(matching: query).map(\.name)
        }
        #expect(try await names { $0.namePrefix = "ingest-" } == ["ingest-a", "ingest-b"], "a name's beginning, case as given")
        #expect(try await names { $0.namePrefix = "ingest-%" } == [], "no pattern characters")
        #expect(try await names { $0.namePrefix = "export-1"; $0.topLevel = true } == ["export-1"])
        #expect(try await names { $0.chunkOf = ids[3] } == ["export-1 chunk 1", "export-1 chunk 2"])
        #expect(try await names { $0.dependsOn = ids[0] } == ["after-a"])
        #expect(try await names { $0.dependsOn = ids[1] } == [])
        #expect(try await names { $0.states = [.queued]; $0.runAfter = t0.addingTimeInterval(1) } == ["export-1"], "delayed")
        #expect(try await !names { $0.states = [.queued]; $0.runBy = t0.addingTimeInterval(1) }.contains("export-1"), "due")
        var keyed = new("keyed", runAt: nil)
        keyed.uniqueKey = "ingest:abc123"
        var dated = new("dated")
        dated.manifest = #"{"version":1,"input":"/srv/in/take-7.mov","report":"/srv/out/take-7.json"}"#
        _ = try await store.enqueue([keyed], at: t0)
        _ = try await store.enqueue([dated], at: t0.addingTimeInterval(86_400 * 3))
        #expect(try await names { $0.keyPrefix = "ingest:ab" } == ["keyed"])
        #expect(try await names { $0.keyPrefix = "ingest:%" } == [])
        #expect(try await names { $0.mentions = "take-7" } == ["dated"])
        #expect(try await names { $0.mentions = "%" } == [], "no pattern characters")
        #expect(try await names { $0.createdFrom = t0.addingTimeInterval(86_400) } == ["dated"])
        #expect(try await !names { $0.createdBefore = t0.addingTimeInterval(86_400) }.contains("dated"))
        // The host that ran the latest attempt: the lease's while it runs, kept when it ends.
        var first = new("ran-on-render7")
        first.priority = 10  // claimed before the others
        let ran = try await store.enqueue([first], at: t0).map(\.id)[0]
        let claimed = try await store.claim(limit: 1, owner: "render7:41:ab", leaseDuration: 60, at: t0.addingTimeInterval(86_400 * 9))
        #expect(claimed.map(\.id) == [ran], "\(claimed.map(\.name))")
        #expect(try await names { $0.host = "render7" } == ["ran-on-render7"], "running")
        _ = try await store.finish(id: ran, token: try #require(claimed.first?.lease?.token),
                                   outcome: .succeeded(result: "{}"), at: t0.addingTimeInterval(86_400 * 9 + 1))
        #expect(try await names { $0.host = "render7" } == ["ran-on-render7"], "ended")
        #expect(try await store.job(id: ran)?.host == "render7")
        #expect(try await names { $0.host = "render" } == [], "the whole host")
        #expect(try await names { $0.failedAttempts = true } == [], "no attempt failed yet")
        var failing = new("fails")
        failing.priority = 10
        _ = try await store.enqueue([failing], at: t0)
        let attempt = try #require(try await store.claim(limit: 1, owner: "render7:41:ab", leaseDuration: 60, at: t0.addingTimeInterval(86_400 * 9)).first)
        _ = try await store.finish(id: attempt.id, token: try #require(attempt.lease?.token), outcome: .crashed(message: "killed"),
                                   at: t0.addingTimeInterval(86_400 * 9 + 1))
        #expect(try await names { $0.failedAttempts = true } == ["fails"], "retrying after a crash")
        // An album's jobs: none read an asset here (the statement runs on both queues).
        #expect(try await names { $0.album = "Holidays" } == [])
        // The newest before a job (returned oldest first, as every newest query).
        var page = JobQuery(limit: 2, newest: true, before: waiting[0])
        page.topLevel = true
        #expect(try await store.jobs(matching: page).map(\.id) == [ids[2], ids[3]])
        #expect(chunks.count == 2)
    }

    /// The console's bulk actions as both queues take them: many jobs a batch, each one's refusal its own
    /// (a state that does not allow it, a missing id, a unique key another live job holds), and deletion of
    /// the jobs that ended only, with their chunks.
    @Test(arguments: Backend.allCases)
    func bulkChangesRefuseOneJobAndGoOnWithTheOthers(backend: Backend) async throws {
        let store = try await backend.make()
        defer { Task { await store.close() } }
        // More than one batch.
        let many = try await store.enqueue((0..<1_200).map { new("many-\($0)") }, at: t0).map(\.id)
        let cancelled = try await store.change(many, .cancel, at: t0.addingTimeInterval(1), by: "a test")
        #expect(cancelled.count == 1_200)
        #expect(cancelled.allSatisfy { (try? $0.get().state) == .cancelled })
        var keyed = new("keyed")
        keyed.uniqueKey = "k1"
        let old = try await store.enqueue([keyed], at: t0).map(\.id)[0]
        _ = try await store.cancel(id: old, at: t0)
        let holder = try await store.enqueue([keyed], at: t0).map(\.id)[0]  // the key is free again: holds it now
        let outcomes = try await store.change([many[0], 999_999, old, holder], .retry, at: t0.addingTimeInterval(2), by: "a test")
        #expect((try? outcomes[0].get().state) == .queued, "a cancelled job retried")
        guard case .failure(.notFound(999_999)) = outcomes[1] else { Issue.record("a missing id: \(outcomes[1])"); return }
        guard case .failure(.refused(let message)) = outcomes[2] else { Issue.record("a held key: \(outcomes[2])"); return }
        #expect(message.contains("unique key"))
        guard case .failure(.transition) = outcomes[3] else { Issue.record("a queued job retried: \(outcomes[3])"); return }
        #expect(try await store.job(id: old)?.state == .cancelled, "the refused one is untouched")
        #expect(try await store.job(id: many[1])?.state == .cancelled, "the others stay as they were")

        // Deleting: the ended ones, with their chunks; a live one and a missing one are left out.
        let parent = try await store.enqueue([new("export")], at: t0).map(\.id)[0]
        let chunk = try await store.enqueue([new("export chunk 1", chunkOf: parent)], at: t0).map(\.id)[0]
        _ = try await store.change([parent, chunk], .cancel, at: t0, by: "a test")
        let deleted = try await store.delete([many[1], many[2], holder, parent, 999_999])
        #expect(Set(deleted) == [many[1], many[2], parent])
        #expect(try await store.job(id: many[1]) == nil)
        #expect(try await store.job(id: chunk) == nil, "the chunk went with its export")
        #expect(try await store.job(id: holder)?.state == .queued, "a live job is not deleted")
    }

    /// A batch whose jobs reach one another (a job another in the batch waits for) ends as it would one
    /// job at a time; one whose jobs do not records each job's event in the batch's order.
    @Test(arguments: Backend.allCases)
    func aBulkCancelEndsAsOneJobAtATimeWouldAndRecordsItsEventsInOrder(backend: Backend) async throws {
        let store = try await backend.make()
        defer { Task { await store.close() } }
        try await store.registerWebhooks([WebhookEndpoint(url: try WebhookURL.parse("http://127.0.0.1:9/all").get())], allowing: [],
                                         by: "h:1:a", at: t0)
        // b waits for a: a's cancel fails b first, so b's own cancel is refused.
        let a = try await store.enqueue([new("a")], at: t0)[0].id
        let b = try await store.enqueue([new("b", after: [a])], at: t0)[0].id
        let c = try await store.enqueue([new("c")], at: t0)[0].id
        let first = try await store.change([c, a, b], .cancel, at: t0.addingTimeInterval(1), by: "a test")
        #expect(first.map { (try? $0.get())?.state } == [.cancelled, .cancelled, nil])
        guard case .failure(.transition(id: b, _)) = first[2] else { Issue.record("b: \(first[2])"); return }
        #expect(try await store.job(id: b)?.state == .failed)
        // Nobody waits for these: each once, in the batch's order; an id given twice is refused the second time.
        let plain = try await store.enqueue([new("x"), new("y"), new("z")], at: t0).map(\.id)
        let second = try await store.change([plain[2], plain[0], plain[1], plain[0]], .cancel, at: t0.addingTimeInterval(2), by: "a test")
        #expect(second.map { (try? $0.get())?.state } == [.cancelled, .cancelled, .cancelled, nil])
        let sent = try await store.claimDeliveries(limit: 100, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(3))
        #expect(sent.map(\.jobID) == [c, a, b, plain[2], plain[0], plain[1]])
        #expect(sent.map(\.type) == ["job.cancelled", "job.cancelled", "job.failed", "job.cancelled", "job.cancelled", "job.cancelled"])
        #expect(try sent.map { try $0.jobAtEvent().state } == [.cancelled, .cancelled, .failed, .cancelled, .cancelled, .cancelled])
        // Retried together: queued again, each its own revision further.
        let retried = try await store.change(plain, .retry, at: t0.addingTimeInterval(4), by: "a test")
        #expect(retried.map { (try? $0.get())?.state } == [.queued, .queued, .queued])
        #expect(try await store.claim(limit: 10, owner: "h:1:a", leaseDuration: 60, at: t0.addingTimeInterval(5)).map(\.id).sorted()
                    == plain)
    }
}
