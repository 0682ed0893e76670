import FarmTestSupport
import Foundation
import Testing

/// Kinds of file other people's tools make that once broke inspection or export: kept as generated
/// regression fixtures.
@Suite struct RealWorldFileTests {
    func mediafarm(_ args: [String]) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, args)
    }

    func inspect(_ fixture: MediaFixture) throws -> [String: Any] {
        let r = try mediafarm(["inspect", "--json", fixture.path])
        let list = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        return try #require(list.first)
    }

    /// An export manifest of `fixture` in a fresh folder; the folder.
    func export(_ fixture: MediaFixture, mode: String) throws -> (URL, ProcessResult) {
        let dir = try TestPaths.makeTemporaryFolder("realworld")
        let name = "input." + (fixture.rawValue.split(separator: ".").last.map(String.init) ?? "mp4")
        try FileManager.default.copyItem(atPath: fixture.path, toPath: dir.appendingPathComponent(name).path)
        let manifest = dir.appendingPathComponent("job.json")
        try #"{ "version": 1, "input": "\#(name)", "export": { "mode": "\#(mode)", "output": "out/x.mp4" }, "report": "out/x.json" }"#
            .write(to: manifest, atomically: true, encoding: .utf8)
        return (dir, try mediafarm(["run", manifest.path]))
    }

    @Test func oddSizedVideoExportsAtAConstantFrameRateCroppedToEven() throws {
        let (dir, r) = try export(.oddSizeWebM, mode: "constantFrameRate")
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try FFprobeReport(path: dir.appendingPathComponent("out/x.mp4").path)
        let video = try #require(probe.streams.first { $0["codec_type"] as? String == "video" })
        #expect(FFprobeReport.int(video, "width") == 160 && FFprobeReport.int(video, "height") == 120)
        let report = try String(contentsOf: dir.appendingPathComponent("out/x.json"), encoding: .utf8)
        #expect(report.contains("the source is 161x121"), "the report must say the picture was cropped")
    }

    @Test func aTextOnlyMovieWithSparseCuesIsNotTruncated() throws {
        let report = try inspect(.textOnlyMP4)
        #expect(report["error"] is NSNull, "\(report["error"] ?? "")")
        #expect((report["tracks"] as? [[String: Any]])?.first?["mediaType"] as? String == "subtitle")
    }

    @Test func protectedContentIsReportedNotAnError() throws {
        let report = try inspect(.encryptedMP4)
        #expect(report["error"] is NSNull, "\(report["error"] ?? "")")
        #expect(report["hasProtectedContent"] as? Bool == true)
        #expect(report["isPlayable"] as? Bool == false)
        for mode in ["passthrough", "constantFrameRate"] {
            let (dir, r) = try export(.encryptedMP4, mode: mode)
            #expect(r.status == 1 && r.stderr.contains("encrypted (protected content)"), "\(mode): \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/x.mp4").path))
        }
        #expect(try inspect(.cfr30MP4)["hasProtectedContent"] as? Bool == false)
    }

    @Test func aVideoTrackWithoutPacketsFailsNamingTheInput() throws {
        for mode in ["passthrough", "constantFrameRate"] {
            let (dir, r) = try export(.videoWithoutPacketsTS, mode: mode)
            #expect(r.status == 1, "\(mode): \(r.stderr)")
            #expect(r.stderr.contains("input.ts: track 1 (h264)") && r.stderr.contains("no packets"), "\(mode): \(r.stderr)")
            #expect(!r.stderr.contains(".tmp") && !r.stderr.contains("staged"), "\(mode): names a temporary: \(r.stderr)")
            let out = dir.appendingPathComponent("out")
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).isEmpty)
        }
    }

    /// A playlist named .mp4 that lists a real local segment: refused by inspect and by an export,
    /// which never pull the segment in.
    @Test func aPlaylistUnderAMediaNameIsRefusedEverywhere() throws {
        let dir = try TestPaths.makeTemporaryFolder("playlist")
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-y", "-i", MediaFixture.cfr30MP4.path, "-c", "copy",
                                               dir.appendingPathComponent("secret.ts").path])
        try "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nsecret.ts\n#EXT-X-ENDLIST\n"
            .write(to: dir.appendingPathComponent("movie.mp4"), atomically: true, encoding: .utf8)
        let inspect = try mediafarm(["inspect", dir.appendingPathComponent("movie.mp4").path])
        #expect(inspect.status == 1 && inspect.stderr.contains("refused: FFmpeg reads it as \"hls\""), "\(inspect.stderr)")
        try #"{ "version": 1, "input": "movie.mp4", "export": { "mode": "passthrough", "output": "out/x.mp4" } }"#
            .write(to: dir.appendingPathComponent("job.json"), atomically: true, encoding: .utf8)
        let run = try mediafarm(["run", dir.appendingPathComponent("job.json").path])
        #expect(run.status == 1 && run.stderr.contains("not a media container"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/x.mp4").path))
    }
}
