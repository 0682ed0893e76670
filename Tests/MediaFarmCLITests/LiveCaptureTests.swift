import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A virtual X display (Xvfb) for screen capture, stopped when released.
final class VirtualDisplay {
    let number: Int
    private let server: Background

    init(width: Int = 1280, height: Int = 720, log: String) throws {
        var n = 0
        repeat { n = Int.random(in: 100...899) } while FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(n)")
        number = n
        server = try Background(["/usr/bin/Xvfb", ":\(n)", "-screen", "0", "\(width)x\(height)x24", "-nolisten", "tcp"], log: log)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(n)") && Date() < deadline { usleep(50_000) }
        guard FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(n)") else { throw FixtureError("Xvfb :\(n) did not start: \(server.log)") }
    }

    deinit {
        server.kill(SIGTERM)
        _ = server.wait(timeout: 5)
    }

    /// Shows a picture full screen (feh) until the returned process is killed.
    func show(_ picture: String, log: String) throws -> Background {
        try Background(["/usr/bin/feh", "--geometry", "1280x720+0+0", "--borderless", "--image-bg", "white", picture], log: log,
                       environment: ProcessInfo.processInfo.environment.merging(["DISPLAY": ":\(number)"]) { $1 })
    }
}

/// `mediafarm capture` of sources that need encoding (a screen, a synthetic graph), with live code
/// scanning, reconnection and a config file. Times are checked within a few frames: the tests run beside
/// others, and under load the scanner takes fewer pictures (as it should).
@Suite struct LiveCaptureTests {
    func capture(_ dir: URL, _ arguments: [String], log: String = "capture.log") throws -> Background {
        try Background([TestPaths.mediafarmExecutable, "capture", "--output-dir", dir.appendingPathComponent("out").path, "--json"] + arguments,
                       log: dir.appendingPathComponent(log).path)
    }

