import Testing
@testable import FarmModel

/// `audio.tracks` and `audio.languages`: which audio tracks an export or a package keeps, one rule for both
/// sections, and the refusals that name their field.
@Suite struct AudioTracksManifestTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    func validate(export audio: String) -> Result<JobManifest, ManifestValidationError> {
        let json = #"{"version": 1, "input": "in.mkv", "export": {"mode": "passthrough", "output": "out/a.mp4", "audio": \#(audio)}}"#
        return ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context)
    }

    func validate(stream audio: String) -> Result<JobManifest, ManifestValidationError> {
        let json = #"{"version": 1, "input": "in.mkv", "stream": {"output": "out/p", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}, "audio": \#(audio)}}"#
        return ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context)
    }

    @Test func anExportAndAPackageKeepTracksByTheSameRule() throws {
        for (audio, tracks) in [(#"{}"#, AudioTracks.default), (#"{"tracks": "default"}"#, .default), (#"{"tracks": "all"}"#, .all),
                                (#"{"languages": ["fr", "en-GB"]}"#, .languages(["fr", "en-GB"]))] {
            #expect(try validate(export: audio).get().export?.audio.tracks == tracks, "\(audio)")
            #expect(try validate(stream: audio).get().stream?.audio.tracks == tracks, "\(audio)")
        }
    }

    @Test(arguments: [
        (#"{"tracks": "all", "languages": ["en"]}"#, "$.export.audio.tracks", "not both"),
        (#"{"tracks": "al"}"#, "$.export.audio.tracks", "is not one of default, all (did you mean \"all\"?)"),
        (#"{"tracks": 2}"#, "$.export.audio.tracks", "string"),
        (#"{"languages": []}"#, "$.export.audio.languages", "1 to 16"),
        (#"{"languages": ["en", "en"]}"#, "$.export.audio.languages", "twice"),
        (#"{"languages": ["english"]}"#, "$.export.audio.languages[0]", "language tag"),
        (#"{"policy": "drop", "languages": ["en"]}"#, "$.export.audio.policy", "keeps no audio track"),
        (#"{"policy": "drop", "tracks": "all"}"#, "$.export.audio.policy", "keeps no audio track"),
        (#"{"tracks": "none"}"#, "$.export.audio.tracks", #"an export without audio says "policy": "drop""#),
    ])
    func aBadChoiceNamesItsField(_ audio: String, _ path: String, _ words: String) {
        guard case .failure(let e) = validate(export: audio) else { Issue.record("\(audio) was accepted"); return }
        #expect(e.issues.contains { $0.path == path && $0.message.contains(words) }, "\(e.issues)")
    }

    /// `subtitles.languages` keeps text tracks by the same rule in an export (constantFrameRate only) and in a
    /// package; the export's document carries it back, and a passthrough or an empty list is refused.
    @Test func subtitlesAreKeptByLanguageInAnExportAsInAPackage() throws {
        func export(_ mode: String, _ subtitles: String) -> Result<JobManifest, ManifestValidationError> {
            let json = #"{"version": 1, "input": "in.mkv", "export": {"mode": "\#(mode)", "output": "out/a.mkv", "subtitles": \#(subtitles)}}"#
            return ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context)
        }
        let kept = try export("constantFrameRate", #"{"languages": ["fr", "en"]}"#).get()
        #expect(kept.export?.subtitleLanguages == ["fr", "en"])
        let document = try #require(kept.export?.document)
        guard case .object(let members) = document, let subtitles = members.first(where: { $0.key == "subtitles" })?.value else {
            Issue.record("the export's document has no subtitles: \(document.text)")
            return
        }
        #expect(try export("constantFrameRate", subtitles.text).get().export?.subtitleLanguages == ["fr", "en"], "\(subtitles.text)")
        for (mode, subtitles, path, words) in [
            ("passthrough", #"{"languages": ["en"]}"#, "$.export.subtitles", "applies to constantFrameRate exports only"),
            ("constantFrameRate", #"{}"#, "$.export.subtitles.languages", "is required"),
            ("constantFrameRate", #"{"languages": ["en", "en"]}"#, "$.export.subtitles.languages", "twice"),
            ("constantFrameRate", #"{"languages": ["en"], "format": "srt"}"#, "$.export.subtitles.format", "unknown key"),
        ] {
            guard case .failure(let e) = export(mode, subtitles) else { Issue.record("\(mode) \(subtitles) was accepted"); continue }
            #expect(e.issues.contains { $0.path == path && $0.message.contains(words) }, "\(e.issues)")
        }
    }

    /// A package of video only says `"tracks": "none"`, with no other audio key; it is written back as given.
    @Test func aPackageWithoutAudioSaysNoneAndNothingElse() throws {
        let manifest = try validate(stream: #"{"tracks": "none"}"#).get()
        #expect(manifest.stream?.audio.tracks == AudioTracks.none)
        guard case .object(let members)? = manifest.stream?.document, let audio = members.first(where: { $0.key == "audio" })?.value else {
            Issue.record("the package's document has no audio: \(String(describing: manifest.stream?.document))")
            return
        }
        #expect(try validate(stream: audio.text).get().stream?.audio.tracks == AudioTracks.none, "\(audio.text)")
        guard case .failure(let e) = validate(stream: #"{"tracks": "nonee"}"#) else { Issue.record("accepted"); return }
        #expect(e.issues.contains { $0.path == "$.stream.audio.tracks" && $0.message.contains(#"is not one of default, all, none (did you mean "none"?)"#) }, "\(e.issues)")
        for (audio, key) in [(#"{"tracks": "none", "bitrate": 96000}"#, "bitrate"), (#"{"tracks": "none", "languages": ["en"]}"#, "languages"),
                             (#"{"tracks": "none", "language": "en"}"#, "language"), (#"{"tracks": "none", "channels": 2}"#, "channels")] {
            guard case .failure(let e) = validate(stream: audio) else { Issue.record("\(audio) was accepted"); continue }
            #expect(e.issues.contains { $0.path == "$.stream.audio.\(key)" && $0.message.contains(#"a package without audio ("tracks": "none") has no"#) }, "\(e.issues)")
        }
    }

    @Test func aPackagesLabelIsForItsOneDefaultTrack() {
        guard case .failure(let e) = validate(stream: #"{"language": "en", "tracks": "all"}"#) else { Issue.record("accepted"); return }
        #expect(e.issues.contains { $0.path == "$.stream.audio.language" && $0.message.contains("labels the one default audio track") }, "\(e.issues)")
    }
}
