import FarmTestSupport
import FarmModel
import Foundation
import MediaEdit
import StreamTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Streaming packages made in chunks of whole segments over hosts: each chunk a job any worker of any host
/// runs, the join linking their segments and making the audio and subtitles once. Held against the same
/// package made whole, by the checker and by GStreamer.
@Suite(.serialized) struct ChunkedPackageTests {
    /// Two coordinators on one PostgreSQL queue share the 5 chunks of a 36 s package (an HEVC and an AV1 rung, 2 s
    /// segments, chunks of 8 s). Its playlists are the whole package's, text for text; every segment is numbered and timed
    /// as the whole's (`mfhd`, `tfdt`); the audio and subtitles are the whole's, byte for byte; the checker
    /// finds nothing and GStreamer plays every rung to its last frame. (The video's bytes differ: each chunk's
    /// encoder starts its own rate control, as each host's would.)
    @Test func aPackageMadeInChunksOnTwoHostsIsTheWholePackage() throws {
        let farm = try Farm("chunked-package")
        farm.queueURL = try TestPostgres.url(freshSchema: true)
        #expect(try farm.mediafarm(["queue", "migrate"]).status == 0)
        let source = try Self.source(in: farm, seconds: 36)
        let chunked = try farm.manifest("chunked", Self.manifest("chunked", input: source, chunkSeconds: 8, codecs: ["hevc", "av1"]))
        let coordinators = try (1...2).map { try farm.startCoordinator(["--workers", "1", "--host", "host\($0)"], log: "host\($0).log") }
        defer { for c in coordinators where c.process.isRunning { kill(c.pid, SIGKILL) } }
        let id = try farm.submit([chunked])[0]
        #expect(try eventually(300) { ["succeeded", "failed"].contains(try farm.state(id)) }, "\(coordinators.map(\.log))")
        for c in coordinators { kill(c.pid, SIGTERM) }
        for c in coordinators { #expect(c.wait(timeout: 30) == 0, "\(c.log)") }
        let jobs = try farm.status()
        #expect(jobs[id]?["state"] as? String == "succeeded" && jobs.count == 6, "one job and its 5 chunks: \(jobs)")
        let chunkIDs = Set((id + 1)...(id + 5))
        let ran = coordinators.map { c in
            c.events().filter { $0["event"] as? String == "started" }.compactMap { ($0["job"] as? NSNumber)?.int64Value }.filter(chunkIDs.contains).count
        }
        #expect(ran.reduce(0, +) == 5 && ran.allSatisfy { $0 > 0 }, "chunks run by each host: \(ran)")

        farm.queueURL = nil
        let made = try farm.mediafarm(["run", try farm.manifest("whole", Self.manifest("whole", input: source, chunkSeconds: nil, codecs: ["hevc", "av1"]))])
        #expect(made.status == 0, "\(made.stderr)")
        let a = farm.out.appendingPathComponent("chunked").path, b = farm.out.appendingPathComponent("whole").path
        let report = try Self.streamReport(farm.out.appendingPathComponent("chunked.json").path)
        let whole = try Self.streamReport(farm.out.appendingPathComponent("whole.json").path)
        #expect(report.tracks.map(\.folder) == ["video-1", "video-2", "audio", "subtitles-en"], "\(report.tracks.map(\.folder))")
        for track in report.tracks {
            let playlist = try String(contentsOfFile: "\(a)/\(track.folder)/index.m3u8", encoding: .utf8)
            #expect(playlist == (try String(contentsOfFile: "\(b)/\(track.folder)/index.m3u8", encoding: .utf8)), "\(track.folder)'s playlist")
            for segment in track.segments {
                let mine = "\(a)/\(track.folder)/\(segment.file)", theirs = "\(b)/\(track.folder)/\(segment.file)"
                if track.kind == .video {
                    let (x, y) = (try FragmentProbe.numberAndDecodeTime(segment: mine), try FragmentProbe.numberAndDecodeTime(segment: theirs))
                    #expect(x.sequence == y.sequence && x.decodeTime == y.decodeTime, "\(track.folder)/\(segment.file): \(x) against the whole's \(y)")
                } else {
                    #expect(FileManager.default.contentsEqual(atPath: mine, andPath: theirs), "\(track.folder)/\(segment.file) differs from the whole's")
                }
            }
            let initialization = "\(track.folder)/\(track.initialization)"
            #expect(FileManager.default.contentsEqual(atPath: "\(a)/\(initialization)", andPath: "\(b)/\(initialization)"), "\(initialization)")
        }
        #expect(report.tracks.map { $0.segments.map(\.start) } == whole.tracks.map { $0.segments.map(\.start) })
        // 36 s and the AAC's last frame: 1081 frames, the last segment one frame long.
        let frames = Int((whole.duration.seconds * 30).rounded())
        #expect(report.tracks[0].segments.count == (frames + 59) / 60 && report.duration == whole.duration, "\(frames) frames")
        let findings = try StreamChecker.check(folder: a, report: report)
        #expect(findings.isEmpty, "\(findings)")
        let played = try StreamChecker.playEachRung(folder: a, report: report)
        #expect(played.isEmpty, "\(played)")
        // The report names each chunk's job and attempts; the folder of the chunks is gone.
        let chunks = try Self.reportChunks(farm.out.appendingPathComponent("chunked.json").path)
        #expect(chunks.map(\.attempts) == [1, 1, 1, 1, 1] && chunks.map(\.frames) == [[0, 240], [240, 480], [480, 720], [720, 960], [960, frames]], "\(chunks)")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// The worker SIGKILLed as it begins the 4th of 5 chunks (60% of the package): that chunk runs again, the
    /// others do not, and the package is whole.
    @Test func aWorkerKilledAtSixtyPercentLosesOnlyThatChunk() throws {
        let farm = try Farm("chunked-package-kill")
        let source = try Self.source(in: farm, seconds: 30)
        // Slow enough to be caught encoding: each chunk takes seconds.
        let id = try farm.submit([try farm.manifest("long", Self.manifest("long", input: source, chunkSeconds: 6, preset: "slower"))])[0]
        let coordinator = try farm.startCoordinator(["--exit-when-idle", "--workers", "1"])
        let fourth = id + 4
        var killed: Int32?
        #expect(try eventually(240) {
            let job = try farm.status()[fourth]
            guard job?["state"] as? String == "running", ((job?["progress"] as? NSNumber)?.doubleValue ?? 0) > 0.05,
                  let pid = try farm.workerPID(fourth) else { return false }
            kill(pid, SIGKILL)
            killed = pid
            return true
        }, "the 4th chunk never ran: \(coordinator.log)")
        #expect(coordinator.wait(timeout: 300) == 0, "\(coordinator.log)")
        let jobs = try farm.status()
        #expect(killed != nil && jobs[fourth]?["attempt"] as? Int == 2 && jobs[id]?["state"] as? String == "succeeded", "\(jobs)")
        let chunks = try Self.reportChunks(farm.out.appendingPathComponent("long.json").path)
        #expect(chunks.map(\.attempts) == [1, 1, 1, 2, 1], "\(chunks)")
        let report = try Self.streamReport(farm.out.appendingPathComponent("long.json").path)
        let findings = try StreamChecker.check(folder: farm.out.appendingPathComponent("long").path, report: report)
        #expect(findings.isEmpty, "\(findings)")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// An MPEG-TS package encrypted with AES-128, made in 3 chunks under a coordinator: each chunk's segments
    /// timed and encrypted (IV: the media sequence number) as the whole's, so its media playlists are the
    /// whole's, text for text, its audio and subtitles the whole's byte for byte, and GStreamer plays it with
    /// its key to the last frame (12 s and the AAC's last frame: 361).
    @Test func anEncryptedTransportStreamPackageMadeInChunksIsTheWholePackage() throws {
        let farm = try Farm("chunked-package-ts")
        let source = try Self.source(in: farm, seconds: 12)
        let key = farm.folder.appendingPathComponent("show.key")
        try Data((0..<16).map { UInt8($0 * 5 + 2) }).write(to: key)
        func manifest(_ name: String, chunkSeconds: Int?) -> String {
            Self.manifest(name, input: source, chunkSeconds: chunkSeconds).replacingOccurrences(of: #""segmentSeconds": 2,"#, with: #""segmentSeconds": 2, "container": "ts", "#
                + #""encryption": {"keyFile": "\#(key.path)", "keyURI": "../show.key"},"#)
        }
        let id = try farm.submit([try farm.manifest("chunked", manifest("chunked", chunkSeconds: 4))])[0]
        let coordinator = try farm.startCoordinator(["--exit-when-idle", "--workers", "1"])
        #expect(coordinator.wait(timeout: 240) == 0, "\(coordinator.log)")
        let jobs = try farm.status()
        #expect(jobs.count == 4 && jobs[id]?["state"] as? String == "succeeded", "one job and its 3 chunks: \(jobs)")
        let made = try farm.mediafarm(["run", try farm.manifest("whole", manifest("whole", chunkSeconds: nil))])
        #expect(made.status == 0, "\(made.stderr)")
        let a = farm.out.appendingPathComponent("chunked").path, b = farm.out.appendingPathComponent("whole").path
        let report = try Self.streamReport(farm.out.appendingPathComponent("chunked.json").path)
        #expect(report.tracks.map(\.folder) == ["video-1", "video-2", "audio", "subtitles-en"] && report.tracks.allSatisfy { $0.kind == .text || $0.keyURI == "../show.key" })
        for track in report.tracks {
            let playlist = try String(contentsOfFile: "\(a)/\(track.folder)/index.m3u8", encoding: .utf8)
            #expect(playlist == (try String(contentsOfFile: "\(b)/\(track.folder)/index.m3u8", encoding: .utf8)), "\(track.folder)'s playlist")
            for segment in track.segments where track.kind != .video {
                #expect(FileManager.default.contentsEqual(atPath: "\(a)/\(track.folder)/\(segment.file)", andPath: "\(b)/\(track.folder)/\(segment.file)"),
                        "\(track.folder)/\(segment.file) differs from the whole's")
            }
        }
        try FileManager.default.copyItem(atPath: key.path, toPath: a + "/show.key")
        let played = try StreamChecker.playEachRung(folder: a, report: report, dash: false, frameCount: { _ in Int((report.duration.seconds * 30).rounded()) })
        #expect(played.isEmpty, "\(played)")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// What would refuse the package at its join refuses it before any chunk is made: a subtitle language the
    /// source lacks fails the job's first run, naming it, and no chunk job is queued.
    @Test func aPackageItsJoinWouldRefuseIsRefusedBeforeItsChunks() throws {
        let farm = try Farm("chunked-package-refused")
        let source = try Self.source(in: farm, seconds: 12)
        let text = Self.manifest("fr", input: source, chunkSeconds: 4).replacingOccurrences(of: #"["en"]"#, with: #"["fr"]"#)
        let id = try farm.submit([try farm.manifest("fr", text)])[0]
        let coordinator = try farm.startCoordinator(["--exit-when-idle", "--workers", "1"])
        #expect(coordinator.wait(timeout: 120) == 1, "a job failed: \(coordinator.log)")
        let jobs = try farm.status()
        #expect(jobs.count == 1 && jobs[id]?["state"] as? String == "failed", "\(jobs)")
        let error = (jobs[id]?["errors"] as? [[String: Any]])?.first?["message"] as? String ?? ""
        #expect(error.contains("$.stream") && error.contains("\"fr\""), "\(error)")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// A manifest that names its own chunks to join is held to its package's chunk folder: a folder elsewhere
    /// (one the user made, whose report could name any file) is refused before anything is read or linked.
    @Test func aJoinOfFoldersThatAreNoChunksOfThePackageIsRefused() throws {
        let farm = try Farm("chunked-package-forged")
        let source = try Self.source(in: farm, seconds: 4)
        let forged = farm.folder.appendingPathComponent("forged/chunk-0001").path
        try FileManager.default.createDirectory(atPath: forged, withIntermediateDirectories: true)
        try #"{"duration": {"value": 4, "timescale": 1}, "segmentDuration": {"value": 2, "timescale": 1}, "framesDecoded": 0, "seconds": 0, "tracks": []}"#
            .write(toFile: forged + "/segments.json", atomically: true, encoding: String.Encoding.utf8)
        let text = Self.manifest("forged", input: source, chunkSeconds: nil)
            .replacingOccurrences(of: #""segmentSeconds": 2,"#, with: #""segmentSeconds": 2, "join": [{"output": "\#(forged)", "frames": [0, 120]}],"#)
        let run = try farm.mediafarm(["run", try farm.manifest("forged", text)])
        #expect(run.status == 1 && run.stderr.contains("not a chunk of this package's"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: farm.out.appendingPathComponent("forged").path) && farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// `codecs`: the two rungs'.
    static func manifest(_ name: String, input: String, chunkSeconds: Int?, preset: String = "ultrafast", codecs: [String] = ["h264", "h264"]) -> String {
        """
        { "version": 1, "name": "\(name)", "input": "\(input)", "report": "out/\(name).json", "reuse": false,
          "stream": { "output": "out/\(name)", "segmentSeconds": 2, \(chunkSeconds.map { "\"chunkSeconds\": \($0)," } ?? "")
                      "video": { "rungs": [{ "height": 360, "bitrate": 800000, "codec": "\(codecs[0])" }, { "height": 180, "bitrate": 250000, "codec": "\(codecs[1])" }],
                                 "preset": "\(preset)" },
                      "subtitles": { "languages": ["en"] } } }
        """
    }

    /// A moving test picture (640x360, 30 fps, keyframes every 2 s) with a stereo tone and English SubRip
    /// subtitles every 3 s, in Matroska.
    static func source(in farm: Farm, seconds: Int) throws -> String {
        let srt = farm.folder.appendingPathComponent("en.srt").path
        var cues: [String] = []
        for s in stride(from: 0, to: seconds, by: 3) {
            let n = cues.count + 1
            let cue: String = String(format: "%d\n00:%02d:%02d,500 --> 00:%02d:%02d,000\nLine %d\n", n, s / 60, s % 60, (s + 2) / 60, (s + 2) % 60, n)
            cues.append(cue)
        }
        try cues.joined(separator: "\n").write(toFile: srt, atomically: true, encoding: String.Encoding.utf8)
        let path = farm.folder.appendingPathComponent("source.mkv").path
        let made = try ProcessRunner.run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
                                                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-i", srt,
                                                    "-map", "0", "-map", "1", "-map", "2", "-t", String(seconds),
                                                    "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-c:a", "aac", "-ac", "2",
                                                    "-c:s", "srt", "-metadata:s:s:0", "language=eng", path])
        guard made.status == 0 else { throw FixtureError("ffmpeg: \(made.stderr)") }
        return path
    }

    static func streamReport(_ path: String) throws -> StreamReport {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any] ?? [:]
        guard let stream = object["stream"] else { throw FixtureError("\(path): no stream in the report") }
        return try JSONDecoder().decode(StreamReport.self, from: JSONSerialization.data(withJSONObject: stream))
    }

    static func reportChunks(_ path: String) throws -> [(attempts: Int, frames: [Int])] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any] ?? [:]
        return (object["chunks"] as? [[String: Any]] ?? []).map {
            (($0["attempts"] as? NSNumber)?.intValue ?? 0, ($0["frames"] as? [NSNumber])?.map(\.intValue) ?? [])
        }
    }
}
