@testable import FarmRuntime
import FarmModel
import Foundation
import Testing

/// A result's key: what changes an output changes it; where outputs go, names and scheduling do not; which
/// jobs may be reused at all; the manifest's `reuse`.
@Suite struct ResultKeyTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out", "s3://bucket/out"])
    let contents = ["/jobs/a.mp4": String(repeating: "1", count: 64), "/jobs/b.mp4": String(repeating: "2", count: 64)]

    func manifest(_ text: String) throws -> JobManifest {
        try ManifestValidator.validate(json: Array(text.utf8), context: context).get()
    }

    func export(name: String = "a", input: String = "a.mp4", output: String = "out/a.mp4", video: String = "{}", audio: String = "{}",
                extra: String = "") throws -> JobManifest {
        try manifest("""
            { "version": 1, "name": "\(name)", "input": "\(input)", "report": "out/\(name).json" \(extra),
              "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "\(output)", "video": \(video), "audio": \(audio) } }
            """)
    }

    func key(_ m: JobManifest, program: String = ResultKey.program) -> String { ResultKey.of(m, contents: contents, program: program) }

    @Test func whatChangesTheOutputChangesTheKey() throws {
        let base = key(try export())
        #expect(base.count == 64)
        #expect(key(try export(name: "b", output: "out/elsewhere/b.mp4", extra: #", "overwrite": true, "requires": ["gpu"]"#)) == base)
        #expect(key(try export(video: #"{ "preset": "faster" }"#)) != base)
        #expect(key(try export(video: #"{ "crf": 21 }"#)) != base)
        #expect(key(try export(input: "b.mp4")) != base, "another input's content")
        #expect(key(try export(extra: #", "scale": [{ "start": 0, "duration": 1, "rate": 0.5 }]"#)) != base)
        #expect(key(try export(), program: ResultKey.program + " (another build)") != base)
        // Loudness: a target, another target, the limit, measuring only.
        let ebu = key(try export(audio: #"{ "loudness": { "standard": "ebu-r128" } }"#))
        #expect(ebu != base)
        #expect(key(try export(audio: #"{ "loudness": { "standard": "atsc-a85" } }"#)) != ebu)
        #expect(key(try export(audio: #"{ "loudness": { "standard": "ebu-r128", "truePeak": -2 } }"#)) != ebu)
        #expect(key(try export(audio: #"{ "loudness": { "target": -23 } }"#)) != base)
        #expect(key(try export(audio: #"{ "loudness": { "measure": true } }"#)) != base)
        #expect(key(try export(audio: #"{ "loudness": { "standard": "ebu-r128" } }"#)) == ebu)
        // The audio tracks kept: each choice its own key; the default written out or left out the same.
        let french = key(try export(audio: #"{ "languages": ["fr"] }"#))
        #expect(Set([base, french, key(try export(audio: #"{ "languages": ["fr", "en"] }"#)), key(try export(audio: #"{ "tracks": "all" }"#))]).count == 4)
        #expect(key(try export(audio: #"{ "tracks": "default" }"#)) == base)
        // The same bytes at another path are the same input.
        let moved = try export(input: "b.mp4")
        #expect(ResultKey.of(moved, contents: ["/jobs/b.mp4": contents["/jobs/a.mp4"]!]) == base)
    }

    @Test func whichJobsMayBeReused() throws {
        #expect(ResultKey.applies(to: try export()))
        #expect(!ResultKey.applies(to: try export(extra: #", "reuse": false"#)))
        #expect(!ResultKey.applies(to: try manifest(#"{ "version": 1, "input": "a.mp4", "report": "out/a.json" }"#)), "an inspection")
        #expect(ResultKey.applies(to: try manifest(#"{ "version": 1, "input": "a.mp4", "report": "out/a.json", "reuse": true }"#)))
        #expect(!ResultKey.applies(to: try manifest(#"{ "version": 1, "input": "a.mp4", "scan": { "symbologies": ["qr"] } }"#)), "a scan that writes nothing")
        let passthrough = #"{ "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "out/a.mp4" } "#
        #expect(!ResultKey.applies(to: try manifest(passthrough + "}")))
        #expect(ResultKey.applies(to: try manifest(passthrough + #", "reuse": true }"#)))
        #expect(ResultKey.applies(to: try manifest(#"{ "version": 1, "input": "a.mp4", "scan": { "symbologies": ["qr"] }, "report": "out/a.json" }"#)))
        #expect(!ResultKey.applies(to: try export(video: "{}", extra: "").withFrames(0..<300)), "a chunk")
        #expect(ResultKey.program.hasPrefix("MediaFarm ") && ResultKey.program.contains("FFmpeg") && ResultKey.program.contains("Rubber Band"))
    }

    /// A package's key: its settings and its key file by content; not where it goes, nor a join's chunk list.
    /// Its ladder is reused by default, a passthrough package when asked, a chunk of one never.
    @Test func aPackagesKeyAndWhenItMayBeReused() throws {
        func stream(output: String = "out/p", _ settings: String = "", extra: String = "") throws -> JobManifest {
            let video = settings.contains("passthrough") ? "" : #", "video": { "rungs": [{ "height": 360, "bitrate": 900000 }] }"#
            return try manifest("""
                { "version": 1, "input": "a.mp4" \(extra), "stream": { "output": "\(output)" \(video) \(settings) } }
                """)
        }
        let base = key(try stream())
        #expect(key(try stream(output: "out/elsewhere/q", extra: #", "overwrite": true"#)) == base)
        #expect(key(try stream(#", "segmentSeconds": 4"#)) != base)
        #expect(key(try stream(#", "formats": ["hls"]"#)) != base)
        #expect(ResultKey.of(try stream(), contents: ["/jobs/a.mp4": contents["/jobs/b.mp4"]!]) != base, "another input's content")
        var joined = try stream(#", "chunkSeconds": 6"#)
        let whole = key(joined)
        #expect(whole != base)
        joined.stream?.chunking.join = [JobManifest.JoinedChunk(output: "/jobs/out/.p.chunks-x/chunk-0000", frames: 0..<180)]
        #expect(key(joined) == whole, "the join's chunk list is the coordinator's")
        // The key file by its content, not its path.
        let encrypted = { (file: String) in try stream(#", "container": "ts", "encryption": { "method": "aes-128", "keyFile": "\#(file)", "keyURI": "k.key" }"#) }
        let keys = ["/jobs/k1.key": String(repeating: "3", count: 64), "/jobs/k2.key": String(repeating: "3", count: 64), "/jobs/k3.key": String(repeating: "4", count: 64)]
        let withKey = { (m: JobManifest) in ResultKey.of(m, contents: contents.merging(keys) { $1 }) }
        #expect(withKey(try encrypted("k1.key")) == withKey(try encrypted("k2.key")))
        #expect(withKey(try encrypted("k1.key")) != withKey(try encrypted("k3.key")))
        #expect(!ResultKey.description(try encrypted("k1.key"), contents: contents.merging(keys) { $1 }, program: "p").contains("k1.key"))

        #expect(ResultKey.applies(to: try stream()), "a ladder, by default")
        #expect(ResultKey.applies(to: try stream(output: "s3://bucket/out/p")), "a package bound for a prefix")
        #expect(key(try stream(output: "s3://bucket/out/p")) == base, "where it goes is not its key")
        #expect(!ResultKey.applies(to: try stream(output: "s3://bucket/out/p", extra: #", "report": "s3://bucket/out/p.json""#)), "a report bound for an object")
        #expect(!ResultKey.applies(to: try stream(extra: #", "reuse": false"#)))
        #expect(!ResultKey.applies(to: try stream(#", "mode": "passthrough""#)), "a passthrough package costs what checking one would")
        #expect(ResultKey.applies(to: try stream(#", "mode": "passthrough""#, extra: #", "reuse": true"#)))
        var chunk = try stream(#", "chunkSeconds": 6"#)
        chunk.stream?.chunking.frames = 0..<180
        #expect(!ResultKey.applies(to: chunk), "a chunk of a package")
    }

    @Test func reuseMustBeTrueOrFalse() {
        guard case .failure(let e) = ManifestValidator.validate(json: Array(#"{ "version": 1, "input": "a.mp4", "reuse": "no" }"#.utf8), context: context)
        else { Issue.record("accepted"); return }
        #expect(e.issues.map { "\($0.path): \($0.message)" } == ["$.reuse: expected true or false, found a string"])
    }
}

extension JobManifest {
    func withFrames(_ frames: Range<Int>) -> JobManifest {
        var m = self
        m.export?.frames = frames
        return m
    }
}
