import FarmTestSupport
import Foundation
import MediaCore
import MediaTime
import Testing
@testable import MediaEdit

/// Exports that keep text subtitle tracks by language (AVMediaSelectionGroup's legible options): 3GPP text
/// in MP4 and MOV, SubRip in Matroska, their cues placed as the edits place the pictures, read back by
/// FFmpeg, which converts each track to WebVTT.
@Suite struct SubtitleExportTests {
    /// A 6 s source (320x240, 30 fps) with an English SubRip track and a French ASS track, in `ext`: mp4
    /// with AAC and both as mov_text, as FFmpeg converts them; mkv with PCM, whose tracks FFmpeg's Matroska
    /// muxer does not move later (it moves them by AAC's priming, 21 ms).
    static func source(_ ext: String) throws -> String {
        let work = try TestPaths.makeTemporaryFolder("subtitle-export")
        let srt = work.appendingPathComponent("en.srt").path, ass = work.appendingPathComponent("fr.ass").path
        try "1\n00:00:00,500 --> 00:00:01,500\nFirst\n\n2\n00:00:02,000 --> 00:00:03,000\n<i>Second</i> & more\n\n3\n00:00:04,000 --> 00:00:05,500\nThird\n"
            .write(toFile: srt, atomically: true, encoding: .utf8)
        try SubtitleFixtures.ass(["0,0:00:00.50,0:00:01.50,Default,,0,0,0,,Premier", "0,0:00:04.00,0:00:05.50,Default,,0,0,0,,Troisième"])
            .write(toFile: ass, atomically: true, encoding: .utf8)
        let path = work.appendingPathComponent("two-languages.\(ext)").path
        try ProcessRunner.check("ffmpeg", ["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=6",
                                           "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=6", "-i", srt, "-i", ass,
                                           "-map", "0", "-map", "1", "-map", "2", "-map", "3", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30",
                                           "-c:a", ext == "mkv" ? "pcm_s16le" : "aac", "-c:s", ext == "mkv" ? "copy" : "mov_text",
                                           "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fre", path])
        return path
    }

    /// Source 1 to 5 s, its first 2 s (source 1 to 3 s) scaled to 4 s: the composition lasts 6 s.
    static func export(_ source: String, to name: String, languages: [String], mode: ExportSettings.Mode = .constantFrameRate,
                       frames: Range<Int>? = nil, in folder: URL? = nil) async throws -> (String, ExportReport) {
        let muxer = name.hasSuffix(".mkv") ? "matroska" : name.hasSuffix(".mov") ? "mov" : "mp4"
        let path = try (folder ?? TestPaths.makeTemporaryFolder("subtitle-export-out")).appendingPathComponent(name).path
        var c = Composition()
        try c.insert(TimeRange(start: MediaTime(value: 1, timescale: 1), duration: MediaTime(value: 4, timescale: 1)), of: source)
        try c.scale(TimeRange(start: .zero, duration: MediaTime(value: 2, timescale: 1)), toDuration: MediaTime(value: 4, timescale: 1))
        var settings = ExportSettings(mode: mode, outputPath: path, muxer: muxer, preset: "ultrafast")
        settings.subtitleLanguages = languages
        settings.frameRange = frames
        return (path, try await ExportSession(composition: c, settings: settings).export())
    }

