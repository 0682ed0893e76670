import FarmTestSupport
import Foundation
import Testing

/// Small things a new user hits: usage errors that say what is wrong, and commands that accept what
/// their siblings accept.
@Suite struct UsageTests {
    func mediafarm(_ args: [String]) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, args)
    }

    @Test func negativeNumbersAreValuesNotOptions() throws {
        let dir = try TestPaths.makeTemporaryFolder("usage")
        let manifest = dir.appendingPathComponent("job.json").path
        try #"{ "version": 1, "input": "in.mp4" }"#.write(toFile: manifest, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: dir.appendingPathComponent("in.mp4").path, contents: Data())
        let queue = "sqlite:" + dir.appendingPathComponent("q.sqlite").path
        let r = try mediafarm(["submit", "--queue", queue, "--timeout", "-5", manifest])
        #expect(r.status == 2 && r.stderr.contains("--timeout <timeout>': give a number greater than 0"), "\(r.stderr)")
        let p = try mediafarm(["submit", "--queue", queue, "--priority", "-5", "--json", manifest])
        #expect(p.status == 0, "\(p.stderr)")
    }

    @Test func cancelAndRetryWithoutIdsSayWhatIsMissing() throws {
        for verb in ["cancel", "retry"] {
            let r = try mediafarm([verb])
            #expect(r.status == 2 && r.stderr.contains("name the jobs to \(verb)") && r.stderr.contains("Usage: mediafarm \(verb)"), "\(r.stderr)")
        }
    }

    @Test func runAcceptsAFolderAsSubmitDoes() throws {
        let dir = try TestPaths.makeTemporaryFolder("run-folder")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("in.mp4").path)
        for n in 0..<2 {
            try #"{ "version": 1, "input": "in.mp4", "report": "out/r\#(n).json" }"#
                .write(to: dir.appendingPathComponent("job\(n).json"), atomically: true, encoding: .utf8)
        }
        let r = try mediafarm(["run", dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/r0.json").path))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/r1.json").path))
        let empty = try TestPaths.makeTemporaryFolder("run-empty")
        let e = try mediafarm(["run", empty.path])
        #expect(e.status == 2 && e.stderr.contains("no *.json manifests"), "\(e.stderr)")
    }
}
