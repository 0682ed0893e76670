import FarmTestSupport
import Foundation
import Testing

/// `mediafarm run`, as a user runs it.
@Suite struct RunCLITests {
    func mediafarm(_ args: [String], in folder: URL? = nil) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, args, currentDirectory: folder?.path)
    }

    /// A folder holding `manifest` (as manifest.json) and a copy of the tone movie as input.mp4.
    func job(_ manifest: String, fixture: MediaFixture = .tone60MP4) throws -> URL {
        let dir = try TestPaths.makeTemporaryFolder("run")
        try FileManager.default.copyItem(atPath: fixture.path, toPath: dir.appendingPathComponent("input.mp4").path)
        try manifest.write(to: dir.appendingPathComponent("manifest.json"), atomically: true, encoding: .utf8)
        return dir
    }

    /// A passthrough export of 600 files (a long recording's segments) in a process allowed 128 open
    /// files: each source is open only while it is read, and the movie holds every edit's pictures.
    @Test func anExportOfManyFilesRunsUnderALowDescriptorLimit() throws {
        let dir = try TestPaths.makeTemporaryFolder("run-many")
        var edits: [String] = []
        for i in 0..<600 {
            let name = String(format: "seg-%04d.mp4", i)
            try FileManager.default.linkItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent(name).path)
            edits.append(#"{ "source": "\#(name)", "duration": "1/2" }"#)
        }
        try #"{ "version": 1, "name": "many", "edits": [\#(edits.joined(separator: ", "))], "export": { "mode": "passthrough", "output": "out/many.mp4" } }"#
            .write(to: dir.appendingPathComponent("many.json"), atomically: true, encoding: .utf8)
        let r = try ProcessRunner.run("/usr/bin/prlimit", ["--nofile=128:128", TestPaths.mediafarmExecutable, "run", dir.appendingPathComponent("many.json").path])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let frames = try ProcessRunner.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                                                "stream=nb_read_frames", "-of", "csv=p=0", dir.appendingPathComponent("out/many.mp4").path])
        #expect(frames.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "9000", "\(frames.stdout)\(frames.stderr)")
    }

    @Test func jsonEventsAndAReport() throws {
        let dir = try job("""
        { "version": 1, "name": "slowmo", "input": "input.mp4",
          "scale": [ { "start": "2", "duration": "2", "rate": "1/4" } ],
          "export": { "mode": "passthrough", "output": "out/slowmo.mp4" }, "report": "out/slowmo.json" }
        """)
        let r = try mediafarm(["run", "--json", dir.appendingPathComponent("manifest.json").path])
        #expect(r.status == 0, "\(r.stderr)")
        let events = r.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(events.contains { $0["event"] as? String == "progress" && $0["phase"] as? String == "inspecting" })
        let result = try #require(events.last)
        #expect(result["event"] as? String == "result")
        let job = try #require(result["job"] as? [String: Any])
        #expect(job["succeeded"] as? Bool == true && job["duration"] as? Double == 16)
        let fractions = events.compactMap { $0["fraction"] as? Double }
        #expect(fractions == fractions.sorted() && fractions.last == 1)

        let report = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: dir.appendingPathComponent("out/slowmo.json"))) as? [String: Any])
        let export = try #require(report["export"] as? [String: Any])
        #expect((export["duration"] as? [String: Any])?["seconds"] as? Double == 16)
        #expect((export["video"] as? [String: Any])?["framesDecoded"] as? Int == 0)
        #expect((report["inspection"] as? [[String: Any]])?.count == 1)
        #expect((report["composition"] as? [String: Any])?["pieces"] is [[String: Any]])
        #expect((report["timings"] as? [String: Any])?["total"] is Double)
    }

    @Test func invalidManifestsAreRefusedWithEveryErrorAndNothingIsWritten() throws {
        let dir = try job("""
        { "version": 1, "inptu": "input.mp4",
          "scale": [ { "start": 1, "duration": 1, "rate": 33 } ],
          "export": { "mode": "passthrough", "output": "../escape/out.mp4", "frameRate": 30 } }
        """)
        let good = dir.appendingPathComponent("good.json")
        try #"{ "version": 1, "input": "input.mp4", "export": { "mode": "passthrough", "output": "out/good.mp4" } }"#
            .write(to: good, atomically: true, encoding: .utf8)
        let r = try mediafarm(["run", good.path, dir.appendingPathComponent("manifest.json").path])
        #expect(r.status == 2)
        for path in ["$.inptu", "$.scale[0].rate", "$.export.output", "$.export.frameRate", "$: needs \"input\""] {
            #expect(r.stderr.contains(path), "missing \(path) in \(r.stderr)")
        }
        // Not even the valid manifest ran.
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out").path))
        #expect(!FileManager.default.fileExists(atPath: dir.deletingLastPathComponent().appendingPathComponent("escape").path))
    }

    @Test(arguments: ["{ not json", "[]", "{ \"version\": 1, \"input\": 7 }", "{}"])
    func malformedManifests(_ text: String) throws {
        let dir = try job(text)
        let r = try mediafarm(["run", dir.appendingPathComponent("manifest.json").path])
        #expect(r.status == 2 && r.stderr.contains("manifest.json"))
    }

    @Test func missingManifestAndMissingInput() throws {
        #expect(try mediafarm(["run", "/nonexistent/job.json"]).status == 2)
        let dir = try job(#"{ "version": 1, "input": "nothere.mov", "export": { "mode": "passthrough", "output": "out/x.mp4" } }"#)
        let r = try mediafarm(["run", dir.appendingPathComponent("manifest.json").path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("nothere.mov") && r.stderr.contains("no such file"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/x.mp4").path))
    }

    @Test func unwritableOutputFolder() throws {
        let dir = try job(#"{ "version": 1, "input": "input.mp4", "export": { "mode": "passthrough", "output": "out/taken/x.mp4" } }"#)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("out"), withIntermediateDirectories: true)
        try "a file where a folder should be".write(to: dir.appendingPathComponent("out/taken"), atomically: true, encoding: .utf8)
        let r = try mediafarm(["run", dir.appendingPathComponent("manifest.json").path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("out/taken") && r.stderr.contains("cannot create the output folder"), "\(r.stderr)")
    }

    @Test func editBeyondTheEndOfTheSource() throws {
        let dir = try job(#"{ "version": 1, "edits": [ { "source": "input.mp4", "start": 8, "duration": 5 } ], "export": { "mode": "passthrough", "output": "out/x.mp4" } }"#)
        let r = try mediafarm(["run", dir.appendingPathComponent("manifest.json").path])
        #expect(r.status == 1 && r.stderr.contains("$.edits[0]") && r.stderr.contains("past the end"), "\(r.stderr)")
    }

    @Test func scanSectionReportsCodesInCompositionTime() throws {
        let dir = try TestPaths.makeTemporaryFolder("run-scan")
        let qr = try CodeFixtures.draw(CodeFixtures.qrAndLinearCodes[0], in: dir)
        try CodeFixtures.movie([.init(image: qr, x: 40, y: 40, start: 1, end: 2)], seconds: 3, to: dir.appendingPathComponent("slate.mp4").path)
        // The edit starts at 0.5 s of the source: the code, shown at 1...2 s there, is at 0.5...1.5 s here.
        try #"{ "version": 1, "edits": [ { "source": "slate.mp4", "start": 0.5 } ], "scan": { "symbologies": ["qr"] }, "report": "out/scan.json" }"#
            .write(to: dir.appendingPathComponent("scan.json"), atomically: true, encoding: .utf8)
        let r = try mediafarm(["run", dir.appendingPathComponent("scan.json").path])
        #expect(r.status == 0, "\(r.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("out/scan.json"))) as? [String: Any])
        let codes = try #require((report["scan"] as? [String: Any])?["codes"] as? [[String: Any]])
        #expect(codes.count == 1 && codes[0]["payload"] as? String == "MediaFarm QR 1")
        #expect((codes[0]["firstTime"] as? [String: Any])?["seconds"] as? Double == 0.5)
        #expect((codes[0]["lastTime"] as? [String: Any])?["seconds"] as? Double == 1.4)
        #expect(codes[0]["frameCount"] as? Int == 10)
        #expect((report["scan"] as? [String: Any])?["decodedBy"] as? String == "scan")

        // Scanning while exporting at a constant frame rate: the export's decoded frames are scanned,
        // with the same result on the composition timeline (here slowed down twice from 1 s on).
        try #"{ "version": 1, "edits": [ { "source": "slate.mp4", "start": 0.5 } ], "scale": [ { "start": 1, "duration": 1, "rate": 0.5 } ], "scan": { "symbologies": ["qr"] }, "export": { "mode": "constantFrameRate", "output": "out/cfr.mp4", "frameRate": 10, "video": { "preset": "ultrafast" } }, "report": "out/cfr.json" }"#
            .write(to: dir.appendingPathComponent("cfr.json"), atomically: true, encoding: .utf8)
        let cfr = try mediafarm(["run", dir.appendingPathComponent("cfr.json").path])
        #expect(cfr.status == 0, "\(cfr.stderr)")
        let cfrReport = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("out/cfr.json"))) as? [String: Any])
        let cfrScan = try #require(cfrReport["scan"] as? [String: Any])
        #expect(cfrScan["decodedBy"] as? String == "export")
        let cfrCodes = try #require(cfrScan["codes"] as? [[String: Any]])
        #expect(cfrCodes.count == 1 && cfrCodes[0]["frameCount"] as? Int == 10)
        // Composition 1...2 s (source 1.5...2.5 s) plays at half speed. Source 1.0 s is composition 0.5 s;
        // source 1.9 s is 1 + (1.9 - 1.5) x 2 = 1.8 s.
        #expect((cfrCodes[0]["firstTime"] as? [String: Any])?["seconds"] as? Double == 0.5)
        #expect((cfrCodes[0]["lastTime"] as? [String: Any])?["seconds"] as? Double == 1.8)

    }

    @Test func killedExportLeavesNoOutputAndItsTemporaryIsCleanedLater() throws {
        let dir = try job("""
        { "version": 1, "input": "input.mp4", "scale": [ { "start": 0, "duration": 10, "rate": 0.125 } ],
          "export": { "mode": "constantFrameRate", "output": "out/slow.mp4", "frameRate": 60, "video": { "preset": "medium" } } }
        """)
        let out = dir.appendingPathComponent("out")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.mediafarmExecutable)
        process.arguments = ["run", dir.appendingPathComponent("manifest.json").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until the export is writing its temporary, then kill it without warning.
        #expect(!TestPaths.waitForTemporary(in: out, timeout: 60, holding: 64 << 10).isEmpty, "the export wrote nothing")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("slow.mp4").path))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(leftovers.count == 1 && leftovers[0].hasPrefix(".slow.mp4.mediafarm-"))

        // The next export into the folder removes the dead process's temporary.
        let quick = dir.appendingPathComponent("quick.json")
        try #"{ "version": 1, "input": "input.mp4", "export": { "mode": "passthrough", "output": "out/quick.mp4" } }"#
            .write(to: quick, atomically: true, encoding: .utf8)
        #expect(try mediafarm(["run", quick.path]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path) == ["quick.mp4"])
    }
}
