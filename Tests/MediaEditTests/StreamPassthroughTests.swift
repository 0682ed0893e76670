import FarmTestSupport
import StreamTestSupport
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import Testing
@testable import MediaEdit

/// Packages made without encoding: the source's packets copied, cut at its keyframes.
@Suite struct StreamPassthroughTests {
    static func package(_ path: String, segment: MediaTime, subtitles: [String] = [], container: SegmentContainer = .cmaf) async throws -> (String, StreamReport) {
        let folder = try TestPaths.makeTemporaryFolder("stream-copy").appendingPathComponent("package").path
        var c = Composition()
        let duration = try await Asset(path: path).load(.duration)
        try c.insert(TimeRange(start: .zero, duration: duration), of: path)
        var settings = StreamSettings(folder: folder, rungs: [], segmentDuration: segment)
        settings.passthrough = true
        settings.subtitleLanguages = subtitles
        settings.container = container
        let report = try await StreamPackager(composition: c, settings: settings).package()
        // An MPEG-TS package is HLS only (as the job writes it).
        for file in StreamPlaylists.files(report) where container == .cmaf || file.path.hasSuffix(".m3u8") {
            try file.text.write(toFile: folder + "/" + file.path, atomically: true, encoding: .utf8)
        }
        return (folder, report)
    }

