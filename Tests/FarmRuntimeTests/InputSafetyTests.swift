import FarmModel
import FarmSubmit
import FarmTestSupport
import Foundation
import Testing
@testable import FarmRuntime
#if canImport(Glibc)
import Glibc
#endif

/// An export never replaces its own input, whatever path names it: checked by file identity at
/// validation, in the worker, and just before publishing; existing outputs need `"overwrite": true`.
@Suite(.serialized) struct InputSafetyTests {
    /// A farm folder whose media sit in media/, reachable through the symbolic link link/ too.
    func farmWithLinkedMedia(_ label: String) throws -> (Farm, original: Data) {
        let farm = try Farm(label)
        let media = farm.folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: farm.folder.appendingPathComponent("in.mp4").path,
                                         toPath: media.appendingPathComponent("src.mp4").path)
        try FileManager.default.createSymbolicLink(atPath: farm.folder.appendingPathComponent("link").path, withDestinationPath: "media")
        return (farm, try Data(contentsOf: media.appendingPathComponent("src.mp4")))
    }

    func cut(input: String, output: String, overwrite: Bool = false) -> String {
        """
        { "version": 1, "edits": [ { "source": "\(input)", "start": "0", "duration": "1" } ],
          "export": { "mode": "passthrough", "output": "\(output)" }\(overwrite ? #", "overwrite": true"# : "") }
        """
    }

    /// A worker run by hand (`mediafarm worker < job.json`: no coordinator checked its manifest) checks it
    /// against the file system as `run` does; only a kept worker's jobs, checked by their coordinator, are trusted.
    @Test func aWorkerRunByHandChecksItsManifestAgainstTheFiles() throws {
        let (farm, original) = try farmWithLinkedMedia("worker-by-hand")
        let manifest = try farm.manifest("cut", cut(input: "link/src.mp4", output: "media/src.mp4", overwrite: true))
        let r = try ProcessRunner.run("/bin/sh", ["-c", #"exec "$0" worker --name cut --base-dir "$1" < "$2""#, TestPaths.mediafarmExecutable,
                                                  farm.folder.path, manifest], currentDirectory: farm.folder.path)
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("$.export.output: would overwrite the input"), "\(r.stderr)")
        #expect(try Data(contentsOf: farm.folder.appendingPathComponent("media/src.mp4")) == original)
    }

    @Test(arguments: [("link/src.mp4", "media/src.mp4"), ("media/src.mp4", "link/src.mp4"), ("media/src.mp4", "media/../link/./src.mp4")])
    func symlinkedSpellingsOfTheInputAreRefusedByRunAndSubmit(input: String, output: String) throws {
        let (farm, original) = try farmWithLinkedMedia("symlink")
        let manifest = try farm.manifest("cut", cut(input: input, output: output, overwrite: true))
        for command in [["run", manifest], ["submit", manifest]] {
            let r = try farm.mediafarm(command)
            #expect(r.status == 2, "\(command[0]): \(r.stderr)")
            #expect(r.stderr.contains("$.export.output: would overwrite the input"), "\(command[0]): \(r.stderr)")
        }
        #expect(try Data(contentsOf: farm.folder.appendingPathComponent("media/src.mp4")) == original)
        #expect(!FileManager.default.fileExists(atPath: farm.queue))
    }

    @Test func aHardLinkToTheInputIsRefused() throws {
        let (farm, original) = try farmWithLinkedMedia("hardlink")
        let media = farm.folder.appendingPathComponent("media")
        #expect(link(media.appendingPathComponent("src.mp4").path, media.appendingPathComponent("alias.mp4").path) == 0)
        let manifest = try farm.manifest("cut", cut(input: "media/src.mp4", output: "media/alias.mp4", overwrite: true))
        let r = try farm.mediafarm(["run", manifest])
        #expect(r.status == 2 && r.stderr.contains("are one file"), "\(r.stderr)")
        #expect(try Data(contentsOf: media.appendingPathComponent("src.mp4")) == original)
    }

    /// The link appears after submission: the worker's own check fails the job, the source is untouched.
    @Test func aLinkMadeAfterSubmissionFailsTheJobInTheFarm() async throws {
        let (farm, original) = try farmWithLinkedMedia("late-link")
        let manifest = try farm.manifest("cut", cut(input: "media/src.mp4", output: "out/cut.mp4", overwrite: true))
        let ids = try await farm.queued([manifest])
        try FileManager.default.createDirectory(at: farm.out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: farm.out.appendingPathComponent("cut.mp4").path,
                                                   withDestinationPath: "../media/src.mp4")
        let coordinator = try await farm.coordinate(["--exit-when-idle"])
        #expect(coordinator.status == 1, "\(coordinator.log)")
        let job = try #require(try await farm.jobs()[ids[0]])
        #expect(job["state"] as? String == "failed", "\(job)")
        #expect(job.errors.first?.contains("would overwrite the input") == true, "\(job.errors)")
        #expect(try Data(contentsOf: farm.folder.appendingPathComponent("media/src.mp4")) == original)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// The last line of defence: publishing checks identity again, after the worker's checks passed.
    @Test func publishingRefusesAnOutputThatBecameTheInput() async throws {
        let (farm, original) = try farmWithLinkedMedia("publish")
        let path = try farm.manifest("cut", cut(input: "media/src.mp4", output: "out/cut.mp4", overwrite: true))
        let manifest = try ManifestLoader.load(path).get()
        try FileManager.default.createDirectory(at: farm.out, withIntermediateDirectories: true)
        let staged = StagedOutput.path(for: manifest.export!.output, token: "t1")
        try Data("a finished movie".utf8).write(to: URL(fileURLWithPath: staged))
        try FileManager.default.createSymbolicLink(atPath: manifest.export!.output, withDestinationPath: "../media/src.mp4")
        await #expect(throws: JobError.self) { try await StagedOutput.publish(manifest, token: "t1", allowExisting: true) }
        #expect(try Data(contentsOf: farm.folder.appendingPathComponent("media/src.mp4")) == original)
    }

    /// Without a coordinator (`mediafarm run`), the same check runs just before the rename into place.
    @Test func runRefusesToRenameOntoAnOutputThatBecameTheInput() async throws {
        let (farm, original) = try farmWithLinkedMedia("run-publish")
        let path = try farm.manifest("cut", cut(input: "media/src.mp4", output: "out/cut.mp4", overwrite: true))
        let manifest = try ManifestLoader.load(path).get()
        try FileManager.default.createDirectory(at: farm.out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: manifest.export!.output, withDestinationPath: "../media/src.mp4")
        let result = await JobRunner(manifest: manifest).run()
        #expect(!result.succeeded)
        #expect(result.error?.contains("refusing to publish") == true, "\(result.error ?? "")")
        #expect(try Data(contentsOf: farm.folder.appendingPathComponent("media/src.mp4")) == original)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    @Test func anExistingOutputNeedsOverwrite() throws {
        let farm = try Farm("overwrite")
        try FileManager.default.createDirectory(at: farm.out, withIntermediateDirectories: true)
        let existing = farm.out.appendingPathComponent("cut.mp4")
        try Data("keep me".utf8).write(to: existing)
        let refused = try farm.manifest("refused", cut(input: "in.mp4", output: "out/cut.mp4"))
        let r = try farm.mediafarm(["run", refused])
        #expect(r.status == 2 && r.stderr.contains("already exists; set \"overwrite\": true"), "\(r.stderr)")
        #expect(try Data(contentsOf: existing) == Data("keep me".utf8))
        let allowed = try farm.manifest("allowed", cut(input: "in.mp4", output: "out/cut.mp4", overwrite: true))
        let ok = try farm.mediafarm(["run", allowed])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(try Data(contentsOf: existing) != Data("keep me".utf8))
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }
}
