import FarmTestSupport
import FarmSubmit
import Foundation
import NIOCore
import S3Client
import Testing

/// `mediafarm ingest` watching an object prefix (`s3://BUCKET/PREFIX/`) on a real S3 server: objects settle
/// by size and entity tag over passes, are hashed and inspected through ranged reads, enqueued once per
/// content, and their jobs read and write objects on a farm that shares no folder with the bucket.
/// (A private moto that takes any signature: moto refuses the correct signature of a listing whose prefix
/// holds a "/"; signatures are checked by the other object tests.)
@Suite(.serialized) struct ObjectIngestTests {
    /// A bucket with objects, a config watching `incoming/` with a template writing to `out/`, and a queue.
    struct Site {
        let server: TestS3.Server
        let s3: S3
        let bucket: String
        let folder: URL
        var queue: String { folder.appendingPathComponent("queue.sqlite").path }
        var config: String { folder.appendingPathComponent("ingest.json").path }
        var environment: [String: String]

        init(_ label: String, watches extra: String = "") async throws {
            server = try TestS3.Server(checksSignatures: false)
            s3 = ObjectStorageTests.client(server.endpoint)
            bucket = TestS3.bucketName("ingest")
            try await s3.createBucket(bucket)
            folder = try TestPaths.makeTemporaryFolder("object-ingest-\(label)")
            environment = ObjectStorageTests.environment(server.endpoint)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("templates"), withIntermediateDirectories: true)
            try """
            { "version": 1, "name": "proxy-{stem}", "input": "{input}",
              "export": { "mode": "passthrough", "output": "s3://\(bucket)/out/{date}/{stem}-{hash}.{ext}" },
              "report": "s3://\(bucket)/out/{date}/{stem}-{hash}.json" }
            """.write(to: folder.appendingPathComponent("templates/proxy.json"), atomically: true, encoding: .utf8)
            try """
            { "version": 1,
              "watch": [ { "path": "s3://\(bucket)/incoming", "include": ["*.mp4", "*.part"], "template": "templates/proxy.json" }\(extra) ],
              "settleSeconds": 0, "state": "state/ingest.sqlite", "libraryAlbum": "From objects",
              "outputRoots": ["s3://\(bucket)/out", "out"] }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        }

        func put(_ key: String, _ bytes: Data) async throws {
            try await s3.put(S3Location(bucket: bucket, key: key), body: ByteBuffer(bytes: bytes))
        }

        func put(_ key: String, _ fixture: MediaFixture) async throws {
            try await put(key, try Data(contentsOf: URL(fileURLWithPath: fixture.path)))
        }

        func ingest(_ args: [String] = [], environment overrides: [String: String] = [:]) throws -> ProcessResult {
            try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--config", config, "--json", "--queue", queue] + args,
                                  environment: environment.merging(overrides) { $1 })
        }

        /// The pass's JSON report (it must exit 0).
        func pass(_ args: [String] = []) throws -> [String: Any] {
            let r = try ingest(args)
            guard r.status == 0, let report = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any] else {
                throw FixtureError("ingest exited \(r.status): \(r.stderr) \(r.stdout)")
            }
            return report
        }

        func keys(under prefix: String) async throws -> [String] {
            try await s3.list(S3Location(bucket: bucket, key: prefix)).map(\.location.key).sorted()
        }
    }

    static func paths(_ report: [String: Any], _ key: String) -> [String] {
        ((report[key] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String }.sorted()
    }

    /// The whole way: objects settle, a copy is a duplicate, garbage is quarantined in place, names the
    /// template must not take are skipped, a replaced object settles again and is ingested as new content;
    /// the jobs run on a coordinator and write their outputs as objects; the library knows the objects.
    @Test func objectsUnderAPrefixBecomeJobsOncePerContent() async throws {
        let site = try await Site("whole")
        defer { Task { await site.s3.shutdown() }; site.server.stop() }
        let b = site.bucket
        try await site.put("incoming/cam-a/scene one.mp4", .cfr30MP4)
        try await site.put("incoming/cam-b/copy.mp4", .cfr30MP4)
        try await site.put("incoming/garbage.mp4", Data((0..<40_000).map { _ in UInt8.random(in: 0...255) }))
        try await site.put("incoming/take.mp4.part", .cfr30MP4)
        try await site.put("incoming/notes.txt", Data("not media".utf8))
        try await site.put("incoming/.trash/old.mp4", .cfr30MP4)
        try await site.put("incoming/cam-a/", Data())            // a "folder" some tools make
        try await site.put("incomingx/beside.mp4", .cfr30MP4)    // beside the prefix, not under it
        try await site.put("other/outside.mp4", .cfr30MP4)

        // First pass: three objects start settling; the partial upload's name is skipped; nothing else is seen.
        let first = try site.pass()
        #expect(first["seen"] as? Int == 4 && first["seenObjects"] as? Int == 4, "\(first)")
        // Said as objects, not files.
        let line = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--config", site.config, "--queue", site.queue, "--dry-run"],
                                         environment: site.environment)
        #expect(line.status == 0 && line.stdout.contains("4 objects seen; a pass would start the settle time of 0 new or changed objects")
                && line.stdout.contains("skip 1 other object"), "\(line.stdout) \(line.stderr)")
        #expect(first["settling"] as? Int == 3 && first["firstSeen"] as? Int == 3, "\(first)")
        #expect(first["enqueued"] as? Int == 0, "\(first)")
        #expect(Self.paths(first, "skipped") == ["s3://\(b)/incoming/take.mp4.part"], "\(first)")

        // Second pass: settled. One of the two same contents is enqueued, the other is its duplicate; the
        // garbage is quarantined where it is (an object is not moved).
        let second = try site.pass()
        #expect(second["enqueued"] as? Int == 1 && second["duplicates"] as? Int == 1 && second["quarantined"] as? Int == 1, "\(second)")
        let jobs = try #require(second["jobs"] as? [[String: Any]])
        #expect(jobs.first?["path"] as? String == "s3://\(b)/incoming/cam-a/scene one.mp4", "\(jobs)")
        #expect(Self.paths(second, "duplicateFiles") == ["s3://\(b)/incoming/cam-b/copy.mp4"], "\(second)")
        let quarantined = try #require((second["quarantine"] as? [[String: Any]])?.first)
        #expect(quarantined["path"] as? String == "s3://\(b)/incoming/garbage.mp4" && quarantined["movedTo"] == nil, "\(quarantined)")
        #expect((quarantined["notMoved"] as? String)?.contains("not read it again until it changes") == true, "\(quarantined)")
        #expect(second["registered"] as? Int == 1, "\(second)")
        let hash = try #require(jobs.first?["hash"] as? String)
        #expect(try await site.keys(under: "incoming/").contains("incoming/garbage.mp4"))

        // Third pass: nothing is new, and nothing is read again (not even the quarantined object).
        let third = try site.pass()
        #expect(third["enqueued"] as? Int == 0 && third["settling"] as? Int == 0 && third["quarantined"] as? Int == 0, "\(third)")
        #expect(third["duplicates"] as? Int == 0, "\(third)")

        // The job reads the object and writes objects, on a coordinator that has none of them as files.
        func runFarm() throws {
            let coordinator = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--exit-when-idle", "--queue", site.queue],
                                                    environment: site.environment)
            #expect(coordinator.status == 0, "\(coordinator.stderr)")
        }
        try runFarm()
        let made = try await site.keys(under: "out/")
        let day = try #require(made.first.map { $0.split(separator: "/")[1] })
        #expect(made == ["out/\(day)/scene one-\(hash.prefix(16)).json", "out/\(day)/scene one-\(hash.prefix(16)).mp4"], "\(made)")
        let movie = try await site.s3.get(S3Location(bucket: b, key: "out/\(day)/scene one-\(hash.prefix(16)).mp4")).bytes
        let local = site.folder.appendingPathComponent("first.mp4")
        try Data(movie.readableBytesView).write(to: local)
        #expect(try MediaProbe.packets(local.path, stream: "v").count == 60)

        // An object replaced under the same key (another entity tag) settles again and is new content.
        try await site.put("incoming/cam-a/scene one.mp4", .tone60ShortMP4)
        let fourth = try site.pass()
        #expect(fourth["settling"] as? Int == 1 && fourth["firstSeen"] as? Int == 1 && fourth["enqueued"] as? Int == 0, "\(fourth)")
        let fifth = try site.pass()
        #expect(fifth["enqueued"] as? Int == 1, "\(fifth)")
        let replacedHash = try #require((fifth["jobs"] as? [[String: Any]])?.first?["hash"] as? String)
        #expect(replacedHash != hash)

        try runFarm()
        let outputs = try await site.keys(under: "out/")
        // `{date}` is each object's own modification day: the replacement may have been written after midnight.
        let replacedDay = try #require(outputs.first { $0.contains(replacedHash.prefix(16)) }.map { $0.split(separator: "/")[1] })
        #expect(replacedDay >= day && replacedDay <= IngestTemplate.day(Date()), "\(outputs)")
        #expect(Set(outputs) == ["out/\(day)/scene one-\(hash.prefix(16)).json", "out/\(day)/scene one-\(hash.prefix(16)).mp4",
                                 "out/\(replacedDay)/scene one-\(replacedHash.prefix(16)).json",
                                 "out/\(replacedDay)/scene one-\(replacedHash.prefix(16)).mp4"],
                "\(outputs)")
        #expect(try await site.s3.listMultipartUploads(S3Location(bucket: b, key: "")).isEmpty)

        // The library holds both contents at their object (every host's), in the config's album.
        let album = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "list", "--json", "--album", "From objects", "--queue", site.queue],
                                          environment: site.environment)
        let assets = (try JSONSerialization.jsonObject(with: album.stdoutData) as? [String: Any])?["assets"] as? [[String: Any]] ?? []
        #expect(Set(assets.compactMap { $0["sha256"] as? String }) == [hash, replacedHash], "\(album.stdout) \(album.stderr)")
        let id = try #require(assets.first { $0["sha256"] as? String == hash }?["id"] as? String, "\(assets)")
        let shown = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "show", "--json", "--queue", site.queue, id],
                                          environment: site.environment)
        let detail = try JSONSerialization.jsonObject(with: shown.stdoutData) as? [String: Any] ?? [:]
        // The object was replaced since: the first content's location says so.
        let locations = (detail["locations"] as? [[String: Any]] ?? []).map { "\($0["host"] ?? ""):\($0["path"] ?? "") \($0["state"] ?? "")" }
        #expect(locations == ["*:s3://\(b)/incoming/cam-a/scene one.mp4 changed"], "\(shown.stdout) \(shown.stderr)")

        // Moved to another key (written there, deleted here): renamed, not a new job, and the library learns where.
        try await site.put("incoming/sorted/scene one.mp4", .tone60ShortMP4)
        try await site.s3.delete(S3Location(bucket: b, key: "incoming/cam-a/scene one.mp4"))
        #expect(try site.pass()["settling"] as? Int == 1)
        let moved = try site.pass()
        #expect(moved["enqueued"] as? Int == 0 && moved["duplicates"] as? Int == 0, "\(moved)")
        #expect((moved["renamed"] as? [[String: String]]) == [["path": "s3://\(b)/incoming/sorted/scene one.mp4",
                                                             "from": "s3://\(b)/incoming/cam-a/scene one.mp4"]], "\(moved)")
        let resolved = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "resolve", "--json", "--queue", site.queue, "--host", "elsewhere",
                                                                              try #require(assets.first { $0["sha256"] as? String == replacedHash }?["id"] as? String)],
                                             environment: site.environment)
        #expect(resolved.stdout.replacingOccurrences(of: "\\/", with: "/").contains("s3://\(b)/incoming/sorted/scene one.mp4"),
                "\(resolved.stdout) \(resolved.stderr)")
    }

    /// An object moved to another key after its job was queued and before it ran: the next pass reports it
    /// renamed and the library learns the new key, so the job reads it there (the coordinator says so).
    @Test func aQueuedJobReadsItsObjectWhereItWasMoved() async throws {
        let site = try await Site("moved")
        defer { Task { await site.s3.shutdown() }; site.server.stop() }
        let b = site.bucket
        try await site.put("incoming/take.mp4", .cfr30MP4)
        _ = try site.pass()
        let queued = try site.pass()
        let hash = try #require((queued["jobs"] as? [[String: Any]])?.first?["hash"] as? String, "\(queued)")
        try await site.put("incoming/sorted/take.mp4", .cfr30MP4)
        try await site.s3.delete(S3Location(bucket: b, key: "incoming/take.mp4"))
        _ = try site.pass()
        let moved = try site.pass()
        #expect((moved["renamed"] as? [[String: String]]) == [["path": "s3://\(b)/incoming/sorted/take.mp4", "from": "s3://\(b)/incoming/take.mp4"]],
                "\(moved)")
        let coordinator = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--exit-when-idle", "--queue", site.queue],
                                                environment: site.environment)
        #expect(coordinator.status == 0, "\(coordinator.stderr)")
        let said = (coordinator.stdout + coordinator.stderr).replacingOccurrences(of: "\\/", with: "/")
        #expect(said.contains("s3://\(b)/incoming/take.mp4 is gone; the same content"), "\(said)")
        let outputs = try await site.keys(under: "out/")
        #expect(outputs.count == 2 && outputs.allSatisfy { $0.contains("/take-\(hash.prefix(16)).") }, "\(outputs)")
    }

    /// A template whose job writes to a bucket that is not there is refused at the pass, as `submit` refuses
    /// it, not found after the encode: the object is skipped with the reason, nothing is queued, and the
    /// next pass tries again.
    @Test func aJobWritingToABucketThatIsNotThereIsRejectedByThePass() async throws {
        let site = try await Site("no-bucket")
        defer { Task { await site.s3.shutdown() }; site.server.stop() }
        let missing = TestS3.bucketName("gone")
        let template = site.folder.appendingPathComponent("templates/proxy.json")
        try String(contentsOf: template, encoding: .utf8).replacingOccurrences(of: "s3://\(site.bucket)/out/", with: "s3://\(missing)/out/")
            .write(to: template, atomically: true, encoding: .utf8)
        try String(contentsOfFile: site.config, encoding: .utf8).replacingOccurrences(of: "\"s3://\(site.bucket)/out\"", with: "\"s3://\(missing)/out\"")
            .write(toFile: site.config, atomically: true, encoding: .utf8)
        try await site.put("incoming/a.mp4", .cfr30MP4)
        _ = try site.pass()
        let report = try site.pass()
        #expect(report["enqueued"] as? Int == 0, "\(report)")
        let skipped = (report["skipped"] as? [[String: Any]]) ?? []
        #expect(skipped.contains { ($0["reason"] as? String)?.contains("no such bucket \(missing)") == true }, "\(report)")
        let jobs = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["status", "--json", "--queue", site.queue], environment: site.environment)
        #expect(!jobs.stdout.contains("proxy-"), "\(jobs.stdout)")
        // Left as it was: once the bucket is made, the next pass takes the object.
        try await site.s3.createBucket(missing)
        let taken = try site.pass()
        #expect(Self.paths(taken, "jobs") == ["s3://\(site.bucket)/incoming/a.mp4"], "\(taken)")
    }

    /// What goes wrong with a prefix is named, exits non-zero and loses nothing: a prefix that cannot be
    /// listed (the endpoint down, no credentials) fails the pass while the config's folder is still
    /// ingested, and the objects' rows stay as they were; a bad config or a bad --reingest changes nothing.
    @Test func aPrefixThatCannotBeListedFailsThePassAndLosesNothing() async throws {
        let folderWatch = #", { "path": "incoming-files", "include": ["*.mp4"], "template": "templates/proxy-local.json" }"#
        let site = try await Site("failures", watches: folderWatch)
        defer { Task { await site.s3.shutdown() }; site.server.stop() }
        let b = site.bucket
        let files = site.folder.appendingPathComponent("incoming-files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        try """
        { "version": 1, "input": "{input}", "export": { "mode": "passthrough", "output": "../out/{stem}-{hash}.{ext}" } }
        """.write(to: site.folder.appendingPathComponent("templates/proxy-local.json"), atomically: true, encoding: .utf8)
        try await site.put("incoming/a.mp4", .cfr30MP4)
        let first = try site.pass()
        #expect(first["settling"] as? Int == 1, "\(first)")

        // The endpoint does not answer: exit 1 naming the prefix; the folder's file is still seen.
        try FileManager.default.copyItem(atPath: MediaFixture.movH264.path, toPath: files.appendingPathComponent("local.mp4").path)
        let metrics = site.folder.appendingPathComponent("ingest.prom").path
        let down = try site.ingest(["--metrics-file", metrics], environment: ["MEDIAFARM_S3_ENDPOINT": "http://127.0.0.1:1"])
        #expect(down.status == 1, "\(down.stdout) \(down.stderr)")
        #expect(down.stderr.contains("s3://\(b)/incoming/: cannot be listed: cannot reach http://127.0.0.1:1 (MEDIAFARM_S3_ENDPOINT)"), "\(down.stderr)")
        let downReport = try JSONSerialization.jsonObject(with: down.stdoutData) as? [String: Any] ?? [:]
        #expect(Self.paths(downReport, "unlisted") == ["s3://\(b)/incoming/"], "\(downReport)")
        #expect(downReport["settling"] as? Int == 1 && downReport["seen"] as? Int == 1, "the folder's file: \(downReport)")
        let figures = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(figures.contains("mediafarm_ingest_last_pass_prefixes_unlisted 1"), "\(figures)")

        // No credentials: named, exit 1; the folder's file (its second sighting) is enqueued all the same.
        let anonymous = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--json", "--config", site.config, "--queue", site.queue],
                                              environment: site.environment.filter { !$0.key.hasPrefix("AWS_") }.merging(
                                                  ["AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"]) { $1 })
        #expect(anonymous.status == 1, "\(anonymous.stdout) \(anonymous.stderr)")
        #expect(anonymous.stderr.contains("s3://\(b)/incoming/: credentials: no S3 credentials"), "\(anonymous.stderr)")
        let anonymousReport = try JSONSerialization.jsonObject(with: anonymous.stdoutData) as? [String: Any] ?? [:]
        #expect(Self.paths(anonymousReport, "jobs") == [files.appendingPathComponent("local.mp4").path], "\(anonymousReport)")

        // Back up: the object, which settled before the failures, is taken at once.
        let back = try site.pass()
        #expect(Self.paths(back, "jobs") == ["s3://\(b)/incoming/a.mp4"], "\(back)")

        // --reingest of an object: outside the watched prefixes, or not there, is refused before anything.
        for (address, why) in [("s3://\(b)/other/x.mp4", "not under an object prefix the config watches"),
                               ("s3://\(b)/incoming/missing.mp4", "no such object")] {
            let r = try site.ingest(["--reingest", address])
            #expect(r.status == 2 && r.stderr.contains("--reingest \(address): \(why)"), "\(r.stdout) \(r.stderr)")
        }

        // A config that would move objects, or names a bad bucket, is refused before anything is touched.
        let text = try String(contentsOfFile: site.config, encoding: .utf8)
        for (changed, message) in [
            (text.replacingOccurrences(of: #""settleSeconds": 0"#, with: #""settleSeconds": 0, "afterEnqueue": "move""#),
             "$.afterEnqueue: \"move\" is for folders: the objects under s3://\(b)/incoming/ are left where they are"),
            (text.replacingOccurrences(of: "s3://\(b)/incoming", with: "s3://Bad_Bucket/incoming"),
             "$.watch[0].path: s3://Bad_Bucket/incoming: the bucket name \"Bad_Bucket\" may hold only lower-case letters"),
        ] {
            let bad = site.folder.appendingPathComponent("bad.json").path
            try changed.write(toFile: bad, atomically: true, encoding: .utf8)
            let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--config", bad, "--queue", site.queue], environment: site.environment)
            #expect(r.status == 2 && r.stderr.contains(message), "\(r.stderr)")
        }
    }
}
