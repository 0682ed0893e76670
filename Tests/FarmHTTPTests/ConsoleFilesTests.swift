@testable import FarmHTTP
import FarmModel
import FarmTestSupport
import Foundation
import Testing

/// What a job's page may serve of its files: only a succeeded job's output and report, only a regular file
/// whose real path (links followed) lies under the job's output roots, and only the ranges a file has.
@Suite struct ConsoleFilesTests {
    func job(_ dir: URL, output: String, state: JobState = .succeeded) -> Job {
        var job = Job(name: "export", manifest: "{}", baseDirectory: dir.path, outputRoots: [dir.appendingPathComponent("out").path], createdAt: Date())
        job.state = state
        job.result = #"{"name":"export","succeeded":true,"seconds":1,"output":"\#(output)","report":"out/report.json"}"#
        return job
    }

    @Test func onlyFilesUnderTheJobsOutputRootsAreServed() throws {
        let dir = try TestPaths.makeTemporaryFolder("console-files")
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try Data("movie".utf8).write(to: out.appendingPathComponent("a.mp4"))
        try Data("secret".utf8).write(to: dir.appendingPathComponent("secret.txt"))
        // A link inside the root that points out of it, and a path that climbs out.
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("escape.mp4").path, withDestinationPath: dir.appendingPathComponent("secret.txt").path)

        #expect(try ConsoleJobs.servedFile(job(dir, output: "out/a.mp4"), "output") == out.appendingPathComponent("a.mp4").resolvingSymlinksInPath().path)
        for output in ["out/escape.mp4", "out/../secret.txt", dir.appendingPathComponent("secret.txt").path] {
            #expect(throws: APIError.self, "\(output)") { try ConsoleJobs.servedFile(job(dir, output: output), "output") }
        }
        #expect(throws: APIError.self, "not succeeded") { try ConsoleJobs.servedFile(job(dir, output: "out/a.mp4", state: .failed), "output") }
        #expect(throws: APIError.self, "gone") { try ConsoleJobs.servedFile(job(dir, output: "out/b.mp4"), "output") }
        #expect(throws: APIError.self, "a folder") { try ConsoleJobs.servedFile(job(dir, output: "out"), "output") }
        #expect(throws: APIError.self, "an object") { try ConsoleJobs.servedFile(job(dir, output: "s3://bucket/a.mp4"), "output") }
        #expect(throws: APIError.self, "another name") { try ConsoleJobs.servedFile(job(dir, output: "out/a.mp4"), "manifest") }
        let refused = #expect(throws: APIError.self) { try ConsoleJobs.servedFile(job(dir, output: "out/escape.mp4"), "output") }
        #expect(refused?.message.contains("not under its output roots") == true, "\(String(describing: refused))")
    }

    /// A job submitted with no output roots may write under its manifest's folder: that is its root here too.
    @Test func aJobWithoutOutputRootsServesFilesUnderItsManifestsFolder() throws {
        let dir = try TestPaths.makeTemporaryFolder("console-default-root")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("out"), withIntermediateDirectories: true)
        try Data("movie".utf8).write(to: dir.appendingPathComponent("out/a.mp4"))
        var job = job(dir, output: "out/a.mp4")
        job.outputRoots = []
        #expect(try ConsoleJobs.servedFile(job, "output") == dir.appendingPathComponent("out/a.mp4").resolvingSymlinksInPath().path)
        // Nor anything outside that folder.
        var outside = self.job(dir.appendingPathComponent("sub"), output: "../out/a.mp4")
        outside.outputRoots = []
        #expect(throws: APIError.self) { try ConsoleJobs.servedFile(outside, "output") }
    }

    @Test func rangesAreThoseOfTheFile() {
        #expect(ConsoleJobs.byteRange("bytes=0-99", size: 1000) == 0...99)
        #expect(ConsoleJobs.byteRange("bytes=900-", size: 1000) == 900...999)
        #expect(ConsoleJobs.byteRange("bytes=-100", size: 1000) == 900...999)
        #expect(ConsoleJobs.byteRange("bytes=-5000", size: 1000) == 0...999)
        #expect(ConsoleJobs.byteRange("bytes=990-5000", size: 1000) == 990...999)
        for bad in ["bytes=1000-", "bytes=5-4", "bytes=-0", "bytes=a-b", "bytes=0-1,5-6", "items=0-1", "bytes=-", "bytes=99999999999999999999-"] {
            #expect(ConsoleJobs.byteRange(bad, size: 1000) == nil, "\(bad)")
        }
        #expect(ConsoleJobs.byteRange("bytes=0-", size: 0) == nil)
    }
}
