import FarmTestSupport
import Foundation
import Testing

/// Streaming packages as users make them: through a coordinator (staged whole, published under the lease
/// in one rename) and with `mediafarm run`; what is in the way of a package (another package, a folder
/// that is none) is replaced only when it may be, and a refusal leaves nothing behind.
@Suite(.serialized) struct StreamJobTests {
    static func ladder(_ output: String, overwrite: Bool = false, rungs: String = #"[{"height": 240, "bitrate": 400000}, {"height": 120, "bitrate": 150000}]"#,
                       input: String = "in.mp4") -> String {
        #"{"version": 1, "name": "package", "input": "\#(input)", "report": "out/package.json"\#(overwrite ? #", "overwrite": true"# : ""),"#
            + #" "stream": {"output": "\#(output)", "segmentSeconds": 2, "video": {"rungs": \#(rungs)}, "audio": {"language": "en"}}}"#
    }

    func files(_ folder: URL) -> [String] {
        guard let walk = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        return walk.compactMap { $0 as? String }.sorted()
    }

    /// Names that are not the farm's or a package's: staged folders, temporaries.
    func strays(_ farm: Farm) -> [String] { files(farm.folder).filter { $0.contains("mediafarm-") && !$0.hasSuffix(".mediafarm-package.json") } }

    @Test func aPackageThroughACoordinatorIsPublishedWholeAndReplacedOnlyWhenAllowed() async throws {
        let farm = try Farm("stream")
        let manifest = try farm.manifest("package", Self.ladder("out/show"))
        let id = try await farm.queued([manifest])[0]
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log.suffix(2000))")
        let job = try await farm.jobs()[id] ?? [:]
        #expect(job["state"] as? String == "succeeded", "\(job)")
        let show = farm.out.appendingPathComponent("show")
        var expected = [".mediafarm-package.json", "audio", "manifest.mpd", "master.m3u8", "video-1", "video-2"]
        for track in ["audio", "video-1", "video-2"] {
            let names: [String] = ["index.m3u8", "init.mp4"] + (1...5).map { "\($0).m4s" } + (track == "audio" ? [] : ["iframes.m3u8"])
            expected += names.map { track + "/" + $0 }
        }
        expected.sort()
        #expect(files(show) == expected)
        #expect(strays(farm).isEmpty, "\(strays(farm))")
        let master = try String(contentsOf: show.appendingPathComponent("master.m3u8"), encoding: .utf8)
        #expect(master.contains("RESOLUTION=320x240") && master.contains("RESOLUTION=160x120") && master.contains(#"LANGUAGE="en""#), "\(master)")
        let result = job["result"] as? [String: Any] ?? [:]
        #expect(result["output"] as? String == show.path)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("package.json"))) as? [String: Any])
        let tracks = (report["stream"] as? [String: Any])?["tracks"] as? [[String: Any]] ?? []
        #expect(tracks.count == 3 && tracks.allSatisfy { ($0["segments"] as? [Any])?.count == 5 }, "\(report["stream"] ?? "none")")

        // Again without "overwrite": refused at submission, naming the package's path; the package stays.
        let again = try farm.mediafarm(["submit", manifest])
        #expect(again.status == 2 && again.stderr.contains("$.stream.output") && again.stderr.contains("overwrite"), "\(again.stderr)")
        let before = try Data(contentsOf: show.appendingPathComponent(".mediafarm-package.json"))

        // With it: the new package takes the old one's place in one exchange, and the old is gone.
        let replacing = try farm.manifest("replacing", Self.ladder("out/show", overwrite: true, rungs: #"[{"height": 120, "bitrate": 150000}]"#))
        let second = try await farm.queued([replacing])[0]
        let coordinated = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        let secondState = try await farm.jobState(second)
        #expect(coordinated.status == 0 && secondState == "succeeded", "\(coordinated.log.suffix(2000))")
        #expect(try Data(contentsOf: show.appendingPathComponent(".mediafarm-package.json")) != before)
        #expect(!files(show).contains("video-2/index.m3u8") && files(show).contains("video-1/index.m3u8"), "\(files(show))")
        #expect(strays(farm).isEmpty, "\(strays(farm))")
    }

    /// A folder that is no package of the farm's is never replaced, even with "overwrite": the job fails
    /// saying so, and the folder and everything in it are as they were.
    @Test func aFolderThatIsNoPackageIsNeverReplaced() async throws {
        let farm = try Farm("stream-folder")
        let site = farm.out.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: site.appendingPathComponent("index.html"))
        let id = try await farm.queued([try farm.manifest("package", Self.ladder("out/site", overwrite: true))])[0]
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        #expect(coordinator.status == 1)
        let job = try await farm.jobs()[id] ?? [:]
        #expect(job["state"] as? String == "failed" && job.errors.last?.contains("is not a package the farm made") == true, "\(job.errors)")
        #expect(files(site) == ["index.html"])
        #expect(strays(farm).isEmpty, "\(strays(farm))")
    }

