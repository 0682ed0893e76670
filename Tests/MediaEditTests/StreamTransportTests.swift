import FarmTestSupport
import StreamTestSupport
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import Testing
@testable import MediaEdit

/// Packages of MPEG-TS segments (HLS only), HLS's AES-128 over them, and single-file packages (each track
/// one file, its segments byte ranges), read by ffprobe, PyPI's m3u8 and mpegdash, OpenSSL, GStreamer and
/// Chromium.
@Suite struct StreamTransportTests {
    static func package(_ source: String, rungs: [StreamRung], segment: MediaTime, change: (inout StreamSettings) -> Void = { _ in })
        async throws -> (String, StreamReport) {
        let folder = try TestPaths.makeTemporaryFolder("stream-ts").appendingPathComponent("package").path
        var c = Composition()
        try c.insert(TimeRange(start: .zero, duration: try await Asset(path: source).load(.duration)), of: source)
        var settings = StreamSettings(folder: folder, rungs: rungs, segmentDuration: segment, preset: "veryfast", audioLanguage: "en")
        settings.container = .transportStream
        change(&settings)
        let report = try await StreamPackager(composition: c, settings: settings).package()
        for file in StreamPlaylists.files(report) { try file.text.write(toFile: folder + "/" + file.path, atomically: true, encoding: .utf8) }
        return (folder, report)
    }