    /// Each subtitle track of `path` as FFmpeg reads it: codec, language tag, and its cues as WebVTT.
    static func tracks(_ path: String) throws -> [(codec: String, language: String, webvtt: String)] {
        let streams = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "s", "-show_entries", "stream=codec_name:stream_tags=language",
                                                          "-of", "csv=p=0", path]).stdout.split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        return try streams.enumerated().map { i, fields in
            let vtt = try ProcessRunner.check("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:s:\(i)", "-f", "webvtt", "-"]).stdout
            return (fields.first ?? "", fields.count > 1 ? fields[1] : "", vtt)
        }
    }

    /// The cues, placed by the edits: the English first cue cut to its last 0.5 s and slowed to 1 s, the
    /// second slowed to 2 s, the third cut at the source's 5 s and one second later; asked French first.
    static let english: [(Int, Int, String)] = [(0, 1000, "First"), (2000, 4000, "%Second% & more"), (5000, 6000, "Third")]
    static let french: [(Int, Int, String)] = [(0, 1000, "Premier"), (5000, 6000, "Troisième")]

    /// When the output's first picture is shown, ms (FFmpeg's Matroska muxer moves every track by the AAC
    /// encoder's priming; MP4 and MOV hide it with an edit list).
    static func videoStart(_ path: String) throws -> Int {
        let probed = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v", "-read_intervals", "%+#1", "-show_entries", "packet=pts_time",
                                                         "-of", "csv=p=0", path]).stdout
        return Int(((Double(probed.split(separator: "\n").first ?? "") ?? .nan) * 1000).rounded())
    }

    /// The cues of a track as WebVTT, each `cues` moved by `offset` ms.
    static func expectCues(_ webvtt: String, _ cues: [(Int, Int, String)], offset: Int, italics: Bool, _ label: String) {
        let blocks = webvtt.components(separatedBy: "\n\n").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { $0.contains("-->") }
        func time(_ ms: Int) -> String { String(format: "%02d:%02d.%03d", ms / 60_000, ms / 1000 % 60, ms % 1000) }
        let wanted = cues.map { start, end, text in
            "\(time(start + offset)) --> \(time(end + offset))\n" + text.replacingOccurrences(of: "%Second%", with: italics ? "<i>Second</i>" : "Second")
        }
        #expect(blocks == wanted, "\(label): \(blocks)")
    }

    @Test(arguments: ["mp4", "mov", "mkv"])
    func theTracksAskedForAreKeptInTheirOrderWithTheirCuesPlacedByTheEdits(_ ext: String) async throws {
        let source = try Self.source(ext == "mkv" ? "mkv" : "mp4")
        let (path, report) = try await Self.export(source, to: "kept.\(ext)", languages: ["fr", "en"])
        let tracks = try Self.tracks(path)
        let codec = ext == "mkv" ? "subrip" : "mov_text"
        // QuickTime knows French by its terminology code only (FFmpeg's muxer would drop "fre").
        #expect(tracks.map(\.codec) == [codec, codec] && tracks.map(\.language) == [ext == "mov" ? "fra" : "fre", "eng"], "\(tracks.map { ($0.codec, $0.language) })")
        try #require(tracks.count == 2)
        let start = try Self.videoStart(path)
        #expect(start == (ext == "mkv" ? 21 : 0), "the first picture at \(start) ms")
        Self.expectCues(tracks[0].webvtt, Self.french, offset: start, italics: false, "\(ext) fr")
        // SubRip keeps the italics; 3GPP text is plain.
        Self.expectCues(tracks[1].webvtt, Self.english, offset: start, italics: ext == "mkv", "\(ext) en")
        #expect(report.subtitles == [.init(language: "fr", codec: codec, cues: 2), .init(language: "en", codec: codec, cues: 3)], "\(String(describing: report.subtitles))")
        // The pictures and the sound are still the export's.
        let streams = try ProcessRunner.check("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", path]).stdout
        #expect(streams.split(separator: "\n").map(String.init) == ["video", "audio", "subtitle", "subtitle"], "\(streams)")
    }

    /// A chunked export's join writes the subtitles (the chunks have none), as the whole export would.
    @Test func theJoinOfAChunkedExportKeepsTheSubtitles() async throws {
        let source = try Self.source("mkv")
        let (first, firstReport) = try await Self.export(source, to: "chunk-1.mkv", languages: ["en"], frames: 0..<90)
        let (second, _) = try await Self.export(source, to: "chunk-2.mkv", languages: ["en"], frames: 90..<180)
        #expect(try Self.tracks(first).isEmpty && firstReport.subtitles == nil, "a chunk wrote subtitles")
        let path = try TestPaths.makeTemporaryFolder("subtitle-export-out").appendingPathComponent("joined.mkv").path
        var c = Composition()
        try c.insert(TimeRange(start: MediaTime(value: 1, timescale: 1), duration: MediaTime(value: 4, timescale: 1)), of: source)
        try c.scale(TimeRange(start: .zero, duration: MediaTime(value: 2, timescale: 1)), toDuration: MediaTime(value: 4, timescale: 1))
        var settings = ExportSettings(mode: .constantFrameRate, outputPath: path, muxer: "matroska", preset: "ultrafast")
        settings.subtitleLanguages = ["en"]
        let report = try await ExportSession(composition: c, settings: settings).join([ExportChunk(path: first, frames: 0..<90), ExportChunk(path: second, frames: 90..<180)])
        let tracks = try Self.tracks(path)
        try #require(tracks.count == 1, "\(tracks.map(\.codec))")
        Self.expectCues(tracks[0].webvtt, Self.english, offset: try Self.videoStart(path), italics: true, "joined")
        #expect(report.subtitles == [.init(language: "en", codec: "subrip", cues: 3)])
    }

    /// A language no source has, a bitmap track, and a passthrough export are refused before anything is written.
    @Test func aMissingLanguageAndAPassthroughAreRefusedWithNothingWritten() async throws {
        let source = try Self.source("mkv")
        for (name, languages, mode, message) in [
            ("german.mkv", ["de"], ExportSettings.Mode.constantFrameRate, #"two-languages.mkv has no text subtitles in "de" (its subtitles: eng (subrip), fre (ass))"#),
            ("copy.mkv", ["en"], .passthrough, "a passthrough export keeps no subtitles: use the constantFrameRate mode"),
        ] {
            var refusal = ""
            let folder = try TestPaths.makeTemporaryFolder("subtitle-export-refused")
            do { _ = try await Self.export(source, to: name, languages: languages, mode: mode, in: folder) } catch { refusal = "\(error)" }
            #expect(refusal.contains(message), "\(name): \(refusal)")
            let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(left.isEmpty, "\(name): \(left) written")
        }
        // A chunked export is refused before any chunk is planned, as the join would refuse it.
        var c = Composition()
        try c.insert(TimeRange(start: .zero, duration: MediaTime(value: 6, timescale: 1)), of: source)
        var settings = ExportSettings(mode: .constantFrameRate, outputPath: "/nonexistent/chunked.mkv", muxer: "matroska", preset: "ultrafast")
        settings.subtitleLanguages = ["en", "de"]
        var refusal = ""
        do { _ = try await ExportSession(composition: c, settings: settings).chunkRanges(every: MediaTime(value: 2, timescale: 1)) } catch { refusal = "\(error)" }
        #expect(refusal.contains(#"has no text subtitles in "de""#), "\(refusal)")
    }

    /// Cues that start together become one (a stream's packets cannot share a time); 3GPP text ends each where
    /// the next begins, SubRip keeps overlaps; every cue ends with the export.
    @Test func cuesThatShareAStartAreOneAndTimedTextDoesNotOverlap() {
        let t = { (ms: Int64) in MediaTime(value: ms, timescale: 1000) }
        let cues = [TextCue(start: t(0), end: t(2000), text: "a"), TextCue(start: t(0), end: t(1000), text: "b"),
                    TextCue(start: t(1500), end: t(4000), text: "c")]
        #expect(TextTrackWriter.packets(cues, until: t(3000), codec: .subrip)
                == [TextCue(start: t(0), end: t(2000), text: "a\nb"), TextCue(start: t(1500), end: t(3000), text: "c")])
        #expect(TextTrackWriter.packets(cues, until: t(3000), codec: .movText)
                == [TextCue(start: t(0), end: t(1500), text: "a\nb"), TextCue(start: t(1500), end: t(3000), text: "c")])
        // Less than a millisecond apart (cues 10 ms apart slowed 32 times): one cue, not one that would never show.
        let close = [TextCue(start: t(1000), end: t(2000), text: "a"), TextCue(start: MediaTime(value: 10_004, timescale: 10_000), end: t(2000), text: "b")]
        #expect(TextTrackWriter.packets(close, until: t(3000), codec: .movText) == [TextCue(start: t(1000), end: t(2000), text: "a\nb")])
        // A cue that starts with the end, once counted in milliseconds, is none.
        #expect(TextTrackWriter.packets([TextCue(start: MediaTime(value: 29_996, timescale: 10_000), end: t(4000), text: "c")], until: t(3000), codec: .subrip).isEmpty)
        #expect(TextTrackCodec.movText.packet("<i>x</i> &amp; &lt;y&gt;") == [0, 7] + Array("x & <y>".utf8))
        #expect(TextTrackCodec.subrip.packet("<i>x</i> &amp;") == Array("<i>x</i> &".utf8))
    }
}
