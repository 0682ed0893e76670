import FarmTestSupport
import FarmModel
import Foundation
import MediaTime
import Testing
@testable import FarmRuntime
#if canImport(Glibc)
import Glibc
#endif

/// Chunked constant-frame-rate exports through the commands, real coordinators and worker processes:
/// the output against the same export made whole, a worker killed mid-chunk, several coordinators
/// sharing the chunks of one export. FFmpeg's own tools read the results.
@Suite(.serialized) struct ChunkedExportTests {
    /// A 3-minute 720p export in chunks of 20 s on two workers: every frame of the unchunked export at
    /// the same time, its quality within 0.5 dB, the very same audio (every sample, nothing at the joins),
    /// the chunks' folder gone, the job's progress the sum of its chunks' while they ran.
    @Test func aChunkedExportIsTheWholeExportFrameForFrame() throws {
        let farm = try Farm("chunked")
        let source = try Self.source(in: farm, seconds: 180, size: "1280x720")
        let chunked = try farm.manifest("chunked", Self.manifest("chunked", input: source, chunkSeconds: 20))
        let whole = try farm.manifest("whole", Self.manifest("whole", input: source, chunkSeconds: nil))
        let id = try farm.submit([chunked])[0]
        let coordinator = try farm.startCoordinator(["--exit-when-idle", "--workers", "2"])
        // While the chunks run, the job waits with the sum of their progress.
        var seen: [(Double, String)] = []
        _ = eventually(120) {
            let job = try? farm.status()[id]
            if job?["state"] as? String == "waiting", let p = (job?["progress"] as? NSNumber)?.doubleValue, let phase = job?["phase"] as? String {
                seen.append((p, phase))
            }
            return !coordinator.process.isRunning || (seen.last?.0 ?? 0) > 0.3
        }
        #expect(coordinator.wait(timeout: 300) == 0, "\(coordinator.log)")
        #expect(seen.contains { $0.0 > 0 && $0.0 < 0.95 && $0.1.hasPrefix("encoding chunks: ") && $0.1.hasSuffix(" of 9 done") }, "\(seen)")
        let jobs = try farm.status()
        #expect(jobs[id]?["state"] as? String == "succeeded" && jobs[id]?["attempt"] as? Int == 1, "\(jobs[id] ?? [:])")
        #expect(jobs.count == 10, "one job and its 9 chunks: \(jobs.keys.sorted())")
        #expect(coordinator.log.contains("job \(id) (chunked) split into 9 chunks of about 20 s"), "\(coordinator.log)")
        let made = try farm.mediafarm(["run", whole])
        #expect(made.status == 0, "\(made.stderr)")

        let a = farm.out.appendingPathComponent("chunked.mp4").path, b = farm.out.appendingPathComponent("whole.mp4").path
        // Every frame, at the unchunked export's times.
        let times = try Self.frameTimes(a), expected = try Self.frameTimes(b)
        #expect(times.count == 5400 && expected.count == 5400, "\(times.count) frames, \(expected.count) unchunked")
        #expect(zip(times, expected).allSatisfy { abs($0 - $1) < 0.0001 }, "the frame times differ from the unchunked export's")
        #expect(try Self.decodedFrames(a) == 5400)
        // Quality: both against the source, within 0.5 dB of each other on average.
        let psnrChunked = try Self.psnr(a, against: source), psnrWhole = try Self.psnr(b, against: source)
        print(String(format: "chunked export: PSNR %.2f dB against the source, unchunked %.2f dB", psnrChunked, psnrWhole))
        #expect(psnrChunked > 30 && abs(psnrChunked - psnrWhole) <= 0.5, "\(psnrChunked) \(psnrWhole)")
        // Audio: every sample of the composition, the same as the unchunked export's (rendered once: no join in it).
        // (FFmpeg's decoder keeps the padding of the last AAC frame: the track's own duration is the count.)
        let audio = try Self.samples(a), wholeAudio = try Self.samples(b)
        #expect(try Self.audioDuration(a) == 180 * 48000, "the audio track's duration in samples")
        #expect(audio.count >= 180 * 48000 && audio.count < 180 * 48000 + 1024, "\(audio.count) samples decoded")
        #expect(audio == wholeAudio, "the audio differs from the unchunked export's")
        let sourceJump = Self.largestStep(try Self.samples(source)[...])
        for join in 1..<9 {
            let at = join * 20 * 48000
            #expect(Self.largestStep(audio[(at - 480)..<(at + 480)]) <= sourceJump, "a click at the join at \(join * 20) s")
        }
        // The report names each chunk's job and attempts; the folder of the chunks is gone.
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("chunked.json"))) as? [String: Any]
        let chunks = report?["chunks"] as? [[String: Any]] ?? []
        #expect(chunks.count == 9 && chunks.allSatisfy { ($0["attempts"] as? NSNumber)?.intValue == 1 }, "\(chunks)")
        // Each chunk's file is named as one that was joined and removed, not as an output to be found.
        #expect(chunks.allSatisfy { $0["output"] == nil && ($0["joinedFrom"] as? String)?.contains(".chunks-") == true
                                    && !FileManager.default.fileExists(atPath: $0["joinedFrom"] as? String ?? "") }, "\(chunks)")
        let frames: [[Int]] = chunks.map { ($0["frames"] as? [NSNumber])?.map(\.intValue) ?? [] }
        let tiles: [[Int]] = (0..<9).map { [$0 * 600, $0 * 600 + 600] }
        #expect(frames == tiles, "\(frames)")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// The worker SIGKILLed while it encodes the 5th chunk: that chunk runs again, the four before it
    /// do not (the report's attempts), and the output has every frame.
    @Test func aWorkerKilledDuringTheFifthChunkLosesOnlyThatChunk() throws {
        let farm = try Farm("chunk-kill")
        let source = try Self.source(in: farm, seconds: 60, size: "1280x720")
        let manifest = try farm.manifest("long", Self.manifest("long", input: source, chunkSeconds: 6, preset: "medium"))
        let id = try farm.submit([manifest])[0]
        let coordinator = try farm.startCoordinator(["--exit-when-idle", "--workers", "1"])
        // Chunks are made in order, after the job: the 5th is job id + 5. Killed once it has begun encoding.
        let fifth = id + 5
        var killed: Int32?
        #expect(try eventually(120) {
            let job = try farm.status()[fifth]
            guard job?["state"] as? String == "running", ((job?["progress"] as? NSNumber)?.doubleValue ?? 0) > 0.1,
                  let pid = try farm.workerPID(fifth) else { return false }
            kill(pid, SIGKILL)
            killed = pid
            return true
        }, "the 5th chunk never ran: \(coordinator.log)")
        #expect(coordinator.wait(timeout: 300) == 0, "\(coordinator.log)")
        let jobs = try farm.status()
        #expect(killed != nil && jobs[fifth]?["attempt"] as? Int == 2, "\(jobs[fifth] ?? [:])")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("long.json"))) as? [String: Any]
        let attempts = (report?["chunks"] as? [[String: Any]] ?? []).map { ($0["attempts"] as? NSNumber)?.intValue ?? 0 }
        #expect(attempts == [1, 1, 1, 1, 2, 1, 1, 1, 1, 1], "\(attempts)")
        #expect(try Self.decodedFrames(farm.out.appendingPathComponent("long.mp4").path) == 1800)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// Three coordinators on one PostgreSQL queue, one worker each: each of them encodes chunks of the
    /// one export, and one joins them.
    @Test func threeCoordinatorsOnPostgreSQLShareTheChunksOfOneExport() throws {
        let farm = try Farm("chunk-hosts")
        farm.queueURL = try TestPostgres.url(freshSchema: true)
        #expect(try farm.mediafarm(["queue", "migrate"]).status == 0)
        let source = try Self.source(in: farm, seconds: 60, size: "1280x720")
        let manifest = try farm.manifest("shared", Self.manifest("shared", input: source, chunkSeconds: 5))
        let coordinators = try (1...3).map { try farm.startCoordinator(["--workers", "1", "--host", "host\($0)"], log: "host\($0).log") }
        defer { for c in coordinators where c.process.isRunning { kill(c.pid, SIGKILL) } }
        let id = try farm.submit([manifest])[0]
        #expect(try eventually(240) { try farm.state(id) == "succeeded" }, "\(coordinators.map(\.log))")
        for c in coordinators { kill(c.pid, SIGTERM) }
        for c in coordinators { #expect(c.wait(timeout: 30) == 0, "\(c.log)") }
        let chunkIDs = Set((id + 1)...(id + 12))
        var ran: [Int] = []
        for c in coordinators {
            let started = c.events().filter { $0["event"] as? String == "started" }.compactMap { ($0["job"] as? NSNumber)?.int64Value }
            ran.append(started.filter(chunkIDs.contains).count)
        }
        #expect(ran.reduce(0, +) == 12 && ran.allSatisfy { $0 > 0 }, "chunks run by each host: \(ran)")
        #expect(try Self.decodedFrames(farm.out.appendingPathComponent("shared.mp4").path) == 1800)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// An odd-sized source (641x361, 4:4:4) with QR codes, exported in chunks with a scan: the chunks cropped
    /// as the whole export crops, every frame once, the codes found at their times by the scan at the join,
    /// and the report saying what was cropped.
    @Test func anOddSizedChunkedExportIsCroppedAndScannedAtTheJoin() async throws {
        let farm = try Farm("chunk-scan")
        let qr = try CodeFixtures.draw(CodeFixtures.qrAndLinearCodes[0], in: farm.folder, name: "qr")
        let source = farm.folder.appendingPathComponent("odd.mp4").path
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=641x361:r=30:d=20", "-i", qr,
                                           "-filter_complex", "[0]scale=641:361[b];[b][1]overlay=40:40:enable='between(t,3,5)+between(t,14,16)'",
                                           "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv444p", source])
        let manifest = try farm.manifest("odd", """
            { "version": 1, "name": "odd", "input": "odd.mp4", "report": "out/odd.json", "scan": { "symbologies": ["qr"] },
              "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "out/odd.mp4", "chunkSeconds": 5 } }
            """)
        let id = try await farm.queued([manifest])[0]
        let coordinator = try await farm.coordinate(["--exit-when-idle", "--workers", "2"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let jobs = try await farm.jobs()
        #expect(jobs[id]?["state"] as? String == "succeeded" && jobs.count == 5, "one job and its 4 chunks: \(jobs)")
        // `status` folds the chunks under their export, saying what became of them; --chunks shows them.
        let folded = try farm.mediafarm(["status"]).stdout.split(separator: "\n")
        #expect(folded.count == 2 && folded[1].hasSuffix("(4 chunks joined; their files removed)"), "\(folded)")
        #expect(try farm.mediafarm(["status", "--chunks"]).stdout.split(separator: "\n").count == 6)
        let output = farm.out.appendingPathComponent("odd.mp4").path
        #expect(try Self.decodedFrames(output) == 600)
        let size = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                                                       "-of", "csv=p=0", output]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(size == "640,360")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("odd.json"))) as? [String: Any]
        let video = (report?["export"] as? [String: Any])?["video"] as? [String: Any]
        #expect((video?["cropped"] as? String)?.contains("641x361") == true, "\(video ?? [:])")
        let scan = report?["scan"] as? [String: Any]
        let codes = scan?["codes"] as? [[String: Any]] ?? []
        #expect(scan?["decodedBy"] as? String == "scan" && codes.count == 1 && codes.first?["payload"] as? String == "MediaFarm QR 1", "\(scan ?? [:])")
        func seconds(_ key: String) -> Double? {
            guard let t = codes.first?[key] as? [String: Any], let v = (t["value"] as? NSNumber)?.doubleValue,
                  let s = (t["timescale"] as? NSNumber)?.doubleValue else { return nil }
            return v / s
        }
        let first = seconds("firstTime") ?? -1, last = seconds("lastTime") ?? -1
        #expect(first >= 2.9 && first <= 3.2 && last >= 15.7 && last <= 16.1, "seen from \(first) to \(last) s")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// A coordinator's default (`--chunk-seconds 3 --chunk-above 6`): the 10 s export is chunked, the 5 s one
    /// is encoded whole; a manifest's own chunkSeconds, a chunk and a passthrough export are left as they are.
    @Test func aCoordinatorsDefaultChunksLongExportsOnly() async throws {
        let farm = try Farm("chunk-default")
        func manifest(_ name: String, seconds: Int) throws -> String {
            try farm.manifest(name, """
                { "version": 1, "name": "\(name)", "edits": [{ "source": "in.mp4", "duration": \(seconds) }], "reuse": false,
                  "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "out/\(name).mp4", "video": { "preset": "ultrafast" } } }
                """)
        }
        let ids = try await farm.queued([try manifest("long", seconds: 10), try manifest("short", seconds: 5)])
        let coordinator = try await farm.coordinate(["--exit-when-idle", "--workers", "2", "--chunk-seconds", "3", "--chunk-above", "6"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let jobs = try await farm.jobs()
        #expect(ids.allSatisfy { jobs[$0]?["state"] as? String == "succeeded" }, "\(jobs)")
        let chunks = jobs.values.compactMap { $0["name"] as? String }.filter { $0.contains("[chunk ") }.sorted()
        #expect(chunks.count == 3 && chunks.allSatisfy { $0.hasPrefix("long [chunk ") }, "\(chunks)")
        #expect(try Self.decodedFrames(farm.out.appendingPathComponent("long.mp4").path) == 300)
        #expect(try Self.decodedFrames(farm.out.appendingPathComponent("short.mp4").path) == 150)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")

        let chunking = DefaultChunking(seconds: 3, above: 6)
        let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs"])
        func export(_ section: String) throws -> JobManifest {
            try ManifestValidator.validate(json: Array(#"{"version":1,"input":"a.mp4","export":\#(section)}"#.utf8), context: context).get()
        }
        let own = try export(#"{"mode":"constantFrameRate","output":"b.mp4","chunkSeconds":20}"#)
        let chunk = try export(#"{"mode":"constantFrameRate","output":"b.mp4","frames":[0,90]}"#)
        let passthrough = try export(#"{"mode":"passthrough","output":"b.mp4"}"#)
        #expect([own, chunk, passthrough].allSatisfy { chunking.applied(to: $0) == nil })
        let given = chunking.applied(to: try export(#"{"mode":"constantFrameRate","output":"b.mp4"}"#))
        #expect(given?.export?.chunkDuration == MediaTime(value: 3, timescale: 1) && given?.export?.chunkAbove == MediaTime(value: 6, timescale: 1))
        // As the worker reads it.
        #expect(given.flatMap { try? ManifestValidator.validate($0.document, context: context).get() } == given, "\(given?.document.text ?? "")")
    }

    /// A chunked export with a waveform of its input: each chunk only encodes its frames; the job's last run
    /// draws the waveform once, of the whole input, beside the join. (Each chunk used to draw the whole
    /// waveform and publish it over the one file: several live jobs writing one file.)
    @Test func aChunkedExportsWaveformIsDrawnOnceByItsJoin() async throws {
        let farm = try Farm("chunk-waveform")
        _ = try Self.source(in: farm, seconds: 9, size: "160x120")
        let manifest = try farm.manifest("wave", """
            { "version": 1, "name": "wave", "input": "source.mp4", "report": "out/wave.json", "reuse": false,
              "waveform": { "output": "out/wave.png", "width": 300, "height": 60 },
              "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "out/wave.mp4", "chunkSeconds": 3, "video": { "preset": "ultrafast" } } }
            """)
        let id = try await farm.queued([manifest])[0]
        let coordinator = try await farm.coordinate(["--exit-when-idle", "--workers", "2"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let jobs = try await farm.jobs()
        let chunks = jobs.values.filter { ($0["name"] as? String)?.hasPrefix("wave [chunk ") == true }
        #expect(jobs[id]?["state"] as? String == "succeeded" && chunks.count == 3, "\(jobs)")
        for chunk in chunks {
            let manifest = chunk["manifest"] as? [String: Any] ?? [:]
            #expect(manifest["waveform"] == nil && manifest["report"] == nil && (manifest["export"] as? [String: Any])?["frames"] != nil, "\(manifest)")
        }
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("wave.json"))) as? [String: Any] ?? [:]
        let waveform = (report["pictures"] as? [String: Any])?["waveform"] as? [String: Any] ?? [:]
        #expect(waveform["output"] as? String == farm.out.appendingPathComponent("wave.png").path && waveform["width"] as? Int == 300, "\(report)")
        #expect(abs((waveform["duration"] as? Double ?? 0) - 9) < 0.1, "the whole input's: \(waveform)")
        #expect(try Self.decodedFrames(farm.out.appendingPathComponent("wave.mp4").path) == 270)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// A chunked export brought to a loudness: the audio is rendered and normalized once over the whole
    /// composition at the join (not per chunk), so it is the unchunked export's, and the report says so.
    @Test func aChunkedExportIsNormalizedOverItsWholeComposition() async throws {
        let farm = try Farm("chunked-loudness")
        let source = try Self.source(in: farm, seconds: 24, size: "320x240")
        let (a, b) = try await Self.chunkedAndWhole(farm, input: source, audio: #"{ "loudness": { "standard": "streaming-16" } }"#)
        #expect(try Self.samples(a) == Self.samples(b), "the audio differs from the unchunked export's")
        let theirs = try EBUR128Probe.summary(a)
        #expect(abs(theirs.integrated + 16) <= 0.1 && theirs.truePeak <= -1, "ffmpeg reads \(theirs.integrated) LUFS, \(theirs.truePeak) dBTP")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("chunked.json"))) as? [String: Any]
        let loudness = ((report?["export"] as? [String: Any])?["audio"] as? [String: Any])?["loudness"] as? [String: Any]
        #expect(loudness?["mode"] as? String == "normalized" && loudness?["standard"] as? String == "streaming-16", "\(report ?? [:])")
        let before = loudness?["before"] as? [String: Any], after = loudness?["after"] as? [String: Any]
        #expect((before?["seconds"] as? NSNumber)?.doubleValue == 24, "measured over the whole composition: \(before ?? [:])")
        #expect(abs(((after?["integrated"] as? NSNumber)?.doubleValue ?? 0) + 16) <= 0.05, "\(after ?? [:])")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// A chunked export that keeps two audio tracks by language: the join encodes each, in the order asked,
    /// sample for sample what `mediafarm run` makes whole.
    @Test func aChunkedExportKeepsTheAudioLanguagesAskedFor() async throws {
        let farm = try Farm("chunked-languages")
        let source = farm.folder.appendingPathComponent("two-languages.mkv").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=20",
                                           "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=20",
                                           "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=48000:duration=20",
                                           "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-c:a", "aac",
                                           "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fre", source])
        let (a, b) = try await Self.chunkedAndWhole(farm, input: source, audio: #"{ "languages": ["fr", "en"] }"#)
        for path in [a, b] {
            let tags = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "stream_tags=language", "-of", "csv=p=0", path])
            #expect(tags.stdout.split(separator: "\n") == ["fre", "eng"], "\(path): \(tags.stdout)")
        }
        for (track, frequency) in [(0, 660.0), (1, 440.0)] {
            let chunked = try MediaProbe.monoSamples(a, audio: track), whole = try MediaProbe.monoSamples(b, audio: track)
            #expect(chunked.samples == whole.samples, "track \(track) differs from the unchunked export's")
            #expect(abs(MediaProbe.toneFrequency(chunked, from: 5, to: 15) - frequency) < 5, "track \(track)")
        }
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("chunked.json"))) as? [String: Any]
        let export = report?["export"] as? [String: Any]
        #expect((export?["audio"] as? [String: Any])?["language"] as? String == "fre", "\(export ?? [:])")
        #expect((export?["additionalAudio"] as? [[String: Any]])?.map { $0["language"] as? String } == ["eng"], "\(export ?? [:])")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    // MARK: - Helpers

    /// The same export of `input` made in 8 s chunks under a coordinator (one job and its 3 chunks, checked)
    /// and whole by `mediafarm run`, `audio` its export's audio section; the two movies' paths.
    static func chunkedAndWhole(_ farm: Farm, input: String, audio: String) async throws -> (chunked: String, whole: String) {
        func manifest(_ name: String, chunkSeconds: Int?) throws -> String {
            try farm.manifest(name, """
                { "version": 1, "name": "\(name)", "input": "\(input)", "report": "out/\(name).json", "reuse": false,
                  "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "out/\(name).mp4",
                              \(chunkSeconds.map { "\"chunkSeconds\": \($0)," } ?? "") "video": { "preset": "ultrafast" }, "audio": \(audio) } }
                """)
        }
        let id = try await farm.queued([try manifest("chunked", chunkSeconds: 8)])[0]
        let coordinator = try await farm.coordinate(["--exit-when-idle", "--workers", "2"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let jobs = try await farm.jobs()
        #expect(jobs[id]?["state"] as? String == "succeeded" && jobs.count == 4, "one job and its 3 chunks: \(jobs)")
        let made = try farm.mediafarm(["run", try manifest("whole", chunkSeconds: nil)])
        #expect(made.status == 0, "\(made.stderr)")
        return (farm.out.appendingPathComponent("chunked.mp4").path, farm.out.appendingPathComponent("whole.mp4").path)
    }

    static func manifest(_ name: String, input: String, chunkSeconds: Int?, preset: String = "veryfast") -> String {
        """
        { "version": 1, "name": "\(name)", "input": "\(input)", "report": "out/\(name).json",
          "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "out/\(name).mp4",
                      \(chunkSeconds.map { "\"chunkSeconds\": \($0)," } ?? "") "video": { "preset": "\(preset)" } } }
        """
    }

    /// A moving test picture with a tone, keyframes every 2 s (as a camera writes them).
    static func source(in farm: Farm, seconds: Int, size: String) throws -> String {
        let path = farm.folder.appendingPathComponent("source.mp4").path
        let made = try ProcessRunner.run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30",
                                                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                                                    "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-g", "60",
                                                    "-c:a", "aac", "-ac", "1", path])
        guard made.status == 0 else { throw FixtureError("ffmpeg: \(made.stderr)") }
        return path
    }

    /// Presentation times of the video packets, in seconds, in order.
    static func frameTimes(_ path: String) throws -> [Double] {
        let r = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
        return r.stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.sorted()
    }

    static func decodedFrames(_ path: String) throws -> Int? {
        let r = try ProcessRunner.run("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames",
                                                  "-of", "csv=p=0", path])
        return Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// FFmpeg's psnr filter: the average over every frame, in dB.
    static func psnr(_ path: String, against reference: String) throws -> Double {
        let r = try ProcessRunner.run("ffmpeg", ["-v", "info", "-nostats", "-i", path, "-i", reference, "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-"])
        guard let range = r.stderr.range(of: "average:"),
              let value = Double(r.stderr[range.upperBound...].prefix { $0 != " " }) else { throw FixtureError("no PSNR: \(r.stderr.suffix(500))") }
        return value
    }

    /// The audio track's duration in its time base (1/48000: samples), as the container says (edit list).
    static func audioDuration(_ path: String) throws -> Int? {
        let r = try ProcessRunner.run("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "stream=duration_ts", "-of", "csv=p=0", path])
        return Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The decoded audio, 16-bit mono samples.
    static func samples(_ path: String) throws -> [Int16] {
        let out = path + ".pcm"
        defer { unlink(out) }
        let r = try ProcessRunner.run("ffmpeg", ["-v", "error", "-y", "-i", path, "-map", "0:a", "-ac", "1", "-f", "s16le", out])
        guard r.status == 0 else { throw FixtureError("ffmpeg: \(r.stderr)") }
        let data = try Data(contentsOf: URL(fileURLWithPath: out))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The largest difference between neighbouring samples: a click is a step the signal does not take.
    static func largestStep(_ samples: ArraySlice<Int16>) -> Int {
        zip(samples, samples.dropFirst()).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }
}