    /// The MD5 of each packet of a file's first stream of `kind` ("v", "a"), in order, as FFmpeg's framemd5 reads them.
    static func packetHashes(_ path: String, _ kind: String) throws -> [String] {
        let r = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:\(kind):0", "-c", "copy", "-f", "framemd5", "-"])
        return r.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            // stream, dts, pts, duration, size, hash (then side data, which a copy may not carry alike).
            let fields = line.split(separator: ",")
            return fields.count > 5 ? fields[5].trimmingCharacters(in: .whitespaces) : nil
        }
    }

    /// 10 s of H.264 with B-frames and a keyframe every second, in 2 s segments: five video segments of exactly
    /// 2 s, each starting with a keyframe; every video and audio packet the source's, bytes and order; the
    /// checker finds nothing and GStreamer plays it to the last frame.
    @Test func aPassthroughPackageCopiesEveryPacketCutAtKeyframes() async throws {
        let source = MediaFixture.bframesGOP1sMP4.path
        let (folder, report) = try await Self.package(source, segment: MediaTime(value: 2, timescale: 1))
        let video = try #require(report.tracks.first { $0.kind == .video })
        #expect(report.tracks.map(\.folder) == ["video-1", "audio"] && video.codecs.hasPrefix("avc1.") && video.width == 320)
        #expect(video.segments.map { Double($0.duration) / Double(video.timescale) } == [2, 2, 2, 2, 2], "\(video.segments)")
        for track in report.tracks {
            let joined = try StreamChecker.joined(folder, track)
            let kind = track.kind == .video ? "v" : "a"
            #expect(try Self.packetHashes(joined, kind) == (try Self.packetHashes(source, kind)), "\(track.folder): packets differ from the source's")
        }
        let frames = try StreamChecker.frames(folder, video)
        #expect(frames.count == 300 && frames.filter(\.key).count == 10 && abs((frames.first?.time ?? 1)) < 0.0001, "\(frames.prefix(3))")
        let findings = try StreamChecker.check(folder: folder, report: report, copied: true)
        #expect(findings.isEmpty, "\(findings)")
        let played = try StreamChecker.playEachRung(folder: folder, report: report)
        #expect(played.isEmpty, "\(played)")
    }

    /// Decode times from presentation times: the i-th smallest, delayed by the reordering's depth in pictures.
    @Test func decodeTimesAreMadeFromPresentationTimes() {
        #expect(DecodeTimes.make([0, 1, 2]) == [0, 1, 2], "no reordering")
        #expect(DecodeTimes.make([0, 3, 1, 2]) == [-1, 0, 1, 2], "I P B B")
        #expect(DecodeTimes.make([0, 4, 2, 1, 3]) == [-2, -1, 0, 1, 2], "a pyramid of B-frames")
        #expect(DecodeTimes.make([0, 100, 33, 67, 200, 133, 167]) == [-33, 0, 33, 67, 100, 133, 167], "Matroska's milliseconds")
        #expect(DecodeTimes.make([0, 1, 1]) == nil, "a presentation time twice")
        #expect(DecodeTimes.make(Array((0..<40).reversed())) == nil, "reordered deeper than 16 pictures")
        #expect(DecodeTimes.make([]) == [])
    }

    /// The same 10 s remuxed to Matroska, which stores neither every keyframe in its cues nor any decode time:
    /// read through once for its index, its decode times made from its presentation times, and copied as from
    /// MP4: five segments of 2 s, every packet the source's, the first frame at 0, played to the last frame.
    /// The same packets in a transport stream are reframed (H.264 from Annex B, AAC from ADTS) and copied alike;
    /// a transport stream of MPEG-2 video is refused, naming the way past.
    @Test func aMatroskaSourceIsIndexedAndCopiedAndATransportStreamReframed() async throws {
        let folder = try TestPaths.makeTemporaryFolder("stream-copy-mkv")
        let mkv = folder.appendingPathComponent("gop1s.mkv").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", MediaFixture.bframesGOP1sMP4.path, "-c", "copy", mkv])
        let (package, report) = try await Self.package(mkv, segment: MediaTime(value: 2, timescale: 1))
        let video = try #require(report.tracks.first { $0.kind == .video })
        #expect(report.tracks.map(\.folder) == ["video-1", "audio"])
        #expect(video.segments.map { Double($0.duration) / Double(video.timescale) } == [2, 2, 2, 2, 2], "\(video.segments)")
        for track in report.tracks {
            let kind = track.kind == .video ? "v" : "a"
            #expect(try Self.packetHashes(try StreamChecker.joined(package, track), kind) == (try Self.packetHashes(mkv, kind)),
                    "\(track.folder): packets differ from the source's")
        }
        let frames = try StreamChecker.frames(package, video)
        #expect(frames.count == 300 && frames.filter(\.key).count == 10 && abs((frames.first?.time ?? 1)) < 0.0001, "\(frames.prefix(3))")
        let findings = try StreamChecker.check(folder: package, report: report, copied: true)
        #expect(findings.isEmpty, "\(findings)")
        let played = try StreamChecker.playEachRung(folder: package, report: report)
        #expect(played.isEmpty, "\(played)")
        // Every AAC frame 1024 samples after the one before, not Matroska's 21 or 22 ms.
        let audio = try #require(report.tracks.first { $0.kind == .audio })
        let durations = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "packet=duration", "-of", "csv=p=0",
                                                            try StreamChecker.joined(package, audio)]).stdout.split(separator: "\n")
        #expect(durations.count > 400 && Set(durations.filter { $0 != "N/A" }) == ["1024"], "\(Set(durations))")
        // The same into MPEG-TS segments (a 90 kHz clock): each AAC frame 1920 ticks after the one before.
        let (tsPackage, tsReport) = try await Self.package(mkv, segment: MediaTime(value: 2, timescale: 1), container: .transportStream)
        let tsAudio = try #require(tsReport.tracks.first { $0.kind == .audio })
        let whole = folder.appendingPathComponent("audio.ts")
        try Data(try tsAudio.segments.flatMap { try Data(contentsOf: URL(fileURLWithPath: "\(tsPackage)/\(tsAudio.folder)/\($0.file)")) }).write(to: whole)
        let times = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "packet=pts", "-of", "csv=p=0", whole.path])
            .stdout.split(whereSeparator: \.isNewline).compactMap { Int64($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) }
        #expect(times.count > 400 && Set(zip(times, times.dropFirst()).map { $1 - $0 }) == [1920], "\(Set(zip(times, times.dropFirst()).map { $1 - $0 }))")

        // The same packets in a transport stream (Annex B with parameter sets and delimiters in-band, ADTS), as
        // broadcast delivers them: reframed as MP4 carries them, every packet the MP4's again, bytes and order.
        let ts = folder.appendingPathComponent("gop1s.ts").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", MediaFixture.bframesGOP1sMP4.path, "-c", "copy", ts])
        let (fromTS, fromTSReport) = try await Self.package(ts, segment: MediaTime(value: 2, timescale: 1))
        let fromTSVideo = try #require(fromTSReport.tracks.first { $0.kind == .video })
        #expect(fromTSVideo.segments.map { Double($0.duration) / Double(fromTSVideo.timescale) } == [2, 2, 2, 2, 2], "\(fromTSVideo.segments)")
        #expect(fromTSReport.tracks.map(\.codecs) == report.tracks.map(\.codecs), "\(fromTSReport.tracks.map(\.codecs))")
        for track in fromTSReport.tracks {
            let kind = track.kind == .video ? "v" : "a"
            #expect(try Self.packetHashes(try StreamChecker.joined(fromTS, track), kind) == (try Self.packetHashes(MediaFixture.bframesGOP1sMP4.path, kind)),
                    "\(track.folder): packets differ from the MP4's")
        }
        let fromTSFindings = try StreamChecker.check(folder: fromTS, report: fromTSReport, copied: true)
        #expect(fromTSFindings.isEmpty, "\(fromTSFindings)")
        let fromTSPlayed = try StreamChecker.playEachRung(folder: fromTS, report: fromTSReport)
        #expect(fromTSPlayed.isEmpty, "\(fromTSPlayed)")
        // And from a transport stream into MPEG-TS segments (back to Annex B): every frame, a keyframe each segment's first.
        let (tsToTS, tsToTSReport) = try await Self.package(ts, segment: MediaTime(value: 2, timescale: 1), container: .transportStream)
        let tsToTSVideo = try #require(tsToTSReport.tracks.first { $0.kind == .video })
        let joinedTS = folder.appendingPathComponent("video.ts")
        try Data(try tsToTSVideo.segments.flatMap { try Data(contentsOf: URL(fileURLWithPath: "\(tsToTS)/\(tsToTSVideo.folder)/\($0.file)")) }).write(to: joinedTS)
        let tsFrames = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=key_frame", "-of", "csv=p=0", joinedTS.path])
            .stdout.split(whereSeparator: \.isNewline)
        #expect(tsFrames.count == 300 && tsFrames.filter { $0.hasPrefix("1") }.count == 10 && tsToTSVideo.segments.count == 5, "\(tsFrames.count) frames")
        // A transport stream of MPEG-2 video is refused, naming the way past.
        await #expect {
            _ = try await Self.package(try #require(TestPaths.corpus).appendingPathComponent("ts_bbb_2500ms.ts").path, segment: MediaTime(value: 2, timescale: 1))
        } throws: { error in
            let text = "\(error)"
            return text.contains("its video is mpeg2video") && text.contains("MPEG-TS") && text.contains("leave out \"mode\"")
        }
    }

    /// An open GOP's I pictures, which MP4 marks as sync samples, are no place for a segment to begin: refused,
    /// naming the first and the way past. A "%" in a source's name is its own text in a refusal, never a format.
    @Test func openGOPKeyframesAreRefusedAndAPercentInANameIsText() async throws {
        await #expect {
            _ = try await Self.package(MediaFixture.openGOPMP4.path, segment: MediaTime(value: 2, timescale: 1))
        } throws: { error in
            "\(error)".contains("its keyframe at 2.000 s is an I picture of an open GOP, not an IDR picture") && "\(error)".contains("leave out \"mode\"")
        }
        let folder = try TestPaths.makeTemporaryFolder("stream-copy-percent")
        let odd = folder.appendingPathComponent("100%s %@ %n take.mp4").path
        try FileManager.default.copyItem(atPath: MediaFixture.bframesGOP10sMP4.path, toPath: odd)
        await #expect {
            _ = try await Self.package(odd, segment: MediaTime(value: 6, timescale: 1))
        } throws: { error in
            "\(error)".hasPrefix(odd + ": its keyframes are up to 10.000 s apart")
        }
    }

    /// Audio that runs on 0.6 s past the video is no gap between keyframes: the video is cut every second to its
    /// own end. Two languages that find the same track are refused (not a crash).
    @Test func audioLongerThanTheVideoAndOneTrackAskedTwice() async throws {
        let folder = try TestPaths.makeTemporaryFolder("stream-copy-long-audio")
        let source = folder.appendingPathComponent("long-audio.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=4", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=4.6",
                                           "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac", "-metadata:s:a:0", "language=fra", source])
        let (_, report) = try await Self.package(source, segment: MediaTime(value: 1, timescale: 1))
        let video = try #require(report.tracks.first { $0.kind == .video })
        #expect(video.segments.map { Double($0.duration) / Double(video.timescale) } == [1, 1, 1, 1], "\(video.segments)")
        var c = Composition()
        try c.insert(TimeRange(start: .zero, duration: try await Asset(path: source).load(.duration)), of: source)
        var settings = StreamSettings(folder: folder.appendingPathComponent("twice").path, rungs: [], segmentDuration: MediaTime(value: 1, timescale: 1))
        (settings.passthrough, settings.audioTracks) = (true, .languages(["fr", "fre"]))
        await #expect {
            _ = try await StreamPackager(composition: c, settings: settings).package()
        } throws: { error in "\(error)".contains("choose the same audio track") }
    }

    /// Keyframes 10 s apart do not make 6 s segments: refused before anything is written, naming the GOP and
    /// the way past; so are a transport stream's, read through for its index.
    @Test func keyframesFurtherApartThanTheSegmentAreRefusedNamingTheGOP() async throws {
        await #expect {
            _ = try await Self.package(MediaFixture.bframesGOP10sMP4.path, segment: MediaTime(value: 6, timescale: 1))
        } throws: { error in
            let text = "\(error)"
            return text.contains("up to 10.000 s apart") && text.contains("\"segmentSeconds\" of at least 10") && text.contains("leave out \"mode\"")
        }
        let folder = try TestPaths.makeTemporaryFolder("stream-copy-ts")
        let ts = folder.appendingPathComponent("gop10s.ts").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", MediaFixture.bframesGOP10sMP4.path, "-c", "copy", ts])
        await #expect {
            _ = try await Self.package(ts, segment: MediaTime(value: 6, timescale: 1))
        } throws: { error in "\(error)".contains("up to 10.000 s apart") && "\(error)".contains("\"segmentSeconds\" of at least 10") }
    }

    /// Three MP4s that FFmpeg's index does not describe as written. A fragmented MP4 with a `sidx`, whose index at
    /// open holds its first fragment only (the package was one 10 s segment): read through, five segments of 2 s,
    /// every packet the source's, the audio before the first picture left out but the frame that overlaps it. One
    /// trimmed by an edit list at a keyframe: copied from there in 2 s segments; at 2.5 s, half a second into a GOP
    /// (its first segment held 3 s of pictures, the first 0.5 s shown by GStreamer): refused. A Matroska file whose audio track
    /// holds no frame: refused after the copy, before anything is published, naming the ways past (it was a
    /// rendition without a segment).
    @Test func aFragmentedMP4AnEditListAndAnEmptyAudioTrackAreCopiedAsShownOrRefused() async throws {
        let folder = try TestPaths.makeTemporaryFolder("stream-copy-mp4-kinds")
        let source = MediaFixture.bframesGOP1sMP4.path, two = MediaTime(value: 2, timescale: 1)
        let fragmented = folder.appendingPathComponent("fragmented.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", source, "-c", "copy", "-movflags", "+dash+frag_keyframe+global_sidx", fragmented])
        let (package, report) = try await Self.package(fragmented, segment: two)
        let video = try #require(report.tracks.first { $0.kind == .video })
        #expect(video.segments.map { Double($0.duration) / Double(video.timescale) } == [2, 2, 2, 2, 2], "\(video.segments)")
        #expect(try Self.packetHashes(try StreamChecker.joined(package, video), "v") == (try Self.packetHashes(source, "v")), "packets differ from the source's")
        let audio = try #require(report.tracks.first { $0.kind == .audio })
        let sourceAudio = try Self.packetHashes(fragmented, "a"), copiedAudio = try Self.packetHashes(try StreamChecker.joined(package, audio), "a")
        #expect(copiedAudio.count > 400 && sourceAudio.suffix(copiedAudio.count) == copiedAudio[...], "\(sourceAudio.count) against \(copiedAudio.count)")
        let findings = try StreamChecker.check(folder: package, report: report, copied: true)
        #expect(findings.isEmpty, "\(findings)")
        // A box after the movie whose 64-bit size would overflow the walk's arithmetic: copied (read through), no trap.
        let odd = folder.appendingPathComponent("huge-box.mp4")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        bytes.append(contentsOf: [0, 0, 0, 1] + Array("free".utf8) + [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        try bytes.write(to: odd)
        #expect(MP4EditLists.isFragmented(path: odd.path))
        let (_, oddReport) = try await Self.package(odd.path, segment: two)
        #expect(oddReport.tracks.first?.segments.count == 5)

        // Trimmed at a keyframe: the copy begins there, and its first segment is 2 s like the rest.
        let trimmed = folder.appendingPathComponent("trimmed.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-ss", "3", "-i", source, "-c", "copy", trimmed])
        let (trimmedPackage, trimmedReport) = try await Self.package(trimmed, segment: two)
        let trimmedVideo = try #require(trimmedReport.tracks.first { $0.kind == .video })
        #expect(trimmedVideo.segments.map { Double($0.duration) / Double(trimmedVideo.timescale) } == [2, 2, 2, 1], "\(trimmedVideo.segments)")
        let trimmedFindings = try StreamChecker.check(folder: trimmedPackage, report: trimmedReport, copied: true)
        #expect(trimmedFindings.isEmpty, "\(trimmedFindings)")
        let played = try StreamChecker.playEachRung(folder: trimmedPackage, report: trimmedReport)
        #expect(played.isEmpty, "\(played)")
        // Trimmed half a second into a GOP: the pictures before would be shown by players that do not read edit lists.
        let midGOP = folder.appendingPathComponent("trimmed-mid-gop.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-ss", "2.5", "-i", source, "-c", "copy", midGOP])
        await #expect {
            _ = try await Self.package(midGOP, segment: two)
        } throws: { error in
            let text = "\(error)"
            return text.contains("its first picture shown is not a keyframe (its edit list starts the movie after one") && text.contains("leave out \"mode\"")
        }
        // An MP4 whose first sample is no keyframe and that hides nothing (a copy from a transport stream that kept
        // the pictures before its first keyframe): refused too, not copied from its first keyframe on.
        let ts = folder.appendingPathComponent("gop1s.ts").path, late = folder.appendingPathComponent("starts-mid-gop.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", source, "-c", "copy", ts])
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-ss", "2.5", "-i", ts, "-c", "copy", "-copyinkf", late])
        await #expect {
            _ = try await Self.package(late, segment: two)
        } throws: { error in "\(error)".contains("its first picture shown is not a keyframe, and a copied package begins at a keyframe") }

        let silent = folder.appendingPathComponent("no-sound.mkv").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", source, "-f", "lavfi", "-i", "anullsrc=r=48000", "-map", "0:v", "-map", "1:a",
                                           "-c:v", "copy", "-c:a", "aac", "-frames:a", "0", "-t", "10", silent])
        await #expect {
            _ = try await Self.package(silent, segment: two)
        } throws: { error in
            let text = "\(error)"
            return text.contains("its audio stream 1 holds no sound to copy") && text.contains("leave out \"mode\"") && text.contains("\"tracks\": \"none\"")
        }
    }

    /// Keyframes 1/30 s after each multiple of 2 s (the first picture held longer), in 6 s segments: the 6.03 s
    /// left after the first cut are one segment, not a cut at 10.03 s before an end with no keyframe near it
    /// (6.03, 4 and 2 s, as a 3-minute fragmented recording was cut).
    @Test func theRestIsOneSegmentOnceItFitsInOne() async throws {
        let folder = try TestPaths.makeTemporaryFolder("stream-copy-late-keys")
        let source = folder.appendingPathComponent("late.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=12", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=12",
                                           "-c:a", "aac", "-vf", "settb=1/15360,setpts='if(eq(N,0),0,PTS+0.02/TB)'",
                                           "-fps_mode", "passthrough", "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-keyint_min", "60", "-sc_threshold", "0",
                                           "-video_track_timescale", "15360", source])
        let (_, report) = try await Self.package(source, segment: MediaTime(value: 6, timescale: 1))
        let video = try #require(report.tracks.first { $0.kind == .video })
        let seconds = video.segments.map { (Double($0.duration) / Double(video.timescale) * 1000).rounded() / 1000 }
        #expect(seconds == [6.033, 6], "\(seconds)")
    }
}
