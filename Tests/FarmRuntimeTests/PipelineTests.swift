import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Jobs that wait for others, through the commands and a real coordinator with worker processes.
@Suite(.serialized) struct PipelineTests {
    /// A chain of 100 jobs, each submitted with `--after` the key of the one before: they run in order,
    /// each after the one before it ended, and the hand-off (the dependency's end to the dependent's
    /// claim) is recorded. `bench/pipeline.sh` measures it against a pickup.
    @Test func aChainOf100RunsInOrder() async throws {
        let farm = try Farm("chain")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: farm.folder.appendingPathComponent("small.mp4").path)
        let manifest = try farm.manifest("step", #"{ "version": 1, "name": "step", "input": "small.mp4" }"#)
        var ids: [Int64] = []
        for i in 0..<100 {
            ids += try await farm.queued(["--unique-key", "chain-\(i)"] + (i == 0 ? [] : ["--after", "chain-\(i - 1)"]) + [manifest])
        }
        #expect(ids.count == 100)
        let waiting = try farm.mediafarm(["status"])
        #expect(waiting.stdout.contains("waits for job \(ids[0]) (1 not ended; they must succeed)"), "\(waiting.stdout)")
        let coordinator = try await farm.coordinate(["--exit-when-idle", "--workers", "2"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let jobs = try await farm.jobs()
        // The hand-off: from the coordinator's event for the dependency's end to the one for the dependent's start.
        let events = coordinator.events()
        func at(_ kind: String, _ id: Int64) -> Double? {
            events.first { $0["event"] as? String == kind && ($0["job"] as? NSNumber)?.int64Value == id }.flatMap(eventTime)
        }
        var handoffs: [Double] = []
        for (i, id) in ids.enumerated() {
            #expect(jobs[id]?["state"] as? String == "succeeded")
            #expect(jobs[id]?["attempt"] as? Int == 1)
            guard i > 0, let started = at("started", id), let before = at("finished", ids[i - 1]) else { continue }
            #expect(started >= before, "step \(i) started before step \(i - 1) ended")
            handoffs.append(started - before)
        }
        handoffs.sort()
        #expect(handoffs.count == 99)
        print(String(format: "chain of 100 on SQLite: hand-off p50 %.1f ms, p99 %.1f ms", handoffs[49] * 1000, handoffs[97] * 1000))
    }

    /// A job names another's output (`job:KEY#output`) as its input: it runs on the file that job wrote.
    /// When that job fails, this one fails naming it; retrying it once its input is there runs both.
    @Test func aJobReadsTheOutputOfTheJobItWaitsFor() throws {
        let farm = try Farm("outputs")
        let cut = try farm.manifest("cut", """
            { "version": 1, "name": "cut", "input": "later.mp4",
              "export": { "mode": "passthrough", "output": "out/cut.mp4" } }
            """)
        let inspect = try farm.manifest("inspect", """
            { "version": 1, "name": "inspect", "input": "job:cut-1#output", "report": "out/inspect.json" }
            """)
        let cleanup = try farm.manifest("cleanup", #"{ "version": 1, "name": "cleanup", "input": "in.mp4", "after": ["cut-1"], "afterPolicy": "always" }"#)
        // A reference to a job that is not in the queue is refused, nothing queued.
        let orphan = try farm.mediafarm(["submit", inspect])
        #expect(orphan.status == 2 && orphan.stderr.contains("waits for the job with key \"cut-1\", which is not in the queue"), "\(orphan.stderr)")
        let cutID = try farm.submit(["--unique-key", "cut-1", "--allow-missing-inputs", cut])[0]
        let inspectID = try farm.submit([inspect])[0]
        let cleanupID = try farm.submit([cleanup])[0]
        let shown = try farm.status()[inspectID]
        #expect(shown?["state"] as? String == "waiting" && (shown?["after"] as? [NSNumber])?.map(\.int64Value) == [cutID])

        // later.mp4 is missing: the cut fails, the inspection fails naming it, the clean-up runs anyway.
        var coordinator = try farm.startCoordinator(["--exit-when-idle"])
        #expect(coordinator.wait(timeout: 60) == 1, "\(coordinator.log)")
        var jobs = try farm.status()
        #expect(jobs[cutID]?["state"] as? String == "failed" && jobs[cleanupID]?["state"] as? String == "succeeded")
        let reason = ((jobs[inspectID]?["errors"] as? [[String: Any]])?.last?["message"] as? String) ?? ""
        #expect(jobs[inspectID]?["state"] as? String == "failed" && reason.hasPrefix("dependency job \(cutID) (cut) failed: "), "\(reason)")
        let refused = try farm.mediafarm(["retry", String(inspectID)])
        #expect(refused.status != 0 && refused.stderr.contains("retry job \(cutID)"), "\(refused.stderr)")

        // The input arrives; retrying the cut brings the inspection back, and it reads the cut's output.
        try FileManager.default.copyItem(atPath: farm.folder.appendingPathComponent("in.mp4").path,
                                         toPath: farm.folder.appendingPathComponent("later.mp4").path)
        #expect(try farm.mediafarm(["retry", String(cutID)]).status == 0)
        #expect(try farm.state(inspectID) == "waiting")
        coordinator = try farm.startCoordinator(["--exit-when-idle"], log: "second.log")
        #expect(coordinator.wait(timeout: 60) == 0, "\(coordinator.log)")
        jobs = try farm.status()
        #expect(jobs[cutID]?["state"] as? String == "succeeded" && jobs[inspectID]?["state"] as? String == "succeeded")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("inspect.json"))) as? [String: Any]
        let inspected = ((report?["inspection"] as? [[String: Any]])?.first?["path"] as? String) ?? String(describing: report)
        #expect(inspected.hasSuffix("out/cut.mp4"), "\(inspected)")
        // `run` cannot resolve another job's output: it says to submit.
        try FileManager.default.removeItem(at: farm.out.appendingPathComponent("inspect.json"))
        let inline = try farm.mediafarm(["run", inspect])
        #expect(inline.status == 2 && inline.stderr.contains("mediafarm submit"), "\(inline.stderr)")
    }
}
