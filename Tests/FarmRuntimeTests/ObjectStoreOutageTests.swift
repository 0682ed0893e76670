import FarmTestSupport
import Foundation
import S3Client
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What an object store's failures do to a queued job: a store that does not answer fails an attempt, not
/// the job (it goes back to the queue after a backoff); a store that answers "no such object" fails it.
/// Each error says which it was.
@Suite struct ObjectStoreOutageTests {
    /// The job's state and its attempts' errors, once `done` holds (or after `timeout` seconds).
    func ended(_ farm: Farm, _ id: Int64, timeout: Double = 120) throws -> (state: String?, errors: [String]) {
        _ = eventually(timeout) { ["failed", "dead", "succeeded"].contains((try? farm.state(id)) ?? "") }
        let job = try farm.status()[id]
        let errors = (job?["errors"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        return (job?["state"] as? String, errors)
    }

    /// `submit --allow-missing-inputs ARGS` of `farm`'s queue with `environment`: the job's id.
    func submit(_ farm: Farm, _ arguments: [String], environment: [String: String]) throws -> Int64 {
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["submit", "--json", "--queue", farm.queue, "--allow-missing-inputs"] + arguments,
                                      environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        let id = (try? JSONSerialization.jsonObject(with: r.stdoutData) as? [[String: Any]])?.first?["id"] as? Int
        return try Int64(#require(id, "\(r.stdout) \(r.stderr)"))
    }

    @Test func aStoreThatDoesNotAnswerIsTriedAgainAndAMissingObjectIsNot() async throws {
        let server = try TestS3.shared()
        let s3 = ObjectPublicationTests.client(server)
        defer { Task { await s3.shutdown() } }
        let bucket = TestS3.bucketName("outage")
        try await s3.createBucket(bucket)

        // Nothing listens where the store should be: each attempt fails, passing, until none are left.
        let stopped = try Farm("store-stopped")
        let away = ObjectPublicationTests.environment(server, stopped, ["MEDIAFARM_S3_ENDPOINT": "http://127.0.0.1:9"])
        let path = try stopped.manifest("remote", #"{ "version": 1, "name": "remote", "input": "s3://\#(bucket)/clip.mp4", "report": "out/remote.json" }"#)
        let id = try submit(stopped, ["--max-attempts", "2", path], environment: away)
        let coordinator = try stopped.startCoordinator(["--workers", "1"], environment: away)
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        let outage = try ended(stopped, id)
        #expect(outage.state == "dead" && outage.errors.count == 2, "\(outage)")
        #expect(outage.errors.allSatisfy { $0.contains("cannot reach http://127.0.0.1:9") && $0.contains("a passing failure of the object store") },
                "\(outage.errors)")
        // A job that only makes pictures of the object meets the same outage the same way.
        let poster = try stopped.manifest("poster", #"{ "version": 1, "name": "poster", "input": "s3://\#(bucket)/clip.mp4", "poster": { "output": "out/poster.jpg" } }"#)
        let posterID = try submit(stopped, ["--max-attempts", "2", poster], environment: away)
        let pictured = try ended(stopped, posterID)
        #expect(pictured.state == "dead" && pictured.errors.count == 2, "\(pictured)")
        #expect(pictured.errors.allSatisfy { $0.hasPrefix("$.poster: ") && $0.contains("a passing failure of the object store") }, "\(pictured.errors)")
        let waveform = try stopped.manifest("waveform", #"{ "version": 1, "name": "waveform", "input": "s3://\#(bucket)/clip.mp4", "waveform": { "output": "out/w.png" } }"#)
        let waveformID = try submit(stopped, ["--max-attempts", "2", waveform], environment: away)
        let drawn = try ended(stopped, waveformID)
        #expect(drawn.state == "dead" && drawn.errors.count == 2, "\(drawn)")
        #expect(drawn.errors.allSatisfy { $0.hasPrefix("$.waveform: ") && $0.contains("a passing failure of the object store") }, "\(drawn.errors)")

        // The store answers that the object is not there: failed at once, not retried.
        let answering = try Farm("store-missing")
        let near = ObjectPublicationTests.environment(server, answering)
        let missing = try answering.manifest("missing", #"{ "version": 1, "name": "missing", "input": "s3://\#(bucket)/missing.mp4", "report": "out/missing.json" }"#)
        let missingID = try submit(answering, [missing], environment: near)
        let other = try answering.startCoordinator(["--workers", "1"], environment: near)
        defer { kill(other.pid, SIGKILL); _ = other.wait(timeout: 5) }
        let refused = try ended(answering, missingID)
        #expect(refused.state == "failed" && refused.errors.count == 1, "\(refused)")
        #expect(refused.errors.first?.contains("no such object (HTTP 404 NoSuchKey)") == true
                && refused.errors.first?.contains("another attempt would fail too") == true, "\(refused.errors)")
    }
}
