import FarmTestSupport
import Foundation
import Testing

/// The example manifests in jobs/examples run as-is on the media script/make-demo-media makes, and
/// jobs/schema.json says what the validator says.
@Suite struct ExampleManifestTests {
    let examples = TestPaths.packageRoot.appendingPathComponent("jobs/examples")
    let schema = TestPaths.packageRoot.appendingPathComponent("jobs/schema.json")

    var exampleFiles: [URL] {
        ((try? FileManager.default.contentsOfDirectory(atPath: examples.path)) ?? [])
            .filter { $0.hasSuffix(".json") }.sorted().map { examples.appendingPathComponent($0) }
    }

    @Test func everyExampleRunsAsIs() throws {
        // A scratch copy, so the run writes nothing into the repository.
        let dir = try TestPaths.makeTemporaryFolder("examples")
        for file in exampleFiles { try FileManager.default.copyItem(at: file, to: dir.appendingPathComponent(file.lastPathComponent)) }
        try ProcessRunner.check(TestPaths.packageRoot.appendingPathComponent("script/make-demo-media").path,
                                [dir.appendingPathComponent("media").path])
        let manifests = exampleFiles.map { dir.appendingPathComponent($0.lastPathComponent).path }
        #expect(manifests.count >= 5)
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json"] + manifests)
        #expect(r.status == 0, "\(r.stderr)")
        let results = r.stdout.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard let e = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], e["event"] as? String == "result" else { return nil }
            return e["job"] as? [String: Any]
        }
        #expect(results.count == manifests.count)
        for job in results {
            #expect(job["succeeded"] as? Bool == true, "\(job)")
            var isFolder: ObjCBool = false
            if let output = job["output"] as? String, FileManager.default.fileExists(atPath: output, isDirectory: &isFolder), isFolder.boolValue {
                // A streaming package: ffprobe reads its master playlist and every variant.
                let probe = try ProcessRunner.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", output + "/master.m3u8"])
                #expect(probe.status == 0 && probe.stdout.contains("video") && probe.stdout.contains("audio"), "\(output): \(probe.stderr)")
            } else if let output = job["output"] as? String {
                let inspect = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["inspect", "--json", output])
                #expect(inspect.status == 0, "\(output) does not inspect cleanly: \(inspect.stdout)")
            }
        }
    }

    /// The tour's `scan --symbologies qr,ean13 media/guitar.mp4` finds what the demo take shows: a QR code
    /// and an EAN-13, at the tour's size and the default one.
    @Test(arguments: ["640x360", "1280x720"])
    func theDemoTakeShowsTheCodesTheToursScanLooksFor(size: String) throws {
        let dir = try TestPaths.makeTemporaryFolder("demo-\(size)")
        try ProcessRunner.check(TestPaths.packageRoot.appendingPathComponent("script/make-demo-media").path, ["--size", size, dir.path])
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["scan", "--json", "--symbologies", "qr,ean13", dir.appendingPathComponent("guitar.mp4").path])
        #expect(r.status == 0, "\(r.stderr)")
        let payloads = Set(r.stdout.matches(of: /"payload"\s*:\s*"([^"]*)"/).map { String($0.1) })
        #expect(payloads == ["https://mediafarm.example/takes/guitar-1", "5901234123457"], "\(r.stdout)")
    }

    @Test func schemaAndValidatorAgreeOnEveryKey() throws {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: schema)) as? [String: Any])
        #expect(json["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
        func keys(_ object: [String: Any]?) -> Set<String> { Set((object?["properties"] as? [String: Any])?.keys.map { $0 } ?? []) }
        let top = keys(json)
        let properties = json["properties"] as? [String: Any] ?? [:]
        #expect(top == ["version", "name", "input", "edits", "scale", "audio", "scan", "export", "stream", "report", "overwrite",
                       "after", "afterPolicy", "requires", "notify", "reuse", "images", "poster", "storyboard", "waveform", "checks"])
        #expect(keys(properties["checks"] as? [String: Any]) == ["of", "black", "freeze", "levels", "interlace", "cadence", "silence", "clipping", "channels",
                                                                  "loudness", "length", "spec", "fidelity"])
        #expect(keys(properties["waveform"] as? [String: Any]) == ["width", "height", "output", "peaks"])
        #expect(keys(properties["images"] as? [String: Any]) == ["times", "every", "count", "tolerance", "toleranceBefore", "toleranceAfter",
                                                                  "maxWidth", "maxHeight", "format", "quality", "output"])
        let posterDefinition = (json["$defs"] as? [String: Any])?["poster"] as? [String: Any]
        #expect(keys(posterDefinition) == ["at", "tolerance", "toleranceBefore", "toleranceAfter", "maxWidth", "maxHeight", "format", "quality", "output"])
        #expect((properties["poster"] as? [String: Any])?["$ref"] as? String == "#/$defs/poster")
        #expect(keys(properties["storyboard"] as? [String: Any]) == ["every", "tiles", "tileWidth", "columns", "rows", "format", "quality", "output",
                                                                      "chunkSeconds", "part", "join"])
        #expect(keys((properties["edits"] as? [String: Any])?["items"] as? [String: Any]) == ["source", "start", "duration"])
        #expect(keys((properties["scale"] as? [String: Any])?["items"] as? [String: Any]) == ["start", "duration", "toDuration", "rate"])
        #expect(keys(properties["audio"] as? [String: Any]) == ["timePitch"])
        #expect(keys(properties["scan"] as? [String: Any]) == ["symbologies", "regionOfInterest", "interval", "maxCodesPerFrame", "images"])
        let export = properties["export"] as? [String: Any]
        #expect(keys(export) == ["mode", "output", "fileType", "frameRate", "frameDuration", "video", "audio", "faststart", "cuts",
                                  "subtitles", "chunkSeconds", "chunkAbove", "frames", "join", "poster"])
        let exportProperties = export?["properties"] as? [String: Any]
        #expect(keys(exportProperties?["subtitles"] as? [String: Any]) == ["languages"])
        #expect(keys(exportProperties?["video"] as? [String: Any]) == ["codec", "crf", "preset", "threads"])
        #expect(keys(exportProperties?["audio"] as? [String: Any]) == ["policy", "tracks", "languages", "codec", "bitrate", "loudness"])
        let audioProperties = (exportProperties?["audio"] as? [String: Any])?["properties"] as? [String: Any]
        #expect(keys(audioProperties?["loudness"] as? [String: Any]) == ["measure", "standard", "target", "truePeak"])
        // Every key the schema allows is one the validator accepts: try them all in one manifest.
        let everything = """
        { "version": 1, "name": "all", "input": "a.mp4", "scale": [ { "start": 0, "duration": 1, "rate": 0.5 } ],
          "audio": { "timePitch": "timeDomain" },
          "scan": { "symbologies": ["qr"], "regionOfInterest": { "x": 0, "y": 0, "width": 1, "height": 1 }, "interval": 0, "maxCodesPerFrame": 4,
                    "images": { "maxWidth": 320, "maxHeight": 240, "format": "jpeg", "quality": 0.8, "output": "out/code-{index}.jpg" } },
          "export": { "mode": "constantFrameRate", "output": "out/a.mp4", "fileType": "mp4", "frameRate": 25, "faststart": true,
                      "video": { "codec": "h264", "crf": 18, "preset": "fast", "threads": 2 },
                      "audio": { "policy": "reencode", "tracks": "all", "codec": "aac", "bitrate": 96000,
                                 "loudness": { "measure": false, "standard": "ebu-r128", "target": -23, "truePeak": -1 } },
                      "poster": { "at": "auto", "maxWidth": 320, "output": "out/a-poster.jpg" } },
          "report": "out/a.json", "overwrite": false }
        """
        let dir = try TestPaths.makeTemporaryFolder("schema")
        try everything.write(to: dir.appendingPathComponent("all.json"), atomically: true, encoding: .utf8)
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", dir.appendingPathComponent("all.json").path])
        #expect(!r.stderr.contains("unknown key"), "\(r.stderr)")
        #expect(r.status == 1)   // valid; it fails only because a.mp4 does not exist
        // The passthrough-only key.
        let cuts = #"{ "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "out/a.mp4", "cuts": "keyframe" } }"#
        try cuts.write(to: dir.appendingPathComponent("cuts.json"), atomically: true, encoding: .utf8)
        let c = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", dir.appendingPathComponent("cuts.json").path])
        #expect(!c.stderr.contains("unknown key") && c.stderr.contains("a.mp4"), "\(c.stderr)")
        #expect(c.status == 1)
        // The picture sections, every key of each (pictures are of an input alone).
        let pictures = """
        { "version": 1, "input": "a.mp4",
          "images": { "times": [1], "toleranceBefore": 0, "toleranceAfter": 1, "maxWidth": 10, "maxHeight": 10, "format": "png", "quality": 1,
                      "output": "out/t-{index}.png" },
          "poster": { "at": 1, "tolerance": 0, "maxWidth": 10, "maxHeight": 10, "format": "webp", "quality": 0.5, "output": "out/p.webp" },
          "storyboard": { "tiles": 4, "tileWidth": 32, "columns": 2, "rows": 2, "format": "webp", "quality": 0.5, "output": "out/b.vtt" },
          "waveform": { "width": 100, "height": 50, "output": "out/w.png", "peaks": "out/w.json" } }
        """
        try pictures.write(to: dir.appendingPathComponent("pictures.json"), atomically: true, encoding: .utf8)
        let p = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", dir.appendingPathComponent("pictures.json").path])
        #expect(!p.stderr.contains("unknown key") && p.stderr.contains("a.mp4"), "\(p.stderr)")
        #expect(p.status == 1)
        // The package's section, every key of it and of a rung.
        let stream = json["properties"].flatMap { ($0 as? [String: Any])?["stream"] as? [String: Any] }
        #expect(keys(stream) == ["output", "mode", "formats", "container", "encryption", "singleFile", "segmentSeconds", "frameRate", "frameDuration", "video", "audio", "subtitles",
                                 "chunkSeconds", "chunkAbove", "frames", "join"])
        let streamVideo = (stream?["properties"] as? [String: Any])?["video"] as? [String: Any]
        #expect(keys(streamVideo) == ["rungs", "larger", "preset", "threads"])
        #expect(keys((streamVideo?["properties"] as? [String: Any])?["rungs"].flatMap { ($0 as? [String: Any])?["items"] as? [String: Any] })
                == ["width", "height", "bitrate", "maxBitrate", "bufferSize", "codec", "profile", "level"])
        #expect(keys((stream?["properties"] as? [String: Any])?["audio"] as? [String: Any]) == ["bitrate", "channels", "language", "languages", "tracks"])
        #expect(keys((stream?["properties"] as? [String: Any])?["encryption"] as? [String: Any]) == ["method", "keyFile", "keyURI"])
        let transport = """
        { "version": 1, "input": "a.mp4", "stream": { "output": "out/pkg-ts", "container": "ts", "formats": ["hls"], "singleFile": true,
          "encryption": { "method": "aes-128", "keyFile": "show.key", "keyURI": "https://keys.example.com/show.key" },
          "video": { "rungs": [ { "height": 360, "bitrate": 800000 } ] } } }
        """
        try transport.write(to: dir.appendingPathComponent("package-ts.json"), atomically: true, encoding: .utf8)
        let t = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", dir.appendingPathComponent("package-ts.json").path])
        #expect(!t.stderr.contains("unknown key") && t.stderr.contains("a.mp4"), "\(t.stderr)")
        #expect(t.status == 1)
        let package = """
        { "version": 1, "input": "a.mp4", "stream": { "output": "out/pkg", "formats": ["hls", "dash"], "segmentSeconds": 4, "frameRate": 25,
          "video": { "rungs": [ { "width": 640, "height": 360, "bitrate": 800000, "maxBitrate": 1200000, "bufferSize": 2400000, "profile": "main", "level": "3.0" } ],
                     "larger": "skip", "preset": "fast", "threads": 1 },
          "audio": { "bitrate": 96000, "language": "en" }, "subtitles": { "languages": ["en"] } } }
        """
        try package.write(to: dir.appendingPathComponent("package.json"), atomically: true, encoding: .utf8)
        let s = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", dir.appendingPathComponent("package.json").path])
        #expect(!s.stderr.contains("unknown key") && s.stderr.contains("a.mp4"), "\(s.stderr)")
        #expect(s.status == 1)
        let every = #"{ "version": 1, "input": "a.mp4", "images": { "every": 2, "output": "out/t-{index}.jpg" }, "storyboard": { "every": 3, "output": "out/b.vtt" } }"#
        try every.write(to: dir.appendingPathComponent("every.json"), atomically: true, encoding: .utf8)
        let e = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", dir.appendingPathComponent("every.json").path])
        #expect(!e.stderr.contains("unknown key") && e.stderr.contains("a.mp4"), "\(e.stderr)")
        #expect(e.status == 1)
    }

    @Test func examplesMatchTheSchema() throws {
        // jsonschema (Debian's python3-jsonschema, installed by script/bootstrap) is the independent oracle.
        let python = "/usr/bin/python3"
        let probe = try ProcessRunner.run(python, ["-c", "import jsonschema"])
        try #require(probe.status == 0, "python3-jsonschema is missing (script/bootstrap installs it): \(probe.stderr)")
        let script = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft202012Validator.check_schema(schema)
        for path in sys.argv[2:]:
            jsonschema.validate(json.load(open(path)), schema, cls=jsonschema.Draft202012Validator)
        bad = {"version": 1, "inptu": "a.mp4"}
        try:
            jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)
            sys.exit("the schema accepted a typo")
        except jsonschema.ValidationError:
            pass
        """
        let r = try ProcessRunner.run(python, ["-c", script, schema.path] + exampleFiles.map(\.path))
        #expect(r.status == 0, "\(r.stderr)")
    }
}
