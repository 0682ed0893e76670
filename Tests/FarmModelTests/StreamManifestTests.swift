import MediaTime
import Testing
@testable import FarmModel

/// `"stream"`: a streaming package's section, read with its defaults, and every number and name a user
/// types checked with its range.
@Suite struct StreamManifestTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    func validate(_ json: String) -> Result<JobManifest, ManifestValidationError> {
        ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context)
    }

    /// The issues of a manifest whose stream section is `stream`, as "path: message".
    func messages(_ stream: String, more: String = "") -> [String] {
        switch validate(#"{"version": 1, "input": "m.mp4"\#(more), "stream": \#(stream)}"#) {
        case .success: Issue.record("expected the manifest to be rejected: \(stream)"); return []
        case .failure(let e): return e.issues.map(\.description)
        }
    }

    @Test func aLadderReadsWithItsDefaults() throws {
        let m = try validate(#"{"version": 1, "input": "m.mp4", "stream": {"output": "out/pkg/", "video": {"rungs": [{"height": 720, "bitrate": 3000000}]}}}"#).get()
        let stream = try #require(m.stream)
        #expect(stream.output == "/jobs/out/pkg")
        #expect(stream.formats == [.hls, .dash] && stream.segmentDuration == MediaTime(value: 6, timescale: 1) && stream.frameDuration == nil)
        #expect(stream.video.rungs == [JobManifest.StreamRung(height: 720, bitrate: 3_000_000)])
        #expect(stream.video.larger == .refuse && stream.video.preset == "veryfast" && stream.audio == JobManifest.StreamAudio())
        #expect(m.writes == ["/jobs/out/pkg/"] && !m.isInspectionOnly)
    }

    /// A passthrough package copies: what would say how to encode is refused, naming its field and the way past.
    @Test func aPassthroughPackageRefusesWhatWouldEncode() throws {
        let read = try validate(#"{"version": 1, "input": "m.mp4", "stream": {"output": "out/p", "mode": "passthrough", "segmentSeconds": 4}}"#).get()
        #expect(read.stream?.mode == .passthrough && read.stream?.video.rungs.isEmpty == true)
        #expect(try ManifestValidator.validate(read.document, context: context).get() == read, "\(read.document.text)")
        #expect(read.document["stream"]?["video"] == nil && read.document["stream"]?["mode"] == .string("passthrough"))
        let refused = messages(#"{"output": "out/p", "mode": "passthrough", "video": {"rungs": [{"height": 360, "bitrate": 800000}]}, "frameRate": 30, "chunkSeconds": 60, "audio": {"bitrate": 96000}}"#)
        for key in ["video", "frameRate", "chunkSeconds", "audio.bitrate"] {
            #expect(refused.contains { $0.hasPrefix("$.stream.\(key): a passthrough package copies") && $0.contains("\"mode\"") }, "\(key): \(refused)")
        }
        let edited = ManifestValidator.validate(json: Array(#"{"version": 1, "edits": [{"source": "m.mp4", "duration": 2}], "stream": {"output": "out/p", "mode": "passthrough"}}"#.utf8),
                                                file: "m.json", context: context)
        guard case .failure(let e) = edited else { Issue.record("edits were accepted"); return }
        #expect(e.issues.map(\.description).contains { $0.hasPrefix("$.stream.mode: a passthrough package copies one whole \"input\"") }, "\(e)")
        #expect(messages(#"{"output": "out/p", "mode": "copy"}"#).contains { $0.hasPrefix("$.stream.mode") })
        #expect(messages(#"{"output": "out/p"}"#).contains { $0.hasPrefix("$.stream.video: is required") && $0.contains("passthrough") })
    }

    /// MPEG-TS is HLS only by default, and encrypted with a key file read on the worker's host, resolved
    /// against the manifest's folder.
    @Test func aTransportStreamPackageIsHLSAndMayBeEncrypted() throws {
        let m = try validate(#"{"version": 1, "input": "m.mp4", "stream": {"output": "out/p", "container": "ts", "encryption": {"keyFile": "keys/p.key", "keyURI": "https://k.example/p"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}}"#).get()
        let stream = try #require(m.stream)
        #expect(stream.container == .ts && stream.formats == [.hls])
        #expect(stream.encryption == JobManifest.StreamEncryption(keyFile: "/jobs/keys/p.key", keyURI: "https://k.example/p"))
        #expect(m.document["stream"]?["formats"] == nil && m.document["stream"]?["container"] == .string("ts"), "\(m.document.text)")
        // The key file is read like a source: no output replaces it, and the package's folder does not hold it.
        let keyed = #""container": "ts", "encryption": {"keyFile": "out/keys/p.key", "keyURI": "k"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}"#
        #expect(messages(#"{"output": "out/p", \#(keyed)}"#, more: #", "overwrite": true, "report": "out/keys/p.key""#)
            .contains { $0.hasPrefix("$.report: would overwrite the input $.stream.encryption.keyFile") }, "\(messages(#"{"output": "out/p", \#(keyed)}"#, more: #", "report": "out/keys/p.key""#))")
        #expect(messages(#"{"output": "out/keys", \#(keyed)}"#).contains { $0.hasPrefix("$.stream.output: holds the input $.stream.encryption.keyFile") })
    }

    /// A single-file package is made whole: a coordinator's `--chunk-seconds` leaves it so.
    @Test func aSingleFilePackageIsNotChunkedByTheCoordinator() throws {
        let single = try validate(#"{"version": 1, "input": "m.mp4", "stream": {"output": "out/p", "singleFile": true, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}}"#).get()
        #expect(single.stream?.singleFile == true && single.chunked(every: MediaTime(value: 60, timescale: 1), above: nil) == nil)
        let files = try validate(#"{"version": 1, "input": "m.mp4", "stream": {"output": "out/p", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}}"#).get()
        #expect(files.chunked(every: MediaTime(value: 60, timescale: 1), above: nil)?.stream?.chunking.duration == MediaTime(value: 60, timescale: 1))
    }

    @Test func levelsAreReadAsH264NamesThem() {
        #expect(RungCodecNames.level("4.0") == 40 && RungCodecNames.level("4") == 40 && RungCodecNames.level("3.1") == 31 && RungCodecNames.level("6.2") == 62)
        for bad in ["4.3", "1e3", "", "nan", "4.", "-4", "4.00", "7"] { #expect(RungCodecNames.level(bad) == nil, "\(bad)") }
    }

    /// Each codec's levels as it names them: HEVC has no 1.1 or 4.2, AV1 begins at 2.0 and has 5.3.
    @Test func levelsAreReadAsEachCodecNamesThem() {
        #expect(RungCodecNames.level("4.1", codec: "hevc") == 41 && RungCodecNames.level("1", codec: "hevc") == 10 && RungCodecNames.level("6.2", codec: "hevc") == 62)
        for bad in ["1.1", "4.2", "6.3", "7"] { #expect(RungCodecNames.level(bad, codec: "hevc") == nil, "\(bad)") }
        #expect(RungCodecNames.level("2.0", codec: "av1") == 20 && RungCodecNames.level("5.3", codec: "av1") == 53 && RungCodecNames.level("6.3", codec: "av1") == 63)
        for bad in ["1.0", "4.2", "7.0"] { #expect(RungCodecNames.level(bad, codec: "av1") == nil, "\(bad)") }
    }

    /// A rung's codec: read, written back only when not H.264, its profile and level checked against its own
    /// names; HEVC and AV1 over MPEG-TS refused at submission, naming the way past.
    @Test func aRungsCodecIsReadWithItsOwnProfilesAndLevels() throws {
        let m = try validate(#"{"version": 1, "input": "m.mp4", "stream": {"output": "out/p", "video": {"rungs": [{"height": 720, "bitrate": 3000000, "codec": "hevc", "level": "4.1"}, {"height": 360, "bitrate": 800000, "codec": "av1"}, {"height": 240, "bitrate": 400000}]}}}"#).get()
        let rungs = try #require(m.stream?.video.rungs)
        #expect(rungs.map(\.codec) == ["hevc", "av1", "h264"] && rungs.map(\.profile) == ["main", "main", "high"] && rungs[0].level == 41)
        #expect(try ManifestValidator.validate(m.document, context: context).get() == m, "\(m.document.text)")
        guard case .array(let written)? = m.document["stream"]?["video"]?["rungs"] else { Issue.record("no rungs written"); return }
        #expect(written[0]["codec"] == .string("hevc") && written[2]["codec"] == nil && written[0]["profile"] == nil, "\(m.document.text)")
        let cases: [(rung: String, path: String, says: String)] = [
            (#"{"height": 720, "bitrate": 3000000, "codec": "h265"}"#, "codec", "\"h265\" is not one of h264, hevc, av1"),
            (#"{"height": 720, "bitrate": 3000000, "codec": "hevc", "profile": "high"}"#, "profile", "\"high\" is not one of HEVC's: main"),
            (#"{"height": 720, "bitrate": 3000000, "codec": "hevc", "level": "4.2"}"#, "level", "\"4.2\" is not an HEVC level"),
            (#"{"height": 720, "bitrate": 3000000, "codec": "av1", "level": 1.0}"#, "level", "is not an AV1 level; one of 2.0, 2.1")]
        for c in cases {
            let said = messages(#"{"output": "out/p", "video": {"rungs": [\#(c.rung)]}}"#)
            #expect(said.contains { $0.hasPrefix("$.stream.video.rungs[0].\(c.path): ") && $0.contains(c.says) }, "\(c.rung): \(said)")
        }
        let overTS = messages(#"{"output": "out/p", "container": "ts", "video": {"rungs": [{"height": 720, "bitrate": 3000000, "codec": "av1"}]}}"#)
        #expect(overTS.contains { $0.hasPrefix("$.stream.video.rungs[0].codec: an AV1 rung is packaged in CMAF only") && $0.contains("leave out \"container\"") }, "\(overTS)")
    }

    /// Numbers out of range, nan, inf and 1e30, odd sizes, unknown names: each refused at its path with its range.
    @Test func everyNumberAndNameIsChecked() {
        let cases: [(stream: String, path: String, says: String)] = [
            (#"{"output": "out/p", "video": {"rungs": [{"height": 721, "bitrate": 3000000}]}}"#, "$.stream.video.rungs[0].height", "odd"),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 720, "bitrate": 1e30}]}}"#, "$.stream.video.rungs[0].bitrate", "whole number"),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 720, "bitrate": 99999999999}]}}"#, "$.stream.video.rungs[0].bitrate", "16000...500000000"),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 720, "bitrate": -5}]}}"#, "$.stream.video.rungs[0].bitrate", "16000...500000000"),
            (#"{"output": "out/p", "video": {"rungs": [{"width": 9000, "bitrate": 300000}]}}"#, "$.stream.video.rungs[0].width", "2...8192"),
            (#"{"output": "out/p", "video": {"rungs": [{"bitrate": 300000}]}}"#, "$.stream.video.rungs[0]", "needs a \"height\""),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 360}]}}"#, "$.stream.video.rungs[0].bitrate", "is required"),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 360, "bitrate": 900000, "maxBitrate": 800000}]}}"#, "$.stream.video.rungs[0].maxBitrate", "below"),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 360, "bitrate": 900000, "level": "4.3"}]}}"#, "$.stream.video.rungs[0].level", "not an H.264 level"),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 360, "bitrate": 900000, "profile": "hihg"}]}}"#, "$.stream.video.rungs[0].profile", "high"),
            (#"{"output": "out/p", "video": {"rungs": []}}"#, "$.stream.video.rungs", "1 to 12"),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 360, "bitrate": 900000}], "larger": "grow"}}"#, "$.stream.video.larger", "refuse, skip, upscale"),
            (#"{"output": "out/p", "video": {"rungs": [{"height": 360, "bitrate": 900000}], "threads": 65}}"#, "$.stream.video.threads", "0...64"),
            (#"{"output": "out/p", "segmentSeconds": "nan", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.segmentSeconds", "not a time"),
            (#"{"output": "out/p", "segmentSeconds": 61, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.segmentSeconds", "0.1...60"),
            (#"{"output": "out/p", "segmentSeconds": 0, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.segmentSeconds", "greater than zero"),
            (#"{"output": "out/p", "frameRate": "inf", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.frameRate", "not a positive rate"),
            (#"{"output": "out/p", "frameRate": 240, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.frameRate", "1 and 120"),
            (#"{"output": "out/p", "formats": [], "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.formats", "empty"),
            (#"{"output": "out/p", "formats": ["smooth"], "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.formats[0]", "hls, dash"),
            (#"{"output": "out/p", "audio": {"language": "en\n"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.language", "language tag"),
            (#"{"output": "out/p", "audio": {"language": "English\n"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.language", "language tag"),
            (#"{"output": "out/p", "audio": {"bitrate": 1e400}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.bitrate", "whole number"),
            (#"{"output": "out/p", "audio": {"channels": 9}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.channels", "0...8"),
            (#"{"output": "out/p", "audio": {"channels": -1}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.channels", "0...8"),
            (#"{"output": "out/p", "audio": {"channels": 3}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.channels", "AAC's channel configurations"),
            (#"{"output": "out/p"}"#, "$.stream.video", "is required"),
            (#"{"output": "out/p", "audio": {"languages": ["en", "en"]}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.languages", "twice"),
            (#"{"output": "out/p", "audio": {"languages": []}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.languages", "1 to 16"),
            (#"{"output": "out/p", "audio": {"languages": ["en", "x"]}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.languages[1]", "language tag"),
            (#"{"output": "out/p", "audio": {"language": "en", "languages": ["en"]}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.audio.language", "labels the one default audio track"),
            (#"{"output": "out/p", "container": "mp2t", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.container", "cmaf, ts"),
            (#"{"output": "out/p", "container": "ts", "formats": ["hls", "dash"], "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.formats", "HLS only"),
            (#"{"output": "out/p", "encryption": {"keyFile": "k", "keyURI": "k"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.encryption", "\"container\": \"ts\""),
            (#"{"output": "out/p", "container": "ts", "encryption": {"method": "sample-aes", "keyFile": "k", "keyURI": "k"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.encryption.method", "no SAMPLE-AES or CENC"),
            (#"{"output": "out/p", "container": "ts", "encryption": {"keyURI": "k"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.encryption.keyFile", "is required"),
            (#"{"output": "out/p", "container": "ts", "encryption": {"keyFile": "s3://b/k", "keyURI": "k"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.encryption.keyFile", "a path on the worker's host"),
            (#"{"output": "out/p", "container": "ts", "encryption": {"keyFile": "k", "keyURI": "k\"\n#EXT-X-ENDLIST"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.encryption.keyURI", "no quote or control character"),
            (#"{"output": "out/p", "container": "ts", "encryption": {"keyFile": "k", "keyURI": "k", "iv": "0x1"}, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.encryption.iv", "unknown key"),
            (#"{"output": "out/p", "singleFile": true, "chunkSeconds": 60, "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.chunkSeconds", "made whole"),
            (#"{"output": "out/p", "singleFile": "yes", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.singleFile", "true or false"),
            (#"{"output": "s3://media/pkg", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.output", "outside the output roots"),
            (#"{"output": "s3://MEDIA/pkg", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.output", "not a bucket name"),
            (#"{"output": "/elsewhere/pkg", "video": {"rungs": [{"height": 360, "bitrate": 900000}]}}"#, "$.stream.output", "outside the output roots"),
        ]
        for c in cases {
            let said = messages(c.stream)
            #expect(said.contains { $0.hasPrefix(c.path + ": ") && $0.contains(c.says) }, "\(c.stream): \(said)")
        }
    }

    /// A package bound for an object prefix: read without its trailing "/", made in chunks when asked (its
    /// chunks under a longer prefix beside it, which must fit S3's keys too).
    @Test func aPackageMayGoToAnObjectPrefixAndBeMadeInChunks() throws {
        let objects = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out", "s3://media/packages"])
        let ladder = #""video": {"rungs": [{"height": 360, "bitrate": 900000}]}"#
        let read = { (stream: String) in ManifestValidator.validate(json: Array(#"{"version": 1, "input": "m.mp4", "stream": \#(stream)}"#.utf8), context: objects) }
        #expect(try read(#"{"output": "s3://media/packages/show/", \#(ladder)}"#).get().stream?.output == "s3://media/packages/show")
        #expect(try read(#"{"output": "s3://media/packages/show", "chunkSeconds": 60, \#(ladder)}"#).get().stream?.chunking.duration?.seconds == 60)
        let whole = try read(#"{"output": "s3://media/packages/show", \#(ladder)}"#).get()
        #expect(whole.chunked(every: MediaTime(value: 60, timescale: 1), above: nil)?.stream?.chunking.duration?.seconds == 60)
        // A chunk's prefix is 32 bytes longer: a chunked package's holds 928 bytes at most.
        let chunkable = "packages/" + String(repeating: "c", count: 928 - 9)
        #expect(try read(#"{"output": "s3://media/\#(chunkable)", "chunkSeconds": 60, \#(ladder)}"#).get().stream?.output == "s3://media/" + chunkable)
        guard case .failure(let e) = read(#"{"output": "s3://media/\#(chunkable)c", "chunkSeconds": 60, \#(ladder)}"#) else {
            Issue.record("a chunked package whose chunks' keys would not fit was accepted")
            return
        }
        #expect(e.issues.map(\.description).first?.hasPrefix("$.stream.chunkSeconds: the prefix is 929 bytes long: a package made in chunks names") == true,
                "\(e.issues)")
        #expect(try read(#"{"output": "s3://media/\#(chunkable)c", \#(ladder)}"#).get().chunked(every: MediaTime(value: 60, timescale: 1), above: nil) == nil,
                "the coordinator's chunking leaves a package whole whose chunks' keys would not fit")
        // Its objects' names must fit S3's 1,024-byte keys: the prefix holds 960 bytes at most.
        let longest = "packages/" + String(repeating: "x", count: 960 - 9)
        #expect(try read(#"{"output": "s3://media/\#(longest)", \#(ladder)}"#).get().stream?.output == "s3://media/" + longest)
        guard case .failure(let long) = read(#"{"output": "s3://media/\#(longest)y", \#(ladder)}"#) else {
            Issue.record("a prefix too long for the package's keys was accepted")
            return
        }
        #expect(long.issues.map(\.description).contains { $0.hasPrefix("$.stream.output: the prefix is 961 bytes long") && $0.contains("at most 960") },
                "\(long.issues)")
    }

    /// What a package cannot share a job with, or hold.
    @Test func aPackageIsTheJobsOnlyMovieAndHoldsNoInputOrReport() {
        let ladder = #"{"height": 360, "bitrate": 900000}"#
        #expect(messages(#"{"output": "out/p", "video": {"rungs": [\#(ladder)]}}"#, more: #", "export": {"mode": "constantFrameRate", "output": "out/m.mp4"}"#)
            .contains { $0.hasPrefix("$.stream: ") && $0.contains("not both") })
        #expect(messages(#"{"output": "out/p", "video": {"rungs": [\#(ladder)]}}"#, more: #", "report": "out/p/report.json""#)
            .contains { $0.hasPrefix("$.report: ") && $0.contains("replaced whole") })
        // Nothing else the job writes goes inside the package's folder, which is replaced whole; nor is it a root.
        #expect(messages(#"{"output": "out/p", "video": {"rungs": [\#(ladder)]}}"#, more: #", "poster": {"output": "out/p/poster.jpg"}"#)
            .contains { $0.hasPrefix("$.poster.output: ") && $0.contains("inside the package's folder") })
        #expect(messages(#"{"output": "out/p", "video": {"rungs": [\#(ladder)]}}"#, more: #", "images": {"count": 3, "output": "out/p/t-{index}.jpg"}"#)
            .contains { $0.hasPrefix("$.images.output: ") && $0.contains("inside the package's folder") })
        #expect(messages(#"{"output": "out", "video": {"rungs": [\#(ladder)]}}"#).contains { $0.hasPrefix("$.stream.output: ") && $0.contains("output root") })
        #expect((try? validate(#"{"version": 1, "input": "m.mp4", "reuse": true, "stream": {"output": "out/p", "video": {"rungs": [\#(ladder)]}}}"#).get())?.reuse == true,
                "a package may be reused")
        switch ManifestValidator.validate(json: Array(#"{"version": 1, "input": "out/p/m.mp4", "stream": {"output": "out/p", "video": {"rungs": [\#(ladder)]}}}"#.utf8),
                                          context: context) {
        case .success: Issue.record("an input inside the package's folder was accepted")
        case .failure(let e): #expect(e.issues.contains { $0.path == "$.stream.output" && $0.message.contains("holds the input") }, "\(e.issues)")
        }
        // A retimed package is fine: scale applies to the composition it is made of.
        let scaled = validate(#"{"version": 1, "input": "m.mp4", "scale": [{"start": 0, "duration": 1, "rate": 2}], "stream": {"output": "out/p", "video": {"rungs": [\#(ladder)]}}}"#)
        #expect((try? scaled.get())?.scale.count == 1)  // a failure is the expectation's
    }
}
