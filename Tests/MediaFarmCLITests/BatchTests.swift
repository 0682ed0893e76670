import FarmTestSupport
import Foundation
import Testing

/// `mediafarm batch`, as a CI job runs it.
@Suite struct BatchTests {
    func folder(_ label: String) throws -> URL {
        let dir = try TestPaths.makeTemporaryFolder("batch-\(label)")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("clip.mp4").path)
        return dir
    }

    func write(_ text: String, _ name: String, in dir: URL) throws {
        try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    @Test func everyJobRunsAndAFailureFailsTheBatchWithAJUnitReport() throws {
        let dir = try folder("junit")
        try write(#"{ "version": 1, "name": "inspect", "input": "clip.mp4", "report": "out/inspect.json" }"#, "a.json", in: dir)
        try write(#"""
            { "version": 1, "name": "slow <copy> & \"more\"", "input": "clip.mp4", "scale": [ { "start": 0, "duration": 2, "rate": 0.5 } ],
              "export": { "mode": "passthrough", "output": "out/slow.mp4" } }
            """#, "b.json", in: dir)
        try write(#"{ "version": 1, "name": "missing", "input": "nope.mp4", "report": "out/missing.json" }"#, "c.json", in: dir)
        let junit = dir.appendingPathComponent("report.xml").path
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["batch", "--workers", "2", "--junit", junit, "--json", dir.path])
        #expect(r.status == 1, "\(r.stderr)")
        let summary = try #require(r.stdout.split(separator: "\n").last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        #expect(summary["event"] as? String == "summary" && summary["succeeded"] as? Int == 2 && summary["failed"] as? Int == 1, "\(summary)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/inspect.json").path))
        #expect(try MediaProbe.packets(dir.appendingPathComponent("out/slow.mp4").path, stream: "v").count == 60)
        // The report as a CI system reads it (Python's XML parser as the independent reader).
        let check = """
        import sys, xml.etree.ElementTree as ET
        suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
        cases = suite.findall("testcase")
        print(suite.get("tests"), suite.get("failures"))
        for c in cases:
            f = c.find("failure")
            print(c.get("name"), "|", f.get("message") if f is not None else "ok")
        """
        let parsed = try ProcessRunner.run("/usr/bin/python3", ["-c", check, junit])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let lines = parsed.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "3 1")
        #expect(lines.contains(#"slow <copy> & "more" | ok"#), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("missing | ") && $0.contains("nope.mp4: no such file") }, "\(lines)")
    }

    @Test func oneInvalidManifestAndNothingRuns() throws {
        let dir = try folder("invalid")
        try write(#"{ "version": 1, "input": "clip.mp4", "report": "out/fine.json" }"#, "fine.json", in: dir)
        try write(#"{ "version": 1, "inptu": "clip.mp4" }"#, "typo.json", in: dir)
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["batch", dir.path])
        #expect(r.status == 2 && r.stderr.contains("typo.json") && r.stderr.contains("nothing was run"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out").path))
    }

    @Test func allSucceededIsExitZero() throws {
        let dir = try folder("fine")
        for i in 0..<4 {
            try write(#"{ "version": 1, "name": "i\#(i)", "input": "clip.mp4", "report": "out/i\#(i).json" }"#, "i\(i).json", in: dir)
        }
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["batch", "--workers", "3", dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("batch: 4 jobs, 4 succeeded, 0 failed"), "\(r.stdout)")
    }
}
