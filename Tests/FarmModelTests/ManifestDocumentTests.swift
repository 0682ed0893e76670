import FarmModel
import Foundation
import MediaTime
import Testing

/// Manifests that use every field the validator reads (given, and left to their defaults).
let manifestsOfEveryField = [
    #"""
    {"version": 1, "name": "a", "edits": [{"source": "a.mp4", "start": "1.5", "duration": "5/2"}, {"source": "job:prep#output"}, {"source": "s3://media/b.mp4"}],
     "scale": [{"start": 1, "duration": 1, "rate": 0.5}, {"start": "2.5", "duration": "1/3", "toDuration": "00:00:01.000"}],
     "audio": {"timePitch": "varispeed"},
     "scan": {"symbologies": ["qr", "EAN13"], "regionOfInterest": {"x": 0.1, "y": 0, "width": 0.5, "height": 0.25}, "interval": "0.1",
              "maxCodesPerFrame": 5, "images": {"output": "out/code-{index}.png", "maxWidth": 320, "quality": 0.5}},
     "export": {"mode": "passthrough", "output": "out/a.mov", "faststart": false, "cuts": "smart", "audio": {"policy": "reencode", "languages": ["fr", "en"], "bitrate": 96000}},
     "report": "out/a.json", "overwrite": true, "after": [3, "nightly"], "afterPolicy": "always", "requires": ["gpu"],
     "notify": ["https://hooks.example.com/farm"], "reuse": false}
    """#,
    #"""
    {"version": 1, "input": "b.mkv",
     "export": {"mode": "constantFrameRate", "output": "out/b.mkv", "frameRate": "30000/1001", "video": {"crf": 18, "preset": "slow", "threads": 4},
                "audio": {"loudness": {"standard": "ebu-r128", "truePeak": -2.5}}, "chunkSeconds": "12.5", "chunkAbove": 60,
                "poster": {"at": "2.5", "tolerance": "0.5", "output": "out/b-poster.webp", "quality": 0.9}},
     "images": {"every": "2.5", "toleranceBefore": 0, "output": "out/i-{index}.jpg", "maxHeight": 180},
     "poster": {"at": "auto", "output": "out/p.png"},
     "waveform": {"output": "out/w.svg", "peaks": "out/w.json", "width": 900, "height": 100},
     "checks": {"of": "export", "black": {"severity": "warn", "duration": "1.5", "pictureRatio": 0.9, "pixelThreshold": 0.05},
                "freeze": {"duration": 3, "noise": "-50dB"}, "levels": {"pixelShare": 0.02, "duration": 1}, "cadence": {"severity": "measure"},
                "silence": {"duration": 1, "noise": 0.002, "eachChannel": true}, "clipping": {"level": "-0.1dB", "samples": 5, "gap": 0.5},
                "channels": true, "loudness": {"standard": "atsc-a85", "tolerance": 1.5, "truePeak": -3},
                "length": {"duration": 600, "durationTolerance": "0.5", "frames": 18000, "frameTolerance": 2}}}
    """#,
    #"""
    {"version": 1, "input": "c.mp4", "storyboard": {"tiles": 120, "tileWidth": 120, "columns": 8, "rows": 6, "format": "webp", "quality": 0.5,
                                                   "output": "out/c.vtt", "chunkSeconds": 600}}
    """#,
    #"""
    {"version": 1, "input": "c.mp4", "overwrite": true, "storyboard": {"every": "1/2", "output": "out/.c/chunk-0001.vtt", "part": [0, 48]}}
    """#,
    #"""
    {"version": 1, "input": "c.mp4", "storyboard": {"output": "out/c.vtt", "join": [{"output": "out/.c/1.vtt", "tiles": [0, 48], "job": 4, "attempts": 2}]}}
    """#,
    #"""
    {"version": 1, "input": "d.mp4", "scan": {"symbologies": ["qr"]},
     "export": {"mode": "constantFrameRate", "output": "out/d.mp4", "audio": {"loudness": {"measure": true}},
                "join": [{"output": "out/.d/1.mp4", "frames": [0, 90], "job": 8, "attempts": 1}, {"output": "out/.d/2.mp4", "frames": [90, 100]}]},
     "images": {"times": [0, "1/3", "00:00:02.500"], "tolerance": "1/30", "output": "out/d-{index}.jpg"}}
    """#,
    #"""
    {"version": 1, "input": "e.mp4", "images": {"count": 4, "output": "out/e-{index}.jpg"},
     "export": {"mode": "constantFrameRate", "output": "out/e.mp4", "frameDuration": "1/25", "frames": [25, 50], "audio": {"tracks": "all", "loudness": {"target": -16.5}}}}
    """#,
    #"""
    {"version": 1, "input": "f.mp4"}
    """#,
    #"""
    {"version": 1, "input": "g.mov", "scale": [{"start": 0, "duration": 2, "rate": 2}], "report": "out/g.json",
     "stream": {"output": "out/g/", "formats": ["dash", "hls"], "segmentSeconds": "2.002", "frameRate": "30000/1001",
                "video": {"rungs": [{"height": 720, "bitrate": 3000000, "maxBitrate": 4500000, "bufferSize": 9000000, "profile": "main", "level": "3.1"},
                                    {"width": 640, "bitrate": 800000, "level": 3}, {"width": 320, "height": 320, "bitrate": 200000, "profile": "baseline"}],
                          "larger": "skip", "preset": "medium", "threads": 2},
                "audio": {"bitrate": 96000, "language": "pt-BR"}}}
    """#,
    #"""
    {"version": 1, "input": "h.mp4", "stream": {"output": "out/h", "formats": ["hls"], "video": {"rungs": [{"height": 360, "bitrate": 600000}]},
                                                "audio": {"languages": ["fr", "en-GB"]}, "subtitles": {"languages": ["en", "fr"]}}}
    """#,
    #"""
    {"version": 1, "input": "i.mp4", "stream": {"output": "out/i", "container": "ts", "video": {"rungs": [{"height": 360, "bitrate": 600000}]},
                                                "encryption": {"keyFile": "keys/i.key", "keyURI": "https://keys.example.com/i.key?v=1&x=%20"}}}
    """#,
    #"""
    {"version": 1, "input": "j.mp4", "stream": {"output": "out/j", "mode": "passthrough", "container": "ts", "formats": ["hls"], "singleFile": true, "audio": {"tracks": "all"}}}
    """#,
]

/// A manifest written back as a document (`JobManifest.document`) and the manifests the farm derives from
/// one (`JobManifest+Derived.swift`): each read back as the same value, each derivation keeping, dropping or
/// setting every top-level key as the one table says.
@Suite struct ManifestDocumentTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    func validate(_ json: String) throws -> JobManifest {
        try ManifestValidator.validate(json: Array(json.utf8), context: context).get()
    }

    /// Each manifest's document reads back as the same manifest, and is written the same again.
    @Test(arguments: manifestsOfEveryField) func aManifestsDocumentReadsBackAsTheSameManifest(_ json: String) throws {
        let manifest = try validate(json)
        let document = manifest.document
        let again = try ManifestValidator.validate(document, context: context).get()
        #expect(again == manifest, "\(document.text)")
        #expect(again.document == document)
    }

    /// The schema's top-level keys are the sections the table has rows for, no more and no fewer.
    @Test func theTableHasARowForEveryKeyOfTheSchema() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let schema = try JSONParser.parse(Array(try Data(contentsOf: root.appendingPathComponent("jobs/schema.json"))))
        guard case .object(let properties)? = schema["properties"] else { Issue.record("jobs/schema.json has no properties"); return }
        #expect(Set(properties.map(\.key)) == Set(ManifestSection.allCases.map(\.rawValue)))
    }

    /// A manifest with every section (more than the validator lets one job have: derivations work on
    /// values), derived every way, keeps what the table keeps, leaves out what it drops, and has what it sets.
    @Test(arguments: ManifestDerivation.allCases, [false, true]) func eachDerivationFollowsTheTable(_ derivation: ManifestDerivation, pieces: Bool) throws {
        var full = try validate(#"""
            {"version": 1, "name": "full", "input": "a.mp4", "audio": {"timePitch": "varispeed"}, "scan": {"symbologies": ["qr"]},
             "export": {"mode": "constantFrameRate", "output": "out/a.mp4"}, "images": {"count": 3, "output": "out/i-{index}.jpg"},
             "poster": {"output": "out/p.jpg"}, "waveform": {"output": "out/w.png"}, "report": "out/a.json", "after": [7], "afterPolicy": "always",
             "requires": ["gpu"], "notify": ["https://hooks.example.com/f"], "reuse": true, "checks": {"black": true}}
            """#)
        full.scale = [JobManifest.ScaleRange(start: .zero, duration: MediaTime(value: 1, timescale: 1), toDuration: MediaTime(value: 2, timescale: 1))]
        full.storyboard = JobManifest.StoryboardSettings(output: "/jobs/out/s.vtt")
        full.stream = JobManifest.StreamSettings(output: "/jobs/out/package", video: JobManifest.StreamVideo(rungs: [JobManifest.StreamRung(height: 360, bitrate: 600_000)]))
        if pieces { full.edits = [JobManifest.Edit(source: "/jobs/a.mp4", duration: MediaTime(value: 1, timescale: 1), path: "$.edits[0].source"),
                                 JobManifest.Edit(source: "/jobs/b.mp4", path: "$.edits[1].source")] }
        // A join joins the one section that was split.
        if [.storyboardJoin, .streamJoin, .streamChunk].contains(derivation) { full.export = nil }
        if derivation == .storyboardJoin { full.stream = nil }
        let base = full.document
        var absent: Set<String> = ["overwrite", pieces ? "input" : "edits"]
        if [.storyboardJoin, .streamJoin, .streamChunk].contains(derivation) { absent.insert("export") }
        if derivation == .storyboardJoin { absent.insert("stream") }
        for section in ManifestSection.allCases where !absent.contains(section.rawValue) {
            #expect(base[section.rawValue] != nil, "the full manifest lacks \(section.rawValue): \(base.text)")
        }
        let chunk = JobManifest.JoinedChunk(output: "/jobs/out/.a.chunks-1/chunk-0001.mp4", frames: 0..<30, job: 2, attempts: 1)
        let derived: JobManifest
        switch derivation {
        case .exportChunk: derived = full.exportChunk(0, of: 3, jobName: "full", output: chunk.output, frames: chunk.frames)
        case .storyboardPart: derived = full.storyboardPart(0, of: 3, jobName: "full", output: "/jobs/out/.s.chunks-1/chunk-0001.vtt", tiles: 0..<10)
        case .streamChunk: derived = full.streamChunk(0, of: 3, jobName: "full", output: "/jobs/out/.package.chunks-1/chunk-0001", frames: 0..<180)
        case .exportJoin, .storyboardJoin, .streamJoin: derived = full.joining([chunk])
        case .defaultChunking: derived = try #require(full.chunked(every: MediaTime(value: 10, timescale: 1), above: nil))
        case .sourcesPut: derived = full.puttingSources(["/jobs/a.mp4": "/media/a.mp4"])
        }
        if derivation == .exportChunk || derivation == .storyboardPart || derivation == .streamChunk {
            // A part writes only its own files, in the plan's folder: all else is the whole job's, written once.
            #expect(!derived.writes.isEmpty && derived.writes.allSatisfy { $0.contains(".chunks-1/") }, "\(derived.writes)")
        }
        let document = derived.document
        for section in ManifestSection.allCases {
            let key = section.rawValue
            switch section.rule(in: derivation) {
            case .keep: #expect(document[key] == base[key], "\(derivation) keeps \(key): \(document.text)")
            case .drop: #expect(document[key] == nil, "\(derivation) drops \(key): \(document.text)")
            case .set:
                // What it writes: present, and not the section it was made from (overwrite is always on in a part).
                if !absent.contains(key) || key == "overwrite" {
                    #expect(document[key] != nil && (document[key] != base[key] || key == "overwrite"), "\(derivation) sets \(key): \(document.text)")
                }
            }
        }
    }

    /// Each source keeps the JSON path it was given at, and the assets a manifest names are read at theirs
    /// whether or not the rest of it is valid (an unknown asset is reported beside the other issues).
    @Test func sourcesKeepTheirPathsAndAssetsAreReadInAnInvalidManifest() throws {
        let a = AssetID(digest: [UInt8](repeating: 7, count: 16)), b = AssetID(digest: [UInt8](repeating: 9, count: 16))
        let one = try validate(#"{"version": 1, "edits": [{"source": "asset:\#(a)"}]}"#)
        #expect(one.edits.map(\.path) == ["$.edits[0].source"] && one.assetReferences.map(\.path) == ["$.edits[0].source"])
        // Written back as it was given: one piece of edits stays one piece.
        #expect(one.document["edits"] != nil && one.document["input"] == nil)
        let input = try validate(#"{"version": 1, "input": "asset:\#(b)"}"#)
        #expect(input.assetReferences.map(\.path) == ["$.input"] && input.assetReferences.map(\.id) == [b])
        let invalid = ManifestValidator.validate(json: Array(#"""
            {"version": 1, "edits": [{"source": "a.mp4"}, {"source": "asset:\#(a)"}, {"source": "asset:\#(b)", "start": -1}], "export": {"mode": "sideways"}}
            """#.utf8), context: context)
        guard case .failure(let error) = invalid else { Issue.record("an invalid manifest was accepted"); return }
        #expect(error.assets.map(\.path) == ["$.edits[1].source", "$.edits[2].source"] && error.assets.map(\.id) == [a, b], "\(error)")
    }

    /// The parts and the joins of a valid manifest are valid manifests: what a worker reads.
    @Test func derivedManifestsOfAValidOneAreValid() throws {
        let manifest = try validate(manifestsOfEveryField[1])
        let chunk = manifest.exportChunk(1, of: 4, jobName: "b", output: "/jobs/out/.b.chunks-1/chunk-0002.mkv", frames: 90..<180)
        let read = try ManifestValidator.validate(chunk.document, context: context).get()
        #expect(read == chunk && read.export?.frames == 90..<180 && read.name == "b [chunk 2/4]" && read.overwrite)
        #expect(read.images == nil && read.poster == nil && read.waveform == nil && read.export?.poster == nil && read.export?.chunkDuration == nil)
        let joined = manifest.joining([JobManifest.JoinedChunk(output: "/jobs/out/.b.chunks-1/chunk-0001.mkv", frames: 0..<90, job: 5, attempts: 1)])
        #expect(try ManifestValidator.validate(joined.document, context: context).get() == joined)
        #expect(joined.waveform == manifest.waveform && joined.export?.join.count == 1)
        let board = try validate(manifestsOfEveryField[2])
        let part = board.storyboardPart(0, of: 2, jobName: "c", output: "/jobs/out/.c.chunks-1/chunk-0001.vtt", tiles: 0..<60)
        #expect(try ManifestValidator.validate(part.document, context: context).get() == part)
    }
}
