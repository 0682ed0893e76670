import MediaTime
import Testing
@testable import FarmModel

/// The picture sections of a manifest: `"images"`, `"poster"`, `"storyboard"`.
@Suite struct PictureManifestTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    func validate(_ json: String) -> Result<JobManifest, ManifestValidationError> {
        ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context)
    }

    func messages(_ json: String) -> [String] {
        switch validate(json) {
        case .success: Issue.record("expected the manifest to be rejected: \(json)"); return []
        case .failure(let e): return e.issues.map(\.description)
        }
    }

    /// A picture's format is its output's: the extension decides, in any case; "format" may only agree.
    @Test func aPicturesFormatFollowsItsOutputsExtension() throws {
        for (name, format) in [("p.png", PictureFormat.png), ("p.PNG", .png), ("p.jpeg", .jpeg), ("p.JPG", .jpeg), ("p.webp", .webp)] {
            let m = try validate(#"{ "version": 1, "input": "m.mp4", "poster": { "output": "out/\#(name)" }, "images": { "times": [1], "output": "out/t-\#(name)" } }"#).get()
            #expect(m.poster?.style.format == format && m.images?.style.format == format, "\(name)")
        }
        let agreeing = try validate(#"{ "version": 1, "input": "m.mp4", "poster": { "format": "png", "output": "out/p.png" } }"#).get()
        #expect(agreeing.poster?.style.format == .png)
    }

    @Test func everySectionReadsWithItsDefaults() throws {
        let m = try validate("""
        { "version": 1, "input": "movie.mp4",
          "images": { "times": [1, "2.5", "00:00:03.000"], "tolerance": 0, "maxWidth": 320, "format": "webp", "quality": 0.5,
                      "output": "out/thumbs/t-{index}.webp" },
          "poster": { "output": "out/poster.jpg" },
          "storyboard": { "every": 10, "output": "out/board/movie.vtt" } }
        """).get()
        let images = try #require(m.images)
        #expect(images.times == .times([MediaTime(value: 1, timescale: 1), MediaTime(value: 5, timescale: 2), MediaTime(value: 3, timescale: 1)]))
        #expect(images.tolerance == JobManifest.PictureTolerance(before: .zero, after: .zero))
        #expect(images.style.maxWidth == 320 && images.style.maxHeight == 0 && images.style.format == .webp && images.style.quality == 0.5)
        #expect(images.output == "/jobs/out/thumbs/t-{index}.webp" && images.staticCount == 3)
        #expect(m.poster == JobManifest.PosterSettings(at: nil, output: "/jobs/out/poster.jpg"))
        let board = try #require(m.storyboard)
        #expect(board.every == MediaTime(value: 10, timescale: 1) && board.tiles == nil)
        #expect(board.tileWidth == 160 && board.columns == 10 && board.rows == 10 && board.format == .jpeg && board.quality == 0.7)
        #expect(board.sheetPattern == "/jobs/out/board/movie-{index}.jpg" && board.indexPath == "/jobs/out/board/movie.json")
        #expect(m.makesPictures && !m.isInspectionOnly)
    }

    @Test func aPosterAtATimeWithItsTolerances() throws {
        let m = try validate("""
        { "version": 1, "input": "movie.mp4",
          "poster": { "at": 12.5, "toleranceBefore": 0, "toleranceAfter": "1/2", "format": "png", "output": "out/p.png" } }
        """).get()
        #expect(m.poster?.at == MediaTime(value: 25, timescale: 2))
        #expect(m.poster?.tolerance == JobManifest.PictureTolerance(before: .zero, after: MediaTime(value: 1, timescale: 2)))
    }

    /// Hostile and careless numbers: each refused, naming the field and the range; never a trap.
    @Test func numbersOutOfRangeAreRefusedNamingTheField() {
        let cases: [(String, String)] = [
            (#""images": { "count": 0, "output": "out/t-{index}.jpg" }"#, "$.images.count"),
            (#""images": { "count": 1e30, "output": "out/t-{index}.jpg" }"#, "$.images.count"),
            (#""images": { "count": 100001, "output": "out/t-{index}.jpg" }"#, "$.images.count"),
            (#""images": { "every": 0, "output": "out/t-{index}.jpg" }"#, "$.images.every"),
            (#""images": { "every": -1, "output": "out/t-{index}.jpg" }"#, "$.images.every"),
            (#""images": { "every": 0.001, "output": "out/t-{index}.jpg" }"#, "$.images.every"),
            (#""images": { "times": [1e30], "output": "out/t.jpg" }"#, "$.images.times[0]"),
            (#""images": { "times": [-2], "output": "out/t.jpg" }"#, "$.images.times[0]"),
            (#""images": { "times": ["nan"], "output": "out/t.jpg" }"#, "$.images.times[0]"),
            (#""images": { "times": [1], "maxWidth": -1, "output": "out/t.jpg" }"#, "$.images.maxWidth"),
            (#""images": { "times": [1], "maxHeight": 99999999999999999999, "output": "out/t.jpg" }"#, "$.images.maxHeight"),
            (#""images": { "times": [1], "quality": 1.5, "output": "out/t.jpg" }"#, "$.images.quality"),
            (#""images": { "times": [1], "quality": -0.1, "output": "out/t.jpg" }"#, "$.images.quality"),
            (#""images": { "times": [1], "tolerance": "inf", "output": "out/t.jpg" }"#, "$.images.tolerance"),
            (#""poster": { "at": 1e30, "output": "out/p.jpg" }"#, "$.poster.at"),
            (#""poster": { "at": "middle", "output": "out/p.jpg" }"#, "$.poster.at"),
            (#""storyboard": { "tiles": 0, "output": "out/b.vtt" }"#, "$.storyboard.tiles"),
            (#""storyboard": { "every": 0.01, "output": "out/b.vtt" }"#, "$.storyboard.every"),
            (#""storyboard": { "tileWidth": 8, "output": "out/b.vtt" }"#, "$.storyboard.tileWidth"),
            (#""storyboard": { "columns": 101, "output": "out/b.vtt" }"#, "$.storyboard.columns"),
            (#""storyboard": { "rows": 0, "output": "out/b.vtt" }"#, "$.storyboard.rows"),
            (#""storyboard": { "quality": 2, "output": "out/b.vtt" }"#, "$.storyboard.quality"),
        ]
        for (section, path) in cases {
            let found = messages(#"{ "version": 1, "input": "movie.mp4", "# + section + " }")
            #expect(found.contains { $0.hasPrefix(path + ":") }, "\(section): \(found)")
        }
    }

    @Test func shapesThatCannotWorkAreRefusedWithTheWayOut() {
        func refused(_ body: String, _ path: String, _ words: String) {
            let found = messages(#"{ "version": 1, "# + body + " }")
            #expect(found.contains { $0.hasPrefix(path + ":") && $0.contains(words) }, "\(body): \(found)")
        }
        refused(#""input": "m.mp4", "images": { "every": 5, "output": "out/t.jpg" }"#, "$.images.output", "{index}")
        refused(#""input": "m.mp4", "images": { "count": 3, "output": "out/{index}/t.jpg" }"#, "$.images.output", "{index}")
        refused(#""input": "m.mp4", "images": { "times": [1], "every": 2, "output": "out/t.jpg" }"#, "$.images", "one way")
        refused(#""input": "m.mp4", "images": { "output": "out/t.jpg" }"#, "$.images", "needs")
        refused(#""input": "m.mp4", "images": { "times": [1], "tolerance": 0, "toleranceAfter": 1, "output": "out/t.jpg" }"#, "$.images.tolerance", "not both")
        refused(#""input": "m.mp4", "images": { "times": [1], "format": "gif", "output": "out/t.jpg" }"#, "$.images.format", "jpeg, png, webp")
        refused(#""input": "m.mp4", "poster": { "format": "jpeg", "output": "out/p.png" }"#, "$.poster.format", "out/p.png\" names a PNG")
        refused(#""input": "m.mp4", "images": { "times": [1], "format": "png", "output": "out/t.webp" }"#, "$.images.format", "names a WEBP")
        refused(#""input": "m.mp4", "poster": { "output": "out/p.gif" }"#, "$.poster.output", "must end in .jpg, .jpeg, .png or .webp")
        refused(#""input": "m.mp4", "scan": { "symbologies": ["qr"], "images": { "format": "webp", "output": "out/c-{index}.jpg" } }"#,
                "$.scan.images.format", "names a JPEG")
        refused(#""input": "m.mp4", "images": { "times": [1], "output": "../elsewhere/t.jpg" }"#, "$.images.output", "outside the output roots")
        refused(#""input": "m.mp4", "poster": { "tolerance": 0, "output": "out/p.jpg" }"#, "$.poster.tolerance", "auto")
        refused(#""input": "m.mp4", "poster": { "output": "m.mp4" }"#, "$.poster.output", "outside the output roots")
        refused(#""input": "m.mp4", "storyboard": { "output": "out/b.jpg" }"#, "$.storyboard.output", ".vtt")
        refused(#""input": "m.mp4", "storyboard": { "every": 2, "tiles": 9, "output": "out/b.vtt" }"#, "$.storyboard", "not both")
        refused(#""edits": [{ "source": "m.mp4" }], "poster": { "output": "out/p.jpg" }"#, "$.poster", "job:KEY#output")
        refused(#""input": "m.mp4", "scale": [{ "start": 0, "duration": 1, "rate": 2 }], "export": { "mode": "passthrough", "output": "out/x.mp4" }, "storyboard": { "output": "out/b.vtt" }"#,
                "$.storyboard", "not retimed")
        // Two outputs that would be one file.
        refused(#""input": "m.mp4", "images": { "count": 3, "output": "out/b-{index}.jpg" }, "storyboard": { "output": "out/b.vtt" }"#,
                "$.storyboard.output", "same as $.images.output")
        refused(#""input": "m.mp4", "poster": { "output": "out/b-2.jpg" }, "storyboard": { "output": "out/b.vtt" }"#,
                "$.storyboard.output", "out/b-2.jpg ($.poster.output) is one of its files")
        refused(#""input": "m.mp4", "poster": { "output": "out/b.json" }, "storyboard": { "output": "out/b.vtt" }"#,
                "$.storyboard.output", "same file")
    }

    @Test func numberedNamesMatchOnlyWholeIndexes() {
        #expect(NumberedOutputs.matches("a/t-12.jpg", pattern: "a/t-{index}.jpg"))
        #expect(!NumberedOutputs.matches("a/t-012.jpg", pattern: "a/t-{index}.jpg"))
        #expect(!NumberedOutputs.matches("a/t-.jpg", pattern: "a/t-{index}.jpg"))
        #expect(!NumberedOutputs.matches("a/t-1x.jpg", pattern: "a/t-{index}.jpg"))
        #expect(!NumberedOutputs.matches("a/t-١.jpg", pattern: "a/t-{index}.jpg"))
        #expect(NumberedOutputs.path("a/t-{index}.jpg", index: 7) == "a/t-7.jpg")
    }
}