    /// `mediafarm run`: a portrait phone clip (stored on its side) gives upright portrait rungs, as FFmpeg
    /// shows it; a rung larger than the source is refused before any work, naming the way past, and leaves
    /// nothing; "skip" leaves it out and says so.
    @Test func aRunFitsTheLadderToThePictureAsShown() throws {
        let farm = try Farm("stream-run")
        try FileManager.default.copyItem(atPath: MediaFixture.rotatedMP4.path, toPath: farm.folder.appendingPathComponent("phone.mp4").path)
        let large = #"[{"height": 640, "bitrate": 900000}, {"height": 160, "bitrate": 200000}]"#
        let refused = try farm.mediafarm(["run", try farm.manifest("large", Self.ladder("out/phone", rungs: large, input: "phone.mp4"))])
        #expect(refused.status == 1 && refused.stderr.contains("$.stream: rung 1 (480x640) is larger than the source's picture (240x320 as shown)")
                && refused.stderr.contains("\"skip\""), "\(refused.stderr)")
        #expect(files(farm.out).isEmpty && strays(farm).isEmpty, "\(files(farm.out)) \(strays(farm))")

        // The clip has no sound: the package says so (one that asks for audio is refused).
        let skipping = #"{"version": 1, "input": "phone.mp4", "stream": {"output": "out/phone", "segmentSeconds": 0.5, "video": {"rungs": \#(large), "larger": "skip"}, "audio": {"tracks": "none"}}}"#
        let run = try farm.mediafarm(["run", "--json", try farm.manifest("skip", skipping)])
        #expect(run.status == 0 && run.stdout.contains("left out as larger than the source's picture: rung 1"), "\(run.stdout) \(run.stderr)")
        let phone = farm.out.appendingPathComponent("phone")
        let master = try String(contentsOf: phone.appendingPathComponent("master.m3u8"), encoding: .utf8)
        #expect(master.contains("RESOLUTION=120x160") && !master.contains("AUDIO="), "\(master)")
        // The rung's first frame against FFmpeg's own turning of the source, at the same size.
        var joined = try Data(contentsOf: phone.appendingPathComponent("video-1/init.mp4"))
        joined.append(try Data(contentsOf: phone.appendingPathComponent("video-1/1.m4s")))
        let rung = farm.folder.appendingPathComponent("rung.mp4").path
        try joined.write(to: URL(fileURLWithPath: rung))
        let psnr = try ProcessRunner.run("ffmpeg", ["-v", "info", "-i", rung, "-i", MediaFixture.rotatedMP4.path, "-frames:v", "1",
                                                   "-lavfi", "[1:v]scale=120:160[r];[0:v][r]psnr", "-f", "null", "-"])
        let average = psnr.stderr.components(separatedBy: "average:").last.flatMap { Double($0.prefix { "0123456789.".contains($0) }) }
        #expect((average ?? 0) > 30, "\(psnr.stderr.suffix(400))")
        #expect(strays(farm).isEmpty, "\(strays(farm))")
    }

    /// `mediafarm run` of a passthrough package: the source's packets, cut at its keyframes, published whole;
    /// a source whose keyframes are 10 s apart is refused for 6 s segments, naming its GOP, and leaves nothing.
    @Test func aRunPackagesWithoutEncoding() throws {
        let farm = try Farm("stream-copy")
        let manifest = #"{"version": 1, "input": "SRC", "stream": {"output": "out/copy", "mode": "passthrough", "segmentSeconds": 2}}"#
        let run = try farm.mediafarm(["run", try farm.manifest("copy", manifest.replacingOccurrences(of: "SRC", with: MediaFixture.bframesGOP1sMP4.path))])
        #expect(run.status == 0, "\(run.stderr)")
        let index = try String(contentsOf: farm.out.appendingPathComponent("copy/video-1/index.m3u8"), encoding: .utf8)
        #expect(index.components(separatedBy: "#EXTINF:2.00000,").count == 6, "\(index)")
        let refused = try farm.mediafarm(["run", try farm.manifest("long", manifest.replacingOccurrences(of: "SRC", with: MediaFixture.bframesGOP10sMP4.path)
                                                                      .replacingOccurrences(of: "out/copy", with: "out/long"))])
        #expect(refused.status == 1 && refused.stderr.contains("up to 10.000 s apart"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: farm.out.appendingPathComponent("long").path) && strays(farm).isEmpty, "\(strays(farm))")
    }

    /// `mediafarm run` of an MPEG-TS package encrypted with AES-128: HLS only, every segment `N.ts` and not in
    /// the clear, EXT-X-KEY naming the key's URI; the key file is read and never copied into the package or
    /// its report. A key file that is missing or not 16 bytes refuses the job naming it and how to make
    /// one, and leaves nothing.
    @Test func aRunEncryptsTransportStreamSegmentsWithTheKeyFile() throws {
        let farm = try Farm("stream-ts")
        let key = Data((0..<16).map { UInt8($0 * 13 + 1) })
        let keys = farm.folder.appendingPathComponent("keys")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        try key.write(to: keys.appendingPathComponent("show.key"))
        try key.prefix(15).write(to: keys.appendingPathComponent("short.key"))
        func manifest(_ output: String, key: String) -> String {
            #"{"version": 1, "input": "\#(MediaFixture.longMP4.path)", "report": "out/\#(output).json", "stream": {"output": "out/\#(output)", "container": "ts", "#
                + #""segmentSeconds": 4, "video": {"rungs": [{"height": 120, "bitrate": 150000}]}, "#
                + #""encryption": {"keyFile": "\#(keys.path)/\#(key)", "keyURI": "https://keys.example.com/show.key"}}}"#
        }
        let run = try farm.mediafarm(["run", try farm.manifest("ts", manifest("show", key: "show.key"))])
        #expect(run.status == 0, "\(run.stderr)")
        let package = farm.out.appendingPathComponent("show")
        let index = try String(contentsOf: package.appendingPathComponent("video-1/index.m3u8"), encoding: .utf8)
        #expect(index.contains("#EXT-X-KEY:METHOD=AES-128,URI=\"https://keys.example.com/show.key\"\n") && !index.contains("EXT-X-MAP"), "\(index)")
        #expect(!FileManager.default.fileExists(atPath: package.appendingPathComponent("manifest.mpd").path))
        let names = files(package)
        #expect(names.contains("video-1/1.ts") && names.contains("audio/3.ts") && !names.contains { $0.hasSuffix(".m4s") || $0.hasSuffix("init.mp4") }, "\(names)")
        let segment = try Data(contentsOf: package.appendingPathComponent("video-1/1.ts"))
        #expect(segment.first != 0x47 && segment.count % 16 == 0)
        for name in names {
            let data = (try? Data(contentsOf: package.appendingPathComponent(name))) ?? Data()  // a folder reads as nothing
            #expect(data.range(of: key) == nil, "\(name) holds the key")
        }
        let report = try String(contentsOf: farm.out.appendingPathComponent("show.json"), encoding: .utf8)
        #expect(report.contains("https://keys.example.com/show.key") && !report.contains(key.map { String(format: "%02x", $0) }.joined()))
        for (name, says) in [("none.key", "openssl rand 16"), ("short.key", "exactly 16 bytes (this one is 15 bytes")] {
            let refused = try farm.mediafarm(["run", try farm.manifest("bad", manifest("bad", key: name))])
            #expect(refused.status == 1 && refused.stderr.contains(keys.path + "/" + name) && refused.stderr.contains(says), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: farm.out.appendingPathComponent("bad").path) && strays(farm).isEmpty, "\(strays(farm))")
        }
    }

    /// `mediafarm run` of a single-file package: each track one file, the published playlists naming its ranges,
    /// and the report each segment's offset.
    @Test func aRunWritesASingleFilePackage() throws {
        let farm = try Farm("stream-single")
        let manifest = #"{"version": 1, "input": "\#(MediaFixture.longMP4.path)", "report": "out/one.json", "stream": {"output": "out/one", "singleFile": true, "#
            + #""segmentSeconds": 4, "video": {"rungs": [{"height": 120, "bitrate": 150000}]}}}"#
        let run = try farm.mediafarm(["run", try farm.manifest("one", manifest)])
        #expect(run.status == 0, "\(run.stderr)")
        let package = farm.out.appendingPathComponent("one")
        let names = files(package).filter { !$0.hasPrefix(".") }
        #expect(names == ["audio", "audio/index.m3u8", "audio/media.mp4", "manifest.mpd", "master.m3u8", "video-1", "video-1/iframes.m3u8",
                          "video-1/index.m3u8", "video-1/media.mp4"], "\(names)")
        let index = try String(contentsOf: package.appendingPathComponent("video-1/index.m3u8"), encoding: .utf8)
        #expect(index.contains(#"#EXT-X-MAP:URI="media.mp4",BYTERANGE=""#) && index.components(separatedBy: "#EXT-X-BYTERANGE:").count == 4, "\(index)")
        let report = try String(contentsOf: farm.out.appendingPathComponent("one.json"), encoding: .utf8)
        #expect(report.contains(#""offset""#) && report.contains(#""initializationBytes""#), "\(report.prefix(400))")
    }

    /// What PyPI's parsers (m3u8, mpegdash) read of a package (10 s cut every 3 s: a short last segment)
    /// is what the segments measured: every EXTINF held by the target duration, the EXTINFs summing to the
    /// programme within a frame, the MPD's timelines lasting what the playlists say, an I-frame range per
    /// segment, the audio's language on its rendition and its adaptation set.
    @Test func readersNoOneHereWroteReadWhatTheSegmentsMeasured() throws {
        let farm = try Farm("stream-parse")
        let manifest = #"{"version": 1, "input": "in.mp4", "stream": {"output": "out/p", "segmentSeconds": 3, "video": {"rungs": "#
            + #"[{"height": 240, "bitrate": 400000}, {"height": 120, "bitrate": 150000}]}, "audio": {"language": "fr"}}}"#
        let run = try farm.mediafarm(["run", try farm.manifest("parse", manifest)])
        #expect(run.status == 0, "\(run.stderr)")
        let reader = TestPaths.packageRoot.appendingPathComponent("Tests/Readers/stream-parse.py").path
        let parsed = try ProcessRunner.check("python3", [reader, farm.out.appendingPathComponent("p").path]).stdout
        let read = try #require(try JSONSerialization.jsonObject(with: Data(parsed.utf8)) as? [String: Any])
        #expect(read["error"] == nil, "\(parsed)")
        let hls = read["hls"] as? [String: Any] ?? [:], dash = read["dash"] as? [String: Any] ?? [:]
        let variants = hls["variants"] as? [[String: Any]] ?? []
        #expect(variants.count == 2 && hls["independent"] as? Bool == true)
        var extinfs: [[Double]] = []
        for variant in variants {
            let playlist = variant["playlist"] as? [String: Any] ?? [:]
            let durations = (playlist["segments"] as? [[String: Any]] ?? []).compactMap { $0["duration"] as? Double }
            extinfs.append(durations)
            #expect(durations == [3, 3, 3, 1], "\(playlist)")
            #expect(playlist["targetDuration"] as? Double == 3 && durations.allSatisfy { $0.rounded() <= 3 })
            #expect(playlist["playlistType"] as? String == "vod" && playlist["independent"] as? Bool == true && playlist["endList"] as? Bool == true)
            let bandwidth = variant["bandwidth"] as? Int ?? 0, average = variant["averageBandwidth"] as? Int ?? 0
            #expect(bandwidth >= average && average > 0 && (variant["codecs"] as? String)?.hasSuffix(",mp4a.40.2") == true, "\(variant)")
            #expect(variant["frameRate"] as? Double == 30 && variant["audio"] as? String == "audio")
        }
        let iframes = hls["iframes"] as? [[String: Any]] ?? []
        #expect(iframes.count == 2 && iframes.allSatisfy { i in
            let segments = (i["playlist"] as? [String: Any])?["segments"] as? [[String: Any]] ?? []
            return segments.count == 4 && segments.allSatisfy { ($0["byterange"] as? String)?.hasSuffix("@0") == true }
        }, "\(iframes)")
        let renditions = hls["renditions"] as? [[String: Any]] ?? []
        #expect(renditions.count == 1 && renditions.first?["language"] as? String == "fr" && renditions.first?["name"] as? String == "French", "\(renditions)")
        let audioSegments = ((renditions.first?["playlist"] as? [String: Any])?["segments"] as? [[String: Any]] ?? []).compactMap { $0["duration"] as? Double }
        #expect(audioSegments.count == 4 && abs(audioSegments.reduce(0, +) - 10) <= 1024.0 / 48000 + 1e-6, "\(audioSegments)")

        #expect(dash["type"] as? String == "static")
        let sets = dash["adaptationSets"] as? [[String: Any]] ?? []
        #expect(sets.map { $0["contentType"] as? String } == ["video", "audio"] && sets.last?["lang"] as? String == "fr", "\(sets)")
        #expect(sets.first?["segmentAlignment"] as? Bool == true)
        for representation in sets.first?["representations"] as? [[String: Any]] ?? [] {
            let scale = Double(representation["timescale"] as? Int ?? 1)
            let timeline = representation["timeline"] as? [[String: Any]] ?? []
            let durations = timeline.flatMap { s in Array(repeating: Double(s["d"] as? Int ?? 0) / scale, count: 1 + (s["r"] as? Int ?? 0)) }
            #expect(zip(durations, extinfs[0]).allSatisfy { abs($0 - $1) < 1e-4 } && durations.count == 4, "\(representation)")
        }
    }

    /// Audio kept by language (a keep list): each language a rendition of its own, found by the tag its
    /// track carries ("fr" finds Matroska's "fre", "en" finds "eng"), the first the default; a language
    /// the source lacks is refused before any work, naming what it has.
    @Test func audioIsKeptByLanguage() throws {
        let farm = try Farm("stream-languages")
        let source = farm.folder.appendingPathComponent("two.mkv").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=4", "-f", "lavfi", "-i", "sine=f=440:d=4",
                                           "-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo", "-t", "4", "-map", "0", "-map", "1", "-map", "2",
                                           "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-metadata:s:a:0", "language=eng",
                                           "-metadata:s:a:1", "language=fre", source])
        func manifest(_ languages: String) -> String {
            #"{"version": 1, "input": "two.mkv", "stream": {"output": "out/p", "segmentSeconds": 2, "video": {"rungs": [{"height": 120, "bitrate": 150000}]}, "#
                + #""audio": {"languages": \#(languages)}}}"#
        }
        let lacking = try farm.mediafarm(["run", try farm.manifest("de", manifest(#"["fr", "de"]"#))])
        #expect(lacking.status == 1 && lacking.stderr.contains(#"has no audio in "de" (its audio: eng, fre)"#), "\(lacking.stderr)")
        #expect(files(farm.out).isEmpty && strays(farm).isEmpty)

        let run = try farm.mediafarm(["run", try farm.manifest("both", manifest(#"["fr", "en"]"#))])
        #expect(run.status == 0, "\(run.stderr)")
        let package = farm.out.appendingPathComponent("p")
        let master = try String(contentsOf: package.appendingPathComponent("master.m3u8"), encoding: .utf8)
        #expect(master.contains(#"NAME="French",LANGUAGE="fr",DEFAULT=YES"#) && master.contains(#"NAME="English",LANGUAGE="en",DEFAULT=NO"#)
                && master.contains("audio-fr/index.m3u8") && master.contains("audio-en/index.m3u8"), "\(master)")
        let mpd = try String(contentsOf: package.appendingPathComponent("manifest.mpd"), encoding: .utf8)
        #expect(mpd.contains(#"lang="fr""#) && mpd.contains(#"lang="en""#), "\(mpd)")
        // Each rendition holds its own track: the French one is the silent track, the English one the tone.
        func loudest(_ track: String) throws -> Double? {
            var joined = try Data(contentsOf: package.appendingPathComponent("\(track)/init.mp4"))
            for i in 1...2 { joined.append(try Data(contentsOf: package.appendingPathComponent("\(track)/\(i).m4s"))) }
            let path = farm.folder.appendingPathComponent("\(track).mp4").path
            try joined.write(to: URL(fileURLWithPath: path))
            let r = try ProcessRunner.run("ffmpeg", ["-v", "info", "-i", path, "-af", "volumedetect", "-f", "null", "-"])
            return r.stderr.components(separatedBy: "max_volume:").last.flatMap { Double($0.trimmingCharacters(in: .whitespaces).prefix { "-0123456789.".contains($0) }) }
        }
        let french = try loudest("audio-fr"), english = try loudest("audio-en")
        #expect((french ?? 0) < -80 && (english ?? -100) > -30, "fr \(french ?? .nan) dB, en \(english ?? .nan) dB")
    }

    /// Text subtitles kept by language become WebVTT renditions: SubRip and ASS alike, override tags
    /// dropped and italics kept, placed on the composition's timeline (a scaled range retimes its cues),
    /// cut into segments at the video's boundaries (a cue across one is in both), with X-TIMESTAMP-MAP,
    /// named in the master and in the MPD; a language without text subtitles is refused before any work.
    @Test func textSubtitlesBecomeWebVTTRenditions() throws {
        let farm = try Farm("stream-subtitles")
        let srt = farm.folder.appendingPathComponent("en.srt").path, ass = farm.folder.appendingPathComponent("fr.ass").path
        try "1\n00:00:00,500 --> 00:00:01,500\nHello <i>world</i>\n\n2\n00:00:01,800 --> 00:00:02,600\nAcross the cut\n\n3\n00:00:02,800 --> 00:00:03,500\nThe end\n\n"
            .write(toFile: srt, atomically: true, encoding: .utf8)
        try SubtitleFixtures.ass([#"0,0:00:00.50,0:00:01.50,Default,,0,0,0,,{\an8}Bonjour"#]).write(toFile: ass, atomically: true, encoding: .utf8)
        let source = farm.folder.appendingPathComponent("subs.mkv").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=4", "-i", srt, "-i", ass,
                                           "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264", "-preset", "ultrafast", "-c:s:0", "srt", "-c:s:1", "ass",
                                           "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fre", source])
        func manifest(_ languages: String) -> String {
            #"{"version": 1, "input": "subs.mkv", "scale": [{"start": 0, "duration": 2, "rate": 2}], "stream": {"output": "out/p", "segmentSeconds": 2, "#
                + #""video": {"rungs": [{"height": 120, "bitrate": 150000}]}, "audio": {"tracks": "none"}, "subtitles": {"languages": \#(languages)}}}"#
        }
        let lacking = try farm.mediafarm(["run", try farm.manifest("de", manifest(#"["en", "de"]"#))])
        #expect(lacking.status == 1 && lacking.stderr.contains(#"has no text subtitles in "de" (its subtitles: eng (subrip), fre (ass))"#), "\(lacking.stderr)")
        #expect(files(farm.out).isEmpty && strays(farm).isEmpty)

        let run = try farm.mediafarm(["run", try farm.manifest("both", manifest(#"["en", "fr"]"#))])
        #expect(run.status == 0, "\(run.stderr)")
        let package = farm.out.appendingPathComponent("p")
        func text(_ path: String) throws -> String { try String(contentsOf: package.appendingPathComponent(path), encoding: .utf8) }
        // The first 2 s play in 1: the composition lasts 3 s, cut at 2.
        let first = try text("subtitles-en/1.vtt"), second = try text("subtitles-en/2.vtt")
        #expect(first.hasPrefix("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n"), "\(first)")
        // "Across the cut" (1.8 to 2.6 s) was cut where the scaled range ends and is one cue again; "The end"
        // (2.8 to 3.5 s, now 1.8 to 2.5) crosses the segments' boundary at 2 s and is in both.
        #expect(first.contains("00:00:00.250 --> 00:00:00.750\nHello <i>world</i>") && first.contains("00:00:00.900 --> 00:00:01.600\nAcross the cut")
                && first.contains("00:00:01.800 --> 00:00:02.500\nThe end"), "\(first)")
        #expect(second.contains("00:00:01.800 --> 00:00:02.500\nThe end") && !second.contains("Hello") && !second.contains("Across"), "\(second)")
        let french = try text("subtitles-fr/all.vtt")
        #expect(french.contains("00:00:00.250 --> 00:00:00.750\nBonjour") && !french.contains("{"), "\(french)")
        let index = try text("subtitles-en/index.m3u8")
        #expect(index.contains("#EXTINF:2.00000,\n1.vtt") && index.contains("#EXTINF:1.00000,\n2.vtt") && !index.contains("EXT-X-MAP"), "\(index)")
        let master = try text("master.m3u8")
        #expect(master.contains(#"TYPE=SUBTITLES,GROUP-ID="subtitles",NAME="English",LANGUAGE="en""#) && master.contains(#"LANGUAGE="fr""#)
                && master.contains(#"SUBTITLES="subtitles""#), "\(master)")
        let mpd = try text("manifest.mpd")
        #expect(mpd.contains(#"contentType="text" mimeType="text/vtt" lang="fr""#) && mpd.contains("<BaseURL>subtitles-en/all.vtt</BaseURL>"), "\(mpd)")
        // PyPI's parser reads the subtitle renditions' playlists as it reads the rest.
        let reader = TestPaths.packageRoot.appendingPathComponent("Tests/Readers/stream-parse.py").path
        let parsed = try ProcessRunner.check("python3", [reader, package.path]).stdout
        #expect(!parsed.contains(#""error""#) && parsed.contains(#""type": "SUBTITLES""#), "\(parsed)")
    }
}
