import FarmTestSupport
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import Testing
@testable import MediaEdit

/// Passthrough cuts at arbitrary frames: the decoded output holds exactly the composition's frames
/// (compared by content with the same frames decoded from the source) and its audio exactly the
/// composition's samples, through the edit lists MediaFarm writes.
@Suite struct ExactCutTests {
    /// Source frames (30 fps), decoded once per fixture.
    static let sourceFrames = Memo<MediaFixture, [String]> { try EditListProbe.videoFrameHashes($0.path) }
    static let sourceAudio = Memo<MediaFixture, (samples: [Int16], rate: Int)> { try MediaProbe.monoSamples($0.path) }

    func output(_ name: String) throws -> String {
        try TestPaths.makeTemporaryFolder("exact").appendingPathComponent(name).path
    }

    /// `count` edits at random frames (1 to 60 frames long) of a 30 fps source of `frames` frames.
    func randomEdits(_ count: Int, frames: Int, seed: UInt64) -> [(start: Int, length: Int)] {
        var rng = SeededRandom(state: seed)
        return (0..<count).map { _ in
            let start = Int.random(in: 0..<(frames - 1), using: &rng)
            return (start, Int.random(in: 1...min(60, frames - start), using: &rng))
        }
    }

    func export(_ fixture: MediaFixture, _ edits: [(start: Int, length: Int)], to path: String, muxer: String,
                scale: (TimeRange, MediaTime)? = nil, cuts: ExportSettings.Cuts = .exact) async throws -> (Composition, ExportReport) {
        var c = Composition()
        for e in edits {
            try c.insert(TimeRange(start: MediaTime(value: Int64(e.start), timescale: 30),
                                   duration: MediaTime(value: Int64(e.length), timescale: 30)), of: fixture.path)
        }
        if let scale { try c.scale(scale.0, toDuration: scale.1) }
        let settings = ExportSettings(mode: .passthrough, outputPath: path, muxer: muxer, cuts: cuts)
        return (c, try await ExportSession(composition: c, settings: settings).export())
    }

    @Test(arguments: [
        (MediaFixture.bframesGOP1sMP4, "mp4", 1, UInt64(1)),
        (.bframesGOP1sMP4, "mov", 20, 2),
        (.bframesGOP1sMP4, "mp4", 200, 3),
        (.bframesGOP10sMP4, "mp4", 20, 4),
        (.bframesGOP10sMP4, "mov", 1, 5),
        (.hevcGOP1sMP4, "mp4", 20, 6),
        (.hevcGOP1sMP4, "mov", 3, 7),
        (.hevcGOP10sMP4, "mp4", 10, 8),
    ])
    func randomCutsShowExactlyTheirFramesAndSamples(_ fixture: MediaFixture, _ container: String, _ count: Int, _ seed: UInt64) async throws {
        let source = try Self.sourceFrames.get(fixture)
        let edits = randomEdits(count, frames: source.count, seed: seed)
        let path = try output("cuts-\(seed).\(container)")
        let (composition, report) = try await export(fixture, edits, to: path, muxer: container)

        // Every source frame is distinct, so equal hashes mean the very frames asked for.
        #expect(Set(source).count == source.count)
        let wanted = edits.flatMap { source[$0.start..<($0.start + $0.length)] }
        let got = try EditListProbe.videoFrameHashes(path)
        #expect(got.count == wanted.count, "seed \(seed): \(got.count) frames decoded, \(wanted.count) asked for")
        if let i = zip(got, wanted).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            Issue.record("seed \(seed): output frame \(i) is not the frame asked for")
        }
        #expect(report.duration == composition.duration)
        #expect(report.cuts.count == count && report.cuts.allSatisfy { $0.method == .editList || $0.method == .copied })
        #expect(report.cuts.contains { $0.method == .editList })

