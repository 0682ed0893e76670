import FarmModel
import FarmStore
import FarmTestSupport
import Foundation
import Testing

/// The farm's faces for an autoscaler: `queue depth` (the figure KEDA's query reads, with its parts) and a
/// coordinator that leaves once it has had nothing to run (`--exit-after-idle`, a pod of a ScaledJob),
/// whatever runs on other coordinators.
@Suite struct ScalingCLITests {
    @Test func aScaledJobsCoordinatorLeavesWhenIdleWhateverRunsElsewhere() async throws {
        let dir = try TestPaths.makeTemporaryFolder("scaling-cli")
        let queue = "sqlite:" + dir.appendingPathComponent("farm.sqlite").path
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("clip.mp4").path)
        let manifest = dir.appendingPathComponent("inspect.json")
        try #"{ "version": 1, "name": "inspect", "input": "clip.mp4", "report": "inspect-report.json" }"#.write(to: manifest, atomically: true, encoding: .utf8)
        func mediafarm(_ args: [String]) throws -> ProcessResult {
            // A coordinator that never left would hang the suite: timeout(1) ends it (status 124).
            try ProcessRunner.run("/usr/bin/timeout", ["120", TestPaths.mediafarmExecutable] + args, currentDirectory: dir.path)
        }
        #expect(try mediafarm(["submit", "--queue", queue, manifest.path]).status == 0)
        // A job running on a coordinator of another host, for an hour: it keeps the queue busy, not this pod.
        let store = try await JobStores.open(try QueueLocation.parse(queue))
        _ = try await store.enqueue([NewJob(name: "long", manifest: #"{"version":1,"input":"clip.mp4"}"#, baseDirectory: dir.path, priority: 10, requires: ["gpu"])],
                                    at: Date())
        #expect(try await store.claim(limit: 1, owner: "render9:1:x", leaseDuration: 3600, provides: ["gpu"], at: Date()).map(\.name) == ["long"])
        await store.close()

        let before = try mediafarm(["queue", "depth", "--queue", queue, "--host", "cluster", "--slots", "1", "--json"])
        #expect(before.status == 0, "\(before.stderr)")
        struct Depth: Decodable { var scaling: ScalingDemand; var kedaQuery: String? }
        let figure = try JSONDecoder().decode(Depth.self, from: before.stdoutData)
        #expect(figure.scaling.queued == 1 && figure.scaling.running == 0 && figure.scaling.coordinators == 1, "\(figure.scaling)")
        #expect(figure.kedaQuery == nil, "an SQLite queue has no KEDA query")

        let started = Date()
        let run = try mediafarm(["coordinator", "--queue", queue, "--host", "cluster", "--workers", "1", "--exit-after-idle", "1", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("--exit-after-idle"), "it says why it left: \(run.stdout)")
        #expect(Date().timeIntervalSince(started) < 100, "it left on its own, not by the timeout")
        let status = try mediafarm(["status", "--queue", queue, "--json", "--all"])
        #expect(status.stdout.contains("\"succeeded\""), "the job it could run ran: \(status.stdout)")
        let after = try JSONDecoder().decode(Depth.self, from: try mediafarm(["queue", "depth", "--queue", queue, "--host", "cluster", "--json"]).stdoutData)
        #expect(after.scaling.jobs == 0, "\(after.scaling)")
        // The long job is still running elsewhere: --exit-when-idle would have waited for it.
        let gpu = try mediafarm(["queue", "depth", "--queue", queue, "--host", "render9", "--provides", "gpu", "--json"])
        #expect(try JSONDecoder().decode(Depth.self, from: gpu.stdoutData).scaling.running == 0,
                "render9's coordinator never reported itself: its job is not counted as running on that kind")

        for bad in ["nan", "-1", "1e30", "inf"] {
            let refused = try mediafarm(["coordinator", "--queue", queue, "--exit-after-idle", bad])
            #expect(refused.status == 2 && refused.stderr.contains("--exit-after-idle"), "\(bad): \(refused.stderr)")
        }
    }
}
