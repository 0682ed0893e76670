import FarmTestSupport
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import Testing
@testable import MediaEdit

private func t(_ v: Int64, _ s: Int32 = 1) -> MediaTime { MediaTime(value: v, timescale: s) }

/// Exports checked with ffmpeg and ffprobe as oracles.
@Suite struct ExportTests {
    func output(_ name: String) throws -> String {
        try TestPaths.makeTemporaryFolder("export").appendingPathComponent(name).path
    }

    /// A composition of whole files (or ranges of them), then scaled ranges.
    func composition(_ pieces: [(MediaFixture, TimeRange?)], scales: [(TimeRange, MediaTime)] = []) async throws -> Composition {
        var c = Composition()
        for (fixture, range) in pieces {
            let duration = try await Asset(path: fixture.path).load(.duration)
            try c.insert(range ?? TimeRange(start: .zero, duration: duration), of: fixture.path)
        }
        for (range, to) in scales { try c.scale(range, toDuration: to) }
        return c
    }

    func export(_ c: Composition, _ path: String, mode: ExportSettings.Mode = .passthrough, muxer: String = "mp4",
                timePitch: AudioTimePitchAlgorithm = .spectral, policy: ExportSettings.AudioPolicy = .auto,
                cuts: ExportSettings.Cuts = .exact, frameDuration: MediaTime = t(1, 30)) async throws -> ExportReport {
        let settings = ExportSettings(mode: mode, outputPath: path, muxer: muxer, frameDuration: frameDuration, preset: "ultrafast",
                                      audioPolicy: policy, cuts: cuts, timePitch: timePitch)
        return try await ExportSession(composition: c, settings: settings).export()
    }

    @Test(arguments: [("mp4", "copy.mp4"), ("matroska", "copy.mkv")])
    func unscaledPassthroughCopiesEveryPacketUnchanged(_ muxer: String, _ name: String) async throws {
        let source = MediaFixture.tone60MP4.path
        let path = try output(name)
        let report = try await export(try await composition([(.tone60MP4, nil)]), path, muxer: muxer)
        #expect(report.audio.handling == "copied" && report.video?.framesDecoded == 0)
        #expect(try MediaProbe.streamHashes(path) == MediaProbe.streamHashes(source))
        for type in ["v", "a"] {
            let a = try MediaProbe.packets(source, stream: type).map(\.pts)
            let b = try MediaProbe.packets(path, stream: type).map(\.pts)
            try #require(a.count == b.count)
            // Matroska counts in milliseconds and FFmpeg shifts priming to zero: same timing, one offset.
            let shift = b[0] - a[0]
            let tolerance = muxer == "mp4" ? 1e-6 : 0.0011
            #expect(muxer == "mp4" ? shift == 0 : abs(shift) < 0.03)
            #expect(zip(a, b).allSatisfy { abs($1 - $0 - shift) <= tolerance }, "\(type) timestamps differ")
        }
    }

    @Test(arguments: [AudioTimePitchAlgorithm.spectral, .timeDomain])
    func slowMotionKeepsPitchAndEveryFrame(_ algorithm: AudioTimePitchAlgorithm) async throws {
        let path = try output("slow-\(algorithm).mp4")
        let c = try await composition([(.tone60MP4, nil)], scales: [(TimeRange(start: t(2), end: t(4)), t(8))])
        let report = try await export(c, path, timePitch: algorithm)

        // 16 s long within one frame, every source packet present and unchanged, nothing decoded.
        let video = try MediaProbe.packets(path, stream: "v")
        let end = video.last!.pts + video.last!.duration
        #expect(abs(end - 16) <= 1.0 / 60 + 1e-6)
        #expect(try MediaProbe.streamHashes(path)[0] == MediaProbe.streamHashes(MediaFixture.tone60MP4.path)[0])
        #expect(report.video?.frames == 600 && report.video?.framesDecoded == 0)
        // Inside the slowed range frames are 4/60 s apart; outside, 1/60.
        let intervals = zip(video, video.dropFirst()).map { ($0.pts, $1.pts - $0.pts) }
        #expect(intervals.filter { $0.0 >= 2.0 && $0.0 < 9.99 }.allSatisfy { abs($0.1 - 4.0 / 60) < 1e-6 })
        #expect(intervals.filter { $0.0 < 1.99 || $0.0 >= 10.0 }.allSatisfy { abs($0.1 - 1.0 / 60) < 1e-6 })
        // Audio: exactly 16 s to the sample, the tone keeps its pitch.
        let audio = try MediaProbe.monoSamples(path)
        #expect(audio.samples.count == 16 * 48000)
        #expect(try MediaProbe.declaredAudioSamples(path) == 16 * 48000)
        #expect(report.audio.samples == 16 * 48000 && report.audio.handling == "encoded")
        let inside = MediaProbe.toneFrequency(audio, from: 3, to: 9)
        let outside = MediaProbe.toneFrequency(audio, from: 11, to: 15)
        #expect(abs(inside - 440) / 440 < 0.01, "\(algorithm): \(inside) Hz in the slowed range")
        #expect(abs(outside - 440) / 440 < 0.01)
        let scaled = try #require(report.audio.pieces?.first { $0.rate != 1 })
        #expect(scaled.samples == 8 * 48000 && scaled.residual != nil)
    }

