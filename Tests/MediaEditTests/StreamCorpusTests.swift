import FarmTestSupport
import StreamTestSupport
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import Testing
@testable import MediaEdit

/// Packages of the sources users bring, each checked against every rule the package keeps and played by
/// readers no one here wrote: the corpus's variable-rate phone clip, its rotated 4K phone clip, its MPEG-2
/// transport stream of 2.5 segments and its Matroska file with SubRip subtitles; and made here, an
/// anamorphic PAL picture, a 5.1 source with two audio languages and SubRip and ASS subtitles, 10-bit
/// HEVC, and a source whose GOP is longer than the segment.
@Suite struct StreamCorpusTests {
    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let rung: StreamRung
        var audio: [String] = []
        var subtitles: [String] = []
        /// Short enough that the package has several segments: GStreamer 1.22's hlsdemux2 now and then fails a
        /// one-segment playlist ("Couldn't download fragments"), measured as often on FFmpeg's own (3 runs of
        /// 16 on one segment, none of 16 on three).
        var segment = MediaTime(value: 1, timescale: 1)
        var description: String { name }
    }

    static let cases = [
        Case(name: "mp4_sample_android_slow_motion.mp4", rung: StreamRung(width: 0, height: 240, bitRate: 300_000),
             segment: MediaTime(value: 1, timescale: 4)),
        Case(name: "mp4_portrait_4k60.mp4", rung: StreamRung(width: 0, height: 240, bitRate: 300_000), segment: MediaTime(value: 1, timescale: 10)),
        Case(name: "ts_bbb_2500ms.ts", rung: StreamRung(width: 0, height: 240, bitRate: 300_000)),
        Case(name: "mkv_sample_with_srt.mkv", rung: StreamRung(width: 0, height: 240, bitRate: 300_000), subtitles: ["en"]),
        Case(name: "anamorphic.mkv", rung: StreamRung(width: 0, height: 288, bitRate: 300_000)),
        Case(name: "surround-two-languages.mkv", rung: StreamRung(width: 0, height: 120, bitRate: 150_000), audio: ["en", "fr"], subtitles: ["en", "fr"]),
        Case(name: "hevc-10bit.mp4", rung: StreamRung(width: 0, height: 120, bitRate: 150_000)),
        Case(name: "gop-10s.mp4", rung: StreamRung(width: 0, height: 120, bitRate: 150_000)),
    ]

    @Test(arguments: cases) func aPackageOfEachSourceKeepsEveryRuleAndPlays(_ c: Case) async throws {
        let source = try Self.source(c.name)
        let folder = try TestPaths.makeTemporaryFolder("stream-corpus").appendingPathComponent("package").path
        var composition = Composition()
        let duration = try await Asset(path: source).load(.duration)
        try composition.insert(TimeRange(start: .zero, duration: duration), of: source)
        var settings = StreamSettings(folder: folder, rungs: [c.rung, StreamRung(width: 0, height: c.rung.height / 2, bitRate: c.rung.bitRate / 2)],
                                      segmentDuration: c.segment, preset: "veryfast")
        if !c.audio.isEmpty { settings.audioTracks = .languages(c.audio) }
        if c.name.contains("slow_motion") { settings.audioTracks = .none }  // video only: a package says so
        settings.subtitleLanguages = c.subtitles
        let report = try await StreamPackager(composition: composition, settings: settings).package()
        for file in StreamPlaylists.files(report) {
            try file.text.write(toFile: folder + "/" + file.path, atomically: true, encoding: .utf8)
        }
        let findings = try StreamChecker.check(folder: folder, report: report)
        #expect(findings.isEmpty, "\(c.name):\n\(findings.joined(separator: "\n"))")
        let video = report.tracks.filter { $0.kind == .video }
        #expect(video.count == 2 && video.allSatisfy { $0.segments.count >= 2 }, "\(c.name): \(report.tracks.map { ($0.folder, $0.segments.count) })")
        #expect(report.tracks.filter { $0.kind == .audio }.count == max(c.audio.count, c.name.contains("slow_motion") ? 0 : 1))
        #expect(report.tracks.filter { $0.kind == .text }.map(\.language) == c.subtitles.map { Optional($0) })
        // AAC stereo by default: the 5.1 track is mixed down, as ffprobe reads the stream.
        for audio in report.tracks where audio.kind == .audio {
            let channels = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "stream=channels", "-of", "csv=p=0",
                                                               try StreamChecker.joined(folder, audio)]).stdout
            #expect(channels.trimmingCharacters(in: .whitespacesAndNewlines) == "2" && audio.channels == 2, "\(c.name) \(audio.folder): \(channels)")
        }
        // The picture as shown: the phone clip stands up, the PAL picture is widened to 4:3 ... 16:9.
        let first = try #require(video.first)
        switch c.name {
        case "mp4_portrait_4k60.mp4": #expect(first.width! < first.height!, "\(first.width!)x\(first.height!)")
        case "anamorphic.mkv": #expect((first.width, first.height) == (512, 288), "\(first.width!)x\(first.height!)")
        default: break
        }
        let played = try StreamChecker.playEachRung(folder: folder, report: report)
        #expect(played.isEmpty, "\(c.name):\n\(played.joined(separator: "\n"))")
    }

    /// The corpus file, or the source made for the case.
    static func source(_ name: String) throws -> String {
        if let corpus = TestPaths.corpus, FileManager.default.fileExists(atPath: corpus.appendingPathComponent(name).path) {
            return corpus.appendingPathComponent(name).path
        }
        let folder = try TestPaths.makeTemporaryFolder("stream-sources")
        let out = folder.appendingPathComponent(name).path
        let x264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
        func ffmpeg(_ args: [String]) throws { try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error"] + args) }
        switch name {
        case "anamorphic.mkv":
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=720x576:r=25:d=2.5", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=2.5",
                        "-vf", "setsar=64/45"] + x264 + ["-c:a", "aac", out])
        case "surround-two-languages.mkv":
            let srt = out + ".en.srt", ass = out + ".fr.ass"
            try "1\n00:00:00,500 --> 00:00:01,500\nHello\n\n2\n00:00:02,000 --> 00:00:02,800\nAgain\n\n".write(toFile: srt, atomically: true, encoding: .utf8)
            try SubtitleFixtures.ass([#"0,0:00:00.80,0:00:02.20,Default,,0,0,0,,{\i1}Bonjour{\i0}"#]).write(toFile: ass, atomically: true, encoding: .utf8)
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=3",
                        "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=3", "-f", "lavfi", "-i", "sine=f=660:sample_rate=48000:d=3",
                        "-i", srt, "-i", ass, "-map", "0", "-map", "1", "-map", "2", "-map", "3", "-map", "4"] + x264
                       + ["-c:a", "aac", "-filter:a:0", "pan=5.1|FL=c0|FR=c0|FC=c0|LFE=c0|BL=c0|BR=c0", "-ac:a:1", "2",
                          "-c:s:0", "srt", "-c:s:1", "ass", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fre",
                          "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fre", out])
        case "hevc-10bit.mp4":
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=2.5", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=2.5",
                        "-c:v", "libx265", "-tag:v", "hvc1", "-pix_fmt", "yuv420p10le", "-preset", "ultrafast", "-x265-params", "log-level=error",
                        "-c:a", "aac", out])
        case "gop-10s.mp4":
            return MediaFixture.bframesGOP10sMP4.path
        default:
            throw StreamChecker.CheckError(description: "no source named \(name) in the corpus or among the made ones")
        }
        return out
    }
}
