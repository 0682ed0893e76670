import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm capture` from real live streams: MPEG-TS (H.264 + AAC) sent in real time by `ffmpeg -re`
/// over UDP and TCP on loopback.
@Suite struct CaptureTests {
    /// An `ffmpeg -re` process sending `seconds` of 640x360 30 fps H.264 (a keyframe a second) and AAC (a
    /// tone of `frequency` Hz) to `url`.
    static func sender(_ url: String, seconds: Int, frequency: Int = 440, log: String) throws -> Background {
        try Background(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-re",
                        "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=\(seconds)",
                        "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=48000:duration=\(seconds)",
                        "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac", "-f", "mpegts", url], log: log)
    }

    static func events(_ log: String) -> [[String: Any]] {
        log.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits (up to `timeout` seconds) until `condition` holds; whether it did.
    @discardableResult
    static func waitUntil(timeout: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { return false }
            usleep(50_000)
        }
        return true
    }

    /// The size of the segment being written, `index` of `captureID` in `folder` (0 when not yet begun).
    static func partialBytes(_ folder: URL, _ captureID: String, _ index: Int) -> Int {
        let name = String(format: ".%@-%05d.mp4.partial", captureID, index)
        return ((try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path))?[.size] as? Int) ?? 0
    }

    /// The capture id the `started` event names.
    static func captureID(_ log: String) -> String? {
        events(log).first { $0["event"] as? String == "started" }?["captureID"] as? String
    }

    /// Video frames and duration of a movie, as ffprobe counts them.
    static func frames(_ path: String) throws -> Int {
        let r = try ProcessRunner.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                           "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
        return Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Each decoded picture's MD5, in order (ffmpeg's framemd5, every picture the decoder gives as it is:
    /// not resampled to a constant rate guessed from the timestamps, which can drop or repeat some).
    static func pictures(_ path: String) throws -> [Substring] {
        let r = try ProcessRunner.run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-map", "0:v", "-fps_mode", "passthrough", "-f", "framemd5", "-"])
        return r.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last }
    }

    func capture(_ dir: URL, _ arguments: [String]) throws -> Background {
        try Background([TestPaths.mediafarmExecutable, "capture", "--output-dir", dir.appendingPathComponent("out").path, "--json"] + arguments,
                       log: dir.appendingPathComponent("capture.log").path)
    }

    @Test func aUDPStreamBecomesSegmentsThatJoinExactly() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-udp")
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "4", "--max-duration", "10",
                                         "--capture-id", "cam"])

        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let sender = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 20, log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(recorder.wait(timeout: 40) == 0, "\(recorder.log)")
        let events = Self.events(recorder.log)
        let segments = events.filter { $0["event"] as? String == "segment" }
        let finished = try #require(events.last)
        #expect(finished["event"] as? String == "finished" && finished["reason"] as? String == "maximumDurationReached"
                && finished["successfullyFinished"] as? Bool == true && finished["segments"] as? Int == 3, "\(finished)")
        #expect(segments.map { $0["start"] as? Double } == [0, 4, 8], "\(segments)")
        #expect(segments.map { $0["duration"] as? Double } == [4, 4, 2], "\(segments)")
        // Each segment plays on its own; together they hold every frame of the 10 s once.
        var total = 0
        for (i, segment) in segments.enumerated() {
            let path = try #require(segment["path"] as? String)
            #expect(path.hasSuffix("cam-0000\(i + 1).mp4"))
            total += try Self.frames(path)
        }
        #expect(total == 300, "\(total) frames in the segments")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path).sorted()
        #expect(names == ["cam-00001.mp4", "cam-00002.mp4", "cam-00003.mp4"], "\(names)")
        // Started again with the same id (a service restarted), it goes on after the last segment and replaces none.
        let again = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "4", "--max-duration", "1", "--capture-id", "cam"])
        #expect(again.wait(timeout: 30) == 0, "\(again.log)")
        let after = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path).sorted()
        #expect(after == names + ["cam-00004.mp4"], "\(after)")
        #expect(try Self.frames(dir.appendingPathComponent("out/cam-00001.mp4").path) == 120)
    }

    /// Stills while recording (`--still-every 3`, and SIGUSR1): 12 s of a live UDP stream give a still at 0,
    /// 3, 6 and 9 s of capture and one on request, each the segments' picture at its time (PSNR against the
    /// frame decoded from the segment), with the capture time in EXIF (exiftool reads it back).
    @Test func stillsAreThePicturesOfTheRecordingAtTheirTimes() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-stills")
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "4", "--max-duration", "12",
                                         "--capture-id", "cam", "--still-every", "3"])
        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let sender = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 25, log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        func stills() -> [[String: Any]] { Self.events(recorder.log).filter { $0["event"] as? String == "still" } }
        #expect(Self.waitUntil(timeout: 30) { stills().count >= 2 }, "\(recorder.log)")
        recorder.kill(SIGUSR1)
        #expect(recorder.wait(timeout: 40) == 0, "\(recorder.log)")
        let all = stills()
        let timed = all.filter { $0["reason"] as? String == "every" }
        let requested = all.filter { $0["reason"] as? String == "request" }
        #expect(timed.count == 4 && requested.count == 1, "\(all)")
        let times = timed.compactMap { $0["time"] as? Double }
        #expect(zip(times, [0.0, 3, 6, 9]).allSatisfy { $0 >= $1 && $0 < $1 + 0.1 }, "\(times)")
        let finished = try #require(Self.events(recorder.log).last)
        #expect(finished["stills"] as? Int == 5, "\(finished)")
        let segments = Self.events(recorder.log).filter { $0["event"] as? String == "segment" }
        for still in all {
            let path = try #require(still["path"] as? String)
            let time = try #require(still["time"] as? Double)
            // The segment holding that capture time, and its frame there.
            let segment = try #require(segments.last { ($0["start"] as? Double ?? 99) <= time + 0.0001 })
            let frame = dir.appendingPathComponent("frame-\(still["index"] as? Int ?? 0).png").path
            let made = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["images", "--exact", "--format", "png", "-o", frame,
                                                                            "--at", String(time - (segment["start"] as? Double ?? 0) + 0.001),
                                                                            segment["path"] as? String ?? ""])
            #expect(made.status == 0, "\(made.stderr)")
            func psnr(_ other: String) throws -> Double {
                let r = try ProcessRunner.run("/usr/bin/ffmpeg", ["-v", "info", "-nostdin", "-i", path, "-i", other, "-lavfi", "psnr", "-f", "null", "-"])
                return r.stderr.firstMatch(of: /average:([0-9.]+|inf)/).map { $0.1 == "inf" ? 99 : Double($0.1) ?? 0 } ?? 0
            }
            #expect(try psnr(frame) >= 30, "\(path) against the segment's frame at \(time) s")
            let exif = try ProcessRunner.run("/usr/bin/exiftool", ["-json", "-DateTimeOriginal", "-SubSecTimeOriginal", "-OffsetTimeOriginal",
                                                                   "-ImageDescription", "-Software", path])
            let tags = (try JSONSerialization.jsonObject(with: Data(exif.stdout.utf8)) as? [[String: Any]])?.first ?? [:]
            let wallClock = try #require((still["wallClock"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
            let f = DateFormatter()
            (f.locale, f.timeZone, f.dateFormat) = (Locale(identifier: "en_US_POSIX"), TimeZone(identifier: "UTC"), "yyyy:MM:dd HH:mm:ss")
            #expect(tags["DateTimeOriginal"] as? String == f.string(from: wallClock) && tags["OffsetTimeOriginal"] as? String == "+00:00",
                    "\(tags) \(still)")
            #expect((tags["ImageDescription"] as? String)?.contains("udp://127.0.0.1:\(port)") == true && tags["Software"] as? String == "MediaFarm",
                    "\(tags)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path).filter { $0.contains("still") }.sorted()
        #expect(names == (1...5).map { String(format: "cam-still-%04d.jpg", $0) }, "\(names)")
    }

    /// `--levels-every 0.5` on a live UDP stream whose tone (1/8 of full scale: -21.1 dB RMS, -18.1 dB peak) is
    /// on for 2 s, off for 2 s: the levels events follow it.
    @Test func levelsFollowAToneSwitchedOnAndOff() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-levels")
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "4", "--max-duration", "8",
                                         "--capture-id", "cam", "--levels-every", "0.5", "--segment-waveforms"])
        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let sender = try Background(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-re",
                                     "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=20",
                                     "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=20,volume='lt(mod(t,4),2)':eval=frame",
                                     "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac", "-f", "mpegts",
                                     "udp://127.0.0.1:\(port)?pkt_size=1316"], log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(recorder.wait(timeout: 40) == 0, "\(recorder.log)")
        let levels = Self.events(recorder.log).filter { $0["event"] as? String == "levels" && ($0["duration"] as? Double ?? 0) > 0.45 }
        #expect(levels.count >= 15, "\(levels)")
        // Half seconds of tone (AAC's onset may overshoot the peak a little), of silence, and at most one
        // half second at each switch that holds some of both (the codec's delay smears the edge).
        let loud = levels.filter { ($0["averageDB"] as? Double ?? -999) > -30 }
        let quiet = levels.filter { ($0["averageDB"] as? Double ?? 0) < -60 }
        let between = levels.count - loud.count - quiet.count
        #expect(loud.count >= 6 && quiet.count >= 4 && between <= 4, "loud \(loud.count), quiet \(quiet.count), between \(between): \(levels)")
        for level in loud {
            let average = level["averageDB"] as? Double ?? 0, peak = level["peakDB"] as? Double ?? 0
            #expect(abs(average + 21.1) < 1.5 && peak > -19.5 && peak < -15, "\(level)")
        }
        // The tone and the silence alternate every 2 s: every 4 s of levels hold both.
        for window in stride(from: 0.0, to: 4.0, by: 4) {
            let inside = levels.filter { ($0["time"] as? Double ?? -1) >= window && ($0["time"] as? Double ?? -1) < window + 4 }
            #expect(inside.contains { ($0["averageDB"] as? Double ?? -999) > -30 } && inside.contains { ($0["averageDB"] as? Double ?? 0) < -60 },
                    "\(inside)")
        }
        #expect(levels.allSatisfy { ($0["channels"] as? [[String: Any]])?.count == 1 }, "\(levels)")
        // Each finished segment's waveform: its peaks are the tone's, then silence's, as the levels were.
        let waveforms = Self.events(recorder.log).filter { $0["event"] as? String == "waveform" }
        let segments = Self.events(recorder.log).filter { $0["event"] as? String == "segment" }
        #expect(segments.count == 2)
        #expect(waveforms.compactMap { $0["segment"] as? Int } == segments.compactMap { $0["index"] as? Int }, "\(recorder.log)")
        let first = try #require(waveforms.first?["peaks"] as? String)
        let peaks = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: first))) as? [String: Any])
        let data = peaks["data"] as? [Int] ?? []
        let columns = data.count / 2
        #expect(columns == 80, "\(columns) columns for 4 s")
        let loudest = (0..<columns).map { max(abs(data[2 * $0]), abs(data[2 * $0 + 1])) }
        #expect(loudest[5..<35].allSatisfy { $0 > 3000 } && loudest[45..<75].allSatisfy { $0 == 0 }, "\(loudest)")
        #expect(FileManager.default.fileExists(atPath: waveforms.first?["path"] as? String ?? ""))
    }

    @Test func aTCPStreamIsRecordedAndSIGTERMFinishesTheLastSegment() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-tcp")
        let port = TestPaths.freeLoopbackPort()
        let sender = try Self.sender("tcp://127.0.0.1:\(port)?listen=1", seconds: 30, log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(TestPaths.waitForListener(port: port, udp: false), "the sender never listened on \(port)")
        let recorder = try capture(dir, ["--source", "tcp://127.0.0.1:\(port)", "--segment-duration", "2", "--capture-id", "cam"])
        let deadline = Date().addingTimeInterval(20)
        while Self.events(recorder.log).filter({ $0["event"] as? String == "segment" }).count < 2 && Date() < deadline { usleep(100_000) }
        // Part of the third segment written, then SIGTERM.
        #expect(Self.waitUntil { Self.partialBytes(dir.appendingPathComponent("out"), "cam", 3) > 0 }, "\(recorder.log)")
        recorder.kill(SIGTERM)
        #expect(recorder.wait(timeout: 20) == 0, "\(recorder.log)")
        let events = Self.events(recorder.log)
        let finished = try #require(events.last)
        #expect(finished["reason"] as? String == "sessionWasInterrupted" && finished["successfullyFinished"] as? Bool == true, "\(finished)")
        let segments = events.filter { $0["event"] as? String == "segment" }
        #expect(segments.count >= 3 && finished["segments"] as? Int == segments.count, "\(events)")
        for segment in segments {
            let path = try #require(segment["path"] as? String)
            let expected = Int(((segment["duration"] as? Double ?? 0) * 30).rounded())
            #expect(try Self.frames(path) == expected, "\(path)")
        }
        let partials = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path).filter { $0.hasPrefix(".") }
        #expect(partials.isEmpty, "\(partials)")
    }

    /// The sender dies: after the read timeout the recording ends `deviceWasDisconnected` (exit 1) with
    /// what was recorded complete.
    @Test func aSourceThatStopsSendingEndsTheRecording() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-drop")
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "60", "--read-timeout", "1.5"])

        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let sender = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 30, log: dir.appendingPathComponent("sender.log").path)
        // Recording: part of the first segment written, then the source stops sending.
        #expect(Self.waitUntil { Self.partialBytes(dir.appendingPathComponent("out"), Self.captureID(recorder.log) ?? "", 1) > 20_000 },
                "nothing recorded: \(recorder.log)")
        sender.kill(SIGKILL)
        _ = sender.wait(timeout: 5)
        #expect(recorder.wait(timeout: 20) == 1, "\(recorder.log)")
        let finished = try #require(Self.events(recorder.log).last)
        #expect(finished["reason"] as? String == "deviceWasDisconnected" && finished["segments"] as? Int == 1, "\(finished)")
        let segment = try #require(Self.events(recorder.log).first { $0["event"] as? String == "segment" })
        #expect(try Self.frames(segment["path"] as? String ?? "") > 30)
    }

    /// `--enqueue`: each finished segment becomes a job once (key capture:ID:INDEX), within 100 ms of its
    /// close, journaled first; a coordinator then processes them like any job.
    @Test func finishedSegmentsFeedTheQueue() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-queue")
        let templates = dir.appendingPathComponent("templates")
        try FileManager.default.createDirectory(at: templates, withIntermediateDirectories: true)
        try #"{ "version": 1, "name": "check-{captureID}-{index}", "input": "{input}", "report": "reports/{stem}.json" }"#
            .write(to: templates.appendingPathComponent("segment.json"), atomically: true, encoding: .utf8)
        let queue = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "3", "--max-duration", "6",
                                         "--capture-id", "cam", "--enqueue", templates.appendingPathComponent("segment.json").path,
                                         "--queue", queue])
        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let sender = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 10, log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(recorder.wait(timeout: 40) == 0, "\(recorder.log)")
        let enqueued = Self.events(recorder.log).filter { $0["event"] as? String == "enqueued" }
        #expect(enqueued.map { $0["index"] as? Int } == [1, 2], "\(recorder.log)")
        // Each queued before the next segment ends (its 3 s): the enqueue does not wait for the recording.
        #expect(enqueued.allSatisfy { ($0["latencyMs"] as? Double ?? 3000) < 3000 }, "\(enqueued)")
        let journal = try String(contentsOfFile: dir.appendingPathComponent("out/.cam.journal").path, encoding: .utf8)
        #expect(journal.split(separator: "\n").count == 4, "\(journal)")
        let run = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--queue", queue, "--exit-when-idle", "--json"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        for index in 1...2 {
            let report = templates.appendingPathComponent("reports/cam-0000\(index).json").path
            #expect(FileManager.default.fileExists(atPath: report), "no report for segment \(index)")
        }
        // The same segments offered again (a restarted capture, a retry) are not queued twice.
        let status = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["status", "--queue", queue, "--json"])
        let jobs = try JSONSerialization.jsonObject(with: status.stdoutData) as? [[String: Any]] ?? []
        #expect(jobs.count == 2 && jobs.allSatisfy { $0["state"] as? String == "succeeded" }, "\(jobs)")
        // Each segment is in the asset library, with its job.
        let library = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "list", "--json", "--queue", queue])
        let assets = (try JSONSerialization.jsonObject(with: library.stdoutData) as? [String: Any])?["assets"] as? [[String: Any]] ?? []
        #expect(Set(assets.compactMap { ($0["path"] as? String).map { ($0 as NSString).lastPathComponent } }) == ["cam-00001.mp4", "cam-00002.mp4"],
                "\(library.stdout)\(library.stderr)")
        for asset in assets {
            let shown = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "show", "--json", "--queue", queue, asset["id"] as? String ?? ""])
            #expect((try JSONSerialization.jsonObject(with: shown.stdoutData) as? [String: Any])?["jobs"] as? [Int] != [], "\(shown.stdout)")
        }
    }

    /// A queue that cannot be reached: the recording goes on, its segments and its assembly wait in the
    /// journal, exit 1 says so; the next capture into the folder, with the queue up, enqueues them in
    /// order (the assembly after the segments' jobs), then its own.
    @Test func segmentsWaitInTheJournalWhenTheQueueIsDown() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-journal")
        let template = dir.appendingPathComponent("segment.json")
        try #"{ "version": 1, "input": "{input}", "report": "reports/{stem}.json" }"#.write(to: template, atomically: true, encoding: .utf8)
        let assemble = dir.appendingPathComponent("assemble.json")
        try #"{ "version": 1, "name": "session-{captureID}-{first}", "export": { "mode": "passthrough", "output": "sessions/{captureID}-{first}-{last}.mp4" } }"#
            .write(to: assemble, atomically: true, encoding: .utf8)
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "2", "--max-duration", "4",
                                         "--capture-id", "cam", "--enqueue", template.path, "--assemble", assemble.path,
                                         "--queue", "postgres://farm@127.0.0.1:1/farm?connect_timeout=1"])
        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let sender = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 8, log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(recorder.wait(timeout: 60) == 1, "\(recorder.log)")
        #expect(recorder.log.contains("2 segments were not enqueued"), "\(recorder.log)")
        #expect(recorder.log.contains("the assembly was not enqueued (the queue did not answer)"), "\(recorder.log)")
        let journal = try String(contentsOfFile: dir.appendingPathComponent("out/.cam.journal").path, encoding: .utf8)
        let entries = journal.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(entries.count == 3 && entries.allSatisfy { $0["job"] == nil } && entries.map { $0["index"] as? Int } == [1, 2, 1], "\(journal)")
        #expect(entries.last?["assembly"] != nil, "\(journal)")
        #expect(Self.events(recorder.log).contains { $0["event"] as? String == "finished" && $0["successfullyFinished"] as? Bool == true })

        // The queue answers now: the next capture into the folder enqueues what waited, then its own.
        let queue = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        let next = try capture(dir, ["--source", "lavfi:testsrc2=s=160x120:r=10", "--segment-duration", "1", "--max-duration", "1",
                                     "--capture-id", "cam", "--enqueue", template.path, "--assemble", assemble.path, "--queue", queue])
        #expect(next.wait(timeout: 60) == 0, "\(next.log)")
        let queued = Self.events(next.log).filter { ["enqueued", "assembly"].contains($0["event"] as? String) }
        #expect(queued.map { "\($0["event"] ?? "")-\($0["index"] ?? $0["first"] ?? "")" } == ["enqueued-1", "enqueued-2", "assembly-1", "enqueued-3", "assembly-3"],
                "\(next.log)")
        #expect(queued.filter { $0["event"] as? String == "assembly" }.map { $0["after"] as? Int } == [2, 1], "\(queued)")
        let run = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--queue", queue, "--exit-when-idle", "--json"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        for name in ["cam-1-2.mp4", "cam-3-3.mp4"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("sessions/" + name).path), "no \(name): \(run.stdout)")
        }
    }

    /// A journal damaged since an earlier recording: the capture stops at once, naming the file and the
    /// line, exit 1, and queues nothing (read as empty, it would queue every segment again).
    @Test func aDamagedJournalStopsTheCaptureBeforeAnythingIsQueued() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-damaged-journal")
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: out.appendingPathComponent("cam-00001.mp4").path, contents: Data())
        try "{\"captureID\":\"cam\",\"index\":1,\"path\":\"x\",\"job\":3}\n{\"captureID\":\"cam\",\"ind\n"
            .write(to: out.appendingPathComponent(".cam.journal"), atomically: true, encoding: .utf8)
        let template = dir.appendingPathComponent("segment.json")
        try #"{ "version": 1, "input": "{input}", "report": "reports/{stem}.json" }"#.write(to: template, atomically: true, encoding: .utf8)
        let queue = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        let recorder = try capture(dir, ["--source", "lavfi:testsrc2=s=160x120:r=10", "--segment-duration", "1", "--max-duration", "1",
                                         "--capture-id", "cam", "--enqueue", template.path, "--queue", queue])
        #expect(recorder.wait(timeout: 60) == 1, "\(recorder.log)")
        #expect(recorder.log.contains(out.appendingPathComponent(".cam.journal").path + ", line 2: not a journal entry"), "\(recorder.log)")
        #expect(!Self.events(recorder.log).contains { ["enqueued", "segment", "started"].contains($0["event"] as? String) }, "\(recorder.log)")
        let status = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["status", "--queue", queue, "--json"])
        #expect(!status.stdout.contains("\"id\""), "\(status.stdout)")
    }

    /// `--assemble`: when the recording ends, one job joins its segments, after all their jobs. A UDP
    /// stream that drops for 3 s in the middle gives one movie lasting exactly the segments' sum, with the
    /// segments' pictures in order (no frame lost or repeated at a join), the gap reported where it falls
    /// in the movie, and the movie in the library with the segments as its sources.
    @Test func aRecordingWithADropIsAssembledIntoOneMovie() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-assemble")
        let template = dir.appendingPathComponent("segment.json")
        try #"{ "version": 1, "input": "{input}", "report": "reports/{stem}.json" }"#.write(to: template, atomically: true, encoding: .utf8)
        let assemble = dir.appendingPathComponent("assemble.json")
        try #"{ "version": 1, "name": "session-{captureID}", "export": { "mode": "passthrough", "output": "sessions/{captureID}-{date}.mp4" } }"#
            .write(to: assemble, atomically: true, encoding: .utf8)
        let queue = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "2", "--read-timeout", "1.5",
                                         "--reconnect-for", "8", "--capture-id", "cam", "--enqueue", template.path,
                                         "--assemble", assemble.path, "--queue", queue])
        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let first = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 5, log: dir.appendingPathComponent("sender1.log").path)
        _ = first.wait(timeout: 20)
        let firstEnded = Date()
        // A drop of 3 s (longer than the read timeout): its length is what the test measures, as the gap.
        sleep(3)
        // (Another tone: segments of the two connections are different files, so different assets.)
        let second = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 5, frequency: 660, log: dir.appendingPathComponent("sender2.log").path)
        _ = second.wait(timeout: 20)
        // The gap ends with the second sender's first packet, at least its 5 s of sending (paced in real time:
        // -re) before it ended; its start-up, longer on a busy machine, is part of the gap.
        let secondEnded = Date()
        // The source is gone for good: the recording ends deviceWasDisconnected (exit 1), and is assembled all the same.
        #expect(recorder.wait(timeout: 40) == 1, "\(recorder.log)")
        let events = Self.events(recorder.log)
        let segments = events.filter { $0["event"] as? String == "segment" }
        let gaps = events.filter { $0["event"] as? String == "reconnected" }.compactMap { $0["gap"] as? Double }
        let longest = secondEnded.timeIntervalSince(firstEnded) - 5 + 0.5
        #expect(gaps.contains { $0 > 1.5 && $0 < longest }, "gaps \(gaps), at most \(longest) s between the senders' packets")
        let assembly = try #require(events.first { $0["event"] as? String == "assembly" }, "\(recorder.log)")
        let total = segments.reduce(0) { $0 + ($1["duration"] as? Double ?? 0) }
        #expect(total > 8.5 && total < 10.5, "\(total) s recorded")
        #expect(assembly["first"] as? Int == 1 && assembly["last"] as? Int == segments.count && assembly["segments"] as? Int == segments.count
                && assembly["after"] as? Int == segments.count, "\(assembly)")
        #expect(abs((assembly["duration"] as? Double ?? 0) - total) < 1e-6, "\(assembly)")
        // Each gap where it falls in the movie: after the segments before it.
        var expected: [[String: Double]] = []
        var at = 0.0
        for segment in segments {
            if let gap = segment["gapBefore"] as? Double { expected.append(["before": Double(segment["index"] as? Int ?? 0), "at": at, "duration": gap]) }
            at += segment["duration"] as? Double ?? 0
        }
        let reported = (assembly["gaps"] as? [[String: Any]] ?? []).map {
            ["before": Double($0["beforeSegment"] as? Int ?? 0), "at": $0["at"] as? Double ?? -1, "duration": $0["duration"] as? Double ?? -1]
        }
        #expect(!reported.isEmpty && reported == expected && reported.map { $0["duration"]! } == gaps, "\(reported) vs \(expected), gaps \(gaps)")
        let job = try #require(assembly["job"] as? Int)
        let waiting = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["status", "--queue", queue, "--json", String(job)])
        let view = (try JSONSerialization.jsonObject(with: waiting.stdoutData) as? [[String: Any]])?.first
        #expect(view?["state"] as? String == "waiting" && (view?["after"] as? [Int])?.count == segments.count, "\(waiting.stdout)\(waiting.stderr)")

        let run = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--queue", queue, "--exit-when-idle", "--json"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let sessions = dir.appendingPathComponent("sessions")
        let names = try FileManager.default.contentsOfDirectory(atPath: sessions.path)
        #expect(names.count == 1, "\(names)")
        let movie = sessions.appendingPathComponent(names.first ?? "").path
        let probe = try ProcessRunner.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", movie])
        let duration = Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(duration - total) < 0.001, "\(movie): \(duration) s, the segments' sum \(total) s")
        // The same pictures as the segments', in order: nothing lost or repeated at a join.
        var joined: [Substring] = []
        for segment in segments { joined += try Self.pictures(segment["path"] as? String ?? "") }
        let assembled = try Self.pictures(movie)
        #expect(assembled.count == joined.count && assembled == joined, "\(assembled.count) pictures assembled, \(joined.count) in the segments")
        #expect(abs(Double(assembled.count) - total * 30) < 0.5, "\(assembled.count) pictures for \(total) s at 30 fps")
        // In the library, made from the segments.
        let list = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "list", "--json", "--queue", queue])
        let assets = (try JSONSerialization.jsonObject(with: list.stdoutData) as? [String: Any])?["assets"] as? [[String: Any]] ?? []
        let segmentIDs = Set(assets.filter { ($0["path"] as? String)?.contains("/out/cam-") == true }.compactMap { $0["id"] as? String })
        let movieID = try #require(assets.first { $0["path"] as? String == movie }?["id"] as? String, "\(list.stdout)")
        let shown = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "show", "--json", "--queue", queue, movieID])
        let derived = (try JSONSerialization.jsonObject(with: shown.stdoutData) as? [String: Any])?["derivedFrom"] as? [[String: Any]] ?? []
        #expect(segmentIDs.count == segments.count && Set(derived.compactMap { $0["source"] as? String }) == segmentIDs, "\(shown.stdout)")
    }

    /// An assembly template that gives its own input or edits, has no export, or comes without
    /// --enqueue is refused before anything is recorded (exit 2, naming the template and the way out).
    @Test func badAssemblyTemplatesAreRefusedBeforeRecording() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-assemble-bad")
        let segment = dir.appendingPathComponent("segment.json")
        try #"{ "version": 1, "input": "{input}" }"#.write(to: segment, atomically: true, encoding: .utf8)
        let cases: [(template: String, enqueue: Bool, says: String)] = [
            (#"{ "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "s.mp4" } }"#, true, "the capture supplies"),
            (#"{ "version": 1, "input": "{input}", "export": { "mode": "passthrough", "output": "s.mp4" } }"#, true, "unknown placeholder {input}"),
            (#"{ "version": 1, "edits": [], "export": { "mode": "passthrough", "output": "s.mp4" } }"#, true, "the capture supplies"),
            (#"{ "version": 1, "report": "r-{captureID}.json" }"#, true, "no \"export\""),
            (#"{ "version": 1, "export": { "mode": "passthrough", "output": "s-{stem}.mp4" } }"#, true, "unknown placeholder {stem}"),
            (#"{ "version": 1, "export": { "mode": "passthrough", "output": "/proc/s.mp4" } }"#, true, "outside the output roots (\(dir.path)); to write there, give --output-root FOLDER"),
            (#"{ "version": 1, "export": { "mode": "passthrough", "output": "s.mp4" } }"#, false, "--assemble needs --enqueue"),
        ]
        for (i, item) in cases.enumerated() {
            let template = dir.appendingPathComponent("assemble\(i).json")
            try item.template.write(to: template, atomically: true, encoding: .utf8)
            let enqueue = item.enqueue ? ["--enqueue", segment.path] : []
            let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", "lavfi:testsrc2=s=160x120:r=10", "--max-duration", "1",
                                                                          "--output-dir", dir.appendingPathComponent("out").path, "--capture-id", "cam",
                                                                          "--assemble", template.path, "--queue", "sqlite:" + dir.appendingPathComponent("q.sqlite").path]
                                                                         + enqueue)
            #expect(r.status == 2 && r.stderr.contains(item.says), "case \(i): \(r.status) \(r.stderr)")
        }
        let recorded = (try? FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path)) ?? []
        #expect(recorded.filter { $0.hasSuffix(".mp4") }.isEmpty, "\(recorded)")
    }

    /// A template that gives an invalid manifest is a permanent error: each segment is reported once, with
    /// the reason, and set aside (never retried, never holding up the recording or later segments); the
    /// summary says so instead of blaming the queue; exit 1.
    @Test func aTemplateThatGivesAnInvalidManifestIsReportedOncePerSegment() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-bad-template")
        let template = dir.appendingPathComponent("segment.json")
        try #"{ "version": 1, "input": "{input}", "export": { "mode": "passthrough", "output": "/proc/{stem}.mp4" } }"#
            .write(to: template, atomically: true, encoding: .utf8)
        let queue = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        let recorder = try capture(dir, ["--source", "lavfi:testsrc2=s=160x120:r=10", "--segment-duration", "1", "--max-duration", "3",
                                         "--capture-id", "cam", "--enqueue", template.path, "--queue", queue])
        #expect(recorder.wait(timeout: 60) == 1, "\(recorder.log)")
        let events = Self.events(recorder.log)
        let segments = events.filter { $0["event"] as? String == "segment" }.compactMap { $0["index"] as? Int }
        let refusals = events.compactMap { $0["message"] as? String }.filter { $0.hasPrefix("segment ") && $0.contains(": not enqueued: the template gives an invalid manifest") }
        #expect(segments == [1, 2, 3] && refusals.count == 3, "\(recorder.log)")
        for index in segments { #expect(refusals.filter { $0.hasPrefix("segment \(index):") }.count == 1, "\(refusals)") }
        #expect(refusals.allSatisfy { $0.contains("outside the output roots") }, "\(refusals)")
        #expect(recorder.log.contains("3 segments were not enqueued: the template gives an invalid manifest"), "\(recorder.log)")
        #expect(!recorder.log.contains("did not answer") && !recorder.log.contains("trying again"), "\(recorder.log)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("queue.sqlite").path), "no job was made, so no queue")
    }

    /// A journal that cannot be written (here: the journal's name links to /dev/full, a disk that is
    /// always full) is an error event at once and exit 1, while the recording and the queue go on; and a
    /// recording into a 1 MB file system ends with exit 1 and nothing half-written.
    @Test func aJournalThatCannotBeKeptIsAnErrorAndExit1() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-journal-full")
        let template = dir.appendingPathComponent("segment.json")
        try #"{ "version": 1, "input": "{input}", "report": "reports/{stem}.json" }"#.write(to: template, atomically: true, encoding: .utf8)
        let queue = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent(".cam.journal").path, withDestinationPath: "/dev/full")
        let recorder = try capture(dir, ["--source", "lavfi:testsrc2=s=160x120:r=10", "--segment-duration", "1", "--max-duration", "2",
                                         "--capture-id", "cam", "--enqueue", template.path, "--queue", queue])
        #expect(recorder.wait(timeout: 60) == 1, "\(recorder.log)")
        let events = Self.events(recorder.log)
        let errors = events.filter { $0["event"] as? String == "error" }.compactMap { $0["message"] as? String }
        #expect(errors.count == 2 && errors.allSatisfy { $0.contains(".cam.journal") && $0.contains("No space left on device") }, "\(recorder.log)")
        #expect(errors.first?.contains("the capture will exit 1") == true, "\(errors)")
        #expect(events.filter { $0["event"] as? String == "enqueued" }.count == 2, "the queue still gets the segments: \(recorder.log)")

        let small = dir.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let mount = try ProcessRunner.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", small.path])
        try #require(mount.status == 0, "a 1 MB tmpfs: \(mount.stderr)")
        defer { _ = try? ProcessRunner.run("/usr/bin/umount", [small.path]) }
        let full = try Background([TestPaths.mediafarmExecutable, "capture", "--output-dir", small.path, "--json",
                                   "--source", "lavfi:testsrc2=s=640x360:r=30,noise=alls=40:allf=t[out0]", "--segment-duration", "1",
                                   "--max-duration", "20", "--capture-id", "cam", "--enqueue", template.path, "--queue", queue],
                                  log: dir.appendingPathComponent("full.log").path)
        #expect(full.wait(timeout: 60) == 1, "\(full.log)")
        let end = Self.events(full.log).last { $0["event"] as? String == "finished" }
        #expect(end?["reason"] as? String == "diskFull" && end?["successfullyFinished"] as? Bool == false, "\(full.log)")
        #expect((end?["message"] as? String)?.contains("No space left on device") == true, "\(full.log)")
        // No final name holds a half-written movie: what the disk could not take stays under its partial
        // name, and the next capture into the folder (here, a copy of it with room) salvages it.
        let names = try FileManager.default.contentsOfDirectory(atPath: small.path)
        for name in names where !name.hasPrefix(".") {
            #expect(try Self.frames(small.appendingPathComponent(name).path) > 0, "\(name) is whole")
        }
        let partials = names.filter { $0.hasSuffix(".mp4.partial") }
        #expect(!partials.isEmpty && names.allSatisfy { !$0.hasPrefix(".") || $0.hasSuffix(".mp4.partial") || $0.hasSuffix(".journal") }, "\(names)")
        let roomy = dir.appendingPathComponent("roomy")
        try FileManager.default.createDirectory(at: roomy, withIntermediateDirectories: true)
        for name in partials { try FileManager.default.copyItem(at: small.appendingPathComponent(name), to: roomy.appendingPathComponent(name)) }
        let next = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--output-dir", roomy.path, "--json", "--capture-id", "cam2",
                                                                         "--source", "lavfi:testsrc2=s=160x120:r=10", "--max-duration", "1"])
        #expect(next.status == 0, "\(next.stdout)\(next.stderr)")
        let salvaged = Self.events(next.stdout).filter { $0["event"] as? String == "salvaged" }
        #expect(salvaged.count == partials.count, "\(next.stdout)")
        for event in salvaged {
            #expect(try Self.frames(event["path"] as? String ?? "") > 0, "\(event)")
        }
    }

    /// `kill -9` at random moments, each followed by a restart into the same folder: every unfinished
    /// segment is salvaged (it plays) or quarantined with its reason, none is left behind, and every
    /// segment becomes exactly one job.
    @Test func killedRecordingsAreSalvagedAndEachSegmentQueuedOnce() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-kill")
        let template = dir.appendingPathComponent("segment.json")
        try #"{ "version": 1, "input": "{input}", "report": "reports/{stem}.json" }"#.write(to: template, atomically: true, encoding: .utf8)
        let queue = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        let port = TestPaths.freeLoopbackPort()
        let sender = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 120, log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        var random = SeededRandom(state: 0xC0FFEE)
        var logs = ""
        for round in 0..<10 {
            let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "1", "--capture-id", "cam\(round)",
                                             "--enqueue", template.path, "--queue", queue])
            // Killed at a random moment once it records (on a busy machine its start takes a while of its own).
            #expect(Self.waitUntil(timeout: 60) { Self.events(recorder.log).contains { $0["event"] as? String == "started" } }, "round \(round): \(recorder.log)")
            usleep(UInt32(1_500_000 + Int(random.next() % 2_000_000)))
            recorder.kill(round == 9 ? SIGTERM : SIGKILL)
            _ = recorder.wait(timeout: 20)
            logs += recorder.log
            try? FileManager.default.removeItem(atPath: recorder.logPath)
        }
        // A last start salvages what the last kill left and queues anything still waiting.
        let last = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--segment-duration", "1", "--capture-id", "cam10", "--max-duration", "1",
                                     "--enqueue", template.path, "--queue", queue])
        #expect(last.wait(timeout: 30) == 0, "\(last.log)")
        logs += last.log
        let out = dir.appendingPathComponent("out").path
        let names = try FileManager.default.contentsOfDirectory(atPath: out)
        #expect(!names.contains { $0.hasSuffix(".partial") || $0.hasSuffix(".salvage") }, "\(names)")
        let segments = names.filter { $0.hasSuffix(".mp4") }.sorted()
        #expect(segments.count >= 10, "\(names)")
        for name in segments { #expect(try Self.frames(out + "/" + name) > 0, "\(name) does not play") }
        let quarantined = (try? FileManager.default.contentsOfDirectory(atPath: out + "/quarantine")) ?? []
        #expect(quarantined.filter { $0.hasSuffix(".partial") }.count * 2 == quarantined.count, "\(quarantined)")
        let salvaged = Self.events(logs).filter { $0["event"] as? String == "salvaged" }
        #expect(salvaged.count + quarantined.count / 2 >= 6, "kills left \(salvaged.count) salvaged and \(quarantined.count / 2) quarantined segments\n\(logs)")
        // One job per segment file, keyed by its capture and index (SQLite's own CLI reads the queue).
        let keys = try ProcessRunner.run("/usr/bin/sqlite3", [dir.appendingPathComponent("queue.sqlite").path, "SELECT unique_key FROM jobs ORDER BY unique_key"])
        let expected = segments.map { name -> String in
            let stem = name.dropLast(4), dash = stem.lastIndex(of: "-")!
            return "capture:\(stem[..<dash]):\(Int(stem[stem.index(after: dash)...])!)"
        }.sorted()
        #expect(keys.stdout.split(separator: "\n").map(String.init) == expected, "\(keys.stdout) for \(segments)")
    }

    @Test func badSourcesAreNamedWithinTheirTimeout() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-bad")
        let usage = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", "webcam", "--output-dir", dir.path])
        #expect(usage.status == 2 && usage.stderr.contains("--source webcam"), "\(usage.stderr)")
        let scheme = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", "ftp://x/y", "--output-dir", dir.path])
        #expect(scheme.status == 2 && scheme.stderr.contains("not a live stream URL"), "\(scheme.stderr)")
        let started = Date()
        let url = "udp://127.0.0.1:\(TestPaths.freeLoopbackPort())"
        let silent = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", url, "--output-dir", dir.path,
                                                                           "--read-timeout", "1", "--json"])
        #expect(silent.status == 1 && Date().timeIntervalSince(started) < 15)
        let finished = Self.events(silent.stdout).last
        #expect(finished?["reason"] as? String == "noDataCaptured" && (finished?["message"] as? String)?.contains(url) == true, "\(silent.stdout)")
        // A server that refuses the connection: named at once.
        let refusedAt = Date()
        let refused = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", "tcp://127.0.0.1:1", "--output-dir", dir.path, "--json"])
        #expect(refused.status == 1 && refused.stdout.contains("tcp://127.0.0.1:1") && Date().timeIntervalSince(refusedAt) < 5, "\(refused.stdout)")
        // Garbage bytes on the port: not a stream; named, exit 1, within the timeout.
        let garbagePort = TestPaths.freeLoopbackPort()
        let garbage = try Background(["/usr/bin/python3", "-c", "import os, socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                                      + "for _ in range(20000):\n    s.sendto(os.urandom(1316), ('127.0.0.1', \(garbagePort)))\n    time.sleep(0.0005)"],
                                     log: dir.appendingPathComponent("../garbage-sender.log").standardizedFileURL.path)
        defer { garbage.kill(SIGKILL); _ = garbage.wait(timeout: 5) }
        let noise = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", "udp://127.0.0.1:\(garbagePort)", "--output-dir", dir.path,
                                                                          "--read-timeout", "2", "--json"])
        #expect(noise.status == 1 && noise.stdout.contains("udp://127.0.0.1:\(garbagePort)"), "\(noise.stdout)")
        #expect(Self.events(noise.stdout).last?["reason"] as? String == "noDataCaptured", "\(noise.stdout)")
        let device = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["capture", "--source", "v4l2:/dev/video99", "--output-dir", dir.path, "--json"])
        #expect(device.status == 1 && device.stdout.contains("/dev/video99"), "\(device.stdout)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    /// Below the free-space floor the recording does not start writing: diskFull, nothing left behind.
    @Test func theFreeSpaceFloorStopsTheRecording() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-disk")
        let port = TestPaths.freeLoopbackPort()
        let recorder = try capture(dir, ["--source", "udp://127.0.0.1:\(port)", "--min-free-disk", "1000000T"])

        #expect(TestPaths.waitForListener(port: port), "the capture never listened on \(port)")
        let sender = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 10, log: dir.appendingPathComponent("sender.log").path)
        defer { sender.kill(SIGKILL); _ = sender.wait(timeout: 5) }
        #expect(recorder.wait(timeout: 20) == 1, "\(recorder.log)")
        let finished = try #require(Self.events(recorder.log).last)
        #expect(finished["reason"] as? String == "diskFull" && (finished["message"] as? String)?.contains("--min-free-disk") == true, "\(finished)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path).isEmpty)
    }
}
