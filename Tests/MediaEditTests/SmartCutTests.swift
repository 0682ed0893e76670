import FarmTestSupport
import Foundation
import MediaCore
import MediaTime
import Testing
@testable import MediaEdit

/// `"cuts": "smart"` into MP4 and QuickTime: exact without multi-entry edit lists, so that a reader that
/// ignores or misreads them (GStreamer's qtdemux) still shows exactly the composition's frames.
@Suite struct SmartCutTests {
    static let sourceFrames = Memo<MediaFixture, [String]> { try EditListProbe.videoFrameHashes($0.path) }
    static let sourceLuma = Memo<MediaFixture, EditListProbe.LumaFrames> { try EditListProbe.LumaFrames($0.path, width: 320, height: 240) }
    static let sourceRate = Memo<MediaFixture, Int> { try MediaProbe.monoSamples($0.path).rate }

    /// The helpers of the exact-cut tests: random edits, and an export of them.
    let cuts = ExactCutTests()

    func randomEdits(_ count: Int, frames: Int, seed: UInt64) -> [(start: Int, length: Int)] {
        cuts.randomEdits(count, frames: frames, seed: seed)
    }

    func export(_ fixture: MediaFixture, _ edits: [(start: Int, length: Int)], to path: String, muxer: String) async throws -> (Composition, ExportReport) {
        try await cuts.export(fixture, edits, to: path, muxer: muxer, cuts: .smart)
    }

    @Test(arguments: [
        (MediaFixture.bframesGOP1sMP4, "mp4", 1, UInt64(31)),
        (.bframesGOP1sMP4, "mov", 20, 32),
        (.bframesGOP1sMP4, "mp4", 50, 33),
        (.bframesGOP10sMP4, "mp4", 4, 34),
        (.openGOPMP4, "mp4", 20, 35),
        (.openGOPMP4, "mov", 7, 36),
        (.hevcGOP1sMP4, "mov", 20, 37),
        (.hevcGOP10sMP4, "mp4", 3, 38),
        (.vp9MP4, "mp4", 20, 39),
        (.vp9MP4, "matroska", 6, 40),
        (.vp9TenBitWebM, "matroska", 8, 41),
        // Its video starts 14 ms after its audio (Opus's pre-skip): shown from the start all the same.
        (.vp9TenBitWebM, "mp4", 12, 44),
        (.av1MP4, "mp4", 10, 42),
        (.av1MP4, "matroska", 3, 43),
        (.bframesGOP1sMP4, "matroska", 20, 22),
        (.bframesGOP10sMP4, "matroska", 5, 23),
        (.hevcGOP1sMP4, "matroska", 20, 24),
        (.hevcGOP10sMP4, "matroska", 3, 25),
        (.openGOPMP4, "matroska", 20, 26),
    ])
    func randomSmartCutsAreExactInFFmpegAndGStreamer(_ fixture: MediaFixture, _ container: String, _ count: Int, _ seed: UInt64) async throws {
        let source = try Self.sourceFrames.get(fixture)
        let luma = try Self.sourceLuma.get(fixture)
        let edits = randomEdits(count, frames: source.count, seed: seed)
        let path = try TestPaths.makeTemporaryFolder("smart").appendingPathComponent("cut-\(seed).\(container == "matroska" ? "mkv" : container)").path
        let (composition, report) = try await export(fixture, edits, to: path, muxer: container)
        let wanted = edits.flatMap { Array($0.start..<($0.start + $0.length)) }

        // FFmpeg: exactly the composition's frames, copied ones bit-identical, re-encoded ones close.
        let got = try EditListProbe.videoFrameHashes(path)
        #expect(got.count == wanted.count, "seed \(seed): FFmpeg decodes \(got.count) frames, \(wanted.count) asked for")
        let gotLuma = try EditListProbe.LumaFrames(path, width: 320, height: 240)
        var identical = 0, worst = Double.infinity
        for (i, frame) in zip(got.indices, wanted) {
            if got[i] == source[frame] { identical += 1; continue }
            worst = min(worst, gotLuma.psnr(i, against: luma, frame))
        }
        let reencoded = report.cuts.reduce(0) { $0 + $1.reencodedFrames }
        #expect(identical == wanted.count - reencoded, "seed \(seed): \(identical) frames copied, the report says \(wanted.count - reencoded)")
        #expect(worst >= 40, "seed \(seed): a re-encoded frame is only \(worst) dB from its source frame")
        #expect(report.cuts.count == count && report.cuts.allSatisfy { $0.method == ($0.reencodedFrames > 0 ? .smartRendered : .copied) })
        // At most a GOP at each end of an edit, with the leading pictures of the next keyframe.
        let gop = fixture == .bframesGOP10sMP4 || fixture == .hevcGOP10sMP4 ? 300 : 30
        #expect(report.cuts.allSatisfy { $0.reencodedFrames <= 2 * gop + 3 }, "seed \(seed): \(report.cuts.map(\.reencodedFrames))")

        // GStreamer's qtdemux (which misreads multi-entry edit lists) presents the same frames. (10-bit
        // frames are compared by count: GStreamer and FFmpeg convert them to 8 bits differently.)
        let gst = try GStreamerProbe.videoFrameHashes(path)
        #expect(gst.count == got.count, "seed \(seed): GStreamer presents \(gst.count) frames, FFmpeg \(got.count)")
        if fixture != .vp9TenBitWebM, let i = zip(gst, got).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            Issue.record("seed \(seed): GStreamer's frame \(i) differs from FFmpeg's")
        }
        let rate = try Self.sourceRate.get(fixture)
        let samples = Int(composition.duration.seconds * Double(rate) + 0.5)
        #expect(report.duration == composition.duration)
        #expect(report.audio.handling == "encoded" && report.audio.samples == samples)
        // Matroska has no edit lists at all (and FFmpeg 5.1 does not mark AAC priming there).
        guard container != "matroska" else { return }

