import FarmTestSupport
import Foundation
import NIOCore
import S3Client
import Testing

/// Objects in S3-compatible storage wherever a path goes, against a real server (moto, checking
/// signatures): what the commands read, what they cost in requests and bytes, and what a user is told
/// when the object, the bucket or the credentials are wrong.
@Suite struct ObjectStorageTests {
    /// Two 300-second movies whose index (261 KB) is longer than the first request's 64 KiB: one with the
    /// index at the end (as recorders write it), one with it at the start (`-movflags +faststart`).
    static let movies: Result<(end: URL, start: URL), any Error> = Result {
        let folder = try TestPaths.makeTemporaryFolder("s3-movies")
        let end = folder.appendingPathComponent("index-at-end.mp4"), start = folder.appendingPathComponent("index-at-start.mp4")
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-f", "lavfi",
                                           "-i", "sine=f=440:sample_rate=48000", "-t", "300", "-c:v", "libx264", "-preset", "ultrafast",
                                           "-g", "30", "-c:a", "aac", "-b:a", "32k", "-shortest", end.path])
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-y", "-i", end.path, "-c", "copy", "-movflags", "+faststart", start.path])
        return (end, start)
    }

    /// The top-level boxes of an MP4: type, offset, size.
    static func boxes(_ url: URL) throws -> [(type: String, offset: Int64, size: Int64)] {
        let data = try Data(contentsOf: url)
        var found: [(String, Int64, Int64)] = []
        var position = 0
        while position + 8 <= data.count {
            let size = data[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
            found.append((String(decoding: data[position + 4..<position + 8], as: UTF8.self), Int64(position), Int64(size)))
            position += size
        }
        return found
    }

    static func environment(_ server: TestS3.Endpoint, _ overrides: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") }
        environment.merge(server.environment) { $1 }
        environment.merge(overrides) { $1 }
        return environment
    }

    static func client(_ server: TestS3.Endpoint) -> S3 {
        S3(configuration: S3Configuration(endpoint: server.url, region: "us-east-1", pathStyle: true,
                                          credentials: SigV4Credentials(accessKeyID: server.accessKey, secretAccessKey: server.secret)))
    }

    static func upload(_ files: [String: URL], to s3: S3) async throws -> String {
        let bucket = TestS3.bucketName("media")
        try await s3.createBucket(bucket)
        for (key, file) in files {
            try await s3.put(S3Location(bucket: bucket, key: key), body: ByteBuffer(bytes: try Data(contentsOf: file)))
        }
        return bucket
    }

    func inspect(_ arguments: [String], _ environment: [String: String]) throws -> (ProcessResult, [[String: Any]]) {
        let result = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["inspect", "--json"] + arguments, environment: environment)
        let reports = try JSONSerialization.jsonObject(with: result.stdoutData) as? [[String: Any]]
        return (result, try #require(reports, "stdout is not a JSON array: \(result.stdout) \(result.stderr)"))
    }

    @Test func anMP4IsInspectedInTwoRequestsWhereverItsIndexIs() async throws {
        let server = try TestS3.shared()
        let movies = try Self.movies.get()
        let s3 = Self.client(server)
        defer { Task { await s3.shutdown() } }
        let bucket = try await Self.upload(["in/end.mp4": movies.end, "in/start.mp4": movies.start], to: s3)

        let (result, reports) = try inspect(["s3://\(bucket)/in/end.mp4", "s3://\(bucket)/in/start.mp4"], Self.environment(server))
        #expect(result.status == 0, "\(result.stderr)")
        let (_, local) = try inspect([movies.end.path, movies.start.path], ProcessInfo.processInfo.environment)

        let endBoxes = try Self.boxes(movies.end), startBoxes = try Self.boxes(movies.start)
        let endIndex = try #require(endBoxes.first { $0.type == "moov" }), startIndex = try #require(startBoxes.first { $0.type == "moov" })
        #expect(endIndex.size > 65_536 && startIndex.size > 65_536, "the index must be longer than the first request")
        #expect(endIndex.offset + endIndex.size == Int64(try Data(contentsOf: movies.end).count))

        for (report, localReport) in zip(reports, local) {
            #expect(report["error"] is NSNull, "\(report["error"] ?? "")")
            // The same facts as the local file's, but for the path.
            for key in ["duration", "durationSource", "isPlayable", "isExportable", "isReadable", "isComposable", "tracks", "metadata"] {
                #expect(NSDictionary(dictionary: report).value(forKey: key) as? NSObject == NSDictionary(dictionary: localReport).value(forKey: key) as? NSObject,
                        "\(key) differs")
            }
            #expect((report["format"] as? [String: Any])?["fileSize"] as? Int == (localReport["format"] as? [String: Any])?["fileSize"] as? Int)
            #expect(localReport["transfer"] == nil)
        }
        // Index at the end: the first 64 KiB, then the index itself, nothing more.
        let end = try #require(reports[0]["transfer"] as? [String: Int])
        #expect(end["requests"] == 2)
        #expect(end["bytes"] == 65_536 + Int(endIndex.size))
        // Index at the start: the first 64 KiB, then the rest of the index with as much media after it.
        let start = try #require(reports[1]["transfer"] as? [String: Int])
        #expect(start["requests"] == 2)
        #expect(start["bytes"] == Int(startIndex.offset + startIndex.size) + 65_536)
    }

    /// A movie shorter than the first request is read in that one request; other containers (Matroska)
    /// are read through the generic read-ahead, with the same results as the local files'.
    @Test func aShortMovieIsInspectedInOneRequestAndOtherContainersAsLocalFiles() async throws {
        let server = try TestS3.shared()
        let s3 = Self.client(server)
        defer { Task { await s3.shutdown() } }
        let small = try TestPaths.makeTemporaryFolder("s3-small").appendingPathComponent("small.mp4")
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25", "-t", "1",
                                           "-c:v", "libx264", "-preset", "ultrafast", small.path])
        let size = try Data(contentsOf: small).count
        #expect(size < 65_536)
        let mkv = URL(fileURLWithPath: MediaFixture.cfr60MKV.path)
        let bucket = try await Self.upload(["small.mp4": small, "clip.mkv": mkv], to: s3)
        let (result, reports) = try inspect(["s3://\(bucket)/small.mp4", "s3://\(bucket)/clip.mkv"], Self.environment(server))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(reports[0]["transfer"] as? [String: Int] == ["requests": 1, "bytes": size])
        #expect(reports[0]["isPlayable"] as? Bool == true)
        let (_, local) = try inspect([mkv.path], ProcessInfo.processInfo.environment)
        for key in ["duration", "isPlayable", "tracks"] {
            #expect(NSDictionary(dictionary: reports[1]).value(forKey: key) as? NSObject == NSDictionary(dictionary: local[0]).value(forKey: key) as? NSObject,
                    "\(key) differs")
        }
        let mkvTransfer = try #require(reports[1]["transfer"] as? [String: Int])
        #expect(mkvTransfer["bytes"]! <= (try Data(contentsOf: mkv).count), "never more than the object")
    }

    /// `submit` queued, with exit 0, an input in a missing bucket, a missing key and an output in a missing
    /// bucket (that one did the whole encode, then failed at upload). Now each is refused at submission at
    /// its JSON path; --allow-missing-inputs lets the inputs be but not the bucket; and `run` fails such an
    /// output before any work.
    @Test func objectsAreCheckedAtSubmissionAndBeforeTheWork() async throws {
        let server = try TestS3.shared()
        let s3 = Self.client(server)
        defer { Task { await s3.shutdown() } }
        let bucket = try await Self.upload(["clip.mp4": URL(fileURLWithPath: MediaFixture.cfr30MP4.path)], to: s3)
        let dir = try TestPaths.makeTemporaryFolder("s3-submission")
        let queue = "sqlite:" + dir.appendingPathComponent("q.sqlite").path
        let environment = Self.environment(server)
        func manifest(_ name: String, input: String, output: String) throws -> String {
            let path = dir.appendingPathComponent("\(name).json").path
            try #"{ "version": 1, "input": "\#(input)", "export": { "mode": "passthrough", "output": "\#(output)" } }"#
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let missingKey = try manifest("missing-key", input: "s3://\(bucket)/missing.mp4", output: "s3://\(bucket)/out/a.mp4")
        let missingBucket = try manifest("missing-bucket", input: "s3://no-such-bucket-45/clip.mp4", output: "s3://\(bucket)/out/b.mp4")
        let outputBucket = try manifest("output-bucket", input: "s3://\(bucket)/clip.mp4", output: "s3://no-such-out-45/c.mp4")
        let submit = ["submit", "--queue", queue, "--output-root", "s3://\(bucket)/out/", "--output-root", "s3://no-such-out-45/"]
        let refused = try ProcessRunner.run(TestPaths.mediafarmExecutable, submit + [missingKey, missingBucket, outputBucket], environment: environment)
        #expect(refused.status == 2, "\(refused.stdout) \(refused.stderr)")
        for line in ["$.input: s3://\(bucket)/missing.mp4: no such object (", "$.input: s3://no-such-bucket-45/clip.mp4: no such object (",
                     "$.export.output: s3://no-such-out-45/c.mp4: no such bucket no-such-out-45 (make the bucket, or write elsewhere)",
                     "nothing was queued: 3 of 3 manifests are invalid"] {
            #expect(refused.stderr.contains(line), "\(line) in \(refused.stderr)")
        }
        #expect(refused.stderr.contains("--allow-missing-inputs"), "the way out: \(refused.stderr)")
        let allowed = try ProcessRunner.run(TestPaths.mediafarmExecutable, submit + ["--allow-missing-inputs", missingKey, outputBucket], environment: environment)
        #expect(allowed.status == 2 && !allowed.stderr.contains("missing.mp4") && allowed.stderr.contains("no such bucket no-such-out-45"), "\(allowed.stderr)")
        // `run` checks the bucket before it reads or encodes anything.
        let ran = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--output-root", "s3://no-such-out-45/", outputBucket], environment: environment)
        #expect(ran.status != 0 && ran.stderr.contains("no such bucket no-such-out-45"), "\(ran.stdout) \(ran.stderr)")
    }

    @Test func wrongObjectsBucketsAndCredentialsAreNamed() async throws {
        let server = try TestS3.shared()
        let s3 = Self.client(server)
        defer { Task { await s3.shutdown() } }
        let bucket = try await Self.upload(["clip.mp4": URL(fileURLWithPath: MediaFixture.cfr30MP4.path)], to: s3)
        var random = SeededRandom(state: 28)
        try await s3.put(S3Location(bucket: bucket, key: "garbage.mp4"), body: ByteBuffer(bytes: (0..<50_000).map { _ in UInt8.random(in: 0...255, using: &random) }))
        try await s3.put(S3Location(bucket: bucket, key: "empty.mp4"), body: ByteBuffer())

        let cases: [(path: String, environment: [String: String], error: String)] = [
            ("s3://\(bucket)/missing.mp4", [:], "s3://\(bucket)/missing.mp4: no such object (HTTP 404 NoSuchKey)"),
            ("s3://no-such-bucket-28/clip.mp4", [:], "s3://no-such-bucket-28/clip.mp4: no such bucket (HTTP 404 NoSuchBucket)"),
            ("s3://\(bucket)/garbage.mp4", [:], "s3://\(bucket)/garbage.mp4: not a media file FFmpeg recognises"),
            ("s3://\(bucket)/empty.mp4", [:], "s3://\(bucket)/empty.mp4: the file is empty (0 bytes)"),
            ("s3://Media/clip.mp4", [:], "s3://Media/clip.mp4: the bucket name \"Media\" may hold only lower-case letters, digits, dots and hyphens"),
            ("s3://\(bucket)/clip.mp4", ["AWS_SECRET_ACCESS_KEY": "wrong-secret-28"],
             "s3://\(bucket)/clip.mp4: the server refused the request's signature: the secret key does not belong to access key \(server.accessKey) (check AWS_SECRET_ACCESS_KEY or the profile) (HTTP 403 SignatureDoesNotMatch)"),
            ("s3://\(bucket)/clip.mp4", ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "HOME": "/nonexistent"],
             "s3://\(bucket)/clip.mp4: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in /nonexistent/.aws/credentials (AWS_PROFILE)"),
            ("s3://\(bucket)/clip.mp4", ["MEDIAFARM_S3_ENDPOINT": "http://127.0.0.1:9"],
             "s3://\(bucket)/clip.mp4: cannot reach http://127.0.0.1:9 (MEDIAFARM_S3_ENDPOINT): connection refused (tried for 5 s)"),
        ]
        for c in cases {
            let (result, reports) = try inspect([c.path], Self.environment(server, c.environment))
            #expect(result.status == 1, "\(c.path)")
            let error = reports.first?["error"] as? String ?? ""
            #expect(error.hasPrefix(c.error), "\(error)")
            #expect(!result.stdout.contains(server.secret) && !result.stderr.contains(server.secret) && !result.stdout.contains("wrong-secret-28"))
        }
    }

    /// Decoded pictures and sound of `path`, one MD5 each, in order (every picture: no rate guessed).
    static func frames(_ path: String) throws -> [String] {
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0", "-fps_mode", "passthrough", "-f", "framemd5", "-"])
            .stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
    }

    /// An exact-cut passthrough and a constant-frame-rate export, each run twice from the same manifest:
    /// from a local file to local files, and from an object to objects on a host with no shared folder.
    /// The objects are the local files' twins, frame for frame; a second run does not replace them.
    @Test func exportsFromObjectsToObjectsMatchTheSameExportsOfFiles() async throws {
        let server = try TestS3.shared()
        let s3 = Self.client(server)
        defer { Task { await s3.shutdown() } }
        let source = URL(fileURLWithPath: MediaFixture.bframesGOP1sMP4.path)
        let bucket = try await Self.upload(["in/source.mp4": source], to: s3)
        let dir = try TestPaths.makeTemporaryFolder("s3-run")
        let spool = dir.appendingPathComponent("spool").path
        let exports: [(name: String, export: [String: Any])] = [
            ("cut", ["mode": "passthrough", "cuts": "exact"]),
            ("cfr", ["mode": "constantFrameRate", "frameDuration": "1/25"]),
        ]
        func manifest(source: String, output: String, report: String, export: [String: Any]) throws -> Data {
            let edits: [[String: Any]] = [["source": source, "start": 0.7, "duration": 1.3], ["source": source, "start": 2.45, "duration": 0.8]]
            var export = export
            export["output"] = output
            return try JSONSerialization.data(withJSONObject: ["version": 1, "edits": edits, "export": export, "report": report])
        }
        let ext = "mp4"
        for (name, export) in exports {
            try manifest(source: source.path, output: "out/\(name).\(ext)", report: "out/\(name).json", export: export)
                .write(to: dir.appendingPathComponent("\(name)-local.json"))
            try manifest(source: "s3://\(bucket)/in/source.mp4", output: "s3://\(bucket)/out/\(name).\(ext)", report: "s3://\(bucket)/out/\(name).json",
                         export: export).write(to: dir.appendingPathComponent("\(name)-remote.json"))
            let ranLocally = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", dir.appendingPathComponent("\(name)-local.json").path])
            #expect(ranLocally.status == 0, "\(ranLocally.stderr)")

            let environment = Self.environment(server, ["MEDIAFARM_SPOOL": spool])
            let arguments = ["run", "--output-root", "s3://\(bucket)/out", dir.appendingPathComponent("\(name)-remote.json").path]
            let ran = try ProcessRunner.run(TestPaths.mediafarmExecutable, arguments, environment: environment)
            #expect(ran.status == 0, "\(ran.stderr)")
            let fetched = dir.appendingPathComponent("\(name)-fetched.\(ext)")
            try Data(Array(buffer: try await s3.get(S3Location(bucket: bucket, key: "out/\(name).\(ext)")).bytes)).write(to: fetched)
            let localOutput = dir.appendingPathComponent("out/\(name).\(ext)").path
            #expect(try Self.frames(fetched.path) == Self.frames(localOutput), "\(name): the object's frames differ from the file's")
            #expect(try Self.frames(fetched.path).count > 40)
            let report = try JSONSerialization.jsonObject(with: Data(Array(buffer: try await s3.get(S3Location(bucket: bucket, key: "out/\(name).json")).bytes))) as? [String: Any]
            #expect(report?["name"] as? String == "\(name)-remote")
            // Nothing left in the spool folder.
            #expect(try FileManager.default.contentsOfDirectory(atPath: spool).isEmpty)

            // Run again: the objects exist and the manifest does not allow overwriting them.
            let again = try ProcessRunner.run(TestPaths.mediafarmExecutable, arguments, environment: environment)
            #expect(again.status == 1)
            #expect((again.stdout + again.stderr).contains("s3://\(bucket)/out/\(name).\(ext): already exists; set \"overwrite\": true"), "\(again.stderr)")
            #expect(try Self.frames(fetched.path) == Self.frames(localOutput))
        }
        // An object output outside the output roots is refused before anything runs, naming the way out.
        let refused = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", dir.appendingPathComponent("cut-remote.json").path],
                                            environment: Self.environment(server, ["MEDIAFARM_SPOOL": spool]))
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("is outside the output roots") && refused.stderr.contains("s3://BUCKET/PREFIX"), "\(refused.stderr)")
    }

    /// Through the queue: `batch` runs a coordinator whose workers stage the outputs in the spool folder
    /// and whose publication, under each job's lease, is the upload's completion.
    @Test func aBatchPublishesObjectsUnderTheLease() async throws {
        let server = try TestS3.shared()
        let s3 = Self.client(server)
        defer { Task { await s3.shutdown() } }
        let source = URL(fileURLWithPath: MediaFixture.cfr30MP4.path)
        let bucket = try await Self.upload(["in/clip.mp4": source], to: s3)
        let dir = try TestPaths.makeTemporaryFolder("s3-batch")
        let jobs = dir.appendingPathComponent("jobs")
        try FileManager.default.createDirectory(at: jobs, withIntermediateDirectories: true)
        for (name, mode) in [("copy", "passthrough"), ("cfr", "constantFrameRate")] {
            let manifest: [String: Any] = ["version": 1, "input": "s3://\(bucket)/in/clip.mp4",
                                           "export": ["mode": mode, "output": "s3://\(bucket)/out/\(name).mp4"], "report": "s3://\(bucket)/out/\(name).json"]
            try JSONSerialization.data(withJSONObject: manifest).write(to: jobs.appendingPathComponent("\(name).json"))
        }
        let spool = dir.appendingPathComponent("spool").path
        let ran = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["batch", "--workers", "2", "--output-root", "s3://\(bucket)/out", jobs.path],
                                        environment: Self.environment(server, ["MEDIAFARM_SPOOL": spool]))
        #expect(ran.status == 0, "\(ran.stdout) \(ran.stderr)")
        let listed = try await s3.list(S3Location(bucket: bucket, key: "out"))
        #expect(listed.map(\.location.key) == ["out/cfr.json", "out/cfr.mp4", "out/copy.json", "out/copy.mp4"])
        for name in ["copy", "cfr"] {
            let fetched = dir.appendingPathComponent("\(name).mp4")
            try Data(Array(buffer: try await s3.get(S3Location(bucket: bucket, key: "out/\(name).mp4")).bytes)).write(to: fetched)
            #expect(try MediaProbe.packets(fetched.path, stream: "v").count == 60)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: spool).isEmpty)
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)
    }

    /// The library with objects: an object added is hashed from a stream (the same content id as the same
    /// bytes in a file), `asset:ID` resolves to it on a host that has no file of it, a job's output object
    /// is registered as a representation, and an object replaced since is reported, not used.
    @Test func assetsThatAreObjectsResolveOnEveryHost() async throws {
        let server = try TestS3.shared()
        let s3 = Self.client(server)
        defer { Task { await s3.shutdown() } }
        let source = URL(fileURLWithPath: MediaFixture.cfr30MP4.path)
        let bucket = try await Self.upload(["in/take.mp4": source], to: s3)
        let dir = try TestPaths.makeTemporaryFolder("s3-library")
        var environment = Self.environment(server)
        environment["MEDIAFARM_QUEUE"] = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        environment["MEDIAFARM_SPOOL"] = dir.appendingPathComponent("spool").path
        func mediafarm(_ arguments: [String]) throws -> ProcessResult {
            try ProcessRunner.run(TestPaths.mediafarmExecutable, arguments, currentDirectory: dir.path, environment: environment)
        }
        func json(_ r: ProcessResult) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any], "\(r.stdout) \(r.stderr)")
        }
        let added = try json(try mediafarm(["library", "add", "--json", "--host", "studio", "s3://\(bucket)/in/take.mp4"]))
        let file = try #require((added["files"] as? [[String: Any]])?.first)
        #expect(file["status"] as? String == "added", "\(added)")
        let id = try #require(file["id"] as? String)
        // The same bytes in a file on another host: the same id.
        let local = try json(try mediafarm(["library", "add", "--json", "--host", "studio", source.path]))
        #expect((local["files"] as? [[String: Any]])?.first?["id"] as? String == id, "\(local)")
        #expect((local["files"] as? [[String: Any]])?.first?["status"] as? String == "located", "\(local)")

        // A host that has no file of it (render) resolves the object.
        let resolved = try mediafarm(["library", "resolve", "--json", "--host", "render", id])
        #expect(resolved.status == 0 && resolved.stdout.contains("s3://\(bucket)/in/take.mp4"), "\(resolved.stdout) \(resolved.stderr)")
        // `library list` on that host shows where it is (it said "(not on this host)" while resolve found it).
        let listed = try mediafarm(["library", "list", "--host", "render"])
        #expect(listed.stdout.contains("s3://\(bucket)/in/take.mp4") && !listed.stdout.contains("not on this host"), "\(listed.stdout)")
        try #"{ "version": 1, "name": "slow", "input": "asset:\#(id)", "scale": [{ "start": "0", "duration": "2", "rate": "1/2" }], "export": { "mode": "passthrough", "output": "s3://\#(bucket)/out/slow.mp4" } }"#
            .write(to: dir.appendingPathComponent("slow.json"), atomically: true, encoding: .utf8)
        let submitted = try mediafarm(["submit", "--output-root", "s3://\(bucket)/out", "slow.json"])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let ran = try mediafarm(["coordinator", "--host", "render", "--workers", "1", "--exit-when-idle", "--json"])
        #expect(ran.status == 0, "\(ran.stdout) \(ran.stderr)")
        #expect(ran.stdout.replacingOccurrences(of: "\\/", with: "/").contains("output s3://\(bucket)/out/slow.mp4 registered in the library as"),
                "\(ran.stdout)")
        let shown = try json(try mediafarm(["library", "show", "--json", "--host", "render", id]))
        let representation = try #require((shown["representations"] as? [[String: Any]])?.first, "\(shown)")
        #expect(representation["path"] as? String == "s3://\(bucket)/out/slow.mp4" && representation["host"] as? String == "*", "\(representation)")
        let output = try #require(representation["output"] as? String)
        let outputResolved = try mediafarm(["library", "resolve", "--json", "--host", "anywhere", output])
        #expect(outputResolved.status == 0 && outputResolved.stdout.contains("s3://\(bucket)/out/slow.mp4"), "\(outputResolved.stdout)")

        // The object replaced by other bytes: not the asset any more.
        try await s3.put(S3Location(bucket: bucket, key: "in/take.mp4"), body: ByteBuffer(string: "other bytes"))
        let changed = try mediafarm(["library", "resolve", "--json", "--host", "render", id])
        #expect(changed.status == 1 && changed.stdout.contains("missing") && changed.stdout.contains("changed since it was registered"),
                "\(changed.stdout) \(changed.stderr)")
    }

    /// `library add s3://BUCKET/PREFIX/` adds every object under the prefix. (A private server that takes
    /// any signature: moto refuses the correct signature of a listing whose prefix holds a "/".)
    @Test func aPrefixIsAddedObjectByObject() async throws {
        let server = try TestS3.Server(checksSignatures: false)
        defer { server.stop() }
        let s3 = Self.client(server.endpoint)
        defer { Task { await s3.shutdown() } }
        let clip = URL(fileURLWithPath: MediaFixture.cfr30MP4.path)
        let bucket = try await Self.upload(["takes/a.mp4": clip, "takes/b.mp4": URL(fileURLWithPath: MediaFixture.longMP4.path),
                                            "other/c.mp4": clip], to: s3)
        let dir = try TestPaths.makeTemporaryFolder("s3-library-prefix")
        var environment = Self.environment(server.endpoint)
        environment["MEDIAFARM_QUEUE"] = "sqlite:" + dir.appendingPathComponent("queue.sqlite").path
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "add", "--json", "s3://\(bucket)/takes/"], environment: environment)
        #expect(r.status == 0, "\(r.stderr)")
        let files = try #require((try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])?["files"] as? [[String: Any]])
        #expect(Set(files.compactMap { $0["path"] as? String }) == ["s3://\(bucket)/takes/a.mp4", "s3://\(bucket)/takes/b.mp4"], "\(files)")
        #expect(files.allSatisfy { $0["status"] as? String == "added" }, "\(files)")

        // A prefix named without its "/": refused with the way to name it.
        let bare = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "add", "s3://\(bucket)/takes"], environment: environment)
        #expect(bare.status == 1 && bare.stdout.contains("no such object, but s3://\(bucket)/takes/ (with a \"/\" at the end) is a prefix of 2 objects"),
                "\(bare.stdout) \(bare.stderr)")
        // A whole bucket, with or without the "/".
        for whole in ["s3://\(bucket)/", "s3://\(bucket)"] {
            let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "add", "--json", whole], environment: environment)
            #expect(r.status == 0, "\(whole): \(r.stdout) \(r.stderr)")
            let files = (try? JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])?["files"] as? [[String: Any]] ?? []
            // other/c.mp4 holds a.mp4's content: a new location of that asset, the first time.
            let statuses = Dictionary(uniqueKeysWithValues: files.map { ($0["path"] as? String ?? "", $0["status"] as? String ?? "") })
            #expect(statuses == ["s3://\(bucket)/other/c.mp4": whole.hasSuffix("/") ? "located" : "unchanged",
                                 "s3://\(bucket)/takes/a.mp4": "unchanged", "s3://\(bucket)/takes/b.mp4": "unchanged"], "\(whole): \(files)")
        }
    }

    /// A server that ignores `If-None-Match` (a relay drops the header): `"overwrite": false` is kept by a
    /// HEAD before the write, and the user is told what that leaves open.
    @Test func aServerThatIgnoresConditionalWritesGetsAHeadFirst() async throws {
        // The relay drops a header the signature covers: a server of the test's own that takes any signature.
        let server = try TestS3.Server(checksSignatures: false)
        defer { server.stop() }
        let dir = try TestPaths.makeTemporaryFolder("s3-unconditional")
        let log = dir.appendingPathComponent("relay.log").path
        let relay = try Background(["/usr/bin/python3", TestPaths.packageRoot.appendingPathComponent("script/s3-relay").path, server.endpoint.url,
                                    "--drop", "If-None-Match"], log: log)
        defer { relay.kill(SIGKILL); _ = relay.wait(timeout: 5) }
        // The address the relay prints. Read once more after the deadline: on a machine busy with the other
        // suites, a sleeping task may wake only after it.
        func address() -> String? {
            (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").first.map(String.init).flatMap { $0.hasPrefix("http://") ? $0 : nil }
        }
        let deadline = Date().addingTimeInterval(120)
        var printed = address()
        while printed == nil, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            printed = address()
        }
        var relayed = server.endpoint
        relayed.url = try #require(printed ?? address(), "the relay printed no address")
        let direct = Self.client(server.endpoint), through = Self.client(relayed)
        defer { Task { await direct.shutdown(); await through.shutdown() } }
        let original = URL(fileURLWithPath: MediaFixture.cfr30MP4.path)
        let bucket = try await Self.upload(["out/taken.mp4": original], to: direct)
        #expect(try await direct.honoursConditionalWrites(bucket))
        #expect(try await through.honoursConditionalWrites(bucket) == false)
        #expect(try await direct.list(S3Location(bucket: bucket, key: "")).map(\.location.key) == ["out/taken.mp4"], "no probe is left")

        func run(_ output: String) throws -> ProcessResult {
            let manifest = dir.appendingPathComponent("job.json")
            try #"{ "version": 1, "input": "\#(MediaFixture.longMP4.path)", "export": { "mode": "passthrough", "output": "\#(output)" } }"#
                .write(to: manifest, atomically: true, encoding: .utf8)
            return try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--output-root", "s3://\(bucket)/out", manifest.path],
                                         environment: Self.environment(relayed, ["MEDIAFARM_SPOOL": dir.appendingPathComponent("spool").path]))
        }
        let refused = try run("s3://\(bucket)/out/taken.mp4")
        #expect(refused.status == 1, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains("already exists; set \"overwrite\": true") && refused.stderr.contains("ignores If-None-Match"), "\(refused.stderr)")
        #expect(try await direct.head(S3Location(bucket: bucket, key: "out/taken.mp4")).size == Int64(try Data(contentsOf: original).count))
        let written = try run("s3://\(bucket)/out/new.mp4")
        #expect(written.status == 0, "\(written.stderr)")
        #expect(try await direct.exists(S3Location(bucket: bucket, key: "out/new.mp4")))
    }
}
