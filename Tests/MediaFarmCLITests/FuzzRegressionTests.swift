import FarmTestSupport
import Foundation
import Testing

/// Inputs the fuzzers found (fuzz/regressions/) and the fuzzers' seeds, replayed through the fuzz
/// targets' code on every test run: each must be handled (an error in words is fine), never crash.
@Suite struct FuzzRegressionTests {
    var replayer: String { TestPaths.packageRoot.appendingPathComponent(".build/debug/mediafarm-fuzz").path }

    func files(in folder: String) -> [String] {
        let url = TestPaths.packageRoot.appendingPathComponent(folder)
        return ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [])
            .filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.sorted().map { url.appendingPathComponent($0).path }
            .filter { var isFolder: ObjCBool = false; return FileManager.default.fileExists(atPath: $0, isDirectory: &isFolder) && !isFolder.boolValue }
    }

    @Test func manifestInputsAreHandled() throws {
        let inputs = files(in: "fuzz/regressions/manifest") + files(in: "jobs/examples")
        #expect(inputs.count >= 5)
        let r = try ProcessRunner.run(replayer, ["replay", "manifest"] + inputs)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").count == inputs.count)
    }

    @Test func inspectInputsAreHandled() throws {
        let inputs = files(in: "fuzz/regressions/inspect") + [MediaFixture.cfr30MP4.path, MediaFixture.clipAVI.path]
        let r = try ProcessRunner.run(replayer, ["replay", "inspect"] + inputs)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").count == inputs.count)
    }
}
