import FarmTestSupport
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
            // Baseline, whatever the rung's ceiling), and the level asked for (4.0).
            let stream = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "stream=profile,level",
                                                             "-of", "csv=p=0", folder + "/" + track.folder + ".joined.mp4"]).stdout
            let profile = ["Constrained Baseline": "42c0", "Main": "4d40", "High": "6400"][String(stream.split(separator: ",")[0])]
            #expect(profile.map { "avc1.\($0)28" } == track.codecs && stream.hasSuffix(",40\n"), "\(track.codecs) against \(stream)")
            #expect(frames.count == 300, "\(track.folder): \(frames.count) frames")
            #expect(frames.filter(\.key).map(\.time) == [0, 4, 8], "\(track.folder): keyframes at \(frames.filter(\.key).map(\.time))")
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

    /// GStreamer's playbin3 (its own HLS and DASH demuxers, over HTTP as a player fetches) plays the
    /// master playlist and the MPD to the end, every frame of the rung it chose.
    @Test func playbin3PlaysTheHLSAndTheDASHToTheEnd() async throws {
        let (folder, _) = try await Self.package(.longMP4, rungs: [StreamRung(width: 320, height: 240, bitRate: 400_000),
                                                                    StreamRung(width: 160, height: 120, bitRate: 150_000)],
                                                 segment: MediaTime(value: 4, timescale: 1))
        let port = TestPaths.freeLoopbackPort()
        let server = try Background(["/usr/bin/python3", "-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", folder],
                                    log: folder + ".server.log")
        defer { server.kill(SIGKILL); _ = server.wait(timeout: 5) }
        #expect(TestPaths.waitForListener(port: port, udp: false), "\(server.log)")
        for entry in ["master.m3u8", "manifest.mpd"] {
            let r = try ProcessRunner.run("gst-launch-1.0", ["-q", "playbin3", "uri=http://127.0.0.1:\(port)/\(entry)",
                                                             "video-sink=checksumsink hash=md5 sync=false", "audio-sink=fakesink sync=false"])
            let frames = r.stdout.split(separator: "\n").filter { $0.contains(":") }.count
            #expect(r.status == 0 && frames == 300, "\(entry): status \(r.status), \(frames) frames: \(r.stderr.prefix(600))")
        }
    }
}