        // Audio: the edit lists play exactly the composition's samples, the same samples as the source's.
        let audio = try Self.sourceAudio.get(fixture)
        let perFrame = audio.rate / 30
        let expected = edits.flatMap { audio.samples[($0.start * perFrame)..<(($0.start + $0.length) * perFrame)] }
        let played = try EditListProbe.editedAudio(path)
        #expect(played.count == expected.count, "seed \(seed): \(played.count) samples play, \(expected.count) asked for")
        let worst = zip(played, expected).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 4, "seed \(seed): samples differ by up to \(worst)")
    }

    @Test(arguments: [ExportSettings.Cuts.exact, .smart])
    func anEditBeforeTheFirstFrameShowsItFromTheEditsStart(_ cuts: ExportSettings.Cuts) async throws {
        // WebM with Opus: the video starts 14 ms after the audio (the file's time zero). Edits cut from 0
        // (the first one and later ones) show the first frame from their start, as a composition does:
        // no empty edit (FFmpeg honours one only at a file's start), no frame of another edit.
        let source = try Self.sourceFrames.get(.vp9TenBitWebM)
        let path = try output("from-zero-\(cuts).mp4")
        let edits = [(start: 0, length: 40), (start: 0, length: 10), (start: 90, length: 25), (start: 0, length: 20)]  // (90: a keyframe, nothing re-encoded)
        let (composition, report) = try await export(.vp9TenBitWebM, edits, to: path, muxer: "mp4", cuts: cuts)
        #expect(report.duration == composition.duration)
        let got = try EditListProbe.videoFrameHashes(path)
        let wanted = edits.flatMap { source[$0.start..<($0.start + $0.length)] }
        #expect(got.count == wanted.count && got == wanted, "\(got.count) frames, \(wanted.count) asked for")
        let lists = try EditListProbe.editLists(path)
        let video = try #require(lists.tracks.first { $0.handler == "vide" })
        #expect(!video.entries.contains { $0.mediaTime == -1 }, "\(video.entries)")
        let total = video.entries.reduce(0) { $0 + $1.duration }
        #expect(abs(Double(total) / Double(lists.movieTimescale) - composition.duration.seconds) < 1e-3)
        let first = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time",
                                                        "-of", "csv=p=0", path]).stdout.split(separator: "\n").compactMap { Double($0) }.first
        #expect(first == 0, "the first frame is shown at \(first ?? -1) s")
    }

    @Test func aScaledRangeKeepsItsFramesAndTiming() async throws {
        // One cut between keyframes, then its middle second slowed to half speed.
        let source = try Self.sourceFrames.get(.bframesGOP1sMP4)
        let path = try output("scaled.mp4")
        let (composition, report) = try await export(.bframesGOP1sMP4, [(start: 47, length: 90)], to: path, muxer: "mp4",
                                                     scale: (TimeRange(start: MediaTime(value: 1, timescale: 1), duration: MediaTime(value: 1, timescale: 1)),
                                                             MediaTime(value: 2, timescale: 1)))
        #expect(report.duration == composition.duration && composition.duration == MediaTime(value: 4, timescale: 1))
        #expect(try EditListProbe.videoFrameHashes(path) == Array(source[47..<137]))
        let times = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time",
                                                        "-of", "csv=p=0", path]).stdout.split(separator: "\n").compactMap { Double($0) }
        #expect(times.count == 90)
        // Frames 0-29 at 1/30 s, 30-59 at 2/30 s (slowed), 60-89 at 1/30 s again.
        let steps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(steps[0..<29].allSatisfy { abs($0 - 1.0 / 30) < 1e-4 })
        #expect(steps[30..<59].allSatisfy { abs($0 - 2.0 / 30) < 1e-4 })
        #expect(steps[60...].allSatisfy { abs($0 - 1.0 / 30) < 1e-4 })
        #expect(abs(times[0]) < 1e-4)
    }

    @Test func audioOnlyCutsAreExactToTheSample() async throws {
        // 44.1 kHz AAC alone: cuts inside packets, hidden by the audio track's own edit list.
        let path = try output("audio-only.m4a")
        var c = Composition()
        let source = MediaFixture.audioM4A.path
        try c.insert(TimeRange(start: MediaTime(value: 1, timescale: 2), duration: MediaTime(value: 6, timescale: 5)), of: source)
        try c.insert(TimeRange(start: MediaTime(value: 2, timescale: 1), duration: MediaTime(value: 1, timescale: 2)), of: source)
        let report = try await ExportSession(composition: c, settings: ExportSettings(mode: .passthrough, outputPath: path, muxer: "mp4")).export()
        #expect(report.audio.handling == "copied" && report.cuts.map(\.method) == [.editList, .editList])
        let whole = try MediaProbe.monoSamples(source)
        let expected = Array(whole.samples[22050..<(22050 + 52920)] + whole.samples[88200..<(88200 + 22050)])
        let played = try EditListProbe.editedAudio(path)
        #expect(played.count == expected.count)
        #expect((zip(played, expected).map { abs(Int($0) - Int($1)) }.max() ?? 99) <= 4)
    }

    @Test(arguments: [("mp4", ExportSettings.Cuts.exact), ("matroska", .exact), ("mp4", .smart)])
    func chromiumPlaysExactlyTheCompositionsFrames(_ muxer: String, _ cuts: ExportSettings.Cuts) async throws {
        // A second reader with its own media pipeline, for edit lists (mp4) and for smart rendering (Matroska,
        // smart mp4): every frame decoded, only the composition's frames presented, the first and
        // the last among them (`BrowserPlayback`: none of it depends on how busy the machine is), and the
        // duration.
        let edits = randomEdits(8, frames: 300, seed: 11).map { (start: $0.start, length: min($0.length, 12)) }
        let path = try output("chromium-\(cuts).\(muxer == "mp4" ? "mp4" : "mkv")")
        let (composition, _) = try await export(.bframesGOP1sMP4, edits, to: path, muxer: muxer, cuts: cuts)
        let frames = edits.reduce(0) { $0 + $1.length }
        let played = try BrowserPlayback("chromium-play.py", path, rate: "0.5")
        // The duration from the movie's header; once playback ends Chromium extends it to the last audio
        // its decoder gave (its FFmpeg trims an AAC edit's start, not its end).
        // Matroska states its duration in milliseconds, and its encoded audio carries AAC priming
        // FFmpeg 5.1 does not mark there (up to 1,024 samples longer).
        #expect(abs(played.duration - composition.duration.seconds) < (muxer == "mp4" ? 1e-3 : 0.03), "\(played.duration) s")
        // In Matroska everything starts 21 ms late: FFmpeg's muxer moves the encoded audio's priming,
        // which has negative times, to zero, and every stream with it.
        // (An edit list's cuts are decoded from the keyframe before them: Chromium counts those frames too,
        // up to every sample the track holds beyond the composition's.)
        let preroll = muxer == "mp4" && cuts == .exact ? try MediaProbe.packets(path, stream: "v").count - frames : 0
        #expect(played.departures(frames: frames, start: muxer == "mp4" ? 0 : 1024.0 / 48000, preroll: preroll) == [], "presented: \(played.times)")
    }

    @Test func matroskaCutsOnKeyframesAreCopiedAndOtherCodecsAreRefused() async throws {
        // On keyframes, with clean ends (no B-frame needs a frame past the end), Matroska is exact by copying.
        let source = try Self.sourceFrames.get(.bframesGOP1sMP4)
        let onKeyframes = try output("on-keyframes.mkv")
        let (_, report) = try await export(.bframesGOP1sMP4, [(start: 30, length: 30), (start: 120, length: 60)], to: onKeyframes, muxer: "matroska")
        #expect(try EditListProbe.videoFrameHashes(onKeyframes) == Array(source[30..<60] + source[120..<180]))
        #expect(report.cuts.map(\.method) == [.copied, .copied])
        // VP9 is re-encoded to match, at its odd size too.
        let vp9 = try output("vp9.mkv")
        var c = Composition()
        try c.insert(TimeRange(start: MediaTime(value: 1, timescale: 2), duration: MediaTime(value: 1, timescale: 1)), of: MediaFixture.oddSizeWebM.path)
        let r = try await ExportSession(composition: c, settings: ExportSettings(mode: .passthrough, outputPath: vp9, muxer: "matroska")).export()
        #expect(r.cuts.map(\.method) == [.smartRendered] && (r.video?.width, r.video?.height) == (161, 121))
        #expect(try EditListProbe.videoFrameHashes(vp9).count == 15)
        // MPEG-4 Part 2 cannot be re-encoded to match: a cut between its keyframes is refused, naming the ways out.
        let mpeg4 = try output("mpeg4.mkv")
        var m = Composition()
        try m.insert(TimeRange(start: MediaTime(value: 1, timescale: 2), duration: MediaTime(value: 1, timescale: 1)), of: MediaFixture.clipAVI.path)
        await #expect {
            _ = try await ExportSession(composition: m, settings: ExportSettings(mode: .passthrough, outputPath: mpeg4, muxer: "matroska")).export()
        } throws: { error in
            let text = "\(error)"
            return text.contains("edit 1 starts at 0.5 s") && text.contains("mpeg4 video") && text.contains("\"cuts\": \"keyframe\"") && text.contains("mp4")
        }
        #expect(!FileManager.default.fileExists(atPath: mpeg4))
    }

    @Test func keyframeCutsShowTheLeadIn() async throws {
        let path = try output("keyframe.mp4")
        var c = Composition()
        try c.insert(TimeRange(start: MediaTime(value: 45, timescale: 30), duration: MediaTime(value: 1, timescale: 1)),
                     of: MediaFixture.bframesGOP1sMP4.path)
        let settings = ExportSettings(mode: .passthrough, outputPath: path, muxer: "mp4", cuts: .keyframe)
        let report = try await ExportSession(composition: c, settings: settings).export()
        // Snapped back to the keyframe at 1 s: 15 more frames, and the report says so.
        #expect(report.cuts.map(\.method) == [.snapped] && report.cuts.first?.decodeFrom == MediaTime(value: 1, timescale: 1))
        #expect(report.duration == MediaTime(value: 3, timescale: 2))
        let source = try Self.sourceFrames.get(.bframesGOP1sMP4)
        #expect(try EditListProbe.videoFrameHashes(path).prefix(45) == source[30..<75])
    }
}

/// A value computed once per key and shared by every test that asks for it.
final class Memo<Key: Hashable & Sendable, Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Key: Value] = [:]
    private let make: (Key) throws -> Value
    init(_ make: @escaping (Key) throws -> Value) { self.make = make }
    func get(_ key: Key) throws -> Value {
        lock.lock(); defer { lock.unlock() }
        if let v = values[key] { return v }
        let v = try make(key)
        values[key] = v
        return v
    }
}