    @Test func varispeedLowersThePitch() async throws {
        let path = try output("varispeed.mov")
        let c = try await composition([(.tone60MP4, nil)], scales: [(TimeRange(start: t(2), end: t(4)), t(8))])
        _ = try await export(c, path, muxer: "mov", timePitch: .varispeed)
        let audio = try MediaProbe.monoSamples(path)
        #expect(audio.samples.count == 16 * 48000)
        let inside = MediaProbe.toneFrequency(audio, from: 3, to: 9)
        #expect(abs(inside - 110) / 110 < 0.01, "\(inside) Hz")
        #expect(abs(MediaProbe.toneFrequency(audio, from: 0.5, to: 1.5) - 440) / 440 < 0.01)
    }

    @Test(arguments: [(Int64(1), Int64(32)), (Int64(32), Int64(1))])
    func extremeRates(_ from: Int64, _ to: Int64) async throws {
        // 1/32: one second plays in 32; 32: thirty-two... of a 10 s clip, 8 s play in 1/4 s.
        let range = from == 1 ? TimeRange(start: t(1), end: t(2)) : TimeRange(start: t(1), end: t(9))
        let target = from == 1 ? t(32) : t(1, 4)
        let path = try output("rate-\(from)-\(to).mp4")
        let c = try await composition([(.tone60MP4, nil)], scales: [(range, target)])
        let report = try await export(c, path)
        let expected = from == 1 ? 41.0 : 2.25
        #expect(abs(report.duration.seconds - expected) < 1e-9)
        let video = try MediaProbe.packets(path, stream: "v")
        #expect(video.count == 600)
        #expect(abs(video.last!.pts + video.last!.duration - expected) <= 1.0 / 60)
        // Exact in the container; decoding adds at most the padding of the last AAC frame.
        #expect(try MediaProbe.declaredAudioSamples(path) == Int(expected * 48000))
        let decoded = try MediaProbe.decodedSampleCount(path)
        #expect(decoded >= Int(expected * 48000) && decoded < Int(expected * 48000) + 1024)
    }

    @Test func variableFrameRateToConstant() async throws {
        let path = try output("cfr.mp4")
        let c = try await composition([(.vfrWithAudioMP4, nil)])
        let report = try await export(c, path, mode: .constantFrameRate, frameDuration: t(1, 30))
        let d = c.duration.seconds
        let video = try MediaProbe.packets(path, stream: "v")
        #expect(video.count == Int((d * 30).rounded(.up)))
        #expect(video.count == Int((d * 30).rounded()))
        #expect(video.allSatisfy { abs($0.duration - 1.0 / 30) < 1e-6 })
        #expect(zip(video, video.dropFirst()).allSatisfy { abs($1.pts - $0.pts - 1.0 / 30) < 1e-6 })
        #expect(report.video?.frames == video.count && (report.video?.framesDecoded ?? 0) > 0)
        // Audio and video end together (within one AAC frame).
        let audioSeconds = Double(try MediaProbe.decodedSampleCount(path)) / 44100
        let videoEnd = video.last!.pts + video.last!.duration
        #expect(abs(audioSeconds - videoEnd) <= 1024.0 / 44100, "audio \(audioSeconds) s, video \(videoEnd) s")
    }

