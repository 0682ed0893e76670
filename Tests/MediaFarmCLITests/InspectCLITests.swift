import FarmTestSupport
import Foundation
import Testing

/// `mediafarm inspect`, run as a user runs it: the built executable, its stdout, stderr and exit status.
@Suite struct InspectCLITests {
    func mediafarm(_ args: [String]) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, args)
    }

    func jsonArray(_ r: ProcessResult) throws -> [[String: Any]] {
        let array = try JSONSerialization.jsonObject(with: r.stdoutData) as? [[String: Any]]
        return try #require(array, "stdout is not a JSON array: \(r.stdout)")
    }

    @Test func jsonReportInInputOrder() throws {
        let r = try mediafarm(["inspect", "--json", MediaFixture.cfr30MP4.path, "/nonexistent/gone.mov", MediaFixture.audioWAV.path])
        #expect(r.status == 1)
        let reports = try jsonArray(r)
        #expect(reports.map { $0["path"] as? String } == [MediaFixture.cfr30MP4.path, "/nonexistent/gone.mov", MediaFixture.audioWAV.path])

        let movie = reports[0]
        #expect(movie["error"] is NSNull)
        let duration = try #require(movie["duration"] as? [String: Any])
        #expect(duration["timescale"] is Int && duration["value"] is Int)
        #expect(abs((duration["seconds"] as? Double ?? 0) - 2.0) < 0.03)
        #expect(movie["isPlayable"] as? Bool == true && movie["isExportable"] as? Bool == true)
        #expect(movie["isReadable"] as? Bool == true && movie["isComposable"] as? Bool == true)
        #expect((movie["metadata"] as? [String: Any])?["title"] as? String == "MediaFarm fixture")
        let tracks = try #require(movie["tracks"] as? [[String: Any]])
        #expect(tracks.map { $0["trackID"] as? Int } == [1, 2])
        #expect(tracks.map { $0["codec"] as? String } == ["h264", "aac"])
        #expect(tracks.map { $0["languageCode"] as? String } == ["eng", "fra"])
        let video = tracks[0], audio = tracks[1]
        #expect((video["naturalSize"] as? [String: Int]) == ["width": 320, "height": 240])
        #expect(video["nominalFrameRate"] as? Double == 30)
        #expect((video["minFrameDuration"] as? [String: Any])?["seconds"] as? Double == 1.0 / 30)
        #expect(video["preferredTransform"] is [String: Any] && video["timeRange"] is [String: Any])
        #expect(video["isDecodable"] as? Bool == true)
        #expect(audio["sampleRate"] as? Int == 48000 && audio["channelCount"] as? Int == 2)
        #expect((audio["estimatedDataRate"] as? Int ?? 0) > 50_000)

        let missing = reports[1]
        let error = try #require(missing["error"] as? String)
        #expect(error.contains("/nonexistent/gone.mov") && error.contains("no such file"))
        #expect(reports[2]["error"] is NSNull)
        // FFmpeg prints nothing of its own; the one error is reported once in the JSON.
        #expect(!r.stderr.contains("@ 0x"))
    }

    @Test func allGoodInputsExitZero() throws {
        let r = try mediafarm(["inspect", MediaFixture.movH264.path, MediaFixture.audioM4A.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("clip.mov") && r.stdout.contains("h264") && r.stdout.contains("aac"))
        #expect(r.stderr.isEmpty, "\(r.stderr)")
    }

    @Test func foldersAreWalked() throws {
        let dir = try TestPaths.makeTemporaryFolder("walk")
        let nested = dir.appendingPathComponent("day1/cam-b")
        try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("a.mp4").path)
        try FileManager.default.copyItem(atPath: MediaFixture.audioWAV.path, toPath: nested.appendingPathComponent("b.wav").path)
        try "notes".write(to: dir.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        let r = try mediafarm(["inspect", "--json", "--concurrency", "1", dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        let paths = try jsonArray(r).compactMap { $0["path"] as? String }
        #expect(paths == [dir.appendingPathComponent("a.mp4").path, nested.appendingPathComponent("b.wav").path])
    }

    @Test func folderWithoutMedia() throws {
        let dir = try TestPaths.makeTemporaryFolder("nomedia")
        try "hello".write(to: dir.appendingPathComponent("readme.txt"), atomically: true, encoding: .utf8)
        let r = try mediafarm(["inspect", "--json", dir.path, MediaFixture.audioWAV.path])
        #expect(r.status == 1)
        let reports = try jsonArray(r)
        #expect((reports[0]["error"] as? String)?.contains("contains no media files") == true)
        #expect(reports[1]["error"] is NSNull)
    }

    @Test func badFilesGetClearErrorsAndTheRestIsStillReported() throws {
        let dir = try TestPaths.makeTemporaryFolder("bad")
        let empty = dir.appendingPathComponent("empty.mp4").path
        FileManager.default.createFile(atPath: empty, contents: Data())
        let garbage = dir.appendingPathComponent("random.mp4").path
        FileManager.default.createFile(atPath: garbage, contents: Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }))
        let long = try Data(contentsOf: URL(fileURLWithPath: MediaFixture.longMP4.path))
        let truncated = dir.appendingPathComponent("truncated.mp4").path
        FileManager.default.createFile(atPath: truncated, contents: long.prefix(long.count / 2))
        var expectations: [(String, String)] = [(empty, "empty"), (garbage, "not a media file"), (truncated, "truncated")]
        if let corpus = TestPaths.corpus {
            expectations.append((corpus.appendingPathComponent("vp9_invalid-bitstream.webm").path, "cannot be decoded"))
        }
        let r = try mediafarm(["inspect", "--json"] + expectations.map(\.0) + [MediaFixture.cfr30MP4.path])
        #expect(r.status == 1)
        let reports = try jsonArray(r)
        #expect(reports.count == expectations.count + 1)
        for (report, (path, words)) in zip(reports, expectations) {
            let error = report["error"] as? String ?? ""
            #expect(error.contains(path) && error.contains(words), "\(path): \(error)")
        }
        #expect(reports.last?["error"] is NSNull)
    }

    @Test func unreadableFile() throws {
        let dir = try TestPaths.makeTemporaryFolder("perm")
        let path = dir.appendingPathComponent("secret.mp4").path
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path) }
        // Root reads anything: run as an unprivileged user, as the file's real audience would.
        let r = getuid() == 0
            ? try ProcessRunner.run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                TestPaths.mediafarmExecutable, "inspect", "--json", path])
            : try mediafarm(["inspect", "--json", path])
        #expect(r.status == 1, "\(r.stderr)")
        let error = try jsonArray(r).first?["error"] as? String ?? ""
        #expect(error.contains(path) && error.contains("permission denied"), "\(error)")
    }

    @Test func keysLimitTheWorkAndTheReport() throws {
        let r = try mediafarm(["inspect", "--json", "--keys", "duration", MediaFixture.cfr30MP4.path])
        #expect(r.status == 0)
        let report = try #require(try jsonArray(r).first)
        #expect(report["duration"] != nil)
        #expect(report["tracks"] == nil && report["isPlayable"] == nil && report["metadata"] == nil)
    }

    @Test(arguments: [["inspect"], ["inspect", "--keys", "bogus", "x.mp4"], ["inspect", "--concurrency", "0", "x.mp4"],
                      ["inspect", "--no-such-flag", "x.mp4"], ["no-such-command"]])
    func badUsageExitsTwo(_ args: [String]) throws {
        let r = try mediafarm(args)
        #expect(r.status == 2, "\(args): \(r.status) \(r.stderr)")
        #expect(!r.stderr.isEmpty)
    }

    @Test func helpExitsZero() throws {
        let r = try mediafarm(["inspect", "--help"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("--json") && r.stdout.contains("--concurrency"))
    }
}