    /// The frames of a track's segments joined (a transport stream joins by concatenation), as ffprobe reads them.
    static func frames(_ folder: String, _ track: StreamTrack) throws -> [(time: Double, key: Bool)] {
        var joined = Data()
        for segment in track.segments { joined.append(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/" + segment.file))) }
        let path = folder + "/../" + track.folder + ".joined.ts"
        try joined.write(to: URL(fileURLWithPath: path))
        let r = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "0", "-show_entries", "frame=pts_time,key_frame", "-of", "csv=p=0", path])
        return r.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let time = Double(fields[1]) else { return nil }
            return (time, fields[0] == "1")
        }
    }

    /// The PIDs of the packets before the first that begins a PES packet (FFmpeg's PMT is PID 0x1000).
    static func tablesBeforeMedia(_ bytes: [UInt8]) -> [Int] {
        var pids: [Int] = []
        for at in stride(from: 0, to: bytes.count - 187, by: 188) {
            let pid = Int(bytes[at + 1] & 0x1F) << 8 | Int(bytes[at + 2])
            if bytes[at + 1] & 0x40 != 0, let payload = TransportPackets.payloadStart(bytes, at: at), bytes[payload..<payload + 3] == [0, 0, 1] { break }
            pids.append(pid)
        }
        return pids
    }

    /// Two rungs and the audio as `N.ts`, no initialization and no MPD: each segment begins with its PAT
    /// and PMT (before its first PES packet), every rung's keyframes are exactly at the segments' starts, 1.4 s later than presented on
    /// every track; the I-frame playlist's range of each segment decodes to its keyframe alone; the m3u8
    /// parser reads it all with no EXT-X-MAP; GStreamer plays each rung forced to its last frame.
    @Test func transportStreamSegmentsStandAloneAndPlay() async throws {
        let (folder, report) = try await Self.package(MediaFixture.longMP4.path, rungs: [StreamRung(width: 320, height: 240, bitRate: 400_000),
                                                                                      StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                      segment: MediaTime(value: 4, timescale: 1))
        #expect(!FileManager.default.fileExists(atPath: folder + "/manifest.mpd") && StreamPlaylists.files(report).allSatisfy { $0.path != "manifest.mpd" })
        for track in report.tracks {
            #expect(track.container == .transportStream && track.initialization.isEmpty && track.timescale == 90000
                    && track.presentationOffset == SegmentContainer.transportOrigin, "\(track.folder)")
            #expect(track.segments.map(\.file) == ["1.ts", "2.ts", "3.ts"], "\(track.folder): \(track.segments.map(\.file))")
            #expect(!FileManager.default.fileExists(atPath: folder + "/" + track.folder + "/init.mp4"))
            for segment in track.segments {
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/" + segment.file)))
                #expect(bytes.count == segment.bytes && bytes.count % 188 == 0 && bytes.first == 0x47, "\(track.folder)/\(segment.file)")
                #expect(Set(Self.tablesBeforeMedia(bytes)).isSuperset(of: [0, 0x1000]), "\(track.folder)/\(segment.file): \(Self.tablesBeforeMedia(bytes))")
            }
        }
        for track in report.tracks {
            // Apple HLS 7.2: continuity counters sequential from segment to segment.
            let segments = try track.segments.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/" + $0.file))) }
            #expect(Self.counterBreaks(segments).isEmpty, "\(track.folder): \(Self.counterBreaks(segments))")
        }
        for track in report.tracks where track.kind == .video {
            let frames = try Self.frames(folder, track)
            #expect(frames.count == 300, "\(track.folder): \(frames.count) frames")
            #expect(frames.filter(\.key).map(\.time) == [1.4, 5.4, 9.4], "\(track.folder): keyframes at \(frames.filter(\.key).map(\.time))")
            #expect(track.segments.map { Double($0.start - track.presentationOffset) / 90000 } == [0, 4, 8])
            for segment in track.segments {
                let keyframe = try #require(segment.keyframeBytes)
                let media = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/" + segment.file))
                let path = folder + "/../" + track.folder + "-" + segment.file + ".iframe.ts"
                try media.prefix(keyframe).write(to: URL(fileURLWithPath: path))
                let decoded = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-f", "framemd5", "-"]).stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }
                #expect(decoded.count == 1 && keyframe < media.count, "\(track.folder)/\(segment.file): \(decoded.count) frames from \(keyframe) of \(media.count) bytes")
            }
        }
        let audio = try #require(report.tracks.first { $0.kind == .audio })
        #expect(abs(audio.seconds - 10) < 1024.0 / 48000, "\(audio.seconds)")
        let parsed = try ProcessRunner.check("python3", [TestPaths.packageRoot.appendingPathComponent("Tests/Readers/stream-parse.py").path, folder]).stdout
        let read = try #require(try JSONSerialization.jsonObject(with: Data(parsed.utf8)) as? [String: Any])
        let hls = try #require(read["hls"] as? [String: Any], "\(parsed)")
        #expect(read["dash"] == nil && (hls["variants"] as? [Any])?.count == 2 && (hls["iframes"] as? [Any])?.count == 2, "\(parsed)")
        let playlists = ((hls["variants"] as? [[String: Any]] ?? []) + (hls["renditions"] as? [[String: Any]] ?? [])).compactMap { $0["playlist"] as? [String: Any] }
        #expect(playlists.count == 3 && playlists.allSatisfy { ($0["map"] as? [Any?])?.first is NSNull && ($0["segments"] as? [Any])?.count == 3 }, "\(parsed)")
        let played = try StreamChecker.playEachRung(folder: folder, report: report, dash: false, frameCount: { try Self.frames(folder, $0).count })
        #expect(played.isEmpty, "\(played)")
    }

    /// A package made without encoding into MPEG-TS: the source's H.264 (with B-frames, made Annex B by the
    /// muxer) and AAC copied, every segment 2 s from a keyframe, every frame there; GStreamer plays it.
    @Test func aPassthroughPackageIntoTransportStream() async throws {
        let (folder, report) = try await Self.package(MediaFixture.bframesGOP1sMP4.path, rungs: [], segment: MediaTime(value: 2, timescale: 1)) {
            $0.passthrough = true
            $0.audioLanguage = nil
        }
        let video = try #require(report.tracks.first { $0.kind == .video })
        #expect(report.tracks.map(\.folder) == ["video-1", "audio"] && report.tracks.allSatisfy { $0.container == .transportStream })
        #expect(video.segments.map { Double($0.duration) / 90000 } == [2, 2, 2, 2, 2], "\(video.segments)")
        let frames = try Self.frames(folder, video)
        let starts = frames.filter(\.key).map(\.time)
        #expect(frames.count == 300 && starts.count == 10 && abs((frames.map(\.time).min() ?? 0) - 1.4) < 0.0001, "\(frames.prefix(3))")
        let played = try StreamChecker.playEachRung(folder: folder, report: report, dash: false, frameCount: { try Self.frames(folder, $0).count })
        #expect(played.isEmpty, "\(played)")
    }

    /// A package of MPEG-TS made in two chunks and joined, as hosts make one, in the clear and encrypted: each
    /// chunk's packets timed as in the whole (PES headers cannot be moved afterwards), so the join's media
    /// playlists are the whole's, text for text (the master's measured rates differ: the encoder's rate control
    /// begins again at each chunk), and every frame of the joined rung is presented when the whole's is; the
    /// continuity counters run on across the chunks' seam on every PID, as in the whole (Apple HLS 7.2).
    @Test(arguments: [false, true]) func transportStreamChunksJoinAsTheWhole(_ encrypted: Bool) async throws {
        let rungs = [StreamRung(width: 160, height: 120, bitRate: 150_000)]
        let encryption = encrypted ? try SegmentEncryption(key: (0..<16).map { UInt8($0 + 40) }, keyURI: "k") : nil
        let (whole, _) = try await Self.package(MediaFixture.longMP4.path, rungs: rungs, segment: MediaTime(value: 4, timescale: 1)) { $0.encryption = encryption }
        var chunks: [StreamChunk] = []
        for frames in [0..<120, 120..<300] {
            let (folder, report) = try await Self.package(MediaFixture.longMP4.path, rungs: rungs, segment: MediaTime(value: 4, timescale: 1)) {
                $0.frames = frames
                $0.encryption = encryption
            }
            chunks.append(StreamChunk(folder: folder, frames: frames, report: report))
        }
        let folder = try TestPaths.makeTemporaryFolder("stream-ts-join").appendingPathComponent("package").path
        var c = Composition()
        try c.insert(TimeRange(start: .zero, duration: try await Asset(path: MediaFixture.longMP4.path).load(.duration)), of: MediaFixture.longMP4.path)
        var settings = StreamSettings(folder: folder, rungs: rungs, segmentDuration: MediaTime(value: 4, timescale: 1), preset: "veryfast", audioLanguage: "en")
        (settings.container, settings.encryption) = (.transportStream, encryption)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let report = try await StreamPackager(composition: c, settings: settings).join(chunks)
        for file in StreamPlaylists.files(report) { try file.text.write(toFile: folder + "/" + file.path, atomically: true, encoding: .utf8) }
        for playlist in ["video-1/index.m3u8", "audio/index.m3u8"] {
            #expect(try String(contentsOfFile: folder + "/" + playlist, encoding: .utf8) == (try String(contentsOfFile: whole + "/" + playlist, encoding: .utf8)), "\(playlist)")
        }
        let video = try #require(report.tracks.first { $0.kind == .video })
        var plain: [[UInt8]] = []
        for (i, segment) in video.segments.enumerated() {
            let stored = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/video-1/" + segment.file)))
            plain.append(try encryption.map { try $0.decrypt(stored, sequence: i) } ?? stored)
        }
        #expect(Self.counterBreaks(plain).isEmpty, "\(Self.counterBreaks(plain))")
        // Before the join mended them, the second chunk's counters began again at 0.
        let second = [UInt8](try Data(contentsOf: URL(fileURLWithPath: chunks[1].folder + "/video-1/2.ts")))
        #expect(!Self.counterBreaks([plain[0], try encryption.map { try $0.decrypt(second, sequence: 1) } ?? second]).isEmpty)
        // The first chunk made the whole package's audio, which the join linked (the same files), and which is
        // the whole's, byte for byte; the second chunk made none.
        let audio = try #require(report.tracks.first { $0.kind == .audio })
        #expect(chunks[0].report.tracks.filter { $0.kind == .audio }.map(\.segments.count) == [video.segments.count]
                && !chunks[1].report.tracks.contains { $0.kind == .audio }, "\(chunks.map { $0.report.tracks.map(\.folder) })")
        func inode(_ path: String) -> UInt64 { var info = stat(); return lstat(path, &info) == 0 ? UInt64(info.st_ino) : 0 }
        for segment in audio.segments {
            #expect(inode(folder + "/audio/" + segment.file) == inode(chunks[0].folder + "/audio/" + segment.file), "\(segment.file) is not the chunk's")
            #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/audio/" + segment.file)) == (try Data(contentsOf: URL(fileURLWithPath: whole + "/audio/" + segment.file))))
        }
        guard !encrypted else { return }
        let joined = try StreamChecker.frames(folder, video), made = try StreamChecker.frames(whole, video)
        #expect(joined.count == 300 && joined.map(\.time) == made.map(\.time) && joined.map(\.key) == made.map(\.key), "\(joined.prefix(3)) \(made.prefix(3))")
        // Chunks made before the first chunk made the audio (its report without it): the join makes it, the same bytes.
        var older = chunks
        older[0].report.tracks.removeAll { $0.kind == .audio }
        settings.folder = try TestPaths.makeTemporaryFolder("stream-ts-join-older").appendingPathComponent("package").path
        try FileManager.default.createDirectory(atPath: settings.folder, withIntermediateDirectories: false)
        let remade = try await StreamPackager(composition: c, settings: settings).join(older)
        let remadeAudio = try #require(remade.tracks.first { $0.kind == .audio })
        #expect(remadeAudio.segments.count == audio.segments.count)
        for segment in remadeAudio.segments {
            #expect(inode(settings.folder + "/audio/" + segment.file) != inode(chunks[0].folder + "/audio/" + segment.file))
            #expect(try Data(contentsOf: URL(fileURLWithPath: settings.folder + "/audio/" + segment.file)) == (try Data(contentsOf: URL(fileURLWithPath: whole + "/audio/" + segment.file))))
        }
    }

    /// Where a PID's continuity counter does not run on from its last packet with a payload, across `segments` in order.
    static func counterBreaks(_ segments: [[UInt8]]) -> [String] {
        var last: [Int: UInt8] = [:], breaks: [String] = []
        for (n, bytes) in segments.enumerated() {
            for at in stride(from: 0, to: bytes.count - 187, by: 188) {
                let pid = Int(bytes[at + 1] & 0x1F) << 8 | Int(bytes[at + 2]), counter = bytes[at + 3] & 0xF
                guard bytes[at + 3] & 0x10 != 0 else { continue }
                if let previous = last[pid], counter != (previous + 1) & 0xF { breaks.append("segment \(n + 1), PID \(pid): \(counter) after \(previous)") }
                last[pid] = counter
            }
        }
        return breaks
    }

    /// A single-file package, CMAF and MPEG-TS: each track one file (`media.mp4` beginning with the
    /// initialization, `media.ts`), its segments byte ranges that tile it in order; the playlists name the
    /// ranges (EXT-X-MAP's BYTERANGE, EXT-X-BYTERANGE) and the MPD a SegmentList of them, every one as the
    /// report has it (the checker compares each parsed range, and reads each); GStreamer plays each rung in HLS (and DASH), over a server that answers ranges.
    @Test(arguments: [SegmentContainer.cmaf, .transportStream]) func aSingleFilePackageNamesRangesOfOneFilePerTrack(_ container: SegmentContainer) async throws {
        let (folder, report) = try await Self.package(MediaFixture.longMP4.path, rungs: [StreamRung(width: 320, height: 240, bitRate: 400_000),
                                                                                      StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                      segment: MediaTime(value: 4, timescale: 1)) {
            $0.container = container
            $0.singleFile = true
        }
        let name = container == .cmaf ? "media.mp4" : "media.ts"
        for track in report.tracks {
            let names = try FileManager.default.contentsOfDirectory(atPath: folder + "/" + track.folder).sorted()
            #expect(names == ([name, "index.m3u8"] + (track.kind == .video ? ["iframes.m3u8"] : [])).sorted(), "\(track.folder): \(names)")
            #expect(track.segments.count == 3 && track.segments.allSatisfy { $0.file == name }, "\(track.folder)")
            var next = track.initializationBytes ?? 0
            for segment in track.segments {
                #expect(segment.offset == next, "\(track.folder): a segment at \(segment.offset ?? -1), not \(next)")
                next += segment.bytes
            }
            let size = try FileManager.default.attributesOfItem(atPath: folder + "/" + track.folder + "/" + name)[.size] as? Int
            #expect(size == next && (container == .cmaf) == (track.initializationBytes != nil), "\(track.folder): \(size ?? -1) bytes, ranges to \(next)")
            let playlist = try String(contentsOfFile: folder + "/" + track.folder + "/index.m3u8", encoding: .utf8)
            let first = try #require(track.segments.first)
            #expect(playlist.contains("#EXT-X-BYTERANGE:\(first.bytes)@\(first.offset ?? -1)\n\(name)\n"), "\(playlist)")
            if let bytes = track.initializationBytes { #expect(playlist.contains("#EXT-X-MAP:URI=\"media.mp4\",BYTERANGE=\"\(bytes)@0\"\n"), "\(playlist)") }
        }
        if container == .cmaf {
            let findings = try StreamChecker.check(folder: folder, report: report)
            #expect(findings.isEmpty, "\(findings)")
            let mpd = try String(contentsOfFile: folder + "/manifest.mpd", encoding: .utf8)
            let video = try #require(report.tracks.first)
            #expect(mpd.contains("<BaseURL>video-1/media.mp4</BaseURL>") && mpd.contains(#"<Initialization range="0-\#((video.initializationBytes ?? 0) - 1)"/>"#)
                    && mpd.contains(#"<SegmentURL mediaRange="\#(video.segments[0].offset ?? 0)-\#((video.segments[0].offset ?? 0) + video.segments[0].bytes - 1)"/>"#), "\(mpd)")
        } else {
            for track in report.tracks where track.kind == .video {
                let frames = try StreamChecker.frames(folder, track)
                #expect(frames.count == 300 && frames.filter(\.key).map(\.time) == [1.4, 5.4, 9.4], "\(track.folder): \(frames.filter(\.key))")
            }
        }
        let played = try StreamChecker.playEachRung(folder: folder, report: report, dash: container == .cmaf)
        #expect(played.isEmpty, "\(played)")
    }

    /// Chromium plays a single-file package natively, fetching byte ranges of each track's one file.
    @Test(arguments: [SegmentContainer.cmaf, .transportStream]) func chromiumPlaysASingleFilePackage(_ container: SegmentContainer) async throws {
        let (folder, _) = try await Self.package(MediaFixture.longMP4.path, rungs: [StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                 segment: MediaTime(value: 4, timescale: 1)) {
            $0.container = container
            $0.singleFile = true
        }
        let played = try BrowserPlayback("chromium-play.py", folder, rate: "2")
        #expect(played.departures(frames: 300).isEmpty, "\(played.departures(frames: 300))")
        #expect(played.fetched.contains("/video-1/media." + (container == .cmaf ? "mp4" : "ts")), "\(played.fetched)")
    }

    /// WebVTT beside MPEG-TS ties its 0 to the 1.4 s at which every track presents its 0.
    @Test func subtitlesBesideTransportStreamNameItsOrigin() async throws {
        let source = try StreamCorpusTests.source("mkv_sample_with_srt.mkv")
        let (folder, report) = try await Self.package(source, rungs: [StreamRung(width: 0, height: 120, bitRate: 150_000)],
                                                      segment: MediaTime(value: 2, timescale: 1)) { $0.subtitleLanguages = ["en"]; $0.audioLanguage = nil }
        let text = try #require(report.tracks.first { $0.kind == .text })
        for segment in text.segments {
            let vtt = try String(contentsOfFile: folder + "/" + text.folder + "/" + segment.file, encoding: .utf8)
            #expect(vtt.hasPrefix("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n"), "\(vtt.prefix(80))")
        }
        let played = try StreamChecker.playEachRung(folder: folder, report: report, dash: false, frameCount: { try Self.frames(folder, $0).count })
        #expect(played.isEmpty, "\(played)")
    }

    /// HLS's AES-128 over MPEG-TS: every media segment encrypted whole, its IV its media sequence number
    /// (left out of EXT-X-KEY), no I-frame playlist (a byte range would not decrypt alone); OpenSSL decrypts
    /// each segment to transport packets; GStreamer fetches the key and plays every frame.
    @Test func aes128SegmentsDecryptAndPlayWithTheirKey() async throws {
        let key: [UInt8] = (0..<16).map { UInt8($0 * 7 + 3) }
        let (folder, report) = try await Self.package(MediaFixture.longMP4.path, rungs: [StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                      segment: MediaTime(value: 4, timescale: 1)) {
            $0.encryption = try? SegmentEncryption(key: key, keyURI: "../show.key")  // a 16-byte key and a plain URI: never nil
        }
        try Data(key).write(to: URL(fileURLWithPath: folder + "/show.key"))
        let media = try String(contentsOfFile: folder + "/video-1/index.m3u8", encoding: .utf8)
        #expect(media.contains("#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-KEY:METHOD=AES-128,URI=\"../show.key\"\n#EXTINF"), "\(media)")
        let master = try String(contentsOfFile: folder + "/master.m3u8", encoding: .utf8)
        #expect(!master.contains("I-FRAME") && !FileManager.default.fileExists(atPath: folder + "/video-1/iframes.m3u8"), "\(master)")
        for track in report.tracks {
            #expect(track.keyURI == "../show.key" && track.segments.count == 3, "\(track.folder)")
            for (i, segment) in track.segments.enumerated() {
                let path = folder + "/" + track.folder + "/" + segment.file
                let stored = try Data(contentsOf: URL(fileURLWithPath: path))
                let iv = String(repeating: "0", count: 30) + String(format: "%02x", i)
                let plain = try ProcessRunner.run("openssl", ["enc", "-d", "-aes-128-cbc", "-K", key.map { String(format: "%02x", $0) }.joined(), "-iv", iv, "-in", path])
                #expect(stored.count == segment.bytes && stored.count % 16 == 0 && stored.first != 0x47, "\(track.folder)/\(segment.file)")
                #expect(plain.status == 0 && plain.stdoutData.count % 188 == 0 && plain.stdoutData.first == 0x47, "\(track.folder)/\(segment.file): \(plain.stderr)")
            }
        }
        let (server, port) = try StreamChecker.serve(folder)
        defer { server.kill(SIGKILL); _ = server.wait(timeout: 5) }
        let played = try StreamChecker.gstreamer("gst-launch-1.0", ["-q", "playbin3", "uri=http://127.0.0.1:\(port)/master.m3u8",
                                                                    "video-sink=checksumsink hash=md5 sync=false", "audio-sink=fakesink sync=false"])
        let frames = played.stdout.split(separator: "\n").filter { $0.count == 50 && $0.dropFirst(18).allSatisfy(\.isHexDigit) }.count
        #expect(played.status == 0 && frames == 300, "status \(played.status), \(frames) frames: \(played.stderr.prefix(600))")
        #expect(server.log.contains("GET /show.key"), "\(server.log)")
    }

    /// Chromium plays the MPEG-TS HLS natively, clear and encrypted, fetching every segment.
    @Test(arguments: [false, true]) func chromiumPlaysTransportStreamHLS(_ encrypted: Bool) async throws {
        let key: [UInt8] = (0..<16).map { UInt8(255 - $0) }
        let (folder, report) = try await Self.package(MediaFixture.longMP4.path, rungs: [StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                      segment: MediaTime(value: 4, timescale: 1)) {
            if encrypted { $0.encryption = try? SegmentEncryption(key: key, keyURI: "../show.key") }  // a 16-byte key: never nil
        }
        try Data(key).write(to: URL(fileURLWithPath: folder + "/show.key"))
        let played = try BrowserPlayback("chromium-play.py", folder, rate: "2")
        #expect(played.departures(frames: 300).isEmpty, "\(played.departures(frames: 300)) \(played.times.prefix(3))")
        for track in report.tracks {
            #expect(track.segments.allSatisfy { played.fetched.contains("/\(track.folder)/\($0.file)") }, "\(track.folder): \(played.fetched)")
        }
    }
}
