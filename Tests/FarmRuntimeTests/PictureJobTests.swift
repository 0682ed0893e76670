import FarmTestSupport
import Foundation
import NIOCore
import S3Client
import Testing

/// Picture jobs (`"poster"`, `"images"`, `"storyboard"`) through a coordinator, as users submit them: every
/// file is staged by the worker and published under the lease, named from the manifest's patterns and
/// the counts the worker reported; a picture that cannot be made, or a file in the way, publishes nothing.
@Suite(.serialized) struct PictureJobTests {
    /// The poster fixture in a farm's folder, with a manifest of all three sections.
    static func farm(_ label: String, pictures: String) throws -> (Farm, String) {
        let farm = try Farm(label)
        try FileManager.default.copyItem(atPath: MediaFixture.posterMP4.path, toPath: farm.folder.appendingPathComponent("poster.mp4").path)
        let manifest = try farm.manifest("pictures", #"{ "version": 1, "name": "pictures", "input": "poster.mp4", "# + pictures + " }")
        return (farm, manifest)
    }

    static let all = """
        "poster": { "output": "out/poster.jpg", "maxWidth": 160 },
        "images": { "every": 5, "output": "out/thumbs/t-{index}.jpg", "maxWidth": 96 },
        "storyboard": { "every": 2, "columns": 4, "rows": 2, "tileWidth": 64, "output": "out/board/movie.vtt" },
        "report": "out/pictures.json"
        """

    func files(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    @Test func aPictureJobThroughACoordinatorPublishesEveryFile() async throws {
        let (farm, manifest) = try Self.farm("pictures", pictures: Self.all)
        let id = try await farm.queued([manifest])[0]
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log.suffix(2000))")
        let job = try await farm.jobs()[id] ?? [:]
        #expect(job["state"] as? String == "succeeded", "\(job)")

        #expect(files(farm.out) == ["board", "pictures.json", "poster.jpg", "thumbs"])
        #expect(files(farm.out.appendingPathComponent("thumbs")) == (1...6).map { "t-\($0).jpg" }.sorted())
        #expect(files(farm.out.appendingPathComponent("board")) == ["movie-1.jpg", "movie-2.jpg", "movie.json", "movie.vtt"])
        // The counts the worker reported, from which the coordinator named what it published.
        let result = job["result"] as? [String: Any] ?? [:]
        #expect(result["numbered"] as? [String: Int] == ["images": 6, "sheets": 2], "\(result)")
        #expect(result["output"] as? String == farm.out.appendingPathComponent("poster.jpg").path)

        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("pictures.json"))) as? [String: Any])
        let pictures = report["pictures"] as? [String: Any] ?? [:]
        // "auto" passes over the black, the fade and the blank card of the middle third, to the picture at 19 s.
        let poster = pictures["poster"] as? [String: Any] ?? [:]
        let picture = poster["picture"] as? [String: Any] ?? [:]
        let posterTime = try #require(picture["actualTime"] as? Double, "\(poster)")
        #expect(posterTime >= 19 && posterTime < 20, "\(poster)")
        #expect(picture["width"] as? Int == 160 && picture["height"] as? Int == 90)
        let refused = (poster["candidates"] as? [[String: Any]] ?? []).compactMap { $0["refused"] as? String }
        #expect(refused.contains("black") && refused.contains("blank"), "\(poster)")
        let images = pictures["images"] as? [[String: Any]] ?? []
        #expect(images.compactMap { $0["requestedTime"] as? Double } == [0, 5, 10, 15, 20, 25])
        #expect(images.allSatisfy { ($0["width"] as? Int) == 96 })
        let board = pictures["storyboard"] as? [String: Any] ?? [:]
        #expect(board["tiles"] as? Int == 15 && board["tileWidth"] as? Int == 64, "\(board)")
        let vtt = try String(contentsOf: farm.out.appendingPathComponent("board/movie.vtt"), encoding: .utf8)
        #expect(vtt.hasPrefix("WEBVTT") && vtt.components(separatedBy: "-->").count == 16, "\(vtt)")
        #expect(vtt.contains("movie-2.jpg#xywh="), "\(vtt)")
        let poster0 = try Data(contentsOf: farm.out.appendingPathComponent("poster.jpg"))
        #expect(poster0.prefix(3) == Data([0xFF, 0xD8, 0xFF]))
        #expect(!coordinator.log.contains("mediafarm-staged"), "\(coordinator.log)")
    }

    @Test func aPictureThatCannotBeMadeFailsTheJobAndPublishesNothing() async throws {
        let (farm, manifest) = try Self.farm("pictures-past-end", pictures: """
            "poster": { "output": "out/poster.jpg" },
            "images": { "times": [1, 40, 2], "output": "out/thumbs/t-{index}.jpg" }, "report": "out/r.json"
            """)
        let id = try await farm.queued([manifest])[0]
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        // A job failed: the coordinator says so in its status.
        #expect(coordinator.status == 1, "\(coordinator.log.suffix(2000))")
        let job = try await farm.jobs()[id] ?? [:]
        #expect(job["state"] as? String == "failed", "\(job)")
        #expect(job.errors.last?.contains("$.images: the picture at 40 s (2 of 3)") == true, "\(job.errors)")
        #expect(job.errors.last?.contains("past the end") == true, "\(job.errors)")
        // Nothing: not the poster made before, not the first picture, and no staged file.
        #expect(files(farm.out).allSatisfy { $0 == "thumbs" }, "\(files(farm.out))")
        #expect(files(farm.out.appendingPathComponent("thumbs")).isEmpty, "\(files(farm.out.appendingPathComponent("thumbs")))")
    }

    /// One picture in the way (whose name the submission could not know: its count comes from the movie's
    /// length) refuses the outputs as a whole: none of the others is published.
    @Test func aFileInTheWayRefusesEveryPicture() async throws {
        let (farm, manifest) = try Self.farm("pictures-in-the-way", pictures: """
            "images": { "every": 10, "output": "out/thumbs/t-{index}.jpg" }
            """)
        let thumbs = farm.out.appendingPathComponent("thumbs")
        try FileManager.default.createDirectory(at: thumbs, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: thumbs.appendingPathComponent("t-2.jpg"))
        let id = try await farm.queued([manifest])[0]
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        // A job failed: the coordinator says so in its status.
        #expect(coordinator.status == 1, "\(coordinator.log.suffix(2000))")
        let job = try await farm.jobs()[id] ?? [:]
        #expect(job["state"] as? String == "failed", "\(job)")
        #expect(job.errors.last?.contains("t-2.jpg: already exists; set \"overwrite\": true") == true, "\(job.errors)")
        #expect(files(thumbs) == ["t-2.jpg"], "\(files(thumbs))")
        #expect(try String(contentsOf: thumbs.appendingPathComponent("t-2.jpg"), encoding: .utf8) == "mine")
    }

    /// To object storage (moto): every picture is an object, published when the coordinator completes its
    /// upload under the lease; no upload is left open and nothing in the spool.
    @Test func picturesBoundForObjectsArePublishedAsObjects() async throws {
        let server = try TestS3.shared()
        let s3 = ObjectPublicationTests.client(server)
        defer { Task { await s3.shutdown() } }
        let bucket = TestS3.bucketName("pictures")
        try await s3.createBucket(bucket)
        let (farm, manifest) = try Self.farm("pictures-s3", pictures: """
            "poster": { "at": 5, "output": "s3://\(bucket)/out/poster.webp", "format": "webp" },
            "images": { "count": 3, "output": "s3://\(bucket)/out/t-{index}.png", "format": "png", "maxWidth": 64 },
            "storyboard": { "tiles": 12, "columns": 5, "rows": 2, "output": "s3://\(bucket)/out/movie.vtt" }
            """)
        let id = try farm.submit(["--output-root", "s3://\(bucket)/out", manifest])[0]
        let coordinator = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"],
                                                    environment: ObjectPublicationTests.environment(server, farm))
        #expect(coordinator.wait(timeout: 120) == 0, "\(coordinator.log.suffix(2000))")
        let job = try farm.status()[id] ?? [:]
        #expect(job["state"] as? String == "succeeded", "\(job)")
        let keys = try await s3.list(S3Location(bucket: bucket, key: "")).map(\.location.key).sorted()
        #expect(keys == ["out/movie-1.jpg", "out/movie-2.jpg", "out/movie.json", "out/movie.vtt", "out/poster.webp",
                         "out/t-1.png", "out/t-2.png", "out/t-3.png"], "\(keys)")
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)
        let png = try await s3.get(S3Location(bucket: bucket, key: "out/t-2.png")).bytes
        #expect(Array(png.readableBytesView.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
        let webp = try await s3.get(S3Location(bucket: bucket, key: "out/poster.webp")).bytes
        #expect(Array(webp.readableBytesView.dropFirst(8).prefix(4)) == Array("WEBP".utf8))
        #expect(files(farm.folder.appendingPathComponent("spool")).isEmpty, "\(files(farm.folder.appendingPathComponent("spool")))")
    }

    /// Results reused by content: the same pictures of the same movie asked again (to other paths) are copied
    /// from the first job's, each checked against the SHA-256 it was published with; a picture changed since
    /// makes that result forgotten, and an older intact one answers.
    @Test func picturesAskedAgainAreAnsweredFromTheEarlierJob() async throws {
        let (farm, _) = try Self.farm("pictures-reuse", pictures: #""poster": { "output": "out/x.jpg" }"#)
        func manifest(_ name: String) throws -> String {
            try farm.manifest(name, """
                { "version": 1, "name": "\(name)", "input": "poster.mp4", "poster": { "output": "out/\(name)/poster.jpg" },
                  "images": { "every": 10, "output": "out/\(name)/t-{index}.png", "format": "png", "maxWidth": 64 },
                  "storyboard": { "tiles": 6, "columns": 3, "rows": 1, "output": "out/\(name)/board/movie.vtt" } }
                """)
        }
        func run(_ name: String) async throws -> [String: Any] {
            let id = try await farm.queued([try manifest(name)])[0]
            let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
            #expect(coordinator.status == 0, "\(coordinator.log.suffix(2000))")
            var job = try await farm.jobs()[id] ?? [:]
            job["log"] = coordinator.log
            return job
        }
        let names = ["poster.jpg", "t-1.png", "t-2.png", "t-3.png", "board/movie-1.jpg", "board/movie-2.jpg", "board/movie.vtt", "board/movie.json"]
        func bytes(_ name: String) throws -> [Data] {
            try names.map { try Data(contentsOf: farm.out.appendingPathComponent("\(name)/\($0)")) }
        }
        let a = try await run("a")
        #expect(a["state"] as? String == "succeeded", "\(a)")
        let b = try await run("b")
        #expect(b["state"] as? String == "succeeded", "\(b)")
        let reused = (b["result"] as? [String: Any])?["reused"] as? [String: Any]
        #expect((reused?["job"] as? NSNumber)?.int64Value == (a["id"] as? NSNumber)?.int64Value, "\(b)")
        #expect((b["result"] as? [String: Any])?["numbered"] as? [String: Int] == ["images": 3, "sheets": 2], "\(b)")
        #expect(try bytes("b") == bytes("a"))
        #expect(files(farm.out.appendingPathComponent("b")) == ["board", "poster.jpg", "t-1.png", "t-2.png", "t-3.png"])

        // b's second picture changed in place (same size): b's result is forgotten, a's answers.
        let changed = farm.out.appendingPathComponent("b/t-2.png")
        var data = try Data(contentsOf: changed)
        data[data.count - 20] ^= 0xFF
        try data.write(to: changed)
        let c = try await run("c")
        #expect(c["state"] as? String == "succeeded", "\(c)")
        let from = ((c["result"] as? [String: Any])?["reused"] as? [String: Any])?["job"] as? NSNumber
        #expect(from?.int64Value == (a["id"] as? NSNumber)?.int64Value, "\(c)")
        #expect((c["log"] as? String ?? "").contains("t-2.png changed since it was published"), "\(c["log"] ?? "")")
        #expect(try bytes("c") == bytes("a"))
    }

    /// `export.poster`: a picture of the exported movie, at the export's time; a chunked export's is made once,
    /// by its joining run (its chunk jobs carry no poster), and published with the movie.
    @Test func anExportsPosterIsOfItsOutputAndAChunkedOnesIsMadeAtTheJoin() async throws {
        let farm = try Farm("export-poster")
        let source = try ChunkedExportTests.source(in: farm, seconds: 12, size: "320x240")
        let manifest = try farm.manifest("film", """
            { "version": 1, "name": "film", "edits": [{ "source": "\(source)", "start": 2, "duration": 8 }], "report": "out/film.json",
              "export": { "mode": "constantFrameRate", "frameRate": 30, "chunkSeconds": 4, "output": "out/film.mp4", "video": { "preset": "ultrafast" },
                          "poster": { "at": 1, "tolerance": 0, "format": "png", "output": "out/film-poster.png" } } }
            """)
        let id = try await farm.queued([manifest])[0]
        let coordinator = try await farm.coordinate(["--workers", "2", "--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log.suffix(2000))")
        let jobs = try await farm.jobs()
        #expect(jobs[id]?["state"] as? String == "succeeded", "\(jobs[id] ?? [:])")
        #expect(jobs.values.filter { ($0["name"] as? String ?? "").hasPrefix("film [chunk ") }.count == 2)
        #expect(files(farm.out) == ["film-poster.png", "film.json", "film.mp4"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("film.json"))) as? [String: Any])
        let poster = ((report["pictures"] as? [String: Any])?["exportPoster"] as? [String: Any])?["picture"] as? [String: Any] ?? [:]
        #expect(poster["actualTime"] as? Double == 1 && poster["width"] as? Int == 320, "\(report["pictures"] ?? "none")")
        // The same picture as the exported movie's frame at 1 s, made from the published movie.
        let again = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["images", "--exact", "--at", "1", "--format", "png", "-o",
                                                                          farm.folder.appendingPathComponent("check.png").path,
                                                                          farm.out.appendingPathComponent("film.mp4").path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: farm.out.appendingPathComponent("film-poster.png")) == Data(contentsOf: farm.folder.appendingPathComponent("check.png")))
    }

    /// `scan.images`: a picture of the frame where each code was first seen, in composition time mapped back to
    /// its source; each picture holds its code (zbarimg reads it back), through a scan of its own and through
    /// the scan a constant-frame-rate export does while decoding.
    @Test(arguments: ["scan", "export"])
    func eachCodeFoundHasThePictureOfItsFrame(pass: String) async throws {
        let farm = try Farm("scan-images-\(pass)")
        let qr = try CodeFixtures.draw(CodeFixtures.qrAndLinearCodes[0], in: farm.folder)
        let ean = try CodeFixtures.draw(CodeFixtures.qrAndLinearCodes[5], in: farm.folder)
        let clip = farm.folder.appendingPathComponent("slate.mp4").path
        try CodeFixtures.movie([.init(image: qr, x: 40, y: 40, start: 1, end: 2), .init(image: ean, x: 200, y: 200, start: 1.5, end: 3)],
                               seconds: 4, to: clip)
        let export = pass == "export" ? #", "export": { "mode": "constantFrameRate", "frameRate": 10, "output": "out/slate.mp4", "video": { "preset": "ultrafast" } }"# : ""
        let manifest = try farm.manifest("slate", """
            { "version": 1, "name": "slate", "edits": [{ "source": "slate.mp4", "start": 0.5 }], "report": "out/slate.json",
              "scan": { "symbologies": ["qr", "ean13"], "images": { "format": "png", "output": "out/codes/code-{index}.png" } }\(export) }
            """)
        let id = try await farm.queued([manifest])[0]
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log.suffix(2000))")
        let job = try await farm.jobs()[id] ?? [:]
        #expect(job["state"] as? String == "succeeded", "\(job)")
        #expect(((job["result"] as? [String: Any])?["numbered"] as? [String: Int])?["codes"] == 2, "\(job)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("slate.json"))) as? [String: Any])
        let scan = report["scan"] as? [String: Any] ?? [:]
        let codes = scan["codes"] as? [[String: Any]] ?? []
        let images = scan["images"] as? [[String: Any]] ?? []
        #expect(codes.compactMap { $0["payload"] as? String } == ["MediaFarm QR 1", "5901234123457"], "\(scan)")
        #expect(images.count == 2 && files(farm.out.appendingPathComponent("codes")) == ["code-1.png", "code-2.png"], "\(scan)")
        for (code, image) in zip(codes, images) {
            // The composition starts 0.5 s into the source: a code first seen at 0.5 s there is the source's frame at 1 s.
            let first = (code["firstTime"] as? [String: Any])?["seconds"] as? Double ?? -1
            #expect(abs((image["actualTime"] as? Double ?? -9) - (first + 0.5)) < 0.001, "\(code) \(image)")
            let read = try ProcessRunner.run("zbarimg", ["-q", "--raw", image["path"] as? String ?? ""])
            #expect(read.stdout.contains(code["payload"] as? String ?? "?"), "\(image): \(read.stdout) \(read.stderr)")
        }
    }

    /// `"waveform"` of a recording with no picture: 2 s of a tone at -18 dBFS, 2 s of silence, 2 s at -30 dBFS.
    /// The peaks (audiowaveform's JSON) follow the levels, the PNG is as wide and high as asked, and an input
    /// without sound fails naming the reason.
    @Test func aWaveformDrawsTheLevelsOfTheSound() async throws {
        let farm = try Farm("waveform")
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=2",
                                           "-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono:d=2", "-f", "lavfi", "-i", "sine=f=220:sample_rate=48000:d=2,volume=0.25",
                                           "-filter_complex", "[0][1][2]concat=n=3:v=0:a=1[a]", "-map", "[a]", "-c:a", "flac",
                                           farm.folder.appendingPathComponent("talk.flac").path])
        try FileManager.default.copyItem(atPath: MediaFixture.posterMP4.path, toPath: farm.folder.appendingPathComponent("silent.mp4").path)
        let sound = try farm.manifest("sound", """
            { "version": 1, "name": "sound", "input": "talk.flac", "report": "out/sound.json",
              "waveform": { "width": 600, "height": 100, "output": "out/talk.png", "peaks": "out/talk-peaks.json" } }
            """)
        let silent = try farm.manifest("silent", #"{ "version": 1, "name": "silent", "input": "silent.mp4", "waveform": { "output": "out/silent.svg" } }"#)
        let ids = try await farm.queued([sound, silent])
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        #expect(coordinator.status == 1, "\(coordinator.log.suffix(2000))")
        let jobs = try await farm.jobs()
        #expect(jobs[ids[0]]?["state"] as? String == "succeeded", "\(jobs[ids[0]] ?? [:])")
        #expect(jobs[ids[1]]?["state"] as? String == "failed" && jobs[ids[1]]?.errors.last?.contains("no audio track to draw") == true,
                "\(jobs[ids[1]] ?? [:])")
        let peaks = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("talk-peaks.json"))) as? [String: Any])
        #expect(peaks["version"] as? Int == 2 && peaks["bits"] as? Int == 16 && peaks["length"] as? Int == 600 && peaks["sample_rate"] as? Int == 48000)
        let data = peaks["data"] as? [Int] ?? []
        #expect(data.count == 1200)
        func loudest(_ columns: Range<Int>) -> Double { Double(columns.map { max(abs(data[2 * $0]), abs(data[2 * $0 + 1])) }.max() ?? 0) / 32767 }
        // lavfi's sine is at 1/8 of full scale; the last part a quarter of that.
        #expect(abs(loudest(10..<190) - 0.125) < 0.01, "\(loudest(10..<190))")
        #expect(loudest(210..<390) == 0)
        #expect(abs(loudest(410..<590) - 0.03125) < 0.005, "\(loudest(410..<590))")
        let size = try ProcessRunner.run("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                                                     farm.out.appendingPathComponent("talk.png").path])
        #expect(size.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "600,100", "\(size.stdout)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("sound.json"))) as? [String: Any])
        let record = (report["pictures"] as? [String: Any])?["waveform"] as? [String: Any] ?? [:]
        #expect(abs((record["peakDBFS"] as? Double ?? 0) + 18.06) < 0.1 && abs((record["duration"] as? Double ?? 0) - 6) < 0.01, "\(record)")
        #expect(!FileManager.default.fileExists(atPath: farm.out.appendingPathComponent("silent.svg").path))
    }

    /// A storyboard made in parts (`chunkSeconds`): under two coordinators sharing the queue (two hosts), its
    /// parts are jobs of their own, each a range of whole sheets, and the job joins them: every sheet, the
    /// WebVTT file and the index equal those of the storyboard made whole (`mediafarm run`), byte for byte;
    /// the parts' folder is gone.
    @Test func aStoryboardMadeInPartsEqualsTheWholeOne() throws {
        let (farm, _) = try Self.farm("storyboard-parts", pictures: #""poster": { "output": "out/x.jpg" }"#)
        func manifest(_ name: String, chunked: Bool) throws -> String {
            try farm.manifest(name, """
                { "version": 1, "name": "\(name)", "input": "poster.mp4", "reuse": false,
                  "storyboard": { "every": 1, "columns": 4, "rows": 2, "tileWidth": 96\(chunked ? ", \"chunkSeconds\": 8" : ""),
                                  "output": "out/\(name)/movie.vtt" } }
                """)
        }
        let whole = try farm.mediafarm(["run", try manifest("whole", chunked: true)])
        #expect(whole.status == 0, "\(whole.stderr)")
        let id = try farm.submit([try manifest("parts", chunked: true)])[0]
        let a = try farm.startCoordinator(["--workers", "1", "--host", "render-a", "--exit-when-idle"], log: "a.log")
        let b = try farm.startCoordinator(["--workers", "1", "--host", "render-b", "--exit-when-idle"], log: "b.log")
        #expect(a.wait(timeout: 180) == 0, "\(a.log.suffix(2000))")
        #expect(b.wait(timeout: 180) == 0, "\(b.log.suffix(2000))")
        let jobs = try farm.status()
        #expect(jobs[id]?["state"] as? String == "succeeded", "\(jobs[id] ?? [:])")
        let parts = jobs.values.filter { ($0["name"] as? String ?? "").hasPrefix("parts [part ") }
        #expect(parts.count == 4 && parts.allSatisfy { $0["state"] as? String == "succeeded" }, "\(parts)")
        let names = ["movie-1.jpg", "movie-2.jpg", "movie-3.jpg", "movie-4.jpg", "movie.json", "movie.vtt"]
        #expect(files(farm.out.appendingPathComponent("whole")) == names)
        #expect(files(farm.out.appendingPathComponent("parts")) == names)
        for name in names {
            #expect(try Data(contentsOf: farm.out.appendingPathComponent("parts/\(name)")) == Data(contentsOf: farm.out.appendingPathComponent("whole/\(name)")),
                    "\(name) differs")
        }
        #expect(!files(farm.out).contains { $0.contains(".chunks-") }, "\(files(farm.out))")
    }

    /// Garbage and a truncated movie as picture jobs' input: each job fails naming the file and the problem,
    /// and nothing is published.
    @Test func garbageAndATruncatedMovieFailClearlyAndPublishNothing() async throws {
        let (farm, _) = try Self.farm("pictures-bad-input", pictures: #""poster": { "output": "out/x.jpg" }"#)
        try Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: farm.folder.appendingPathComponent("garbage.mp4"))
        let whole = try Data(contentsOf: farm.folder.appendingPathComponent("poster.mp4"))
        try whole.prefix(whole.count / 3).write(to: farm.folder.appendingPathComponent("truncated.mp4"))
        var ids: [Int64] = []
        for name in ["garbage", "truncated"] {
            let manifest = try farm.manifest(name, """
                { "version": 1, "name": "\(name)", "input": "\(name).mp4", "poster": { "output": "out/\(name)/poster.jpg" },
                  "storyboard": { "every": 5, "output": "out/\(name)/board.vtt" }, "report": "out/\(name)/report.json" }
                """)
            ids += try await farm.queued([manifest])
        }
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        #expect(coordinator.status == 1, "\(coordinator.log.suffix(2000))")
        let jobs = try await farm.jobs()
        for (id, name) in zip(ids, ["garbage", "truncated"]) {
            let job = jobs[id] ?? [:]
            #expect(job["state"] as? String == "failed", "\(job)")
            let error = job.errors.last ?? ""
            #expect(error.contains("\(name).mp4"), "\(name): \(error)")
            #expect(files(farm.out.appendingPathComponent(name)).isEmpty, "\(name): \(files(farm.out.appendingPathComponent(name)))")
        }
    }
}
