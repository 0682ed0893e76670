@testable import FarmStore
import FarmModel
import Foundation
import GRDB
import Testing

/// SQLite's outbox records an event without its job: the job's row is the job as it was until the row
/// changes or goes, and then the event keeps it (`WebhookEventSchema`).
@Suite struct WebhookEventKeepingTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func folder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-keep-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The snapshot is made from the row as the store reads it: the same columns, in the same order.
    @Test func theStoresColumnsAreTheSnapshotsKeys() {
        let columns = SQLiteJobStore.columns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(columns == JobSnapshot.CodingKeys.allCases.map(\.rawValue))
    }

    /// A job retried, and another deleted, before anyone made their events' deliveries: each event still
    /// carries the job as it was when it ended.
    @Test func anEventKeepsItsJobWhenItsRowChangesOrGoesFirst() async throws {
        let path = try folder() + "/queue.sqlite"
        let store = try SQLiteJobStore(path: path)
        try await store.registerWebhooks([WebhookEndpoint(url: try WebhookURL.parse("http://127.0.0.1:9/all").get())], allowing: [], by: "h:1:a", at: t0)
        let ids = try await store.enqueue([NewJob(name: "flaky", manifest: "{}", baseDirectory: "/data", maxAttempts: 3),
                                           NewJob(name: "gone", manifest: "{}", baseDirectory: "/data")], at: t0).map(\.id)
        let claimed = try await store.claim(limit: 2, owner: "h:1:a", leaseDuration: 60, at: t0)
        for job in claimed {
            let outcome: AttemptOutcome = job.id == ids[0] ? .failed(message: "bad input", result: nil) : .succeeded(result: #"{"n":1}"#)
            _ = try await store.finish(id: job.id, token: job.lease!.token, outcome: outcome, at: t0.addingTimeInterval(1))
        }
        let ended = try await store.jobs(ids: ids)
        // Nothing looked yet: the first is retried, the second deleted.
        _ = try await store.retry(id: ids[0], at: t0.addingTimeInterval(2), by: "a test")
        #expect(try await store.delete([ids[1]]) == [ids[1]])
        let sent = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0.addingTimeInterval(3))
        #expect(sent.count == 2)
        for delivery in sent {
            let job = try delivery.jobAtEvent()
            #expect(job == ended.first { $0.id == delivery.jobID })
        }
        let retried = try #require(sent.first { $0.jobID == ids[0] })
        #expect(try retried.jobAtEvent().errors.last?.message == "bad input")
        #expect(try await store.job(id: ids[0])?.state == .queued)
        #expect(try await store.job(id: ids[1]) == nil)
        await store.close()
    }

    /// A queue at migration 15 with events not yet made into deliveries: they keep their job.
    @Test func eventsRecordedBeforeTheUpgradeKeepTheirJob() async throws {
        let path = try folder() + "/queue.sqlite"
        do {
            let pool = try DatabasePool(path: path)
            try SQLiteJobStore.migrator.migrate(pool, upTo: "v15 webhook events")
            try await pool.write { db in
                try db.execute(sql: """
                    INSERT INTO jobs (id, name, manifest, base_directory, state, max_attempts, run_at, created_at, updated_at)
                    VALUES (4, 'old', '{}', '/data', 'succeeded', 1, 0, 0, 2)
                    """)
                try db.execute(sql: "INSERT INTO webhook_endpoints (url, host, added_by, added_at) VALUES ('http://127.0.0.1:9/all', '127.0.0.1', 'h', 0)")
                try db.execute(sql: "INSERT INTO webhook_events (job_id, type, created_at, job) VALUES (4, 'job.succeeded', 2, ?)",
                               arguments: [#"{"id":4,"name":"as it was","manifest":"{}"}"#])
            }
            try pool.close()
        }
        let store = try SQLiteJobStore(path: path, create: false)
        let sent = try await store.claimDeliveries(limit: 10, owner: "s", leaseDuration: 30, at: t0)
        #expect(sent.count == 1 && (try? sent[0].jobAtEvent())?.name == "as it was")  // a snapshot that cannot be read fails the expectation
        await store.close()
    }
}
