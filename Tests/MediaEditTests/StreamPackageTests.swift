import FarmTestSupport
import StreamTestSupport
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import Testing
@testable import MediaEdit

/// Streaming packages checked on the files they are made of, with ffprobe as the reader no one here wrote.
@Suite struct StreamPackageTests {
    static func package(_ fixture: MediaFixture, rungs: [StreamRung], segment: MediaTime) async throws -> (String, StreamReport) {
        let folder = try TestPaths.makeTemporaryFolder("stream").appendingPathComponent("package").path
        var c = Composition()
        let duration = try await Asset(path: fixture.path).load(.duration)
        try c.insert(TimeRange(start: .zero, duration: duration), of: fixture.path)
        let settings = StreamSettings(folder: folder, rungs: rungs, segmentDuration: segment, preset: "veryfast", audioLanguage: "en")
        let report = try await StreamPackager(composition: c, settings: settings).package()
        for file in StreamPlaylists.files(report) {
            try file.text.write(toFile: folder + "/" + file.path, atomically: true, encoding: .utf8)
        }
        return (folder, report)
    }

    /// The frames of one track as ffprobe reads them from its initialization and segments joined.
    static func frames(_ folder: String, _ track: StreamTrack) throws -> [(time: Double, key: Bool)] {
        var joined = Data(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/init.mp4")))
        for segment in track.segments {
            joined.append(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/" + segment.file)))
        }
        let path = folder + "/" + track.folder + ".joined.mp4"
        try joined.write(to: URL(fileURLWithPath: path))
        let r = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "0", "-show_entries", "frame=pts_time,key_frame",
                                                    "-of", "csv=p=0", path])
        return r.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let time = Double(fields[1]) else { return nil }
            return (time, fields[0] == "1")
        }
    }

    /// Two rungs of 10 s at 30 fps cut every 4 s: each rung's segments last 4, 4 and 2 s exactly, begin
    /// at the same frames, and begin with a keyframe (the only ones); the audio's boundaries are within one
    /// AAC frame of the video's and its whole within one of the programme.
    @Test func everyRungIsCutAtTheSameFramesAndTheAudioFollows() async throws {
        let (folder, report) = try await Self.package(.longMP4, rungs: [StreamRung(width: 320, height: 240, bitRate: 400_000),
                                                                         StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                      segment: MediaTime(value: 4, timescale: 1))
        let video = report.tracks.filter { $0.kind == .video }
        #expect(video.count == 2 && report.tracks.count == 3, "\(report.tracks.map(\.folder))")
        for track in video {
            let seconds = track.segments.map { Double($0.duration) / Double(track.timescale) }
            #expect(seconds == [4, 4, 2], "\(track.folder): \(seconds)")
            #expect(track.segments.map { Double($0.start - track.presentationOffset) / Double(track.timescale) } == [0, 4, 8], "\(track.folder)")
            let frames = try Self.frames(folder, track)
            // CODECS is the stream's own: its profile as ffprobe names it (ultrafast makes Constrained
            // Baseline, whatever the rung's ceiling), and the level chosen, the lowest that holds the rung
            // (320x240 at 30 fps with a 600 kbit/s peak: 1.3; 160x120: 1.1).
            let stream = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "stream=profile,level",
                                                             "-of", "csv=p=0", folder + "/" + track.folder + ".joined.mp4"]).stdout
            let fields = stream.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            let profile = ["Constrained Baseline": "42c0", "Main": "4d40", "High": "6400"][fields[0]]
            let level = try #require(Int(fields[1]))
            #expect(level == (track.width == 320 ? 13 : 11), "\(track.folder): level \(level)")
            #expect(profile.map { "avc1.\($0)" + String(format: "%02x", level) } == track.codecs, "\(track.codecs) against \(stream)")
            #expect(frames.count == 300, "\(track.folder): \(frames.count) frames")
            #expect(frames.filter(\.key).map(\.time) == [0, 4, 8], "\(track.folder): keyframes at \(frames.filter(\.key).map(\.time))")
            // The I-frame playlist's byte range of each segment holds its whole keyframe and nothing after it.
            let initialization = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/init.mp4"))
            for segment in track.segments {
                let bytes = try #require(segment.keyframeBytes)
                let media = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/" + segment.file))
                let path = folder + "/" + track.folder + "-\(segment.file).iframe.mp4"
                try (initialization + media.prefix(bytes)).write(to: URL(fileURLWithPath: path))
                let decoded = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-f", "framemd5", "-"]).stdout
                    .split(separator: "\n").filter { !$0.hasPrefix("#") }
                #expect(decoded.count == 1 && bytes < media.count, "\(track.folder)/\(segment.file): \(decoded.count) frames from \(bytes) of \(media.count) bytes")
            }
        }
        let audio = try #require(report.tracks.first { $0.kind == .audio })
        #expect(audio.codecs == "mp4a.40.2" && audio.language == "en")
        // One AAC frame, and a hair for the encoder's priming (its first frame starts one frame early).
        let aacFrame = 1024.0 / Double(audio.sampleRate ?? 48000) + 1e-9
        let starts = audio.segments.map { Double($0.start - audio.presentationOffset) / Double(audio.timescale) }
        #expect(starts.count == 3 && zip(starts, [0.0, 4, 8]).allSatisfy { abs($0 - $1) < aacFrame }, "\(starts)")
        #expect(abs(audio.seconds - 10) < aacFrame, "\(audio.seconds)")
    }

    /// The playlists say what the segments measured: EXTINFs that sum to the duration, a target duration
    /// that holds each rounded, BANDWIDTH the peak and AVERAGE-BANDWIDTH the mean of video and audio
    /// together, CODECS from the streams; and ffprobe reads the master playlist's every variant.
    @Test func thePlaylistsSayWhatTheSegmentsMeasured() async throws {
        let (folder, report) = try await Self.package(.longMP4, rungs: [StreamRung(width: 320, height: 240, bitRate: 400_000),
                                                                         StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                      segment: MediaTime(value: 4, timescale: 1))
        let master = try String(contentsOfFile: folder + "/master.m3u8", encoding: .utf8)
        let audio = try #require(report.tracks.first { $0.kind == .audio })
        for track in report.tracks where track.kind == .video {
            #expect(master.contains("BANDWIDTH=\(track.peakBitRate + audio.peakBitRate),AVERAGE-BANDWIDTH=\(track.averageBitRate + audio.averageBitRate),"
                                    + "CODECS=\"\(track.codecs),mp4a.40.2\",RESOLUTION=\(track.width!)x\(track.height!),FRAME-RATE=30.000"), "\(master)")
            #expect(master.contains("URI=\"\(track.folder)/iframes.m3u8\""))
            let media = try String(contentsOfFile: folder + "/" + track.folder + "/index.m3u8", encoding: .utf8)
            let extinfs = media.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.compactMap { Double($0.dropFirst(8).dropLast()) }
            #expect(abs(extinfs.reduce(0, +) - 10) < 1.0 / 30, "\(extinfs)")
            #expect(media.contains("#EXT-X-TARGETDURATION:4\n") && media.contains("#EXT-X-PLAYLIST-TYPE:VOD") && media.hasSuffix("#EXT-X-ENDLIST\n"))
        }
        #expect(master.contains(#"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="English",LANGUAGE="en""#), "\(master)")
        let probe = try ProcessRunner.check("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width,height", "-of", "csv=p=0",
                                                        folder + "/master.m3u8"])
        let streams = probe.stdout.split(separator: "\n").map(String.init)
        #expect(streams.contains("video,320,240") && streams.contains("video,160,120") && streams.contains("audio"), "\(streams)")
        let mpd = try String(contentsOfFile: folder + "/manifest.mpd", encoding: .utf8)
        #expect(mpd.contains(#"segmentAlignment="true""#) && mpd.contains(#"lang="en""#), "\(mpd)")
        let dash = try ProcessRunner.check("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width", "-of", "csv=p=0",
                                                       folder + "/manifest.mpd"])
        // ffprobe lists each stream once more under its program.
        #expect(Set(dash.stdout.split(separator: "\n").map(String.init)) == ["video,320", "video,160", "audio"], "\(dash.stdout) \(dash.stderr)")
    }

    /// Each track presents where the report and the playlists say, read off its boxes as ISO/IEC 14496-12
    /// defines them: a fragment's earliest presentation time less the initialization's edit is the
    /// segment's start in the programme; video's first frame presents at 0 exactly (its composition offsets
    /// are positive, `trun` version 0, and the edit takes away the B-frames' delay, so FFmpeg's demuxer,
    /// which shifts negative offsets its own way, agrees); only the audio's priming, one AAC frame, presents
    /// before 0; and the MPD's segment times and presentationTimeOffset are the files' own (DASH-IF IOP).
    @Test func theFilesPresentWhereTheReportAndTheMPDSay() async throws {
        let (folder, report) = try await Self.package(.longMP4, rungs: [StreamRung(width: 320, height: 240, bitRate: 400_000)],
                                                      segment: MediaTime(value: 4, timescale: 1))
        // The report, the MPD's S@t and presentationTimeOffset against the boxes (StreamChecker's rules).
        let findings = try StreamChecker.check(folder: folder, report: report)
        #expect(findings.isEmpty, "\(findings)")
        for track in report.tracks {
            let initialization = folder + "/" + track.folder + "/init.mp4"
            let edit = try FragmentProbe.editMediaTime(initialization: initialization)
            let first = try FragmentProbe.earliestPresentationTime(segment: folder + "/" + track.folder + "/1.m4s",
                                                                   defaultDuration: try FragmentProbe.defaultDuration(initialization: initialization)) - edit
            if track.kind == .video {
                #expect(first == 0 && edit > 0, "\(track.folder): first frame at \(first), edit \(edit)")
            } else {
                #expect(first == -1024 && track.timescale == track.sampleRate, "\(track.folder): first sample at \(first)")
            }
        }
    }

    /// A baseline rung (no B-frames, so no edit) beside a high one (B-frames, an edit of their delay): their
    /// segments begin at the same frames as presented, and the MPD says so.
    @Test func rungsWithAndWithoutBFramesAreAligned() async throws {
        let (folder, report) = try await Self.package(.longMP4, rungs: [StreamRung(width: 320, height: 240, bitRate: 400_000),
                                                                         StreamRung(width: 160, height: 120, bitRate: 150_000, profile: "baseline")],
                                                      segment: MediaTime(value: 4, timescale: 1))
        let offsets = report.tracks.filter { $0.kind == .video }.map(\.presentationOffset)
        #expect(offsets.count == 2 && offsets[0] > 0 && offsets[1] == 0, "\(offsets)")
        let findings = try StreamChecker.check(folder: folder, report: report)
        #expect(findings.isEmpty, "\(findings)")
        let mpd = try String(contentsOfFile: folder + "/manifest.mpd", encoding: .utf8)
        #expect(mpd.contains(#"contentType="video" mimeType="video/mp4" segmentAlignment="true""#), "\(mpd)")
    }

    /// Chromium plays the HLS natively in a page, fetched over HTTP as a player fetches it: every frame of
    /// the programme decoded and the first and last presented at their times (whichever rung its adaptation
    /// chose for each segment), every segment's time fetched from some rung, and every audio segment.
    @Test func chromiumPlaysTheHLSNatively() async throws {
        let (folder, report) = try await Self.package(.longMP4, rungs: [StreamRung(width: 320, height: 240, bitRate: 400_000),
                                                                         StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                      segment: MediaTime(value: 4, timescale: 1))
        let played = try BrowserPlayback("chromium-play.py", folder, rate: "2")
        #expect(played.departures(frames: 300).isEmpty, "\(played.departures(frames: 300))")
        #expect(abs(played.duration - 10) < 1.0 / 30, "\(played.duration)")
        let video = report.tracks.filter { $0.kind == .video }
        for n in 1...3 {
            #expect(video.contains { played.fetched.contains("/\($0.folder)/\(n).m4s") }, "segment \(n) of no rung: \(played.fetched)")
        }
        let audio = try #require(report.tracks.first { $0.kind == .audio })
        #expect(audio.segments.allSatisfy { played.fetched.contains("/\(audio.folder)/\($0.file)") }, "\(played.fetched)")
    }

    /// BANDWIDTH is the peak of runs of 0.5 to 1.5 target durations (RFC 8216 4.3.4.2): a last segment of
    /// one frame, nearly all keyframe, does not stand for the rung; a track shorter than half a target is
    /// measured whole.
    @Test func thePeakRateIsMeasuredOverRunsOfSegments() {
        let parts: [(duration: Int64, bytes: Int)] = [(6 * 90000, 750_000), (6 * 90000, 900_000), (3000, 60_000)]
        // Runs of 3 to 9 s: 750 kB over 6 s, 900 kB over 6 s, and 960 kB over 6.033 s, the busiest; the
        // last segment alone (14.4 Mbit/s) is too short to be one.
        #expect(StreamTrack.peak(parts, timescale: 90000, target: 6) == 1_272_929)
        #expect(StreamTrack.peak([(3000, 60_000)], timescale: 90000, target: 6) == 14_400_000)
    }

    /// A package asks for audio and video: a source without audio is refused before any work, naming the way
    /// to a package of video only (`"tracks": "none"`), which then has no audio track; a source without video
    /// is refused too. Nothing is written for a refused package.
    @Test func aSourceWithoutTheAudioOrVideoAPackageAsksForIsRefusedBeforeAnyWork() async throws {
        let folder = try TestPaths.makeTemporaryFolder("stream-missing").appendingPathComponent("package").path
        func packager(_ fixture: MediaFixture, _ change: (inout StreamSettings) -> Void = { _ in }) async throws -> StreamPackager {
            var c = Composition()
            try c.insert(TimeRange(start: .zero, duration: try await Asset(path: fixture.path).load(.duration)), of: fixture.path)
            var settings = StreamSettings(folder: folder, rungs: [StreamRung(width: 0, height: 120, bitRate: 200_000)],
                                          segmentDuration: MediaTime(value: 2, timescale: 1), preset: "ultrafast")
            change(&settings)
            return StreamPackager(composition: c, settings: settings)
        }
        // The dropped-frame Matroska file has video only.
        var refusal = ""
        do { _ = try await packager(.droppedFrameMKV).package() } catch let error as ExportError { refusal = error.description }
        #expect(refusal.contains("dropped-frame.mkv has no audio") && refusal.contains(#""audio": {"tracks": "none"}"#), "\(refusal)")
        #expect(!FileManager.default.fileExists(atPath: folder), "a refused package wrote \(folder)")
        // In chunks too: the chunks' plan is refused before any chunk is made.
        refusal = ""
        do { _ = try await packager(.droppedFrameMKV).chunkRanges(every: MediaTime(value: 4, timescale: 1)) } catch let error as ExportError { refusal = error.description }
        #expect(refusal.contains("has no audio"), "\(refusal)")
        // Asked for video only, it is made with no audio track.
        let report = try await packager(.droppedFrameMKV) { $0.audioTracks = .none }.package()
        #expect(report.tracks.map(\.kind) == [.video], "\(report.tracks.map(\.kind))")
        // Audio only: refused, naming the source.
        refusal = ""
        do { _ = try await packager(.audioM4A).package() } catch let error as ExportError { refusal = error.description }
        #expect(refusal.contains("audio.m4a (segment 1) has no video, and every rung of a package needs it"), "\(refusal)")
    }

    /// Text subtitles in MP4 (mov_text) and in Matroska (WebVTT), muxed by FFmpeg from one SubRip file, become
    /// the package's WebVTT with their cues at their times, italics kept; a bitmap track (PGS, as a Blu-ray
    /// carries it) is refused before any work, saying it cannot become text.
    @Test func movTextAndWebVTTTracksBecomeWebVTTAndABitmapTrackIsRefused() async throws {
        let work = try TestPaths.makeTemporaryFolder("stream-subtitle-sources")
        let srt = work.appendingPathComponent("cues.srt").path
        try "1\n00:00:00,500 --> 00:00:01,500\nThe first cue\n\n2\n00:00:05,000 --> 00:00:06,250\n<i>The second</i> cue\n"
            .write(toFile: srt, atomically: true, encoding: .utf8)
        func mux(_ name: String, _ subtitles: String, _ codec: String) throws -> String {
            let out = work.appendingPathComponent(name).path
            try ProcessRunner.check("ffmpeg", ["-nostdin", "-y", "-v", "error", "-i", MediaFixture.longMP4.path, "-i", subtitles,
                                               "-map", "0", "-map", "1", "-c:v", "copy", "-c:a", "copy", "-c:s", codec,
                                               "-metadata:s:s:0", "language=eng", out])
            return out
        }
        func package(_ source: String, into name: String) async throws -> (String, StreamReport) {
            let folder = work.appendingPathComponent(name).path
            var c = Composition()
            try c.insert(TimeRange(start: .zero, duration: try await Asset(path: source).load(.duration)), of: source)
            var settings = StreamSettings(folder: folder, rungs: [StreamRung(width: 0, height: 120, bitRate: 150_000)],
                                          segmentDuration: MediaTime(value: 4, timescale: 1), preset: "ultrafast")
            settings.subtitleLanguages = ["en"]
            return (folder, try await StreamPackager(composition: c, settings: settings).package())
        }
        for (source, codec) in [(try mux("mov-text.mp4", srt, "mov_text"), "mov_text"), (try mux("webvtt.mkv", srt, "webvtt"), "webvtt")] {
            let probed = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "s", "-show_entries", "stream=codec_name", "-of", "csv=p=0", source])
            #expect(probed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == codec)
            let (folder, report) = try await package(source, into: codec)
            let text = try #require(report.tracks.first { $0.kind == .text }, "\(codec): no text track")
            #expect(text.segments.count == 3, "\(codec): \(text.segments.map(\.file))")
            // Each cue at its time in the file as FFmpeg reads its packets (FFmpeg's Matroska muxer moves every
            // track 21 ms later, the AAC priming it no longer hides: the cues with them; mov_text's empty
            // samples, 2 bytes, fill the gaps between cues).
            let packets = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "s", "-show_entries", "packet=pts_time,duration_time,size",
                                                              "-of", "csv=p=0", source]).stdout.split(separator: "\n")
                .map { $0.split(separator: ",").compactMap { Double($0) } }.filter { $0.count == 3 && $0[2] > 2 }.map { Array($0.prefix(2)) }
            try #require(packets.count == 2 && packets.allSatisfy { $0.count == 2 }, "\(codec): \(packets)")
            func vtt(_ t: Double) -> String {
                let ms = Int((t * 1000).rounded())
                return String(format: "%02d:%02d:%02d.%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
            }
            let all = try String(contentsOfFile: folder + "/" + text.folder + "/all.vtt", encoding: .utf8)
            #expect(all.contains("\(vtt(packets[0][0])) --> \(vtt(packets[0][0] + packets[0][1]))\nThe first cue"), "\(codec): \(all)")
            #expect(all.contains("\(vtt(packets[1][0])) --> \(vtt(packets[1][0] + packets[1][1]))\n<i>The second</i> cue"), "\(codec): \(all)")
            #expect(abs(packets[0][0] - 0.5) < 0.03 && abs(packets[1][1] - 1.25) < 0.001, "\(codec): \(packets)")
            // The first cue in the first segment, the second in the second (4 to 8 s), none in the third.
            let segments = try text.segments.map { try String(contentsOfFile: folder + "/" + text.folder + "/" + $0.file, encoding: .utf8) }
            #expect(segments[0].contains("The first cue") && segments[1].contains("The second") && !segments[2].contains("cue"), "\(codec): \(segments)")
        }

        // A PGS display set (presentation, window, palette, a 4x2 object, end), the smallest a demuxer takes.
        func segment(_ type: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [0x50, 0x47] + [0, 0, 0x46, 0x50] + [0, 0, 0, 0] + [type, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
        }
        let object: [UInt8] = [1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0]
        let sup = segment(0x16, [1, 64, 0, 240, 0x10, 0, 1, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 10, 0, 10])
            + segment(0x17, [1, 0, 0, 10, 0, 10, 0, 4, 0, 2])
            + segment(0x14, [0, 0, 1, 235, 128, 128, 255])
            + segment(0x15, [0, 0, 0, 0xC0, 0, 0, UInt8(object.count + 4), 0, 4, 0, 2] + object)
            + segment(0x80, [])
        let supPath = work.appendingPathComponent("cues.sup").path
        try Data(sup).write(to: URL(fileURLWithPath: supPath))
        let pgs = try mux("pgs.mkv", supPath, "copy")
        let probed = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "s", "-show_entries", "stream=codec_name", "-of", "csv=p=0", pgs])
        #expect(probed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "hdmv_pgs_subtitle")
        var refusal = ""
        do { _ = try await package(pgs, into: "pgs") } catch let error as ExportError { refusal = error.description }
        #expect(refusal.contains(#"pgs.mkv has no text subtitles in "en": its hdmv_pgs_subtitle track is pictures, which cannot become WebVTT text"#), "\(refusal)")
        #expect(!FileManager.default.fileExists(atPath: work.appendingPathComponent("pgs").path), "a refused package wrote its folder")
    }

    /// Settings no encoder or player takes are refused before any work, naming the setting and its range.
    @Test func settingsOutOfRangeAreRefusedNamingTheRange() {
        let good = StreamRung(width: 320, height: 240, bitRate: 400_000)
        func refusal(_ change: (inout StreamSettings) -> Void) -> String? {
            var settings = StreamSettings(folder: "/nonexistent", rungs: [good])
            change(&settings)
            do { try settings.check(); return nil } catch { return error.description }
        }
        #expect(refusal { _ in } == nil)
        #expect(refusal { $0.rungs = [] }?.contains("at least one rung") == true)
        #expect(refusal { $0.rungs = [StreamRung(width: 321, height: 240, bitRate: 400_000)] }?.contains("even sizes from 2 to 8192") == true)
        #expect(refusal { $0.rungs = [StreamRung(width: 0, height: 0, bitRate: 400_000)] }?.contains("give its height, its width or both") == true)
        #expect(refusal { $0.rungs = [StreamRung(width: 320, height: 240, bitRate: Int.max)] }?.contains("1000 to 1000000000") == true)
        #expect(refusal { $0.rungs = [StreamRung(width: 320, height: 240, bitRate: 400_000, level: 99)] }?.contains("the level one of H.264's") == true)
        #expect(refusal { $0.segmentDuration = .zero }?.contains("from one frame to 60 s") == true)
        #expect(refusal { $0.segmentDuration = MediaTime(value: 3600, timescale: 1) }?.contains("from one frame to 60 s") == true)
        #expect(refusal { $0.audioLanguage = "en\"\n#EXT-X-ENDLIST" }?.contains("is not a language tag") == true)
        #expect(refusal { $0.audioChannels = 9 }?.contains("one of AAC's channel configurations") == true)
        #expect(refusal { $0.audioChannels = 7 }?.contains("one of AAC's channel configurations") == true)
    }

    /// A ladder fitted to the picture as shown: one side follows the aspect, two make a box the picture fits
    /// in, samples that are not square and a rotation are applied, sizes are even, and a rung larger than the
    /// source is refused, left out or enlarged as asked.
    @Test func aLadderIsFittedToThePictureAsShown() throws {
        let rungs = [StreamRung(width: 0, height: 720, bitRate: 3_000_000), StreamRung(width: 640, height: 0, bitRate: 1_000_000),
                     StreamRung(width: 400, height: 400, bitRate: 500_000)]
        let wide = try StreamLadder(rungs, displayWidth: 1920, displayHeight: 1080, larger: .refuse)
        #expect(wide.rungs.map { "\($0.width)x\($0.height)" } == ["1280x720", "640x360", "400x226"])
        // A 720x576 PAL picture with 64:45 samples is shown 1024x576; a phone's 1920x1080 turned a quarter is 1080x1920.
        let anamorphic = try StreamLadder([StreamRung(width: 0, height: 576, bitRate: 2_000_000)], width: 720, height: 576,
                                          sampleAspect: Rational(64, 45), rotation: nil, larger: .refuse)
        #expect(anamorphic.display == (1024, 576) && anamorphic.rungs[0].width == 1024)
        let portrait = try StreamLadder([StreamRung(width: 0, height: 640, bitRate: 1_000_000)], width: 1920, height: 1080,
                                        sampleAspect: nil, rotation: -90, larger: .refuse)
        #expect(portrait.display == (1080, 1920) && portrait.quarterTurns == 1 && (portrait.rungs[0].width, portrait.rungs[0].height) == (360, 640))
        // Larger than 1280x720: refused by default, naming the rung and the way past; left out; or enlarged.
        let big = [StreamRung(width: 0, height: 1080, bitRate: 5_000_000), StreamRung(width: 0, height: 360, bitRate: 800_000)]
        #expect(throws: ExportError.self) { try StreamLadder(big, displayWidth: 1280, displayHeight: 720, larger: .refuse) }
        do { _ = try StreamLadder(big, displayWidth: 1280, displayHeight: 720, larger: .refuse) } catch {
            #expect(error.description.contains("rung 1 (1920x1080) is larger than the source's picture (1280x720 as shown)") && error.description.contains("\"skip\""))
        }
        let skipped = try StreamLadder(big, displayWidth: 1280, displayHeight: 720, larger: .skip)
        #expect(skipped.skipped == [0] && skipped.rungs.map(\.height) == [360])
        #expect(try StreamLadder(big, displayWidth: 1280, displayHeight: 720, larger: .upscale).rungs.map(\.width) == [1920, 640])
        #expect(throws: ExportError.self) { try StreamLadder([big[0]], displayWidth: 1280, displayHeight: 720, larger: .skip) }
        // An odd source rounds to even sizes without counting as an enlargement.
        let odd = try StreamLadder([StreamRung(width: 0, height: 122, bitRate: 100_000)], displayWidth: 161, displayHeight: 121, larger: .refuse)
        #expect((odd.rungs[0].width, odd.rungs[0].height) == (162, 122))
    }

    /// The level chosen is the lowest of H.264's table that holds the picture, the rate and the peak.
    @Test func theLevelIsTheLowestThatHoldsTheRung() {
        #expect(H264Level.lowest(width: 1920, height: 1080, framesPerSecond: 30, maxBitRate: 7_500_000, profile: "high") == 40)
        #expect(H264Level.lowest(width: 1920, height: 1080, framesPerSecond: 60, maxBitRate: 9_000_000, profile: "high") == 42)
        #expect(H264Level.lowest(width: 1280, height: 720, framesPerSecond: 30, maxBitRate: 4_500_000, profile: "main") == 31)
        #expect(H264Level.lowest(width: 1920, height: 1080, framesPerSecond: 30, maxBitRate: 30_000_000, profile: "main") == 41)
        #expect(H264Level.lowest(width: 8192, height: 8192, framesPerSecond: 120, maxBitRate: 1_000_000, profile: "high") == nil)
        #expect(H264Level.name(31) == "3.1")
    }

    /// HEVC's and AV1's levels, Main tier: the picture (and HEVC's sides), the samples a second, the peak, and
    /// HEVC's buffer, whose default is one second at the peak (two would put 1080p at level 5.0).
    @Test func hevcAndAV1LevelsAreTheLowestThatHoldTheRung() {
        let hd = StreamRung(width: 1920, height: 1080, bitRate: 4_500_000, codec: .hevc)
        #expect(hd.bufferSize == hd.maxBitRate && StreamRung(width: 2, height: 2, bitRate: 4_500_000).bufferSize == 13_500_000)
        func hevc(_ w: Int, _ h: Int, _ fps: Double, peak: Int, buffer: Int) -> Int? {
            RungLevel.lowest(.hevc, width: w, height: h, framesPerSecond: fps, maxBitRate: peak, bufferSize: buffer, profile: "main")
        }
        #expect(hevc(1920, 1080, 30, peak: 6_750_000, buffer: 6_750_000) == 40)
        #expect(hevc(1920, 1080, 30, peak: 6_750_000, buffer: 13_500_000) == 50, "a buffer over 4.1's 12 Mbit")
        #expect(hevc(1920, 1080, 60, peak: 6_750_000, buffer: 6_750_000) == 41)
        #expect(hevc(3840, 2160, 30, peak: 20_000_000, buffer: 20_000_000) == 50)
        #expect(hevc(320, 240, 30, peak: 900_000, buffer: 1_800_000) == 21, "2.0's buffer is 1.5 Mbit")
        #expect(hevc(8192, 300, 30, peak: 1_000_000, buffer: 1_000_000) == 50, "a side over 4.1's square root of 8 pictures")
        func av1(_ w: Int, _ h: Int, _ fps: Double, peak: Int) -> Int? {
            RungLevel.lowest(.av1, width: w, height: h, framesPerSecond: fps, maxBitRate: peak, bufferSize: 0, profile: "main")
        }
        #expect(av1(1920, 1080, 30, peak: 7_500_000) == 40 && av1(1280, 720, 30, peak: 4_500_000) == 31 && av1(160, 120, 30, peak: 300_000) == 20)
        #expect(av1(1920, 1080, 30, peak: 25_000_000) == 50 && av1(16384, 8704, 120, peak: 1_000_000) == nil)
        #expect(RungLevel.known(.av1).first == 20 && RungLevel.known(.hevc).contains(62) && RungLevel.name(53) == "5.3")
    }

    /// A ladder of an HEVC, an AV1 and an H.264 rung over 10 s cut every 2 s: each rung's segments begin at the same
    /// frames with its keyframes (and no others); each CODECS is read from the configuration record the muxer wrote
    /// and agrees with ffprobe's profile and level of the stream (HEVC: Main tier, level 2.1 for 320x240 at 30 fps,
    /// a 0.9 Mbit/s peak and a 1.8 Mbit buffer, over 2.0's 1.5, which x265 would have shrunk; `hvc1` as Apple's
    /// players take it; AV1: Main, level 2.0 for 160x120). A level asked for that does not hold the rung is refused.; the checker finds
    /// nothing and GStreamer plays each rung to its last frame. Over MPEG-TS, HEVC and AV1 are refused before work.
    @Test func hevcAndAV1RungsBeginTheirSegmentsAtTheSameFramesAndPlay() async throws {
        let rungs = [StreamRung(width: 320, height: 240, bitRate: 600_000, bufferSize: 1_800_000, codec: .hevc), StreamRung(width: 160, height: 120, bitRate: 200_000, codec: .av1),
                     StreamRung(width: 160, height: 120, bitRate: 150_000)]
        let (folder, report) = try await Self.package(.longMP4, rungs: rungs, segment: MediaTime(value: 2, timescale: 1))
        let video = report.tracks.filter { $0.kind == .video }
        #expect(video.count == 3, "\(video.map(\.codecs))")
        for track in video {
            #expect(track.segments.map { Double($0.duration) / Double(track.timescale) } == [2, 2, 2, 2, 2], "\(track.folder)")
            let frames = try Self.frames(folder, track)
            #expect(frames.count == 300 && frames.filter(\.key).map(\.time) == [0, 2, 4, 6, 8], "\(track.folder): keyframes at \(frames.filter(\.key).map(\.time))")
            let stream = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "stream=codec_name,codec_tag_string,profile,level",
                                                             "-of", "csv=p=0", folder + "/" + track.folder + ".joined.mp4"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            switch track.folder {
            case "video-1": #expect(stream == "hevc,Main,hvc1,63" && track.codecs.hasPrefix("hvc1.1.6.L63."), "\(stream) \(track.codecs)")
            case "video-2": #expect(stream == "av1,Main,av01,0" && track.codecs == "av01.0.00M.08", "\(stream) \(track.codecs)")
            default: #expect(stream.hasPrefix("h264,") && track.codecs.hasPrefix("avc1."), "\(stream) \(track.codecs)")
            }
        }
        let findings = try StreamChecker.check(folder: folder, report: report)
        #expect(findings.isEmpty, "\(findings)")
        let played = try StreamChecker.playEachRung(folder: folder, report: report)
        #expect(played.isEmpty, "\(played)")

        await #expect {
            _ = try await Self.package(.longMP4, rungs: [StreamRung(width: 320, height: 240, bitRate: 600_000, codec: .hevc, level: 10)],
                                       segment: MediaTime(value: 2, timescale: 1))
        } throws: { error in
            "\(error)".contains("HEVC level 1.0 does not hold it; the lowest that does is 2.0") && "\(error)".contains("leave out \"level\"")
        }
        var settings = StreamSettings(folder: folder + "-ts", rungs: [rungs[0]], segmentDuration: MediaTime(value: 2, timescale: 1))
        settings.container = .transportStream
        #expect { try settings.check() } throws: { error in
            "\(error)".contains("HEVC rung is packaged in CMAF only") && "\(error)".contains("leave out \"container\"")
        }
    }
}