    /// Seconds of AAC audio in a movie: its packets of 1024 samples at 48 kHz.
    static func audioSeconds(_ path: String) throws -> Double {
        let r = try ProcessRunner.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a", "-count_packets", "-show_entries",
                                                           "stream=nb_read_packets", "-of", "csv=p=0", path])
        return Double(Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) * 1024 / 48000
    }

    /// A screen showing three QR codes one after another (Xvfb + feh), recorded with x11grab: each code
    /// is reported while it is shown (its first sighting after feh was started) and as gone once hidden, and
    /// each segment's report holds the codes seen in it.
    @Test func codesShownOnAScreenAreReportedLiveAndInTheirSegments() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-x11")
        let display = try VirtualDisplay(log: dir.appendingPathComponent("xvfb.log").path)
        let devices = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--list-devices", "--json"])
        let listed = try JSONSerialization.jsonObject(with: devices.stdoutData) as? [[String: Any]] ?? []
        #expect(devices.status == 0 && listed.contains { $0["source"] as? String == "x11grab::\(display.number)" }, "\(devices.stdout)")

        let payloads = ["MF-LIVE-1", "MF-LIVE-2", "MF-LIVE-3"]
        var pictures: [String] = []
        for (i, payload) in payloads.enumerated() {
            let png = dir.appendingPathComponent("code\(i).png").path
            try ProcessRunner.check("qrencode", ["-o", png, "-s", "8", "-m", "4", payload])
            pictures.append(png)
        }
        let recorder = try capture(dir, ["--source", "x11grab::\(display.number)", "--video-size", "1280x720", "--frame-rate", "30",
                                         "--segment-duration", "2", "--capture-id", "screen", "--scan", "qr"])
        let deadline = Date().addingTimeInterval(15)
        while !recorder.log.contains("\"started\"") && Date() < deadline { usleep(50_000) }
        var shown: [(payload: String, from: Date, to: Date)] = []
        for (payload, picture) in zip(payloads, pictures) {
            let viewer = try display.show(picture, log: dir.appendingPathComponent("feh.log").path)
            let from = Date()
            // Shown for 2 s: how long a code is in the picture is what the test measures.
            sleep(2)
            viewer.kill(SIGKILL)
            _ = viewer.wait(timeout: 5)
            shown.append((payload, from, Date()))
            // Hidden: the next picture once the scanner has said this code is gone.
            #expect(CaptureTests.waitUntil(timeout: 10) {
                CaptureTests.events(recorder.log).contains { $0["event"] as? String == "codeGone" && $0["payload"] as? String == payload }
            }, "\(payload) never went: \(recorder.log)")
        }
        recorder.kill(SIGTERM)
        #expect(recorder.wait(timeout: 20) == 0, "\(recorder.log)")
        let events = CaptureTests.events(recorder.log)
        let finished = try #require(events.last)
        #expect(finished["reason"] as? String == "sessionWasInterrupted", "\(finished)")

        // Live: each code appears once, while it was shown, and goes once it was hidden. (How soon depends on
        // feh drawing its window and on how many frames the scanner keeps up with, which a busy machine
        // makes fewer: it skips frames rather than delay the recording. So the bounds are the code's own
        // two seconds on screen, not a speed.)
        let codes = events.filter { $0["event"] as? String == "code" }, gone = events.filter { $0["event"] as? String == "codeGone" }
        #expect(codes.map { $0["payload"] as? String } == payloads, "\(codes)")
        #expect(gone.map { $0["payload"] as? String } == payloads, "\(gone)")
        let clock = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        for (event, show) in zip(codes, shown) {
            let seen = try clock.parse(event["wallClock"] as? String ?? "")
            #expect(seen.timeIntervalSince(show.from) > -0.05 && seen < show.to,
                    "\(show.payload) seen \(seen.timeIntervalSince(show.from)) s after it was shown, \(show.to.timeIntervalSince(show.from)) s on screen")
            #expect((event["latencyMs"] as? Double ?? 2000) < 2000, "\(event)")
        }
        for (event, show) in zip(gone, shown) {
            let lastSeen = try clock.parse(event["wallClock"] as? String ?? "")
            #expect(lastSeen > show.from && lastSeen.timeIntervalSince(show.to) < 2,
                    "\(show.payload) last seen \(lastSeen.timeIntervalSince(show.to)) s from when it was hidden")
            #expect((event["frames"] as? Int ?? 0) >= 1, "\(event)")
        }
        // Each segment holds the codes seen inside it, at capture times inside it; together, all three.
        let segments = events.filter { $0["event"] as? String == "segment" }
        var inSegments: Set<String> = []
        for segment in segments {
            let start = segment["start"] as? Double ?? 0, end = start + (segment["duration"] as? Double ?? 0)
            for code in segment["codes"] as? [[String: Any]] ?? [] {
                let first = (code["firstTime"] as? [String: Any])?["seconds"] as? Double ?? -1
                let last = (code["lastTime"] as? [String: Any])?["seconds"] as? Double ?? -1
                #expect(first >= start && last < end && first <= last, "\(code) in \(start)..<\(end)")
                inSegments.insert(code["payload"] as? String ?? "")
            }
            #expect(try CaptureTests.frames(segment["path"] as? String ?? "") > 0)
        }
        #expect(inSegments == Set(payloads), "\(segments)")
        let scan = finished["scan"] as? [String: Any]
        #expect((scan?["framesScanned"] as? Int ?? 0) > 0 && scan?["codes"] as? Int == 3, "\(finished)")
    }

    /// A source an MP4 cannot hold as it comes (raw video and PCM from a lavfi graph) is encoded: H.264
    /// and AAC segments, every picture once, the audio as long as the video.
    @Test func aRawSourceIsEncodedIntoSegments() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-raw")
        let recorder = try capture(dir, ["--source", "lavfi:testsrc2=s=640x360:r=30[out0];sine=f=440:r=48000[out1]",
                                         "--segment-duration", "2", "--max-duration", "5", "--capture-id", "raw"])
        #expect(recorder.wait(timeout: 60) == 0, "\(recorder.log)")
        let events = CaptureTests.events(recorder.log)
        #expect((events.first?["streams"] as? [String]) == ["video h264 (encoded)", "audio aac (encoded)"], "\(events.first ?? [:])")
        let segments = events.filter { $0["event"] as? String == "segment" }
        #expect(segments.map { $0["duration"] as? Double } == [2, 2, 1], "\(segments)")
        for segment in segments {
            let path = segment["path"] as? String ?? ""
            let seconds = segment["duration"] as? Double ?? 0
            #expect(try CaptureTests.frames(path) == Int(seconds * 30), "\(path)")
            let codecs = try ProcessRunner.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path])
            #expect(codecs.stdout.split(separator: "\n") == ["h264", "aac"], "\(codecs.stdout)")
            let audio = try Self.audioSeconds(path)
            #expect(abs(audio - seconds) < 0.05, "\(path): \(audio) s of audio for \(seconds) s of video")
        }
    }

    /// The sender stops, then a new one starts within --reconnect-for: the recording goes on, the gap
    /// reported in the event and in the next segment; once no sender comes back within the budget, it
    /// ends deviceWasDisconnected.
    @Test func aDroppedStreamIsReconnectedWithTheGapReported() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-reconnect")
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "2", "--read-timeout", "2",
                                         "--reconnect-for", "6", "--capture-id", "cam"])

        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let first = try CaptureTests.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 4, log: dir.appendingPathComponent("sender1.log").path)
        _ = first.wait(timeout: 20)
        let firstEnded = Date()
        // A drop of 3 s (longer than the read timeout): its length is what the test measures, as the gap.
        sleep(3)
        let second = try CaptureTests.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 4, log: dir.appendingPathComponent("sender2.log").path)
        _ = second.wait(timeout: 20)
        // The gap ends with the second sender's first packet, at least its 4 s of sending (paced in real time:
        // -re) before it ended; its start-up, longer on a busy machine, is part of the gap.
        let secondEnded = Date()
        #expect(recorder.wait(timeout: 40) == 1, "\(recorder.log)")
        let events = CaptureTests.events(recorder.log)
        let finished = try #require(events.last)
        // (A loaded machine can stall a sender past the read timeout too: that is one more reconnection.)
        #expect(finished["reason"] as? String == "deviceWasDisconnected" && (finished["reconnections"] as? Int ?? 0) >= 1, "\(finished)")
        let gaps = events.filter { $0["event"] as? String == "reconnected" }.compactMap { $0["gap"] as? Double }
        let longest = secondEnded.timeIntervalSince(firstEnded) - 4 + 0.5
        #expect(gaps.contains { $0 > 1.5 && $0 < longest }, "gaps \(gaps), at most \(longest) s between the senders' packets")
        #expect(events.filter { $0["event"] as? String == "sourceLost" }.count == gaps.count + 1, "\(recorder.log)")
        let segments = events.filter { $0["event"] as? String == "segment" }
        #expect(segments.compactMap { $0["gapBefore"] as? Double } == gaps, "\(segments)")
        // Capture time goes on across each gap: the segment after it starts where the one before ended, plus the gap.
        for (i, segment) in segments.enumerated().dropFirst() {
            let before = segments[i - 1]
            let expectedStart = (before["start"] as? Double ?? 0) + (before["duration"] as? Double ?? 0) + (segment["gapBefore"] as? Double ?? 0)
            #expect(abs((segment["start"] as? Double ?? 0) - expectedStart) < 0.01, "\(segments)")
        }
        // Both connections' recordings are there: about 4 s each.
        let total = segments.reduce(0) { $0 + ($1["duration"] as? Double ?? 0) }
        #expect(total > 6.5 && total < 8.5, "\(total) s recorded")
        for segment in segments { #expect(try CaptureTests.frames(segment["path"] as? String ?? "") > 0) }
    }

    /// `--config FILE` runs a capture from a JSON file (paths relative to it; options win); a bad file
    /// is a usage error naming the file and the key.
    @Test func aConfigFileRunsACaptureAndBadOnesAreNamed() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-config")
        let config = dir.appendingPathComponent("cam.json")
        try #"{ "source": "lavfi:testsrc2=s=320x240:r=25", "outputDir": "recordings", "captureID": "conf", "segmentDuration": 1, "maxDuration": 3, "maxSize": "1G", "scan": "qr" }"#
            .write(to: config, atomically: true, encoding: .utf8)
        let run = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--config", config.path, "--max-duration", "2", "--json"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let finished = CaptureTests.events(run.stdout).last
        #expect(finished?["duration"] as? Double == 2 && finished?["segments"] as? Int == 2 && finished?["scan"] != nil, "\(run.stdout)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("recordings").path).sorted()
        #expect(names == ["conf-00001.mp4", "conf-00002.mp4"], "\(names)")

        let cases: [(String, String)] = [
            (#"{ "source": "lavfi:testsrc2", "outputDir": "x", "sourc": 1 }"#, #"unknown key "sourc" (did you mean "source"?)"#),
            (#"{ "source": "lavfi:testsrc2", "outputDir": "x", "maxDuration": "long" }"#, "maxDuration"),
            (#"{ "source": "lavfi:testsrc2", "outputDir": "x", "maxSize": true }"#, "maxSize"),
            (#"{ "outputDir": "x" }"#, "no source"),
            ("[1, 2]", "expected a JSON object, found an array"),
            ("\u{0}\u{1}garbage", "invalid JSON at line 1, column 1"),
            ("{ \"source\": \"lavfi:testsrc2\",\n  \"outputDir\": }", "invalid JSON at line 2, column 16"),
            (#"{ "source": "lavfi:testsrc2", "outputDir": "x", "scan": "qr,nope" }"#, "nope"),
        ]
        for (text, expected) in cases {
            try text.write(to: config, atomically: true, encoding: .utf8)
            let bad = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--config", config.path])
            #expect(bad.status == 2 && bad.stderr.contains(config.path) && bad.stderr.contains(expected), "\(text): \(bad.stderr)")
        }
        let missing = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--config", dir.appendingPathComponent("none.json").path])
        #expect(missing.status == 2 && missing.stderr.contains("none.json"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("x").path))
    }

    /// jobs/capture.schema.json and the loader agree: the example config matches the schema and runs
    /// (shortened from the command line), its segments become jobs a coordinator runs; typos are refused.
    @Test func theExampleConfigMatchesTheSchemaAndRuns() throws {
        let schema = TestPaths.packageRoot.appendingPathComponent("jobs/capture.schema.json").path
        let example = TestPaths.packageRoot.appendingPathComponent("jobs/capture")
        let script = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(json.load(open(sys.argv[2])), schema, cls=jsonschema.Draft202012Validator)
        for bad in ({"source": "lavfi:x"}, {"source": "lavfi:x", "outputDir": "o", "sourc": 1},
                    {"source": "lavfi:x", "outputDir": "o", "maxSize": "lots"}, {"source": "lavfi:x", "outputDir": "o", "captureID": "a/b"}):
            try:
                jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)
                sys.exit("the schema accepted " + json.dumps(bad))
            except jsonschema.ValidationError:
                pass
        print(" ".join(sorted(schema["properties"])))
        """
        let r = try ProcessRunner.run("/usr/bin/python3", ["-c", script, schema, example.appendingPathComponent("capture.json").path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == "assemble captureID enqueue frameRate inputFormat levelsEvery maxDuration maxSize minFreeDisk outputDir outputRoots queue readTimeout reconnectFor roi scan segmentDuration segmentMaxBytes segmentWaveforms source stillEvery stillsOnRequest videoSize")
        let site = try TestPaths.makeTemporaryFolder("capture-example")
        try FileManager.default.copyItem(at: example, to: site.appendingPathComponent("capture"))
        let queue = "sqlite:" + site.appendingPathComponent("queue.sqlite").path
        let run = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--config", site.appendingPathComponent("capture/capture.json").path,
                                                                        "--max-duration", "2", "--segment-duration", "1", "--queue", queue, "--json"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(CaptureTests.events(run.stdout).filter { $0["event"] as? String == "enqueued" }.count == 2, "\(run.stdout)")
        let coordinator = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--queue", queue, "--exit-when-idle", "--json"])
        #expect(coordinator.status == 0, "\(coordinator.stdout)\(coordinator.stderr)")
        let reports = try FileManager.default.contentsOfDirectory(atPath: site.appendingPathComponent("capture/reports").path).sorted()
        #expect(reports == ["demo-00001.json", "demo-00002.json"], "\(reports)")
        let sessions = try FileManager.default.contentsOfDirectory(atPath: site.appendingPathComponent("capture/sessions").path)
        #expect(sessions == ["demo-1-2.mp4"], "\(sessions)")
        // Encoded with B-frames, each segment's first picture comes a little after its start: the assembly
        // starts each edit there, so the movie holds every picture of the segments, in order.
        var pictures: [Substring] = []
        for index in 1...2 { pictures += try CaptureTests.pictures(site.appendingPathComponent("capture/segments/demo-0000\(index).mp4").path) }
        let assembled = try CaptureTests.pictures(site.appendingPathComponent("capture/sessions/demo-1-2.mp4").path)
        #expect(assembled.count == 60 && assembled == pictures, "\(assembled.count) pictures assembled, \(pictures.count) in the segments")
    }

    /// The limits end a recording with their reasons: --max-size before the recording exceeds it, and
    /// --min-free-disk on a small file system (a 16 MB tmpfs) before it fills: every segment complete,
    /// nothing half-written, space left.
    @Test func limitsEndTheRecordingWithTheirReasons() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-limits")
        // Noise costs the encoder many bits: megabytes a second.
        let noisy = "lavfi:testsrc2=s=640x360:r=30,noise=alls=40:allf=t[out0]"
        let sized = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", noisy, "--output-dir", dir.appendingPathComponent("sized").path,
                                                                          "--segment-duration", "1", "--max-size", "3M", "--json"])
        #expect(sized.status == 0, "\(sized.stdout)\(sized.stderr)")
        let finished = CaptureTests.events(sized.stdout).last
        #expect(finished?["reason"] as? String == "maximumFileSizeReached" && (finished?["bytes"] as? Int ?? .max) <= 3 << 20
                && (finished?["bytes"] as? Int ?? 0) > 1 << 20, "\(sized.stdout)")

        let small = dir.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let mount = try ProcessRunner.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", small.path])
        try #require(mount.status == 0, "a 16 MB tmpfs for the free-space test: \(mount.stderr)")
        defer { _ = try? ProcessRunner.run("/usr/bin/umount", [small.path]) }
        let full = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", noisy, "--output-dir", small.path,
                                                                         "--segment-duration", "1", "--min-free-disk", "6M", "--json"])
        #expect(full.status == 0, "\(full.stdout)\(full.stderr)")
        let events = CaptureTests.events(full.stdout)
        #expect(events.last?["reason"] as? String == "diskFull" && events.last?["successfullyFinished"] as? Bool == true, "\(full.stdout)")
        #expect(!full.stdout.contains("No space left"), "\(full.stdout)")
        let names = try FileManager.default.contentsOfDirectory(atPath: small.path)
        #expect(!names.isEmpty && names.allSatisfy { $0.hasSuffix(".mp4") && !$0.hasPrefix(".") }, "\(names)")
        for name in names { #expect(try CaptureTests.frames(small.appendingPathComponent(name).path) > 0, "\(name)") }
        var stats = statvfs()
        #expect(statvfs(small.path, &stats) == 0 && Int(stats.f_bavail) * Int(stats.f_frsize) > 2 << 20, "the file system filled up")
    }

    /// A copied (compressed) stream is decoded for scanning on a thread of its own: a QR code shown from
    /// 1 s to 3 s of a live UDP stream is reported at 1 s, gone after 3 s, and lands in the two segments
    /// it spans, with times inside each.
    @Test func codesInACopiedStreamAreReadFromItsOwnDecoding() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-scan-udp")
        let code = dir.appendingPathComponent("code.png").path
        try ProcessRunner.check("qrencode", ["-o", code, "-s", "5", "-m", "4", "MF-UDP-CODE"])
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "2", "--max-duration", "5", "--scan", "qr"])

        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let sender = try Background(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=8",
                                     "-i", code, "-filter_complex", "[0][1]overlay=40:40:enable='between(t,1,2.99)'",
                                     "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-f", "mpegts", "udp://127.0.0.1:\(port)?pkt_size=1316"],
                                    log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(recorder.wait(timeout: 30) == 0, "\(recorder.log)")
        let events = CaptureTests.events(recorder.log)
        let codes = events.filter { $0["event"] as? String == "code" }, gone = events.filter { $0["event"] as? String == "codeGone" }
        #expect(codes.count == 1 && abs((codes.first?["time"] as? Double ?? 0) - 1) < 0.15, "\(codes)")
        #expect(gone.count == 1 && abs((gone.first?["lastTime"] as? Double ?? 0) - 2.967) < 0.15, "\(gone)")
        let segments = events.filter { $0["event"] as? String == "segment" }
        let spans = segments.map { segment -> [Double] in
            guard let code = (segment["codes"] as? [[String: Any]])?.first else { return [] }
            return ["firstTime", "lastTime"].map { ((code[$0] as? [String: Any])?["seconds"] as? Double ?? -1) }
        }
        #expect(spans.count == 3 && spans[2].isEmpty, "\(segments)")
        if spans.count == 3 {
            #expect(abs(spans[0][0] - 1) < 0.15 && abs(spans[0][1] - 1.967) < 0.15 && spans[0][1] < 2, "\(spans)")
            #expect(abs(spans[1][0] - 2) < 0.15 && abs(spans[1][1] - 2.967) < 0.15 && spans[1][0] >= 2, "\(spans)")
        }
        let scan = events.last?["scan"] as? [String: Any]
        #expect((scan?["framesScanned"] as? Int ?? 0) + (scan?["framesNotScanned"] as? Int ?? 0) >= 140, "\(events.last ?? [:])")
    }

    /// MPEG-TS timestamps are 33 bits of 90 kHz: they wrap after 26.5 hours. A stream crossing the wrap
    /// (its clock started 3 s before it) is recorded without a break: segments join, every frame once.
    @Test func anMPEGTSStreamCrossingItsTimestampWrapIsRecordedWhole() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-wrap")
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "2", "--max-duration", "6"])

        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let wrap = Double(1 << 33) / 90_000
        let sender = try Background(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=10",
                                     "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-output_ts_offset", String(format: "%.3f", wrap - 3),
                                     "-f", "mpegts", "udp://127.0.0.1:\(port)?pkt_size=1316"], log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(recorder.wait(timeout: 30) == 0, "\(recorder.log)")
        let segments = CaptureTests.events(recorder.log).filter { $0["event"] as? String == "segment" }
        #expect(segments.map { $0["start"] as? Double } == [0, 2, 4] && segments.map { $0["duration"] as? Double } == [2, 2, 2], "\(recorder.log)")
        let frames = try segments.map { try CaptureTests.frames($0["path"] as? String ?? "") }
        #expect(frames == [60, 60, 60], "\(frames)")
    }

    /// With --reconnect-for, a source not up yet when the capture starts (a TCP server that refuses) is
    /// tried again with backoff until it is.
    @Test func aSourceNotUpYetIsWaitedForWithinTheBudget() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-wait")
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "tcp://127.0.0.1:\(port)", "--reconnect-for", "10", "--max-duration", "2"])
        // A sleep that stays: the source comes up 2 s after the capture started, which is what the test varies
        // (a refused attempt says nothing that a test could wait on); on a busy machine the capture may
        // have made fewer attempts by then, and the 10 s budget still covers the wait.
        sleep(2)
        let sender = try CaptureTests.sender("tcp://127.0.0.1:\(port)?listen=1", seconds: 10, log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(recorder.wait(timeout: 30) == 0, "\(recorder.log)")
        let finished = CaptureTests.events(recorder.log).last
        #expect(finished?["reason"] as? String == "maximumDurationReached" && finished?["duration"] as? Double == 2, "\(recorder.log)")
    }
}
