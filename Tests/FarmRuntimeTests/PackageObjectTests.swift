import FarmTestSupport
import Foundation
import MediaEdit
import NIOCore
import S3Client
import StreamTestSupport
import Testing

/// Streaming packages bound for object storage (`"output": "s3://BUCKET/PREFIX"`), against a real server
/// (moto): under a coordinator and by `mediafarm run`, each file an object under the prefix, read back
/// whole by the package checker; a package there refused without `"overwrite"`, a presentation the farm did
/// not make refused with it, and a package replaced leaving nothing of the one before.
@Suite(.serialized) struct PackageObjectTests {
    static func manifest(_ name: String, bucket: String, prefix: String, segmentSeconds: Int = 2, overwrite: Bool = false) -> String {
        """
        { "version": 1, "name": "\(name)", "input": "in.mp4", "report": "out/\(name).json", "overwrite": \(overwrite),
          "stream": { "output": "s3://\(bucket)/\(prefix)/", "segmentSeconds": \(segmentSeconds),
                      "video": { "rungs": [{ "height": 144, "bitrate": 200000 }] } } }
        """
    }

    /// The keys under `prefix`, relative to it. (The whole bucket is listed: moto refuses the correct
    /// signature of a listing whose prefix has a "/".)
    static func keys(_ s3: S3, _ bucket: String, _ prefix: String) async throws -> [String] {
        try await s3.list(S3Location(bucket: bucket, key: "")).map(\.location.key).filter { $0.hasPrefix(prefix + "/") }
            .map { String($0.dropFirst(prefix.count + 1)) }.sorted()
    }

    /// Every object under `prefix` written into a new folder, as a web server would serve them.
    static func download(_ s3: S3, _ bucket: String, _ prefix: String) async throws -> String {
        let folder = try TestPaths.makeTemporaryFolder("s3-package").path
        for key in try await keys(s3, bucket, prefix) {
            let path = folder + "/" + key
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let chunk = try await s3.get(S3Location(bucket: bucket, key: prefix + "/" + key))
            try Data(chunk.bytes.readableBytesView).write(to: URL(fileURLWithPath: path))
        }
        return folder
    }

    /// The job's state, and its error (or all of it when it has none).
    static func outcome(_ farm: Farm, _ id: Int64) throws -> (state: String?, message: String) {
        let job = try farm.status()[id] ?? [:]
        return (job["state"] as? String, (((job["errors"] as? [Any])?.last as? [String: Any])?["message"] as? String) ?? "\(job)")
    }