        // At most one edit-list entry per track (the encoder delay), lasting exactly the composition.
        let lists = try EditListProbe.editLists(path)
        for track in lists.tracks {
            #expect(track.entries.count <= 1, "seed \(seed): the \(track.handler) track has \(track.entries.count) edit-list entries")
            // (To the movie's tick: the WebM source's frames are on a millisecond grid, its cuts on 1/30 s.)
            if let e = track.entries.first, let wanted = composition.duration.count(in: Rational(1, Int32(lists.movieTimescale)), rounding: .down) {
                let exact = MediaTime(value: wanted, timescale: Int32(lists.movieTimescale)) == composition.duration
                #expect(Int64(e.duration) == wanted || (!exact && Int64(e.duration) == wanted + 1), "seed \(seed): the \(track.handler) edit lasts \(e.duration)/\(lists.movieTimescale) s")
            }
        }
        // Audio cannot be cut inside a packet without an edit list: it is encoded, exactly the composition.
        let played = try EditListProbe.editedAudio(path).count
        #expect(played == samples, "seed \(seed): the audio track plays \(played) samples, not \(samples)")
    }

    @Test func firefoxPresentsTheCompositionsFramesAndDuration() async throws {
        // Headless Firefox ESR (its own MP4 demuxer; it misreads multi-entry edit lists): every frame decoded,
        // only the composition's frames presented, the first and the last among them, and its
        // duration (`BrowserPlayback`: none of it depends on how busy the machine is).
        let edits = randomEdits(6, frames: 300, seed: 51).map { (start: $0.start, length: min($0.length, 15)) }
        let path = try TestPaths.makeTemporaryFolder("smart").appendingPathComponent("firefox.mp4").path
        let (composition, _) = try await export(.openGOPMP4, edits, to: path, muxer: "mp4")
        let frames = edits.reduce(0) { $0 + $1.length }
        let played = try BrowserPlayback("firefox-play.py", path, rate: "0.5")
        #expect(abs(played.duration - composition.duration.seconds) < 1e-3, "Firefox says \(played.duration) s")
        #expect(played.departures(frames: frames) == [], "presented: \(played.times)")
    }

    @Test(arguments: ["mp4", "mov", "matroska"])
    func everyReaderGivesTheCompositionsDuration(_ container: String) async throws {
        // The readers of the table (bench/readers.py, which also compares their frames): each one's
        // duration of a smart cut, from its own demuxer. Matroska states durations in milliseconds, and
        // its encoded audio carries AAC priming FFmpeg 5.1 does not mark there (up to 1,024 samples).
        let edits = randomEdits(5, frames: 300, seed: 61).map { (start: $0.start, length: min($0.length, 20)) }
        let path = try TestPaths.makeTemporaryFolder("smart").appendingPathComponent("readers.\(container == "matroska" ? "mkv" : container)").path
        let (composition, _) = try await export(.bframesGOP1sMP4, edits, to: path, muxer: container)
        let wanted = composition.duration.seconds
        let tolerance = container == "matroska" ? 0.03 : 1.001e-3
        func browser(_ script: String) throws -> Double? {
            let r = try ProcessRunner.check("/usr/bin/python3", [TestPaths.packageRoot.appendingPathComponent("Tests/Readers/\(script)").path, path])
            let json = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any]
            return json?["duration"] as? Double
        }
        let durations: [(String, Double?)] = [
            ("FFmpeg", FFprobeReport.double(try FFprobeReport(path: path).format, "duration")),
            ("GStreamer", try GStreamerProbe.duration(path)),
            ("VLC", try VLCProbe.duration(path)),
            ("Chromium", try browser("chromium-play.py")),
            ("Firefox", try browser("firefox-play.py")),
        ]
        for (reader, duration) in durations {
            #expect(duration.map { abs($0 - wanted) < tolerance } == true, "\(reader) says \(duration.map { "\($0) s" } ?? "nothing"), the composition lasts \(wanted) s")
        }
    }

    @Test func copiedAudioIsRefusedWithTheWayOut() async throws {
        let path = try TestPaths.makeTemporaryFolder("smart").appendingPathComponent("copy.mp4").path
        var c = Composition()
        try c.insert(TimeRange(start: MediaTime(value: 1, timescale: 2), duration: MediaTime(value: 1, timescale: 1)), of: MediaFixture.bframesGOP1sMP4.path)
        let settings = ExportSettings(mode: .passthrough, outputPath: path, muxer: "mp4", audioPolicy: .copy, cuts: .smart)
        await #expect {
            _ = try await ExportSession(composition: c, settings: settings).export()
        } throws: { error in
            let text = "\(error)"
            return text.contains("\"cuts\": \"smart\"") && text.contains("\"auto\"") && text.contains("\"cuts\": \"exact\"")
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