    @Test(arguments: [ExportSettings.Mode.passthrough, .constantFrameRate])
    func joinWithAScaleAcrossTheJoin(_ mode: ExportSettings.Mode) async throws {
        let path = try output("join-\(mode).mp4")
        // 0..3 s of the long clip, then the short one (3 s); 2..4 s (across the join) at half speed.
        let c = try await composition([(.tone60MP4, TimeRange(start: .zero, end: t(3))), (.tone60ShortMP4, nil)],
                                      scales: [(TimeRange(start: t(2), end: t(4)), t(4))])
        let report = try await export(c, path, mode: mode, frameDuration: t(1, 60))
        #expect(report.duration == t(8))
        let video = try MediaProbe.packets(path, stream: "v")
        #expect(video.count == (mode == .passthrough ? 360 : 480))
        let audio = try MediaProbe.monoSamples(path)
        #expect(audio.samples.count == 8 * 48000)
        // The first clip's 440 Hz tone, then the second's 660 Hz, both at their pitch though slowed.
        #expect(abs(MediaProbe.toneFrequency(audio, from: 2.2, to: 3.8) - 440) / 440 < 0.01)
        #expect(abs(MediaProbe.toneFrequency(audio, from: 4.2, to: 5.8) - 660) / 660 < 0.01)
    }

    @Test func keyframeCutsSnapBackToKeyframes() async throws {
        let path = try output("snap.mp4")
        // Keyframes every second: a cut at 2.5 s snaps back to 2 s, and the report says so.
        let c = try await composition([(.tone60MP4, TimeRange(start: t(5, 2), end: t(5)))])
        let report = try await export(c, path, cuts: .keyframe)
        #expect(report.cuts.map(\.method) == [.snapped])
        #expect(report.snappedCuts.count == 1)
        #expect(report.snappedCuts.first?.requested == t(5, 2) && report.snappedCuts.first?.snappedTo == t(2))
        #expect(report.duration == t(3))
        #expect(try MediaProbe.packets(path, stream: "v").count == 180)
    }

    @Test func chaptersFollowTheMapping() async throws {
        let path = try output("chapters.mkv")
        let c = try await composition([(.cfr60MKV, nil)], scales: [(TimeRange(start: .zero, end: t(1)), t(2))])
        let report = try await export(c, path, muxer: "matroska")
        #expect(report.chapters == 2)
        let chapters = try MediaProbe.chapters(path)
        #expect(chapters.map(\.title) == ["Intro", "Main"])
        #expect(chapters.map(\.start) == [0, 2] && chapters.map(\.end) == [2, 3])
    }

    @Test func constantFrameRateKeepsRotationAndMetadata() async throws {
        let path = try output("rotated-cfr.mp4")
        _ = try await export(try await composition([(.rotatedMP4, nil)]), path, mode: .constantFrameRate, frameDuration: t(1, 25))
        let probe = try FFprobeReport(path: path)
        #expect(FFprobeReport.rotation(probe.streams[0]) == -90)
        #expect(probe.streams[0]["width"] as? Int == 320)

        let titled = try output("titled.mp4")
        _ = try await export(try await composition([(.cfr30MP4, nil)]), titled)
        #expect(FFprobeReport.tag(try FFprobeReport(path: titled).format, "title") == "MediaFarm fixture")
    }

    @Test(arguments: [true, false])
    func faststartPutsTheIndexFirst(_ faststart: Bool) async throws {
        let path = try output("faststart-\(faststart).mp4")
        let settings = ExportSettings(mode: .passthrough, outputPath: path, muxer: "mp4", faststart: faststart)
        _ = try await ExportSession(composition: try await composition([(.cfr30MP4, nil)]), settings: settings).export()
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let moov = try #require(data.range(of: Data("moov".utf8))?.lowerBound)
        let mdat = try #require(data.range(of: Data("mdat".utf8))?.lowerBound)
        #expect((moov < mdat) == faststart)
    }