    @Test func aPackageUnderACoordinatorIsAnObjectPerFileAndAPrefixInTheWayIsRefused() async throws {
        let server = try TestS3.shared()
        let s3 = ObjectPublicationTests.client(server)
        do {
            let bucket = TestS3.bucketName("package")
            try await s3.createBucket(bucket)
            let farm = try Farm("s3-package")
            let roots = ["--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out"]
            let environment = ObjectPublicationTests.environment(server, farm)
            func drain() throws -> Farm.Coordinator {
                let coordinator = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"], environment: environment)
                #expect(coordinator.wait(timeout: 180) != nil, "\(coordinator.log)")
                return coordinator
            }

            let first = try farm.submit(roots + [try farm.manifest("show", Self.manifest("show", bucket: bucket, prefix: "out/show"))])[0]
            _ = try drain()
            let made = try Self.outcome(farm, first)
            #expect(made.state == "succeeded", "\(made.message)")
            let keys = try await Self.keys(s3, bucket, "out/show")
            #expect(keys.contains("master.m3u8") && keys.contains("manifest.mpd") && keys.contains(".mediafarm-package.json")
                    && keys.contains("video-1/init.mp4") && keys.contains("video-1/5.m4s") && keys.contains("audio/index.m3u8"), "\(keys)")
            #expect(!keys.contains { $0.contains(".mediafarm-writing") || $0.contains("mediafarm-staged") }, "\(keys)")
            let report = try ChunkedPackageTests.streamReport(farm.out.appendingPathComponent("show.json").path)
            let folder = try await Self.download(s3, bucket, "out/show")
            let findings = try StreamChecker.check(folder: folder, report: report)
            #expect(findings.isEmpty, "\(findings)")
            let spool = farm.folder.appendingPathComponent("spool").path
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? []).isEmpty, "the spool folder keeps what was staged")

            // The same prefix again without "overwrite": refused before any work, the package untouched.
            let again = try farm.submit(roots + [try farm.manifest("again", Self.manifest("again", bucket: bucket, prefix: "out/show"))])[0]
            // (Under a coordinator a retried attempt may replace its own earlier package: known when it publishes.)
            _ = try drain()
            let (state, message) = try Self.outcome(farm, again)
            #expect(state == "failed")
            #expect(message.contains("s3://\(bucket)/out/show: holds another package (s3://\(bucket)/out/show/.mediafarm-package.json)")
                    && message.contains("\"overwrite\": true"), "\(message)")
            #expect(try await Self.keys(s3, bucket, "out/show") == keys)

            // A prefix holding a presentation the farm did not make: refused even with "overwrite", and left as it was.
            try await s3.put(S3Location(bucket: bucket, key: "out/theirs/master.m3u8"), body: ByteBuffer(string: "#EXTM3U\n"))
            let theirs = try farm.submit(roots + [try farm.manifest("theirs", Self.manifest("theirs", bucket: bucket, prefix: "out/theirs", overwrite: true))])[0]
            _ = try drain()
            let theirsMessage = try Self.outcome(farm, theirs).message
            #expect(theirsMessage.contains("s3://\(bucket)/out/theirs: holds s3://\(bucket)/out/theirs/master.m3u8, and no .mediafarm-package.json"), "\(theirsMessage)")
            #expect(try await Self.keys(s3, bucket, "out/theirs") == ["master.m3u8"])

            // Replaced with "overwrite" by a package of 5 s segments: nothing of the 2 s one is left, and an object
            // the farm did not make, beside it under the prefix, is left as it was.
            try await s3.put(S3Location(bucket: bucket, key: "out/show/notes.txt"), body: ByteBuffer(string: "mine"))
            let replaced = try farm.submit(roots + [try farm.manifest("replaced", Self.manifest("replaced", bucket: bucket, prefix: "out/show", segmentSeconds: 5,
                                                                                                  overwrite: true))])[0]
            let replacing = try drain()
            let replacedOutcome = try Self.outcome(farm, replaced)
            #expect(replacedOutcome.state == "succeeded", "\(replacedOutcome.message)")
            let now = try await Self.keys(s3, bucket, "out/show")
            #expect(now.contains("video-1/2.m4s") && !now.contains("video-1/3.m4s") && now.contains("master.m3u8"), "\(now)")
            let newReport = try ChunkedPackageTests.streamReport(farm.out.appendingPathComponent("replaced.json").path)
            #expect(try StreamChecker.check(folder: try await Self.download(s3, bucket, "out/show"), report: newReport).isEmpty)
            #expect(replacing.log.contains("object(s) left from the package replaced"), "\(replacing.log)")
            #expect(now.contains("notes.txt"))
            let notes = try await s3.get(S3Location(bucket: bucket, key: "out/show/notes.txt"))
            #expect(String(buffer: notes.bytes) == "mine")
            let marker = try await s3.get(S3Location(bucket: bucket, key: "out/show/.mediafarm-package.json"))
            let markerJSON = try JSONSerialization.jsonObject(with: Data(marker.bytes.readableBytesView)) as? [String: Any]
            #expect(markerJSON?["replacing"] == nil && (markerJSON?["files"] as? [String])?.contains("video-1/2.m4s") == true, "\(markerJSON ?? [:])")
            #expect((markerJSON?["files"] as? [String])?.last == "manifest.mpd" || (markerJSON?["files"] as? [String])?.last == "master.m3u8",
                    "the entry points are published last")
            await s3.shutdown()
        } catch {
            await s3.shutdown()  // a client left open ends the whole test process: the failure is reported instead
            throw error
        }
    }

    /// The same package asked again at another prefix is answered from the first by copies on the server, with
    /// no worker: the same objects, a marker of its own. An object changed since it was published is found
    /// before any copy (that result forgotten, the next answering); a package bound for a folder is not copied
    /// from a prefix: it runs.
    @Test func aPackageAskedAgainAtAnotherPrefixIsCopiedOnTheServer() async throws {
        let server = try TestS3.shared()
        let s3 = ObjectPublicationTests.client(server)
        do {
            let bucket = TestS3.bucketName("package-reuse")
            try await s3.createBucket(bucket)
            let farm = try Farm("s3-package-reuse")
            let roots = ["--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out"]
            let environment = ObjectPublicationTests.environment(server, farm)
            func drain(_ name: String, _ manifest: String) throws -> (id: Int64, ran: Bool, notices: String) {
                let id = try farm.submit(roots + [try farm.manifest(name, manifest)])[0]
                let coordinator = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"], environment: environment)
                #expect(coordinator.wait(timeout: 180) == 0, "\(coordinator.log)")
                let (state, message) = try Self.outcome(farm, id)
                #expect(state == "succeeded", "\(name): \(message)")
                return (id, coordinator.events().contains { $0["event"] as? String == "started" }, ResultReuseTests.notices(coordinator))
            }
            func bytes(_ prefix: String, _ key: String) async throws -> [UInt8] {
                Array(buffer: try await s3.get(S3Location(bucket: bucket, key: prefix + "/" + key)).bytes)
            }

            let first = try drain("first", Self.manifest("first", bucket: bucket, prefix: "out/first"))
            #expect(first.ran)
            let keys = try await Self.keys(s3, bucket, "out/first")
            #expect(keys.contains("master.m3u8") && keys.contains("video-1/3.m4s"), "\(keys)")

            let again = try drain("again", Self.manifest("again", bucket: bucket, prefix: "out/again"))
            #expect(!again.ran, "a worker ran: \(again.notices)")
            #expect(again.notices.contains("job \(again.id): answered from the result of job \(first.id) (first)"), "\(again.notices)")
            #expect(try await Self.keys(s3, bucket, "out/again") == keys)
            for key in keys where key != ".mediafarm-package.json" {
                #expect(try await bytes("out/again", key) == (try await bytes("out/first", key)), "\(key) differs")
            }
            let marker = { (prefix: String) async throws -> String? in
                let object = try await s3.get(S3Location(bucket: bucket, key: prefix + "/" + ".mediafarm-package.json"))
                return (try JSONSerialization.jsonObject(with: Data(object.bytes.readableBytesView)) as? [String: Any])?["token"] as? String
            }
            let (tokenA, tokenB) = (try await marker("out/first"), try await marker("out/again"))
            #expect(tokenA != nil && tokenB != nil && tokenA != tokenB, "the answer's marker is its own job's")
            let result = try farm.status()[again.id]?["result"] as? [String: Any]
            #expect(((result?["reused"] as? [String: Any])?["job"] as? NSNumber)?.int64Value == first.id, "\(result ?? [:])")
            let report = try ChunkedPackageTests.streamReport(farm.out.appendingPathComponent("again.json").path)
            #expect(try StreamChecker.check(folder: try await Self.download(s3, bucket, "out/again"), report: report).isEmpty)

            // A segment of the answer replaced (other bytes): the third finds it before copying, forgets that
            // result and is answered from the first.
            let changed = S3Location(bucket: bucket, key: "out/again/video-1/2.m4s")
            try await s3.put(changed, body: ByteBuffer(string: "not a segment"))
            let third = try drain("third", Self.manifest("third", bucket: bucket, prefix: "out/third"))
            #expect(!third.ran, "a worker ran: \(third.notices)")
            #expect(third.notices.contains("job \(third.id): the result of job \(again.id) is not reused: \(changed) changed (entity tag "), "\(third.notices)")
            #expect(third.notices.contains("since it was published; that result is forgotten"), "\(third.notices)")
            #expect(third.notices.contains("job \(third.id): answered from the result of job \(first.id) (first)\n")
                    || third.notices.hasSuffix("job \(third.id): answered from the result of job \(first.id) (first)"), "\(third.notices)")
            #expect(try await bytes("out/third", "video-1/2.m4s") == (try await bytes("out/first", "video-1/2.m4s")))

            // An object the farm did not make in the way of one of the copies: the publication fails, and what it
            // copied before (its marker too) is deleted, so that nothing is left in the way of a next attempt.
            let theirs = S3Location(bucket: bucket, key: "out/blocked/video-1/3.m4s")
            try await s3.put(theirs, body: ByteBuffer(string: "theirs"))
            let blockedID = try farm.submit(roots + [try farm.manifest("blocked", Self.manifest("blocked", bucket: bucket, prefix: "out/blocked"))])[0]
            let blocking = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"], environment: environment)
            #expect(blocking.wait(timeout: 180) != nil, "\(blocking.log)")
            let blocked = try Self.outcome(farm, blockedID)
            #expect(blocked.state == "failed" && blocked.message.contains("\(theirs): already exists"), "\(blocked.message)")
            #expect(!blocking.events().contains { $0["event"] as? String == "started" })
            #expect(try await Self.keys(s3, bucket, "out/blocked") == ["video-1/3.m4s"])
            #expect(String(buffer: try await s3.get(theirs).bytes) == "theirs")

            // The same package bound for a folder: not copied from a prefix, made.
            let local = try drain("local", """
                { "version": 1, "name": "local", "input": "in.mp4", "report": "out/local.json",
                  "stream": { "output": "out/local", "segmentSeconds": 2, "video": { "rungs": [{ "height": 144, "bitrate": 200000 }] } } }
                """)
            #expect(local.ran)
            #expect(local.notices.contains("a package is copied from a folder to a folder, or from a prefix to a prefix"), "\(local.notices)")
            await s3.shutdown()
        } catch {
            await s3.shutdown()  // a client left open ends the whole test process: the failure is reported instead
            throw error
        }
    }

    /// A package bound for a prefix made in chunks (3 chunks of 4 s, two workers): each chunk a package of its
    /// own under a hidden prefix beside it, joined by copies on the server (the join's worker sends only what
    /// it writes: playlists, subtitles, and MPEG-TS segments whose counters it numbers on). The package is the
    /// one made whole, playlist for playlist; the checker finds nothing in it (a transport stream's plays every
    /// rung to its last frame); no chunk object nor upload is left.
    @Test(arguments: ["cmaf", "ts"]) func aPackageAtAPrefixIsMadeInChunksAndJoinedByCopiesOnTheServer(container: String) async throws {
        let server = try TestS3.Server(checksSignatures: false)  // the chunks' prefixes are listed to be removed
        defer { server.stop() }
        let s3 = ObjectPublicationTests.client(server.endpoint)
        do {
            let bucket = TestS3.bucketName("package-chunks")
            try await s3.createBucket(bucket)
            let farm = try Farm("s3-package-chunks")
            let source = try ChunkedPackageTests.source(in: farm, seconds: 12)
            func manifest(_ name: String, output: String, chunkSeconds: Int?) -> String {
                ChunkedPackageTests.manifest(name, input: source, chunkSeconds: chunkSeconds)
                    .replacingOccurrences(of: #""output": "out/\#(name)""#, with: #""output": "\#(output)""#)
                    .replacingOccurrences(of: #""reuse": false"#, with: #""reuse": true"#)
                    .replacingOccurrences(of: #""segmentSeconds": 2,"#, with: #""segmentSeconds": 2, "container": "\#(container)","#)
            }
            let id = try farm.submit(["--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out",
                                      try farm.manifest("chunked", manifest("chunked", output: "s3://\(bucket)/out/chunked", chunkSeconds: 4))])[0]
            let coordinator = try farm.startCoordinator(["--workers", "2", "--exit-when-idle"], environment: ObjectPublicationTests.environment(server.endpoint, farm))
            #expect(coordinator.wait(timeout: 240) == 0, "\(coordinator.log.suffix(3000))")
            let jobs = try farm.status()
            #expect(jobs.count == 4 && jobs[id]?["state"] as? String == "succeeded", "one job and its 3 chunks: \(jobs[id] ?? [:])")
            let uploads = ((jobs[id]?["result"] as? [String: Any])?["uploads"] as? [[String: Any]]) ?? []
            let copied = uploads.filter { $0["copy"] != nil }.compactMap { $0["address"] as? String }
            #expect(copied.contains("s3://\(bucket)/out/chunked/video-1/1.\(container == "ts" ? "ts" : "m4s")")
                    && !copied.contains { $0.hasSuffix(".m3u8") || $0.hasSuffix(".vtt") }, "\(copied)")
            let keys = try await s3.list(S3Location(bucket: bucket, key: "")).map(\.location.key)
            #expect(!keys.contains { $0.contains(".chunks-") || $0.contains("mediafarm-copies") }, "\(keys)")
            #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)

            let made = try farm.mediafarm(["run", try farm.manifest("whole", manifest("whole", output: "out/whole", chunkSeconds: nil))])
            #expect(made.status == 0, "\(made.stderr)")
            let folder = try await Self.download(s3, bucket, "out/chunked")
            let report = try ChunkedPackageTests.streamReport(farm.out.appendingPathComponent("chunked.json").path)
            let whole = farm.out.appendingPathComponent("whole").path
            for track in report.tracks {
                let playlist = try String(contentsOfFile: "\(folder)/\(track.folder)/index.m3u8", encoding: .utf8)
                #expect(playlist == (try String(contentsOfFile: "\(whole)/\(track.folder)/index.m3u8", encoding: .utf8)), "\(track.folder)'s playlist")
            }
            if container == "cmaf" {
                #expect(try StreamChecker.check(folder: folder, report: report).isEmpty)
                // Recorded with the chunks' hashes: asked again at another prefix, answered by copies, no worker.
                let again = try farm.submit(["--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out",
                                             try farm.manifest("again", manifest("again", output: "s3://\(bucket)/out/again", chunkSeconds: 4))])[0]
                let answering = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"], environment: ObjectPublicationTests.environment(server.endpoint, farm))
                #expect(answering.wait(timeout: 120) == 0, "\(answering.log.suffix(3000))")
                #expect(try farm.status()[again]?["state"] as? String == "succeeded")
                #expect(!answering.events().contains { $0["event"] as? String == "started" }, "\(answering.log.suffix(3000))")
                #expect(try await Self.keys(s3, bucket, "out/again") == (try await Self.keys(s3, bucket, "out/chunked")))
            } else {
                // (The checker reads fragmented MPEG-4: a transport stream's package is played instead.)
                let played = try StreamChecker.playEachRung(folder: folder, report: report, dash: false,
                                                            frameCount: { _ in Int((report.duration.seconds * 30).rounded()) })
                #expect(played.isEmpty, "\(played)")
            }
            await s3.shutdown()
        } catch {
            await s3.shutdown()  // a client left open ends the whole test process: the failure is reported instead
            throw error
        }
    }

    /// A coordinator killed in the middle of publishing a package (a relay holds its publications after the
    /// first few unanswered, as a host that died leaves them): no entry point is there yet, so no reader finds
    /// a package with files missing; the next coordinator completes the publication from the queue without
    /// encoding anything again, and the package is whole, with no upload left open. The same for a package
    /// answered from it by copies on the server.
    @Test func aCoordinatorKilledWhilePublishingAPackageLeavesItToTheNext() async throws {
        // The relay forwards requests as they came: a server of the test's own that takes any signature.
        let server = try TestS3.Server(checksSignatures: false)
        defer { server.stop() }
        let s3 = ObjectPublicationTests.client(server.endpoint)
        do {
            let bucket = TestS3.bucketName("package-kill")
            try await s3.createBucket(bucket)
            let farm = try Farm("s3-package-kill")
            let log = farm.folder.appendingPathComponent("relay.log").path
            let relay = try Background(["/usr/bin/python3", TestPaths.packageRoot.appendingPathComponent("script/s3-relay").path, server.endpoint.url,
                                        "--hold-publishing", "4"], log: log)
            defer { relay.kill(SIGKILL); _ = relay.wait(timeout: 5) }
            func printed() -> [String] { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
            #expect(try eventually(120) { printed().first?.hasPrefix("http://") == true }, "the relay printed no address")
            var relayed = server.endpoint
            relayed.url = try #require(printed().first)

            let id = try farm.submit(["--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out",
                                      try farm.manifest("show", Self.manifest("show", bucket: bucket, prefix: "out/show"))])[0]
            let first = try farm.startCoordinator(["--workers", "1", "--lease", "2"], log: "first.log",
                                                  environment: ObjectPublicationTests.environment(relayed, farm))
            #expect(try eventually(180) { printed().contains("held") }, "\(first.log.suffix(3000))")
            kill(first.pid, SIGKILL)
            _ = first.wait(timeout: 10)
            // Cut short: the marker and some media are there, no entry point.
            let partial = try await Self.keys(s3, bucket, "out/show")
            #expect(partial.contains(".mediafarm-package.json") && !partial.contains("master.m3u8") && !partial.contains("manifest.mpd"), "\(partial)")
            #expect(try Self.outcome(farm, id).state == "running")

            let second = try farm.startCoordinator(["--workers", "1", "--lease", "2", "--exit-when-idle"], log: "second.log",
                                                   environment: ObjectPublicationTests.environment(server.endpoint, farm))
            #expect(second.wait(timeout: 120) == 0, "\(second.log.suffix(3000))")
            let job = try #require(try farm.status()[id])
            #expect(job["state"] as? String == "succeeded" && job.int == 1, "\(job)")
            #expect(second.log.contains("publication completed here"), "\(second.log.suffix(3000))")
            #expect(!second.events().contains { $0["event"] as? String == "started" }, "nothing was encoded again: \(second.log.suffix(3000))")
            let keys = try await Self.keys(s3, bucket, "out/show")
            #expect(keys.contains("master.m3u8") && keys.contains("manifest.mpd") && keys.contains("video-1/5.m4s"), "\(keys)")
            let report = try ChunkedPackageTests.streamReport(farm.out.appendingPathComponent("show.json").path)
            let findings = try StreamChecker.check(folder: try await Self.download(s3, bucket, "out/show"), report: report)
            #expect(findings.isEmpty, "\(findings)")
            #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)

            // The same package asked again at another prefix, answered by copies on the server, cut short the
            // same way: the next coordinator makes the copies left, from the queue. (A publication a rescuer
            // completed is not recorded for reuse: the package answered from is made first.)
            let base = try farm.submit(["--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out",
                                        try farm.manifest("base", Self.manifest("base", bucket: bucket, prefix: "out/base"))])[0]
            let made = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"], log: "base.log",
                                                 environment: ObjectPublicationTests.environment(server.endpoint, farm))
            #expect(made.wait(timeout: 120) == 0, "\(made.log.suffix(3000))")
            #expect(try Self.outcome(farm, base).state == "succeeded")
            let relayLog = farm.folder.appendingPathComponent("relay-copies.log").path
            let copyRelay = try Background(["/usr/bin/python3", TestPaths.packageRoot.appendingPathComponent("script/s3-relay").path, server.endpoint.url,
                                            "--hold-publishing", "4"], log: relayLog)
            defer { copyRelay.kill(SIGKILL); _ = copyRelay.wait(timeout: 5) }
            func relayed2() -> [String] { ((try? String(contentsOfFile: relayLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
            #expect(try eventually(120) { relayed2().first?.hasPrefix("http://") == true }, "the relay printed no address")
            var copying = server.endpoint
            copying.url = try #require(relayed2().first)
            let again = try farm.submit(["--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out",
                                         try farm.manifest("again", Self.manifest("again", bucket: bucket, prefix: "out/again"))])[0]
            let third = try farm.startCoordinator(["--workers", "1", "--lease", "2"], log: "third.log",
                                                  environment: ObjectPublicationTests.environment(copying, farm))
            #expect(try eventually(180) { relayed2().contains("held") }, "\(third.log.suffix(3000))")
            kill(third.pid, SIGKILL)
            _ = third.wait(timeout: 10)
            let copied = try await Self.keys(s3, bucket, "out/again")
            #expect(copied.contains(".mediafarm-package.json") && copied.count < keys.count && !copied.contains("master.m3u8"), "\(copied)")
            #expect(!third.events().contains { $0["event"] as? String == "started" }, "\(third.log.suffix(3000))")
            let fourth = try farm.startCoordinator(["--workers", "1", "--lease", "2", "--exit-when-idle"], log: "fourth.log",
                                                   environment: ObjectPublicationTests.environment(server.endpoint, farm))
            #expect(fourth.wait(timeout: 120) == 0, "\(fourth.log.suffix(3000))")
            #expect(try Self.outcome(farm, again).state == "succeeded")
            #expect(fourth.log.contains("publication completed here"), "\(fourth.log.suffix(3000))")
            #expect(!fourth.events().contains { $0["event"] as? String == "started" }, "nothing was encoded: \(fourth.log.suffix(3000))")
            #expect(try await Self.keys(s3, bucket, "out/again") == keys)
            for key in keys where key != ".mediafarm-package.json" {
                let (a, b) = (try await s3.get(S3Location(bucket: bucket, key: "out/base/" + key)), try await s3.get(S3Location(bucket: bucket, key: "out/again/" + key)))
                #expect(a.bytes == b.bytes, "\(key) differs")
            }
            await s3.shutdown()
        } catch {
            await s3.shutdown()  // a client left open ends the whole test process: the failure is reported instead
            throw error
        }
    }

    /// `mediafarm run` uploads the package itself once it is whole (a chunked one too: chunks need a
    /// coordinator); a marker that does not read is refused.
    @Test func runUploadsAPackageWholeToAPrefixAndAJunkMarkerIsRefused() async throws {
        let server = try TestS3.shared()
        let s3 = ObjectPublicationTests.client(server)
        do {
            let bucket = TestS3.bucketName("package-run")
            try await s3.createBucket(bucket)
            let farm = try Farm("s3-package-run")
            farm.queueURL = nil
            let environment = ObjectPublicationTests.environment(server, farm)
            let manifest = try farm.manifest("run", Self.manifest("run", bucket: bucket, prefix: "out/run"))
            // A package a killed run left half-written in the spool (no marker, untouched for 20 minutes): swept.
            let abandoned = farm.folder.appendingPathComponent("spool/.0f3a-run.mediafarm-staged-killed")
            try FileManager.default.createDirectory(at: abandoned.appendingPathComponent("video-1"), withIntermediateDirectories: true)
            try Data(count: 1000).write(to: abandoned.appendingPathComponent("video-1/1.m4s"))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -1200)], ofItemAtPath: abandoned.path)
            let ran = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out",
                                                                             manifest],
                                            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
            #expect(ran.status == 0, "\(ran.stderr)")
            #expect(!FileManager.default.fileExists(atPath: abandoned.path), "the abandoned package was left in the spool")
            let report = try ChunkedPackageTests.streamReport(farm.out.appendingPathComponent("run.json").path)
            #expect(try StreamChecker.check(folder: try await Self.download(s3, bucket, "out/run"), report: report).isEmpty)

            let chunked = try farm.manifest("chunked", """
                { "version": 1, "input": "in.mp4",
                  "stream": { "output": "s3://\(bucket)/out/chunked", "chunkSeconds": 4, "video": { "rungs": [{ "height": 144, "bitrate": 200000 }] } } }
                """)
            // A join at a prefix is a coordinator's: refused by run before any work.
            let join = try farm.manifest("join", """
                { "version": 1, "input": "in.mp4",
                  "stream": { "output": "s3://\(bucket)/out/joined", "join": [{ "output": "s3://\(bucket)/out/.joined.chunks-ab12/chunk-0001", "frames": [0, 60] }],
                              "video": { "rungs": [{ "height": 144, "bitrate": 200000 }] } } }
                """)
            let joinRun = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--output-root", "s3://\(bucket)/out", join],
                                                environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
            #expect(joinRun.status == 1 && joinRun.stderr.contains("$.stream.join: a package at a prefix joins its chunks by copies its coordinator makes"),
                    "\(joinRun.stderr)")
            #expect(try await Self.keys(s3, bucket, "out/joined").isEmpty)

            // Without a coordinator a package is made whole, its chunking aside.
            let whole = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--output-root", "s3://\(bucket)/out", chunked],
                                              environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
            #expect(whole.status == 0, "\(whole.stderr)")
            let chunkedKeys = try await Self.keys(s3, bucket, "out/chunked")
            #expect(chunkedKeys.contains("master.m3u8") && !chunkedKeys.contains { $0.contains("chunk") }, "\(chunkedKeys)")
            #expect(try await s3.list(S3Location(bucket: bucket, key: "")).allSatisfy { !$0.location.key.contains(".chunks-") })

            // A marker that does not read is no package the farm answers for: refused even with "overwrite".
            try await s3.put(S3Location(bucket: bucket, key: "out/junk/.mediafarm-package.json"), body: ByteBuffer(string: "{not json"))
            let junk = try farm.manifest("junk", Self.manifest("junk", bucket: bucket, prefix: "out/junk", overwrite: true))
            let junkRun = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--output-root", farm.out.path, "--output-root", "s3://\(bucket)/out", junk],
                                                environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
            #expect(junkRun.status == 1 && junkRun.stderr.contains("out/junk/.mediafarm-package.json: is no marker of a package MediaFarm made that it can read"),
                    "\(junkRun.stderr)")
            #expect(try await Self.keys(s3, bucket, "out/junk") == [".mediafarm-package.json"])
            await s3.shutdown()
        } catch {
            await s3.shutdown()  // a client left open ends the whole test process: the failure is reported instead
            throw error
        }
    }
}
