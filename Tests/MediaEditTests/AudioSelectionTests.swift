import FarmTestSupport
import Foundation
import StreamTestSupport
import MediaCore
import MediaInspect
import MediaTime
import Testing
@testable import MediaEdit

/// Exports that keep audio tracks by language, the default one, or all (AVMediaSelectionGroup's audible
/// options), copied or encoded, checked with ffprobe and ffmpeg.
@Suite struct AudioSelectionTests {
    /// A tone per language, and the track flagged default (the third, German, not the first).
    static let tones: [(language: String, frequency: Double)] = [("eng", 440), ("fre", 660), ("ger", 880)]

    /// A 4 s source with three AAC tracks (eng 440 Hz, fre 660 Hz, ger 880 Hz; ger flagged default), in MP4 or Matroska.
    static func source(_ ext: String) throws -> String {
        let path = try TestPaths.makeTemporaryFolder("audio-selection").appendingPathComponent("three-languages.\(ext)").path
        var args = ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=4"]
        for tone in tones { args += ["-f", "lavfi", "-i", "sine=f=\(Int(tone.frequency)):sample_rate=48000:d=4"] }
        args += ["-map", "0", "-map", "1", "-map", "2", "-map", "3", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac"]
        for (i, tone) in tones.enumerated() { args += ["-metadata:s:a:\(i)", "language=\(tone.language)", "-disposition:a:\(i)", i == 2 ? "default" : "0"] }
        try ProcessRunner.check("ffmpeg", args + [path])
        return path
    }

    /// The audio streams' language tags, in order.
    func languages(_ path: String) throws -> [String] {
        try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "stream_tags=language", "-of", "csv=p=0", path])
            .stdout.split(separator: "\n").map(String.init)
    }

    func export(_ source: String, _ selection: AudioSelection, to name: String, mode: ExportSettings.Mode = .passthrough,
                range: TimeRange? = nil, scaledTo: MediaTime? = nil) async throws -> (String, ExportReport) {
        let muxer = name.hasSuffix(".mkv") ? "matroska" : "mp4"
        let path = try TestPaths.makeTemporaryFolder("audio-selection-out").appendingPathComponent(name).path
        var c = Composition()
        let whole = TimeRange(start: .zero, duration: try await Asset(path: source).load(.duration))
        try c.insert(range ?? whole, of: source)
        if let scaledTo { try c.scale(TimeRange(start: .zero, duration: (range ?? whole).duration), toDuration: scaledTo) }
        var settings = ExportSettings(mode: mode, outputPath: path, muxer: muxer, preset: "ultrafast")
        settings.audioTracks = selection
        return (path, try await ExportSession(composition: c, settings: settings).export())
    }

    /// The tone of the output's `audio`-th track, Hz.
    func tone(_ path: String, audio: Int) throws -> Double {
        MediaProbe.toneFrequency(try MediaProbe.monoSamples(path, audio: audio), from: 0.5, to: 1.5)
    }

    @Test(arguments: ["mp4", "mkv"])
    func aPassthroughCopiesTheLanguagesAskedForInTheirOrder(_ ext: String) async throws {
        let source = try Self.source(ext)
        let (path, report) = try await export(source, .languages(["fr", "en"]), to: "fr-en.\(ext)")
        // The French track, then the English one, packet for packet the source's.
        #expect(try languages(path) == ["fre", "eng"])
        let hashes = try MediaProbe.streamHashes(source), copied = try MediaProbe.streamHashes(path)
        func md5(_ line: String) -> Substring { line.split(separator: "=").last ?? "" }
        #expect(copied.count == 3 && md5(copied[1]) == md5(hashes[2]) && md5(copied[2]) == md5(hashes[1]), "\(copied) from \(hashes)")
        #expect(report.audio.handling == "copied" && report.audio.language == "fre")
        #expect(report.additionalAudio?.map(\.language) == ["eng"] && report.additionalAudio?.first?.handling == "copied")
    }

    /// The audio streams' default flags, in order.
    func defaults(_ path: String) throws -> [String] {
        try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "stream_disposition=default", "-of", "csv=p=0", path])
            .stdout.split(separator: "\n").map(String.init)
    }

    @Test(arguments: [ExportSettings.Mode.passthrough, .constantFrameRate])
    func theFirstTrackKeptIsTheDefaultWhateverTheSourceFlagged(_ mode: ExportSettings.Mode) async throws {
        // Matroska flags every track default unless told otherwise: copied as they are, players would play both.
        let folder = try TestPaths.makeTemporaryFolder("audio-selection-flags")
        let source = folder.appendingPathComponent("all-default.mkv").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", try Self.source("mkv"), "-map", "0", "-c", "copy",
                                           "-disposition:a:0", "default", "-disposition:a:1", "default", "-disposition:a:2", "default", source])
        #expect(try defaults(source) == ["1", "1", "1"])
        let (path, _) = try await export(source, .languages(["fr", "en"]), to: "flags-\(mode).mp4", mode: mode)
        let flags = try defaults(path)
        #expect(try languages(path) == ["fre", "eng"] && flags == ["1", "0"], "\(flags)")
    }

    @Test func everyTrackOfTwoSourcesIsPairedByPlaceAndADifferentLanguageRefused() async throws {
        let source = try Self.source("mp4")
        let folder = try TestPaths.makeTemporaryFolder("audio-selection-pairs")
        let swapped = folder.appendingPathComponent("swapped.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", source, "-map", "0:v", "-map", "0:a:1", "-map", "0:a:0", "-c", "copy", swapped])
        var c = Composition()
        for path in [source, swapped] { try c.insert(TimeRange(start: .zero, duration: MediaTime(value: 2, timescale: 1)), of: path) }
        var settings = ExportSettings(mode: .passthrough, outputPath: folder.appendingPathComponent("paired.mp4").path, muxer: "mp4")
        settings.audioTracks = .all
        let error = await #expect(throws: ExportError.self) { try await ExportSession(composition: c, settings: settings).export() }
        #expect(error?.description.contains("swapped.mp4's audio track 1 is in \"fre\" where") == true
                && error?.description.contains("ask for \"languages\"") == true, "\(String(describing: error))")
        // By language instead: each output track is one language over both sources.
        settings.audioTracks = .languages(["fr", "en"])
        let report = try await ExportSession(composition: c, settings: settings).export()
        #expect(report.audio.language == "fre" && report.additionalAudio?.map(\.language) == ["eng"])
        let path = settings.outputPath
        for (i, frequency) in [(0, 660.0), (1, 440.0)] {
            let audio = try MediaProbe.monoSamples(path, audio: i)
            #expect(abs(MediaProbe.toneFrequency(audio, from: 0.5, to: 1.5) - frequency) < 5 && abs(MediaProbe.toneFrequency(audio, from: 2.5, to: 3.5) - frequency) < 5,
                    "track \(i) changes language at the join")
        }
    }

    @Test func aPackageOfEveryTrackNamesARepeatedLanguageApart() async throws {
        // Two English tracks (a programme and its commentary): each a rendition, NAME unique in the group.
        let folder = try TestPaths.makeTemporaryFolder("audio-selection-package")
        let source = folder.appendingPathComponent("commentary.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", try Self.source("mp4"), "-map", "0:v", "-map", "0:a:0", "-map", "0:a:1", "-map", "0:a:0",
                                           "-c", "copy", source])
        let package = folder.appendingPathComponent("package").path
        var c = Composition()
        try c.insert(TimeRange(start: .zero, duration: try await Asset(path: source).load(.duration)), of: source)
        var settings = StreamSettings(folder: package, rungs: [], segmentDuration: MediaTime(value: 1, timescale: 1))
        (settings.passthrough, settings.audioTracks) = (true, .all)
        let report = try await StreamPackager(composition: c, settings: settings).package()
        for file in StreamPlaylists.files(report) { try file.text.write(toFile: package + "/" + file.path, atomically: true, encoding: .utf8) }
        #expect(report.tracks.filter { $0.kind == .audio }.map(\.folder) == ["audio-1", "audio-fr", "audio-3"])
        let master = try String(contentsOfFile: package + "/master.m3u8", encoding: .utf8)
        for name in ["NAME=\"English\",LANGUAGE=\"en\"", "NAME=\"French\",LANGUAGE=\"fr\"", "NAME=\"English 2\",LANGUAGE=\"en\""] {
            #expect(master.contains(name), "\(name) in \(master)")
        }
        #expect(try StreamChecker.check(folder: package, report: report, copied: true).isEmpty)
    }

    @Test func withoutAChoiceTheTrackFlaggedDefaultIsKept() async throws {
        let source = try Self.source("mp4")
        let (path, report) = try await export(source, .defaultTrack, to: "default.mp4")
        #expect(try languages(path) == ["ger"] && report.additionalAudio == nil)
        #expect(abs(try tone(path, audio: 0) - 880) < 5)
    }

    @Test func aCutKeepsEveryTrackExactToTheSample() async throws {
        // Cut inside packets in every track, each hidden by its own edit list: 1.25 s to 3.5 s of each tone.
        let source = try Self.source("mp4")
        let range = TimeRange(start: MediaTime(value: 5, timescale: 4), end: MediaTime(value: 7, timescale: 2))
        let (path, report) = try await export(source, .all, to: "all-cut.mp4", range: range)
        #expect(try languages(path) == ["eng", "fre", "ger"])
        #expect(report.audio.handling == "copied" && report.additionalAudio?.count == 2)
        for (i, track) in Self.tones.enumerated() {
            let whole = try MediaProbe.monoSamples(source, audio: i).samples
            let expected = Array(whole[60_000..<168_000])
            let played = try EditListProbe.editedAudio(path, audio: i)
            #expect(played.count == expected.count, "\(track.language): \(played.count) samples")
            #expect((zip(played, expected).map { abs(Int($0) - Int($1)) }.max() ?? 99) <= 4, "\(track.language)")
        }
    }

    @Test(arguments: ["mp4", "mkv"])
    func aConstantFrameRateExportEncodesEachTrackKept(_ ext: String) async throws {
        let source = try Self.source(ext)
        let (path, report) = try await export(source, .languages(["de", "fr"]), to: "cfr-de-fr.\(ext)", mode: .constantFrameRate)
        #expect(try languages(path) == ["ger", "fre"])
        let tones = (try tone(path, audio: 0), try tone(path, audio: 1))
        #expect(abs(tones.0 - 880) < 5 && abs(tones.1 - 660) < 5, "\(tones)")
        let reports = [report.audio] + (report.additionalAudio ?? [])
        #expect(reports.map(\.handling) == ["encoded", "encoded"] && reports.map(\.language) == ["ger", "fre"])
        // Each track lasts the video's frames to the sample (1,600 samples a frame at 30 fps).
        let frames = try #require(report.video?.frames)
        #expect(frames >= 120 && reports.allSatisfy { $0.samples == frames * 1600 }, "\(frames) frames, \(reports.map(\.samples)) samples")
    }

    @Test func retimedTracksAreEachEncodedWithTheirPitchKept() async throws {
        let source = try Self.source("mp4")
        let (path, report) = try await export(source, .all, to: "slow-all.mp4", range: TimeRange(start: .zero, duration: MediaTime(value: 4, timescale: 1)),
                                              scaledTo: MediaTime(value: 8, timescale: 1))
        let reports = [report.audio] + (report.additionalAudio ?? [])
        #expect(reports.map(\.handling) == ["encoded", "encoded", "encoded"] && reports.allSatisfy { $0.samples == 8 * 48000 })
        for (i, expected) in Self.tones.enumerated() {
            #expect(abs(try tone(path, audio: i) - expected.frequency) / expected.frequency < 0.01, "\(expected.language)")
        }
    }

    /// Two retimed tracks encoded at different sample rates (48 and 32 kHz): each one's edit hides its priming and
    /// lasts the composition to its own sample, in a movie timescale both rates divide.
    @Test func retimedTracksAtTwoSampleRatesEachLastTheCompositionToTheSample() async throws {
        let folder = try TestPaths.makeTemporaryFolder("audio-selection-rates")
        let source = folder.appendingPathComponent("two-rates.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", try Self.source("mp4"), "-map", "0:v", "-map", "0:a:0", "-map", "0:a:1", "-c:v", "copy",
                                           "-c:a", "aac", "-ar:a:1", "32000", source])
        let (path, report) = try await export(source, .all, to: "slow-two-rates.mp4", range: TimeRange(start: .zero, duration: MediaTime(value: 4, timescale: 1)),
                                              scaledTo: MediaTime(value: 8, timescale: 1))
        let reports = [report.audio] + (report.additionalAudio ?? [])
        #expect(reports.map(\.handling) == ["encoded", "encoded"] && reports.map(\.sampleRate) == [48000, 32000], "\(reports)")
        for (i, rate) in [48000, 32000].enumerated() {
            let played = try EditListProbe.editedAudio(path, audio: i)
            #expect(played.count == 8 * rate, "track \(i + 1): \(played.count) samples, not \(8 * rate)")
        }
    }

    /// A package of two languages made in two chunks: the first chunk makes both tracks over the whole, the join
    /// links them under the package's names, and they are the package made whole's, byte for byte.
    @Test func aPackageOfTwoLanguagesMadeInChunksIsTheWholes() async throws {
        let source = try Self.source("mp4")
        var c = Composition()
        try c.insert(TimeRange(start: .zero, duration: try await Asset(path: source).load(.duration)), of: source)
        func settings(_ label: String, frames: Range<Int>? = nil) throws -> StreamSettings {
            let folder = try TestPaths.makeTemporaryFolder(label).appendingPathComponent("package").path
            var settings = StreamSettings(folder: folder, rungs: [StreamRung(width: 160, height: 120, bitRate: 150_000)], segmentDuration: MediaTime(value: 1, timescale: 1),
                                          preset: "ultrafast")
            (settings.audioTracks, settings.frames) = (.languages(["fr", "en"]), frames)
            return settings
        }
        let whole = try settings("chunked-languages-whole")
        let made = try await StreamPackager(composition: c, settings: whole).package()
        var chunks: [StreamChunk] = []
        for frames in [0..<60, 60..<120] {
            let chunk = try settings("chunked-languages-chunk", frames: frames)
            chunks.append(StreamChunk(folder: chunk.folder, frames: frames, report: try await StreamPackager(composition: c, settings: chunk).package()))
        }
        let joined = try settings("chunked-languages-joined")
        try FileManager.default.createDirectory(atPath: joined.folder, withIntermediateDirectories: false)
        let report = try await StreamPackager(composition: c, settings: joined).join(chunks)
        let audio = report.tracks.filter { $0.kind == .audio }
        #expect(audio.map(\.folder) == made.tracks.filter { $0.kind == .audio }.map(\.folder) && audio.map(\.folder) == ["audio-fr", "audio-en"], "\(audio.map(\.folder)) \(audio.map(\.language))")
        for track in audio {
            for file in ["init.mp4"] + track.segments.map(\.file) {
                #expect(try Data(contentsOf: URL(fileURLWithPath: "\(joined.folder)/\(track.folder)/\(file)")) == (try Data(contentsOf: URL(fileURLWithPath: "\(whole.folder)/\(track.folder)/\(file)"))),
                        "\(track.folder)/\(file)")
            }
        }
    }

    @Test func aLanguageTheSourceLacksIsRefusedBeforeAnythingIsWritten() async throws {
        let source = try Self.source("mp4")
        let folder = try TestPaths.makeTemporaryFolder("audio-selection-refused")
        for (selection, words) in [(AudioSelection.languages(["en", "ja"]), "has no audio in \"ja\" (its audio: eng, fre, ger)"),
                                   (.languages(["fr", "fre"]), "choose the same audio track")] {
            let path = folder.appendingPathComponent("refused.mp4").path
            var c = Composition()
            try c.insert(TimeRange(start: .zero, duration: MediaTime(value: 4, timescale: 1)), of: source)
            for mode in [ExportSettings.Mode.constantFrameRate, .passthrough] {
                var settings = ExportSettings(mode: mode, outputPath: path, muxer: "mp4", preset: "ultrafast")
                settings.audioTracks = selection
                let error = await #expect(throws: ExportError.self) { try await ExportSession(composition: c, settings: settings).export() }
                #expect(error?.description.contains(words) == true, "\(String(describing: error))")
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
            }
            // A chunked export is refused as its chunks are planned, before any is made.
            var settings = ExportSettings(mode: .constantFrameRate, outputPath: path, muxer: "mp4", preset: "ultrafast")
            settings.audioTracks = selection
            await #expect(throws: ExportError.self) { _ = try await ExportSession(composition: c, settings: settings).chunkRanges(every: MediaTime(value: 1, timescale: 1)) }
        }
    }
}
