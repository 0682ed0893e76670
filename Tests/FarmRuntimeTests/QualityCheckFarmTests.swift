import FarmTestSupport
import Foundation
import Testing

/// Quality checks through the queue: the verdict in a job's result, the same on SQLite and PostgreSQL; a job
/// that fails its checks publishes nothing and its dependants do not run; `"afterPolicy": "passed"` stops at a
/// dependency that only warned, where `"success"` goes on.
@Suite(.serialized) struct QualityCheckFarmTests {
    @Test(arguments: [false, true]) func verdictsStopAPipelineOnEitherQueue(_ postgres: Bool) async throws {
        let farm = try Farm("checks-\(postgres ? "pg" : "sqlite")")
        if postgres {
            farm.queueURL = try TestPostgres.url(freshSchema: true)
            #expect(try farm.mediafarm(["queue", "migrate"]).status == 0)
        }
        try FileManager.default.copyItem(atPath: MediaFixture.faultsMKV.path, toPath: farm.folder.appendingPathComponent("faults.mkv").path)
        // The master warns (1.5 s of black, as a warning) and is published; the rejected one fails (its freeze) and is not.
        let master = try farm.manifest("master", """
            { "version": 1, "name": "master", "input": "faults.mkv",
              "export": { "mode": "passthrough", "output": "out/master.mkv" },
              "checks": { "black": { "duration": 1, "severity": "warn" } } }
            """)
        let rejected = try farm.manifest("rejected", """
            { "version": 1, "name": "rejected", "input": "faults.mkv",
              "export": { "mode": "passthrough", "output": "out/rejected.mkv" },
              "checks": { "freeze": true } }
            """)
        // The input is an asset of the library: checks of it (failing its clipping) leave their verdict on it.
        #expect(try farm.mediafarm(["library", "add", farm.folder.appendingPathComponent("faults.mkv").path]).status == 0)
        let inputCheck = try farm.manifest("input-check", """
            { "version": 1, "name": "input-check", "input": "faults.mkv",
              "export": { "mode": "passthrough", "output": "out/input-check.mkv" },
              "checks": { "of": "input", "clipping": true } }
            """)
        let inputCheckID = try farm.submit([inputCheck])[0]
        let masterID = try farm.submit(["--unique-key", "master", master])[0]
        let rejectedID = try farm.submit(["--unique-key", "rejected", rejected])[0]
        let publish = try farm.manifest("publish", #"{ "version": 1, "name": "publish", "input": "job:master#output", "afterPolicy": "passed" }"#)
        let proxy = try farm.manifest("proxy", #"{ "version": 1, "name": "proxy", "input": "job:master#output" }"#)
        let after = try farm.manifest("after-rejected", #"{ "version": 1, "name": "after-rejected", "input": "job:rejected#output" }"#)
        let publishID = try farm.submit([publish])[0]
        let proxyID = try farm.submit([proxy])[0]
        let afterID = try farm.submit([after])[0]

        let coordinator = try farm.startCoordinator(["--exit-when-idle", "--workers", "2"])
        #expect(coordinator.wait(timeout: 180) == 1, "\(coordinator.log)")
        let jobs = try farm.status()
        func verdict(_ id: Int64) -> String? {
            guard let text = jobs[id]?["result"] as? String ?? (jobs[id]?["result"]).flatMap({ try? JSONSerialization.data(withJSONObject: $0) })
                    .map({ String(decoding: $0, as: UTF8.self) }),
                  let result = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return nil }
            return (result["checks"] as? [String: Any])?["verdict"] as? String
        }
        func reason(_ id: Int64) -> String { ((jobs[id]?["errors"] as? [[String: Any]])?.last?["message"] as? String) ?? "" }
        #expect(jobs[masterID]?["state"] as? String == "succeeded" && verdict(masterID) == "warnings", "\(jobs[masterID] ?? [:])")
        #expect(jobs[rejectedID]?["state"] as? String == "failed" && verdict(rejectedID) == "failed", "\(jobs[rejectedID] ?? [:])")
        #expect(reason(rejectedID).contains("quality checks failed: $.checks.freeze: 1 frozen run"), "\(reason(rejectedID))")
        #expect(FileManager.default.fileExists(atPath: farm.folder.appendingPathComponent("out/master.mkv").path))
        #expect(!FileManager.default.fileExists(atPath: farm.folder.appendingPathComponent("out/rejected.mkv").path))
        // `passed` stops at the warning, naming it; `success` goes on; the rejected job's dependant fails.
        #expect(jobs[publishID]?["state"] as? String == "failed"
                && reason(publishID).contains("dependency job \(masterID) (master) succeeded, but its quality checks warned (black: 1 black run"),
                "\(reason(publishID))")
        #expect(jobs[proxyID]?["state"] as? String == "succeeded", "\(jobs[proxyID] ?? [:])")
        #expect(jobs[afterID]?["state"] as? String == "failed" && reason(afterID).hasPrefix("dependency job \(rejectedID) (rejected) failed"), "\(reason(afterID))")
        // The queue lists jobs by verdict, on either backend.
        let failedOnes = try farm.mediafarm(["status", "--json", "--verdict", "failed"])
        let rows = try JSONSerialization.jsonObject(with: Data(failedOnes.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(Set(rows.compactMap { ($0["id"] as? NSNumber)?.int64Value }) == [rejectedID, inputCheckID] && rows.allSatisfy { $0["verdict"] as? String == "failed" },
                "\(failedOnes.stdout)")
        let warnedOnes = try farm.mediafarm(["status", "--json", "--verdict", "warnings"])
        #expect((try JSONSerialization.jsonObject(with: Data(warnedOnes.stdout.utf8)) as? [[String: Any]])?.compactMap { ($0["id"] as? NSNumber)?.int64Value } == [masterID],
                "\(warnedOnes.stdout)")
        // A job that succeeded is not retried: the way past the warning is a new submission, as the refusal says.
        let again = try farm.mediafarm(["retry", String(publishID)])
        #expect(again.status != 0 && again.stderr.contains("cannot run: dependency job \(masterID) (master) succeeded, but its quality checks warned")
                && again.stderr.contains("submit it again once its input is mended"), "\(again.stderr)")
        let shown = try farm.mediafarm(["status", String(publishID)])
        #expect(shown.stdout.contains("quality checks warned"), "\(shown.stdout)")

        // Assets keep their last verdict: the input failed its checks, the master's export warned.
        func assets(_ verdict: String) throws -> [String] {
            let listed = try farm.mediafarm(["library", "list", "--json", "--verdict", verdict])
            let page = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any]
            return ((page?["assets"] as? [[String: Any]]) ?? []).compactMap { ($0["path"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } }
        }
        #expect(try assets("failed") == ["faults.mkv"])
        #expect(try assets("warnings") == ["master.mkv"])
        #expect(try assets("passed").isEmpty)
        let wrong = try farm.mediafarm(["library", "list", "--verdict", "fine"])
        #expect(wrong.status == 64 || wrong.status == 2, "\(wrong.status) \(wrong.stderr)")
    }
}