    @Test func copyPolicyRefusesRetimedAudio() async throws {
        let path = try output("copy-refused.mp4")
        let c = try await composition([(.tone60MP4, nil)], scales: [(TimeRange(start: t(2), end: t(4)), t(8))])
        await #expect(throws: ExportError.self) { _ = try await export(c, path, policy: .copy) }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// A constant-frame-rate export of some of its frames (one chunk of a chunked export, #29): video only,
    /// exactly those frames, timed from 0, the first a keyframe, each the frame the whole export shows
    /// there (a slowed range and two sources, so that the chunks start inside a scaled range and a segment).
    @Test func aFrameRangeIsExactlyThoseFramesOfTheWholeExport() async throws {
        let c = try await composition([(.longMP4, nil), (.cfr30MP4, nil)], scales: [(TimeRange(start: t(2), duration: t(2)), t(4))])
        let folder = try TestPaths.makeTemporaryFolder("chunks")
        let whole = folder.appendingPathComponent("whole.mp4").path
        let report = try await export(c, whole, mode: .constantFrameRate)
        let frames = report.video?.frames ?? 0
        #expect(frames == 420, "12 s of sources, 2 s slowed to 4: 14 s at 30 fps")
        let wholeLuma = try EditListProbe.LumaFrames(whole, width: 320, height: 240)
        for range in [0..<100, 100..<250, 250..<frames] {
            let path = folder.appendingPathComponent("chunk-\(range.lowerBound).mp4").path
            var settings = ExportSettings(mode: .constantFrameRate, outputPath: path, muxer: "mp4", frameDuration: t(1, 30), preset: "ultrafast")
            settings.frameRange = range
            let chunk = try await ExportSession(composition: c, settings: settings).export()
            #expect(chunk.video?.frames == range.count && chunk.duration == t(Int64(range.count), 30))
            let packets = try MediaProbe.packets(path, stream: "v")
            #expect(packets.count == range.count)
            // ffprobe prints six decimals: each time within a microsecond of a frame time, every frame once.
            #expect(packets.map { Int(($0.pts * 30).rounded()) }.sorted() == Array(0..<range.count), "timed from 0, one frame every 1/30 s")
            #expect(packets.allSatisfy { abs($0.pts * 30 - ($0.pts * 30).rounded()) < 0.0001 })
            #expect(try MediaProbe.packets(path, stream: "a").isEmpty, "video only")
            let keyframes = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                                                                "-of", "csv=p=0", path]).stdout.split(separator: "\n")
            #expect(keyframes.first?.contains("K") == true, "the chunk begins with a keyframe")
            // Each frame is the whole export's frame at that position (another encoding of the same picture).
            let luma = try EditListProbe.LumaFrames(path, width: 320, height: 240)
            #expect(luma.count == range.count)
            var worst = Double.infinity
            for i in 0..<min(luma.count, range.count) { worst = min(worst, luma.psnr(i, against: wholeLuma, range.lowerBound + i)) }
            #expect(worst >= 35, "chunk \(range): a frame is only \(worst) dB from the whole export's")
        }
        var outside = ExportSettings(mode: .constantFrameRate, outputPath: folder.appendingPathComponent("outside.mp4").path, muxer: "mp4",
                                     frameDuration: t(1, 30), preset: "ultrafast")
        outside.frameRange = 400..<500
        await #expect { try await ExportSession(composition: c, settings: outside).export() } throws: {
            "\($0)".contains("frames 400..<500: the composition has frames 0..<420 only")
        }
    }

    /// Chunks joined (#29): the whole export's frames at the same times, keyframes where the chunks begin, the
    /// audio the unchunked export has, packet for packet (rendered once over the whole composition). With
    /// x264's B-frames (preset veryfast), whose decoding times run ahead of their presentation at each join.
    @Test func chunksJoinedAreTheWholeExport() async throws {
        let c = try await composition([(.longMP4, nil), (.cfr30MP4, nil)], scales: [(TimeRange(start: t(2), duration: t(2)), t(4))])
        let folder = try TestPaths.makeTemporaryFolder("join")
        func settings(_ name: String, frames: Range<Int>? = nil) -> ExportSettings {
            var s = ExportSettings(mode: .constantFrameRate, outputPath: folder.appendingPathComponent(name).path, muxer: "mp4",
                                   frameDuration: t(1, 30), preset: "veryfast")
            s.frameRange = frames
            return s
        }
        let whole = try await ExportSession(composition: c, settings: settings("whole.mp4")).export()
        var chunks: [ExportChunk] = []
        for range in [0..<100, 100..<250, 250..<420] {
            let chunk = settings("chunk-\(range.lowerBound).mp4", frames: range)
            _ = try await ExportSession(composition: c, settings: chunk).export()
            chunks.append(ExportChunk(path: chunk.outputPath, frames: range))
        }
        let joinedPath = folder.appendingPathComponent("joined.mp4").path
        let joined = try await ExportSession(composition: c, settings: settings("joined.mp4")).join(chunks)
        #expect(joined.duration == whole.duration && joined.video?.frames == 420)

        let packets = try MediaProbe.packets(joinedPath, stream: "v")
        #expect(packets.map { Int(($0.pts * 30).rounded()) }.sorted() == Array(0..<420), "every frame once, at its time")
        #expect(try EditListProbe.videoFrameHashes(joinedPath).count == 420, "FFmpeg decodes 420 frames")
        let flags = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags",
                                                        "-of", "csv=p=0", joinedPath]).stdout.split(separator: "\n")
        let keyframes = flags.compactMap { line -> Int? in
            let f = line.split(separator: ",")
            return f.count == 2 && f[1].contains("K") ? Double(f[0]).map { Int(($0 * 30).rounded()) } : nil
        }
        #expect([0, 100, 250].allSatisfy(keyframes.contains), "a keyframe where each chunk begins: \(keyframes)")
        let wholeLuma = try EditListProbe.LumaFrames(folder.appendingPathComponent("whole.mp4").path, width: 320, height: 240)
        let joinedLuma = try EditListProbe.LumaFrames(joinedPath, width: 320, height: 240)
        #expect(joinedLuma.count == 420)
        var worst = Double.infinity
        for i in 0..<min(420, joinedLuma.count) { worst = min(worst, joinedLuma.psnr(i, against: wholeLuma, i)) }
        #expect(worst >= 35, "a joined frame is only \(worst) dB from the whole export's")
        func audio(_ path: String) throws -> String {
            try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a", "-c", "copy", "-f", "md5", "-"]).stdout
        }
        #expect(try audio(joinedPath) == (try audio(folder.appendingPathComponent("whole.mp4").path)), "the same audio, packet for packet")

        // Chunks that do not hold every frame once are refused, naming the gap.
        await #expect { try await ExportSession(composition: c, settings: settings("gap.mp4")).join([chunks[0], chunks[2]]) } throws: {
            "\($0)".contains("holds frames 250..<420, but frame 100 comes next")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("gap.mp4").path))
    }

    @Test func cancellingLeavesNoFile() async throws {
        let path = try output("cancelled.mp4")
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let c = try await composition([(.tone60MP4, nil)], scales: [(TimeRange(start: .zero, end: t(10)), t(40))])
        let settings = ExportSettings(mode: .constantFrameRate, outputPath: path, muxer: "mp4", frameDuration: t(1, 60), preset: "ultrafast")
        // Cancelled from its first progress report, on the export's own thread: a sleeping test task can
        // wake too late on a loaded machine, when the export is already done.
        let canceller = Canceller()
        let task = Task { try await ExportSession(composition: c, settings: settings).export { _ in canceller.fire() } }
        canceller.set(task)
        await #expect(throws: (any Error).self) { _ = try await task.value }
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)   // no temporary left either
    }
}

/// Cancels a task when fired, from any thread, even if fired before the task is handed over.
final class Canceller: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<ExportReport, any Error>?
    private var fired = false

    func set(_ task: Task<ExportReport, any Error>) {
        lock.lock(); defer { lock.unlock() }
        self.task = task
        if fired { task.cancel() }
    }

    func fire() {
        lock.lock(); defer { lock.unlock() }
        fired = true
        task?.cancel()
    }
}
