import FarmModel
import FarmStore
import Foundation
import Testing

/// The webhook outbox, on every backend: events recorded with the state change that caused them,
/// deliveries per (event, URL), claimed under leases, in order per job and URL.
@Suite struct WebhookOutboxConformanceTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func url(_ text: String) -> WebhookURL { try! WebhookURL.parse(text).get() }

    func new(_ name: String, notify: [String] = [], after: [JobReference] = [], attempts: Int = 1) -> NewJob {
        let list = notify.map { "\"\($0)\"" }.joined(separator: ",")
        return NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4","notify":[\#(list)]}"#, baseDirectory: "/data",
                      maxAttempts: attempts, after: after)
    }

    /// Claims `id` alone (every due job is claimed; the others are given back) and ends it with `outcome`.
    func end(_ store: any JobStore, _ id: Int64, _ outcome: AttemptOutcome, at t: Date) async throws {
        let claimed = try await store.claim(limit: 100, owner: "h:1:a", leaseDuration: 60, at: t)
        for job in claimed where job.id != id { _ = try await store.finish(id: job.id, token: job.lease!.token, outcome: .released, at: t) }
        let job = try #require(claimed.first { $0.id == id })
        _ = try await store.finish(id: id, token: job.lease!.token, outcome: outcome, at: t)
    }

    @Test(arguments: Backend.allCases)
    func nothingIsRecordedWhenNoOneListens(backend: Backend) async throws {
        let store = try await backend.make()
        let id = try await store.enqueue([new("quiet")], at: t0)[0].id
        try await end(store, id, .succeeded(result: nil), at: t0)
        #expect(try await store.deliveries(matching: DeliveryQuery()).isEmpty)
        #expect(try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func eachTerminalEventGoesToTheEndpointsThatWantItWithTheJobAsItWas(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        try await store.registerWebhooks([WebhookEndpoint(url: url("http://127.0.0.1:9/all")),
                                          WebhookEndpoint(url: url("http://127.0.0.1:9/failures"), events: [.failed, .dead])],
                                         allowing: [], by: "h:1:a", at: t0)
        let ok = try await store.enqueue([new("ok")], at: t0)[0].id
        let bad = try await store.enqueue([new("bad")], at: t0)[0].id
        let crash = try await store.enqueue([new("crash")], at: t0)[0].id
        let gone = try await store.enqueue([new("gone")], at: t0)[0].id
        let child = try await store.enqueue([new("child", after: [.id(bad)])], at: t0)[0].id
        try await end(store, ok, .succeeded(result: #"{"frames":10}"#), at: t0.addingTimeInterval(1))
        try await end(other, bad, .failed(message: "no such file", result: nil), at: t0.addingTimeInterval(2))
        try await end(store, crash, .crashed(message: "signal 9"), at: t0.addingTimeInterval(3))
        _ = try await other.cancel(id: gone, at: t0.addingTimeInterval(4))

        let all = try await store.deliveries(matching: DeliveryQuery(limit: 100))
        func sent(_ id: Int64) -> [String] { all.filter { $0.jobID == id }.map { "\($0.type) \(URL(string: $0.url)!.path)" }.sorted() }
        #expect(sent(ok) == ["job.succeeded /all"])
        #expect(sent(bad) == ["job.failed /all", "job.failed /failures"])
        #expect(sent(crash) == ["job.dead /all", "job.dead /failures"])
        #expect(sent(gone) == ["job.cancelled /all"])
        // A dependent failed by its dependency's failure has its own event.
        #expect(sent(child) == ["job.failed /all", "job.failed /failures"])
        #expect(all.allSatisfy { $0.state == .pending && $0.attempts == 0 && $0.origin == "endpoint" })

        // Claimed: each carries the job as it was at its event.
        let claimed = try await other.claimDeliveries(limit: 100, owner: "sender:1", leaseDuration: 30, at: t0.addingTimeInterval(5))
        #expect(claimed.count == all.count)
        let success = try #require(claimed.first { $0.jobID == ok })
        let job = try success.jobAtEvent()
        // Made from memory (SQLite) or by the database from the row (PostgreSQL): the job as the queue reads it.
        #expect(try await store.job(id: ok) == job)
        #expect(job.id == ok && job.name == "ok" && job.state == .succeeded && job.result == #"{"frames":10}"# && job.attempt == 1)
        #expect(job.finishedAt == t0.addingTimeInterval(1) && success.eventAt == t0.addingTimeInterval(1) && success.attempts == 1)
        let failure = try #require(claimed.first { $0.jobID == child })
        #expect(try failure.jobAtEvent().errors.last?.message.contains("job \(bad)") == true)
        // Leased: no one else claims them until the lease runs out.
        #expect(try await store.claimDeliveries(limit: 100, owner: "sender:2", leaseDuration: 30, at: t0.addingTimeInterval(6)).isEmpty)
        let again = try await store.claimDeliveries(limit: 100, owner: "sender:2", leaseDuration: 30, at: t0.addingTimeInterval(36))
        #expect(again.count == all.count && again.allSatisfy { $0.attempts == 2 })
        // The first sender's lease is gone: its outcome is not recorded.
        #expect(try await other.finishDelivery(id: success.id, token: success.leaseToken!, outcome: .delivered(status: 200), at: t0.addingTimeInterval(37)) == false)
        let taken = try #require(again.first { $0.id == success.id })
        #expect(try await other.finishDelivery(id: taken.id, token: taken.leaseToken!, outcome: .delivered(status: 204), at: t0.addingTimeInterval(37)))
        let delivered = try await store.deliveries(matching: DeliveryQuery(jobID: ok))
        #expect(delivered.count == 1 && delivered[0].state == .delivered && delivered[0].lastStatus == 204
                && delivered[0].deliveredAt == t0.addingTimeInterval(37))
        let settings = try await store.webhookSettings(at: t0)
        #expect(settings.endpoints.map(\.url) == ["http://127.0.0.1:9/all", "http://127.0.0.1:9/failures"])
        #expect(settings.counts[.delivered] == 1 && settings.counts[.pending] == all.count - 1 && settings.oldestPendingAt == t0.addingTimeInterval(2))
    }

    @Test(arguments: Backend.allCases)
    func aJobsEventsArriveInOrderAndRetriesWaitForTheirTime(backend: Backend) async throws {
        let store = try await backend.make()
        try await store.registerWebhooks([WebhookEndpoint(url: url("http://127.0.0.1:9/hook"))], allowing: [], by: "h:1:a", at: t0)
        let id = try await store.enqueue([new("flaky", attempts: 3)], at: t0)[0].id
        try await end(store, id, .failed(message: "bad input", result: nil), at: t0)
        _ = try await store.retry(id: id, at: t0.addingTimeInterval(1), by: "a test")
        try await end(store, id, .succeeded(result: nil), at: t0.addingTimeInterval(2))
        #expect(try await store.deliveries(matching: DeliveryQuery(jobID: id)).map(\.type) == ["job.succeeded", "job.failed"])
        // Only the first event is due: the second waits for it.
        let first = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(3))
        #expect(first.map(\.type) == ["job.failed"])
        // Each with the job as it was at its event, though it was retried before anyone looked.
        let failed = try first[0].jobAtEvent()
        #expect(failed.state == .failed && failed.attempt == 1 && failed.errors.last?.message == "bad input" && failed.finishedAt == t0)
        // Its receiver is down: tried again later; meanwhile nothing of this job is sent.
        try await store.finishDelivery(id: first[0].id, token: first[0].leaseToken!,
                                       outcome: .retry(status: 503, error: "HTTP 503", next: t0.addingTimeInterval(60)), at: t0.addingTimeInterval(4))
        #expect(try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(30)).isEmpty)
        let retried = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(61))
        #expect(retried.map(\.type) == ["job.failed"] && retried[0].attempts == 2 && retried[0].lastStatus == 503 && retried[0].lastError == "HTTP 503")
        try await store.finishDelivery(id: retried[0].id, token: retried[0].leaseToken!, outcome: .delivered(status: 200), at: t0.addingTimeInterval(62))
        let second = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(63))
        #expect(second.map(\.type) == ["job.succeeded"])
        let now = try await store.job(id: id)
        let atSecond = try second[0].jobAtEvent()
        #expect(atSecond == now, "\(atSecond) \(String(describing: now))")
        #expect(now?.state == .succeeded && now?.errors.last?.message == "bad input")
        // Given up: the delivery fails, and nothing is held back behind it.
        try await store.finishDelivery(id: second[0].id, token: second[0].leaseToken!, outcome: .gaveUp(status: nil, error: "connection refused"),
                                       at: t0.addingTimeInterval(64))
        let rows = try await store.deliveries(matching: DeliveryQuery(jobID: id))
        #expect(rows.map(\.state) == [.failed, .delivered] && rows[0].lastError == "connection refused")
        // Sent again on request: the failed one is pending and due now; a delivered one is not touched.
        #expect(try await store.resendDeliveries(ids: [rows[1].id, 999_999], at: t0.addingTimeInterval(70)) == [])
        #expect(try await store.resendDeliveries(ids: nil, at: t0.addingTimeInterval(70)) == [rows[0].id])
        let again = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(70))
        #expect(again.map(\.id) == [rows[0].id] && again[0].attempts == 2, "\(again)")
    }

    /// A job and the one its failure failed, both retried (the dependent waits again) and then pruned or
    /// claimed, before any delivery was claimed: each event still carries its job as it was when it ended.
    @Test(arguments: Backend.allCases)
    func eventsKeepTheirJobThroughARetryOfTheGraph(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        try await store.registerWebhooks([WebhookEndpoint(url: url("http://127.0.0.1:9/hook"))], allowing: [], by: "h:1:a", at: t0)
        let parent = try await store.enqueue([new("parent", attempts: 3)], at: t0)[0].id
        let child = try await store.enqueue([new("child", after: [.id(parent)])], at: t0)[0].id
        let lone = try await store.enqueue([new("lone")], at: t0)[0].id
        try await end(store, parent, .failed(message: "bad input", result: nil), at: t0.addingTimeInterval(1))
        try await end(store, lone, .succeeded(result: nil), at: t0.addingTimeInterval(2))
        let ended = try await store.jobs(ids: [parent, child, lone])
        #expect(ended.map(\.state) == [.failed, .failed, .succeeded])
        // Nothing claimed yet: the parent retried (the child waits again), then the lone job deleted.
        _ = try await other.retry(id: parent, at: t0.addingTimeInterval(3), by: "a test")
        #expect(try await store.job(id: child)?.state == .waiting)
        #expect(try await other.delete([lone]) == [lone])
        let sent = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(4))
        #expect(Set(sent.map(\.jobID)) == [parent, child, lone])
        for delivery in sent {
            let job = try delivery.jobAtEvent()
            #expect(job == ended.first { $0.id == delivery.jobID }, "\(delivery.type) of \(delivery.jobID)")
        }
    }

    @Test(arguments: Backend.allCases)
    func aJobMayNotifyOnlyHostsTheFarmAllows(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        // No allowed host yet: refused, nothing queued.
        await #expect { try await store.enqueue([new("a", notify: ["http://hooks.example:8080/a"])], at: t0) } throws: { error in
            guard case .refused(let message) = error as? JobStoreError else { return false }
            return message.contains("hooks.example:8080") && message.contains("--webhook-allow-host hooks.example:8080") && message.contains("nothing was queued")
        }
        #expect(try await store.counts().isEmpty)
        // A bare host allows its scheme's port; another port takes a port or a range.
        try await other.registerWebhooks([], allowing: ["hooks.example"], by: "h:1:a", at: t0)
        await #expect(throws: JobStoreError.self) { try await store.enqueue([new("a", notify: ["http://hooks.example:8080/a"])], at: t0) }
        try await other.registerWebhooks([], allowing: ["hooks.example:8000-8099"], by: "h:1:a", at: t0)
        let id = try await store.enqueue([new("a", notify: ["http://hooks.example:8080/a", "http://hooks.example/b"])], at: t0)[0].id
        // A port-specific allowance allows that port only.
        try await other.registerWebhooks([], allowing: ["other.example:81"], by: "h:1:a", at: t0)
        await #expect(throws: JobStoreError.self) { try await store.enqueue([new("b", notify: ["http://other.example:82/"])], at: t0) }
        _ = try await store.enqueue([new("c", notify: ["http://other.example:81/"])], at: t0)
        try await end(store, id, .succeeded(result: nil), at: t0)
        let claimed = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0)
        #expect(claimed.map(\.url).sorted() == ["http://hooks.example/b", "http://hooks.example:8080/a"])
        #expect(claimed.allSatisfy { $0.origin == "notify" && $0.allowed })
        // The allowances withdrawn: what is still pending is claimed as not allowed (the sender refuses it).
        #expect(try await store.removeWebhookTarget("hooks.example"))
        #expect(try await store.removeWebhookTarget("hooks.example") == false)
        #expect(try await store.removeWebhookTarget("hooks.example:8000-8099"))
        let later = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(31))
        #expect(later.count == 2 && later.allSatisfy { !$0.allowed })
    }

    @Test(arguments: Backend.allCases)
    func pruningKeepsWhatIsStillToBeDelivered(backend: Backend) async throws {
        let store = try await backend.make()
        try await store.registerWebhooks([WebhookEndpoint(url: url("http://127.0.0.1:9/hook"))], allowing: [], by: "h:1:a", at: t0)
        let a = try await store.enqueue([new("a")], at: t0)[0].id
        let b = try await store.enqueue([new("b")], at: t0)[0].id
        try await end(store, a, .succeeded(result: nil), at: t0)
        try await end(store, b, .succeeded(result: nil), at: t0)
        let claimed = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0)
        let ofA = try #require(claimed.first { $0.jobID == a })
        try await store.finishDelivery(id: ofA.id, token: ofA.leaseToken!, outcome: .delivered(status: 200), at: t0)
        #expect(try await store.prune(finishedBefore: t0.addingTimeInterval(1), limit: 100) == 2)
        let left = try await store.deliveries(matching: DeliveryQuery())
        #expect(left.map(\.jobID) == [b] && left[0].state == .pending)
        // Its job is gone; the event still carries it.
        let again = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(31))
        #expect(again.count == 1 && (try? again[0].jobAtEvent())?.name == "b")  // a snapshot that cannot be read fails the expectation
        // Once it ended, it goes the way of its job.
        #expect(try await store.finishDelivery(id: again[0].id, token: again[0].leaseToken!, outcome: .delivered(status: 200), at: t0.addingTimeInterval(32)))
        #expect(try await store.deliveries(matching: DeliveryQuery()).isEmpty)
    }

    /// A job's event goes to the endpoints that want it, with the job as it was, even when the job is pruned
    /// before anyone looked; events arrive in the order they were recorded, over many at once (SQLite writes
    /// each as one row and makes its deliveries when a sender or a reader first looks: a batch of 500 events
    /// per claim, all of them for a reader).
    @Test(arguments: Backend.allCases)
    func eventsKeepTheirOrderAndTheirJobOverManyAtOnce(backend: Backend) async throws {
        let store = try await backend.make()
        try await store.registerWebhooks([WebhookEndpoint(url: url("http://127.0.0.1:9/all"))], allowing: [], by: "h:1:a", at: t0)
        let a = try await store.enqueue([new("a")], at: t0)[0].id
        try await end(store, a, .succeeded(result: nil), at: t0)
        // Nothing looked yet: the job is pruned, and an endpoint for failures is added.
        #expect(try await store.prune(finishedBefore: t0.addingTimeInterval(1), limit: 100) == 1)
        try await store.registerWebhooks([WebhookEndpoint(url: url("http://127.0.0.1:9/failures"), events: [.failed])], allowing: [],
                                         by: "h:1:a", at: t0)
        // 1,200 more events, more than one batch of the fan-out, ended in three calls a second apart.
        let many = try await store.enqueue((0..<1_200).map { new("m\($0)") }, at: t0).map(\.id)
        let claimed = try await store.claim(limit: 2_000, owner: "h:1:a", leaseDuration: 60, at: t0).shuffled()
        #expect(claimed.count == 1_200)
        for (n, start) in stride(from: 0, to: claimed.count, by: 400).enumerated() {
            _ = try await store.finish(claimed[start..<start + 400].map {
                FinishedAttempt(id: $0.id, token: $0.lease!.token, outcome: .failed(message: "no", result: nil))
            }, at: t0.addingTimeInterval(Double(2 + n)))
        }
        // Claimed until none is left (SQLite makes a batch of deliveries per claim).
        var sent: [WebhookDelivery] = []
        while case let more = try await store.claimDeliveries(limit: 5_000, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(5)),
              !more.isEmpty, sent.count < 10_000 {
            sent += more
        }
        #expect(sent.count == 1 + 2 * 1_200)
        #expect(sent.map(\.id) == sent.map(\.id).sorted())
        // The pruned job's event went to the endpoint that wants it, with the job as it was.
        let ofA = sent.filter { $0.jobID == a }
        #expect(ofA.map(\.url) == ["http://127.0.0.1:9/all"] && (try? ofA[0].jobAtEvent())?.name == "a")
        #expect(ofA[0].eventAt == t0)
        // The others in the order they ended, each to both endpoints.
        let ended = sent.filter { $0.jobID != a }
        let toAll = ended.filter { $0.url.hasSuffix("/all") }, toFailures = ended.filter { $0.url.hasSuffix("/failures") }
        #expect(Set(toAll.map(\.jobID)) == Set(many) && toAll.map(\.jobID) == toFailures.map(\.jobID))
        #expect(toAll.map(\.eventAt) == toAll.map(\.eventAt).sorted() && Set(toAll.map(\.eventAt)).count == 3)
        #expect(ended.allSatisfy { $0.type == "job.failed" })
        // Nothing is left to fan out or to claim.
        #expect(try await store.claimDeliveries(limit: 10, owner: "s2", leaseDuration: 30, at: t0.addingTimeInterval(6)).isEmpty)
        #expect(try await store.webhookSettings(at: t0).counts[.pending] == 1 + 2 * 1_200)
    }
}
