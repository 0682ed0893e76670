import FarmTestSupport
import Foundation
import MediaCore
import MediaTime
import Testing
@testable import MediaInspect

/// Every field `inspect` reports, compared with ffprobe's view of the same generated file.
@Suite struct AssetVersusFFprobeTests {
    static let fixtures: [MediaFixture] = [.cfr30MP4, .cfr60MKV, .vfrMP4, .audioM4A, .audioWAV, .movH264, .rotatedMP4, .longMP4]

    @Test(arguments: fixtures)
    func tracksMatchFFprobe(_ fixture: MediaFixture) async throws {
        let asset = Asset(path: fixture.path)
        let (duration, tracks, playable, readable, exportable, composable) =
            try await asset.load(.duration, .tracks, .isPlayable, .isReadable, .isExportable, .isComposable)
        let probe = try FFprobeReport(path: fixture.path, countFrames: true)
        #expect(playable && readable && exportable && composable)
        #expect(tracks.count == probe.streams.count)

        var expectedEnd = 0.0
        for (track, stream) in zip(tracks, probe.streams) {
            let (type, format, size, language, range, rate, minFrame, dataRate, decodable) = try await track.load(
                .mediaType, .formatDescription, .naturalSize, .languageCode, .timeRange, .nominalFrameRate,
                .minFrameDuration, .estimatedDataRate, .isDecodable)
            #expect(type.rawValue == stream["codec_type"] as? String)
            #expect(format.codec == stream["codec_name"] as? String)
            #expect(language == (FFprobeReport.tag(stream, "language") ?? "und"))
            #expect(decodable)

            // Time range: the start exactly as ffprobe has it, the length within one frame or packet.
            let start = FFprobeReport.double(stream, "start_time") ?? 0   // WAV: none, meaning 0
            #expect(abs(range.start.seconds - start) < 0.0015, "\(fixture) start \(range.start) vs \(start)")
            let tolerance: Double
            if type == .video {
                let fps = try #require(FFprobeReport.rate(stream, "avg_frame_rate"))
                tolerance = 1.0 / fps + 0.002
                #expect(size == Size(width: FFprobeReport.int(stream, "width")!, height: FFprobeReport.int(stream, "height")!))
                #expect(format.pixelFormat == stream["pix_fmt"] as? String)
                let frames = try #require(FFprobeReport.int(stream, "nb_read_packets"))
                let measuredRate = Double(frames) / range.duration.seconds
                #expect(abs(rate - measuredRate) < 0.01 || abs(rate - fps) < 0.01, "\(fixture) rate \(rate) vs \(fps)")
                #expect(abs(rate - fps) < 0.05, "\(fixture) nominal frame rate \(rate), ffprobe \(fps)")
                #expect(minFrame.isNumeric)
            } else {
                let sampleRate = try #require(FFprobeReport.int(stream, "sample_rate"))
                tolerance = 1024.0 / Double(sampleRate) + 0.002
                #expect(format.sampleRate == sampleRate)
                #expect(format.channelCount == FFprobeReport.int(stream, "channels"))
                #expect(size == nil)
                #expect(minFrame.kind == .invalid)
            }
            let expectedDuration = FFprobeReport.double(stream, "duration") ?? (FFprobeReport.double(probe.format, "duration")! - start)
            #expect(abs(range.duration.seconds - expectedDuration) <= tolerance,
                    "\(fixture) track \(track.trackID) lasts \(range.duration.seconds), ffprobe \(expectedDuration)")
            expectedEnd = max(expectedEnd, start + expectedDuration)
            if let declared = FFprobeReport.int(stream, "bit_rate"), declared > 0 {
                let ratio = Double(dataRate) / Double(declared)
                #expect(ratio > 0.85 && ratio < 1.15, "\(fixture) data rate \(dataRate) vs declared \(declared)")
            }
        }
        let formatDuration = try #require(FFprobeReport.double(probe.format, "duration"))
        #expect(abs(duration.seconds - formatDuration) < 0.025, "\(fixture) duration \(duration) vs ffprobe \(formatDuration)")
    }

    @Test func constantFrameRatesAreExact() async throws {
        for (fixture, expected) in [(MediaFixture.cfr30MP4, MediaTime(value: 1, timescale: 30)),
                                    (.movH264, MediaTime(value: 1, timescale: 25))] {
            let asset = Asset(path: fixture.path)
            let video = try #require(try await asset.load(.tracks).first(where: { $0.mediaType == .video }))
            let (minFrame, rate) = try await video.load(.minFrameDuration, .nominalFrameRate)
            #expect(minFrame == expected)
            #expect(rate == 1 / expected.seconds)
        }
    }

    @Test func variableFrameRate() async throws {
        let asset = Asset(path: MediaFixture.vfrMP4.path)
        let video = try #require(try await asset.load(.tracks).first)
        let (minFrame, rate, range) = try await video.load(.minFrameDuration, .nominalFrameRate, .timeRange)
        // 30 frames 1/30 s apart, then 15 frames 2/30 s apart; the last (58/30 s) lasts 1/30 s as its
        // packet says: 45 frames in 59/30 s.
        #expect(minFrame == MediaTime(value: 1, timescale: 30))
        #expect(range.duration == MediaTime(value: 59, timescale: 30))
        #expect(abs(rate - 1350.0 / 59) < 1e-9)
    }

    @Test func chaptersAndMetadata() async throws {
        let mkv = Asset(path: MediaFixture.cfr60MKV.path)
        let (chapters, metadata) = try await mkv.load(.chapters, .metadata)
        let probe = try FFprobeReport(path: MediaFixture.cfr60MKV.path)
        #expect(chapters.map(\.title) == probe.chapters.map { FFprobeReport.tag($0, "title") })
        #expect(chapters.map(\.start) == [.zero, MediaTime(value: 1, timescale: 1)])
        #expect(chapters.map(\.duration) == [MediaTime(value: 1, timescale: 1), MediaTime(value: 1, timescale: 1)])
        #expect(metadata.title == "Chaptered")

        let mp4 = Asset(path: MediaFixture.cfr30MP4.path)
        let (mp4Metadata, groups) = try await mp4.load(.metadata, .mediaSelectionGroups)
        #expect(mp4Metadata.title == "MediaFarm fixture")
        #expect(mp4Metadata.software?.hasPrefix("Lavf") == true)
        let audible = try #require(groups.first { $0.mediaCharacteristic == "audible" })
        #expect(audible.options.map(\.languageCode) == ["fra"])
    }

    /// The options of each selection group say their characteristics as AVFoundation names them, from the
    /// flags Matroska carries (as FFmpeg's muxer writes them from its dispositions): main or auxiliary
    /// content, original or dubbed, forced-only subtitles, SDH subtitles, audio describing the video.
    @Test func selectionOptionsSayTheirCharacteristics() async throws {
        let folder = try TestPaths.makeTemporaryFolder("characteristics")
        let srt = folder.appendingPathComponent("cues.srt").path, movie = folder.appendingPathComponent("flags.mkv").path
        try "1\n00:00:00,500 --> 00:00:01,000\nA cue\n".write(toFile: srt, atomically: true, encoding: .utf8)
        try ProcessRunner.check("ffmpeg", ["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=10:d=1",
                                           "-f", "lavfi", "-i", "sine=d=1", "-i", srt,
                                           "-map", "0", "-map", "1", "-map", "1", "-map", "1", "-map", "2", "-map", "2", "-map", "2",
                                           "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-c:s", "srt",
                                           "-disposition:a:0", "default+original", "-disposition:a:1", "dub", "-disposition:a:2", "visual_impaired+comment",
                                           "-disposition:s:0", "0", "-disposition:s:1", "forced", "-disposition:s:2", "hearing_impaired",
                                           movie])
        let groups = try await Asset(path: movie).load(.mediaSelectionGroups)
        let audible = try #require(groups.first { $0.mediaCharacteristic == "audible" }).options.map(\.mediaCharacteristics)
        let legible = try #require(groups.first { $0.mediaCharacteristic == "legible" }).options.map(\.mediaCharacteristics)
        #expect(audible == [["public.audible", "public.main-program-content", "public.original-content"],
                            ["public.audible", "public.main-program-content", "public.translation", "public.translation.dubbed"],
                            ["public.audible", "public.auxiliary-content", "public.accessibility.describes-video"]], "\(audible)")
        #expect(legible == [["public.legible", "public.main-program-content"],
                            ["public.legible", "public.main-program-content", "public.subtitles.forced-only"],
                            ["public.legible", "public.main-program-content", "public.accessibility.transcribes-spoken-dialog",
                             "public.accessibility.describes-music-and-sound"]], "\(legible)")
        // The flags as ffprobe reads them from the file (the independent reader): what the expectations above assume.
        let probed = try ProcessRunner.check("ffprobe", ["-v", "error", "-show_entries", "stream=index:stream_disposition", "-of", "json", movie])
        let streams = (try JSONSerialization.jsonObject(with: probed.stdoutData) as? [String: Any])?["streams"] as? [[String: Any]] ?? []
        let set = streams.map { stream in Set(((stream["disposition"] as? [String: Int]) ?? [:]).filter { $0.value == 1 }.keys) }
        #expect(set.count == 7 && set[1].isSuperset(of: ["original"]) && set[2].contains("dub") && set[3].isSuperset(of: ["visual_impaired", "comment"])
                && set[5].contains("forced") && set[6].contains("hearing_impaired") && !set[4].contains("forced"), "\(set)")
    }

    @Test func rotationFromTheTrackMatrix() async throws {
        let asset = Asset(path: MediaFixture.rotatedMP4.path)
        let video = try #require(try await asset.load(.tracks).first)
        let (transform, size) = try await video.load(.preferredTransform, .naturalSize)
        #expect(transform == AffineTransform(a: 0, b: 1, c: -1, d: 0, tx: 320, ty: 0))
        #expect(transform.rotationDegrees == 90)
        #expect(size == Size(width: 320, height: 240))   // natural size is the encoded size
        let probe = try FFprobeReport(path: MediaFixture.rotatedMP4.path)
        #expect(video.stream.rotation == FFprobeReport.rotation(probe.streams[0]))
    }
}
