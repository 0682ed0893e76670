@testable import FarmStore
import FarmModel
import Foundation
import Testing

/// The job a webhook event keeps: one Codable type, written from the row on SQLite (as JSONEncoder would
/// write it), by `json_build_object` on PostgreSQL (the outbox conformance tests), read back by JSONDecoder.
@Suite struct OutboxSnapshotTests {
    /// A job with every column set, and text that needs escaping.
    static func everyColumn() -> Job {
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
        job.chunkPlan = ChunkPlan(folder: "/data/x/.chunks", frameCount: 10, chunks: [.init(job: 5, frames: 0..<6, output: "/data/x/.chunks/0.mp4")])
        job.chunkOf = 9
        job.host = "render7"
        return job
    }

    @Test func aJobComesBackAsItWasWhateverItsTextHolds() throws {
        let job = Self.everyColumn()
        let text = JobSnapshot.of(job).json
        let written = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary)
        // The one encoding: what JSONEncoder writes for the same snapshot, keys and values alike.
        let encoded = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(JobSnapshot.of(job))) as? NSDictionary)
        #expect(written == encoded)
        #expect(Set(written.allKeys as? [String] ?? []) == Set(JobSnapshot.CodingKeys.allCases.map(\.rawValue)), "every column, nothing else")
        #expect(try JobSnapshot.decoding(text).job == job)
        // A job with nothing optional set: nil values are left out, as Codable leaves them.
        let bare = Job(id: 1, name: "n", manifest: "{}", baseDirectory: "/", createdAt: Date(timeIntervalSince1970: 5))
        let bareText = JobSnapshot.of(bare).json
        #expect(try JSONSerialization.jsonObject(with: Data(bareText.utf8)) as? NSDictionary
                == JSONSerialization.jsonObject(with: JSONEncoder().encode(JobSnapshot.of(bare))) as? NSDictionary)
        #expect(try JobSnapshot.decoding(bareText).job == bare)
        #expect(throws: DecodingError.self) { try JobSnapshot.decoding("not json") }
        // A snapshot an older version wrote, before later columns: the job's identity is enough.
        #expect(try JobSnapshot.decoding(#"{"id":3,"name":"old","manifest":"{}"}"#).job.name == "old")
    }
}

extension JobSnapshot {
    /// A job in memory as its row holds it: what the fan-out reads from the row (`init(_:from:)`), made
    /// here from a job for the encodings' tests.
    static func of(_ job: Job) -> JobSnapshot {
        JobSnapshot(
            id: job.id,
            name: job.name,
            manifest: job.manifest,
            baseDirectory: job.baseDirectory,
            outputRoots: JobCoding.json(job.outputRoots),
            priority: job.priority,
            maxAttempts: job.maxAttempts,
            runAt: job.runAt.timeIntervalSince1970,
            uniqueKey: job.uniqueKey,
            timeout: job.timeout,
            createdAt: job.createdAt.timeIntervalSince1970,
            state: job.state.rawValue,
            attempt: job.attempt,
            leaseOwner: job.lease?.owner,
            leaseToken: job.lease?.token,
            leaseExpiresAt: job.lease?.expiresAt.timeIntervalSince1970,
            progress: job.progress,
            phase: job.phase,
            workerPID: job.workerPID.map(Int64.init),
            startedAt: job.startedAt?.timeIntervalSince1970,
            finishedAt: job.finishedAt?.timeIntervalSince1970,
            updatedAt: job.updatedAt.timeIntervalSince1970,
            result: job.result,
            errors: JobCoding.json(job.errors),
            afterIDs: JobCoding.json(job.after),
            afterPolicy: job.after.isEmpty ? nil : job.afterPolicy.rawValue,
            waitingFor: job.waitingFor,
            blockedBy: job.blockedBy,
            requires: job.requires.isEmpty ? nil : JobCoding.json(job.requires),
            chunkPlan: job.chunkPlan.map { JobCoding.json(object: $0) },
            chunkOf: job.chunkOf,
            host: job.host)
    }
}
