import MediaTime
import Testing
@testable import FarmModel

@Suite struct ManifestValidatorTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    func validate(_ json: String, context: ManifestContext? = nil) -> Result<JobManifest, ManifestValidationError> {
        ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context ?? self.context)
    }

    func issues(_ json: String, context: ManifestContext? = nil) -> [ManifestIssue] {
        switch validate(json, context: context) {
        case .success: Issue.record("expected the manifest to be rejected"); return []
        case .failure(let e): return e.issues
        }
    }

    func manifest(_ json: String) throws -> JobManifest {
        switch validate(json) {
        case .success(let m): return m
        case .failure(let e): Issue.record("rejected: \(e)"); throw e
        }
    }

    @Test func theArchitectureExampleValidates() throws {
        let m = try manifest("""
        { "version": 1, "name": "guitar-slowmo",
          "edits": [ { "source": "media/guitar.mp4", "start": "0", "duration": "10" } ],
          "scale": [ { "start": "6", "duration": "2", "rate": 2 }, { "start": "2", "duration": "1", "toDuration": "4" } ],
          "audio": { "timePitch": "spectral" },
          "scan":  { "symbologies": ["qr", "ean13"], "regionOfInterest": { "x": 0, "y": 0, "width": 1, "height": 0.5 }, "interval": "0.1" },
          "export": { "mode": "constantFrameRate", "output": "out/guitar-slowmo.mp4", "frameRate": 30,
                      "video": { "codec": "h264", "crf": 20, "preset": "veryfast" },
                      "audio": { "policy": "auto", "codec": "aac", "bitrate": 128000 } },
          "report": "out/guitar-slowmo.json" }
        """)
        #expect(m.name == "guitar-slowmo")
        #expect(m.edits == [JobManifest.Edit(source: "/jobs/media/guitar.mp4", start: .zero, duration: MediaTime(value: 10, timescale: 1), path: "$.edits[0].source")])
        // Sorted by start; the rate becomes an exact target duration.
        #expect(m.scale.map(\.start) == [MediaTime(value: 2, timescale: 1), MediaTime(value: 6, timescale: 1)])
        #expect(m.scale[0].rate == Rational(1, 4))
        #expect(m.scale[1].toDuration == MediaTime(value: 1, timescale: 1))
        #expect(m.scan?.interval == MediaTime(value: 1, timescale: 10))
        #expect(m.export?.frameDuration == MediaTime(value: 1, timescale: 30))
        #expect(m.export?.fileType == .mp4 && m.export?.faststart == true)
        #expect(m.report == "/jobs/out/guitar-slowmo.json")
    }

    @Test func inputAloneIsAnInspectionJob() throws {
        let m = try manifest(#"{ "version": 1, "input": "a.mov" }"#)
        #expect(m.isInspectionOnly && m.edits == [JobManifest.Edit(source: "/jobs/a.mov", path: "$.input")])
        #expect(m.name == "job")
    }

    @Test func everyErrorIsReportedWithItsPath() {
        let found = issues("""
        { "version": 2, "inptu": "a.mp4",
          "scale": [ { "start": "soon", "duration": 1, "rate": 33 } ],
          "export": { "mode": "passthrough", "output": "../elsewhere/x.mp4", "frameRate": 30 } }
        """)
        let paths = Set(found.map(\.path))
        #expect(paths.isSuperset(of: ["$.version", "$.inptu", "$", "$.scale[0].start", "$.scale[0].rate",
                                       "$.export.output", "$.export.frameRate"]), "\(found)")
        #expect(found.first { $0.path == "$.inptu" }?.message.contains("did you mean \"input\"") == true)
        #expect(found.first { $0.path == "$.scale[0].rate" }?.message.contains("outside 1/32...32") == true)
    }

    @Test(arguments: ["0.03125", "32", "\"1/32\""])
    func extremeRatesAreAllowed(_ rate: String) throws {
        let m = try manifest(#"{ "version": 1, "input": "a.mp4", "scale": [ { "start": 0, "duration": 1, "rate": \#(rate) } ], "export": { "mode": "passthrough", "output": "out/a.mp4" } }"#)
        #expect(m.scale.count == 1)
    }

    @Test(arguments: ["33", "0.03", "0", "-1", "\"fast\""])
    func ratesOutsideTheRangeAreRejected(_ rate: String) {
        let found = issues(#"{ "version": 1, "input": "a.mp4", "scale": [ { "start": 0, "duration": 1, "rate": \#(rate) } ], "export": { "mode": "passthrough", "output": "out/a.mp4" } }"#)
        #expect(found.map(\.path) == ["$.scale[0].rate"])
    }

    @Test func toDurationGivingAnExtremeRateIsRejected() {
        let found = issues(#"{ "version": 1, "input": "a.mp4", "scale": [ { "start": 0, "duration": 1, "toDuration": 40 } ], "export": { "mode": "passthrough", "output": "out/a.mp4" } }"#)
        #expect(found.map(\.path) == ["$.scale[0].toDuration"])
    }

    @Test func overlappingScaleRanges() {
        let found = issues("""
        { "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "out/a.mp4" },
          "scale": [ { "start": 2, "duration": 2, "rate": 0.5 }, { "start": 3, "duration": 1, "rate": 2 } ] }
        """)
        #expect(found.map(\.path) == ["$.scale[1]"])
        #expect(found.first?.message.contains("overlaps $.scale[0]") == true)
    }

    @Test func bothOrNeitherOfRateAndToDuration() {
        let found = issues("""
        { "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "out/a.mp4" },
          "scale": [ { "start": 0, "duration": 1 }, { "start": 2, "duration": 1, "rate": 2, "toDuration": 0.5 } ] }
        """)
        #expect(found.map(\.path) == ["$.scale[0]", "$.scale[1].rate"])
    }

    @Test func wrongTypes() {
        let found = issues(#"{ "version": "1", "input": 5, "audio": { "timePitch": "spectrl" }, "export": { "mode": "cfr", "output": "out/a.mp4", "video": { "crf": 20.5 } } }"#)
        let byPath = Dictionary(found.map { ($0.path, $0.message) }, uniquingKeysWith: { a, _ in a })
        #expect(byPath["$.version"] != nil)
        #expect(byPath["$.input"]?.contains("expected a string, found a number") == true)
        #expect(byPath["$.audio.timePitch"]?.contains("did you mean \"spectral\"") == true)
        #expect(byPath["$.export.mode"]?.contains("passthrough, constantFrameRate") == true)
        #expect(byPath["$.export.video.crf"]?.contains("whole number") == true)
    }

    @Test func missingInput() {
        #expect(issues(#"{ "version": 1 }"#).map(\.path) == ["$"])
        #expect(issues(#"{ "version": 1, "input": "a.mp4", "edits": [] }"#).map(\.path).contains("$.edits"))
    }

    @Test func outputsStayUnderTheRoots() {
        #expect(issues(#"{ "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "/etc/passwd.mp4" } }"#).map(\.path) == ["$.export.output"])
        #expect(issues(#"{ "version": 1, "input": "a.mp4", "report": "out/../../r.json" }"#).map(\.path) == ["$.report"])
        // A symbolic link inside the root that points out of it.
        let linked = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"],
                                     realPath: { $0.hasPrefix("/jobs/out/link") ? "/tmp" + $0.dropFirst("/jobs/out/link".count) : $0 })
        let found = issues(#"{ "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "out/link/x.mp4" } }"#, context: linked)
        #expect(found.map(\.path) == ["$.export.output"])
        #expect(found.first?.message.contains("symbolic link") == true)
    }

    @Test func containerFromExtensionOrFileType() throws {
        #expect(issues(#"{ "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "out/a.avi" } }"#).map(\.path) == ["$.export.output"])
        let m = try manifest(#"{ "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "out/a.bin", "fileType": "mkv" } }"#)
        #expect(m.export?.fileType == .mkv && m.export?.faststart == false)
    }

    @Test func cfrDefaultsToThirtyFramesPerSecond() throws {
        let m = try manifest(#"{ "version": 1, "input": "a.mp4", "export": { "mode": "constantFrameRate", "output": "out/a.mp4" } }"#)
        #expect(m.export?.frameDuration == MediaTime(value: 1, timescale: 30))
        let d = try manifest(#"{ "version": 1, "input": "a.mp4", "export": { "mode": "constantFrameRate", "output": "out/a.mp4", "frameDuration": "1001/30000" } }"#)
        #expect(d.export?.frameDuration == MediaTime(value: 1001, timescale: 30000))
    }

    @Test func scanSymbologiesAreOptInAndKnown() {
        let found = issues(#"{ "version": 1, "input": "a.mp4", "scan": { "symbologies": ["qr", "QR-code", "ean-13"] } }"#)
        #expect(found.map(\.path) == ["$.scan.symbologies[1]", "$.scan.symbologies[2]"])
        #expect(found.last?.message.contains("did you mean \"ean13\"") == true)
        #expect(issues(#"{ "version": 1, "input": "a.mp4", "scan": { } }"#).map(\.path) == ["$.scan.symbologies"])
        #expect(issues(#"{ "version": 1, "input": "a.mp4", "scan": { "symbologies": [], "regionOfInterest": { "x": 0.5, "y": 0, "width": 0.6, "height": 1 } } }"#).map(\.path) == ["$.scan.regionOfInterest"])
    }

    @Test func duplicateKeysAndSyntaxErrors() {
        #expect(issues(#"{ "version": 1, "input": "a.mp4", "input": "b.mp4" }"#).map(\.path) == ["$.input"])
        let syntax = issues("{ \"version\": 1,\n  \"input\": \"a.mp4\" ")
        #expect(syntax.count == 1 && syntax[0].message.contains("line 2"))
        #expect(issues("[1, 2]").first?.message.contains("expected an object") == true)
    }

    @Test func outputMustNotOverwriteAnInput() {
        let ctx = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs"])
        #expect(issues(#"{ "version": 1, "input": "a.mp4", "export": { "mode": "passthrough", "output": "a.mp4" } }"#, context: ctx).map(\.path) == ["$.export.output"])
    }
}

@Suite struct JSONParserTests {
    @Test func keepsNumbersAsWrittenAndKeyOrder() throws {
        let v = try JSONParser.parse(#"{"b": 0.1, "a": [1e3, -0, true, null, "\u00e9\ud83d\ude00"]}"#)
        guard case .object(let members) = v else { Issue.record("not an object"); return }
        #expect(members.map(\.key) == ["b", "a"])
        #expect(v["b"] == .number("0.1"))
        #expect(v["a"] == .array([.number("1e3"), .number("-0"), .bool(true), .null, .string("é😀")]))
    }

    @Test(arguments: ["", "{", "{\"a\":}", "[1,]", "01", "1.", "\"\\x\"", "\"a\nb\"", "{\"a\":1} x", "tru", "\"\\ud800\""])
    func rejectsInvalidJSON(_ text: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(text) }
    }

    @Test func limitsNesting() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(deep) }
        // 10,000 levels inside a manifest: a clear error at the 65th, no stack overflow.
        let manifest = #"{"version":1,"input":"# + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}"
        do {
            _ = try JSONParser.parse(manifest)
            Issue.record("a 10,000-deep document parsed")
        } catch {
            #expect("\(error)".contains("nested deeper than 64 levels"))
        }
    }

    @Test func limitsDocumentSize() {
        let huge = "\"" + String(repeating: "a", count: JSONParser.maxDocumentBytes) + "\""
        do {
            _ = try JSONParser.parse(huge)
            Issue.record("a document over the size limit parsed")
        } catch {
            #expect("\(error)".contains("larger than 4 MiB"))
        }
    }
}
