@testable import FarmStore
import FarmModel
import Foundation
import Testing

/// The job a webhook event keeps: written from memory on SQLite, by `json_build_object` on PostgreSQL,
/// read back by one decoder.
@Suite struct OutboxSnapshotTests {
    @Test func aJobComesBackAsItWasWhateverItsTextHolds() throws {
        var job = Job(id: 42, name: "tab\there \"quoted\" ünïcödé 🎬", manifest: "{\"version\":1,\"input\":\"a\\\\b.mp4\"}\n\u{1}",
                      baseDirectory: "/data/x", outputRoots: ["/out", "/other"], priority: -3, maxAttempts: 5,
                      runAt: Date(timeIntervalSince1970: 1_700_000_000.125), uniqueKey: "key/1", timeout: 90.5,
                      createdAt: Date(timeIntervalSince1970: 1_700_000_000.001))
        job.state = .failed
        job.attempt = 2
        job.lease = Job.Lease(owner: "h:1:a", token: "t0k3n", expiresAt: Date(timeIntervalSince1970: 1_700_000_100.75))
        job.progress = 0.4375
        job.phase = "exporting"
        job.workerPID = 4242
        job.startedAt = Date(timeIntervalSince1970: 1_700_000_010.5)
        job.finishedAt = Date(timeIntervalSince1970: 1_700_000_020.25)
        job.updatedAt = Date(timeIntervalSince1970: 1_700_000_020.25)
        job.result = #"{"frames": 10, "note": "a\"b"}"#
        job.errors = [Job.AttemptError(attempt: 1, at: Date(timeIntervalSince1970: 1_700_000_015), message: "line 1\nline 2")]
        job.after = [3, 7]
        job.afterPolicy = .always
        job.waitingFor = 0
        job.blockedBy = 7
        job.requires = ["gpu"]
        let text = Outbox.snapshot(of: job)
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [String: Any])
        let back = try #require(Outbox.job(fromSnapshot: text))
        #expect(back == job)
        // A job with nothing optional set.
        let bare = Job(id: 1, name: "n", manifest: "{}", baseDirectory: "/", createdAt: Date(timeIntervalSince1970: 5))
        #expect(Outbox.job(fromSnapshot: Outbox.snapshot(of: bare)) == bare)
        #expect(Outbox.job(fromSnapshot: "not json") == nil)
    }
}
