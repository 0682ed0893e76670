import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Outputs on a disk that fills (a small tmpfs): a chunked export whose chunks do not fit fails naming the
/// disk's error and leaves nothing on it, not even its chunks' folder; an earlier result that cannot be
/// copied there is not used (the job runs, and fails as the disk says), and it still answers elsewhere.
@Suite(.serialized) struct FullDiskTests {
    /// Mounts a tmpfs of `size` at `folder` (made first); unmounted by the returned closure.
    static func smallDisk(_ folder: URL, size: String) throws -> () -> Void {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let mount = try ProcessRunner.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", folder.path])
        try #require(mount.status == 0, "a \(size) tmpfs: \(mount.stderr)")
        return { _ = try? ProcessRunner.run("/usr/bin/umount", [folder.path]) }
    }

    static func manifest(_ name: String, output: String, chunkSeconds: Int? = nil) -> String {
        """
        { "version": 1, "name": "\(name)", "input": "in.mp4",
          "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "\(output)", \(chunkSeconds.map { "\"chunkSeconds\": \($0)," } ?? "")
                      "video": { "preset": "veryfast" } } }
        """
    }

    @Test func aChunkedExportOnAFullDiskFailsAndLeavesNothing() async throws {
        let farm = try Farm("full-chunks")
        let small = farm.folder.appendingPathComponent("small")
        let unmount = try Self.smallDisk(small, size: "400k")
        defer { unmount() }
        let id = try await farm.queued(["--max-attempts", "1", try farm.manifest("film", Self.manifest("film", output: "small/film.mp4", chunkSeconds: 3))])[0]
        let coordinator = try await farm.coordinate(["--exit-when-idle", "--workers", "2"])
        #expect(coordinator.status == 1, "a job failed: \(coordinator.log)")
        let job = try await farm.jobs()[id] ?? [:]
        let error = (job["errors"] as? [[String: Any]])?.last?["message"] as? String ?? "\(job)"
        #expect(job["state"] as? String == "failed" && error.contains("No space left on device") && error.contains("chunk job"), "\(error)")
        let left = try FileManager.default.contentsOfDirectory(atPath: small.path)
        #expect(left.isEmpty, "left on the disk: \(left)")
    }

    @Test func anEarlierResultThatDoesNotFitIsNotUsed() async throws {
        let farm = try Farm("full-reuse")
        let first = try await farm.queued([try farm.manifest("first", Self.manifest("first", output: "out/first.mp4"))])[0]
        let host = try await farm.coordinate(["--exit-when-idle", "--workers", "1"])
        #expect(host.status == 0, "\(host.log)")

        let small = farm.folder.appendingPathComponent("small")
        let unmount = try Self.smallDisk(small, size: "300k")
        defer { unmount() }
        let full = try await farm.queued(["--max-attempts", "1", try farm.manifest("full", Self.manifest("full", output: "small/full.mp4"))])[0]
        let coordinator = try await farm.coordinate(["--exit-when-idle", "--workers", "1"])
        #expect(coordinator.status == 1, "\(coordinator.log)")
        let notices = coordinator.events().filter { $0["event"] as? String == "notice" }.compactMap { $0["message"] as? String }
        #expect(notices.contains { $0.hasPrefix("job \(full): the result of job \(first) is not reused: cannot write a copy of") && $0.contains("No space left on device") },
                "\(notices)")
        #expect(try await farm.jobState(full) == "failed")
        let left = try FileManager.default.contentsOfDirectory(atPath: small.path)
        #expect(left.isEmpty, "left on the disk: \(left)")
        // The first result was not forgotten: it answers where there is room.
        let again = try await farm.queued([try farm.manifest("again", Self.manifest("again", output: "out/again.mp4"))])[0]
        let last = try await farm.coordinate(["--exit-when-idle", "--workers", "1"])
        #expect(last.status == 0, "\(last.log)")
        let result = try await farm.jobs()[again]?["result"] as? [String: Any]
        #expect(((result?["reused"] as? [String: Any])?["job"] as? NSNumber)?.int64Value == first, "\(result ?? [:])")
    }
}
