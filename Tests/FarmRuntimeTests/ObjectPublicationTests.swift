import FarmModel
import FarmStore
import FarmTestSupport
import Foundation
import NIOCore
import S3Client
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Outputs bound for object storage through the queue, when things go wrong (a real server: moto). The
/// worker uploads the parts, the coordinator completes the upload under the lease; a worker killed in
/// the middle of an upload leaves it for the next attempt to resume, a job that ends without success
/// leaves no upload open, a publication cut short is completed by any host from what the queue holds,
/// and an endpoint that stops fails the attempt clearly and the retry succeeds.
@Suite(.serialized) struct ObjectPublicationTests {
    /// A 720p movie of about 40 MB (lossless H.264): a passthrough export of it is uploaded in five
    /// 8 MiB parts.
    static let largeMovie: Result<URL, any Error> = Result {
        let movie = try TestPaths.makeTemporaryFolder("s3-large").appendingPathComponent("large.mp4")
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-t", "20",
                                           "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-g", "30", movie.path])
        return movie
    }

    static func client(_ server: TestS3.Endpoint) -> S3 {
        S3(configuration: S3Configuration(endpoint: server.url, region: "us-east-1", pathStyle: true,
                                          credentials: SigV4Credentials(accessKeyID: server.accessKey, secretAccessKey: server.secret)))
    }

    /// What a coordinator needs to reach `server`, with a spool folder of the farm's.
    static func environment(_ server: TestS3.Endpoint, _ farm: Farm, _ extra: [String: String] = [:]) -> [String: String] {
        var environment = server.environment
        environment["MEDIAFARM_SPOOL"] = farm.folder.appendingPathComponent("spool").path
        environment.merge(extra) { $1 }
        return environment
    }

    /// A passthrough of the large movie to `s3://BUCKET/out/NAME.mp4`.
    func passthroughManifest(_ farm: Farm, _ name: String, bucket: String) throws -> String {
        try farm.manifest(name, """
            { "version": 1, "name": "\(name)", "input": "\(try Self.largeMovie.get().path)",
              "export": { "mode": "passthrough", "output": "s3://\(bucket)/out/\(name).mp4" } }
            """)
    }

    /// The first upload of `location` once it holds `parts` parts. (The whole bucket is listed: moto
    /// refuses the correct signature of a listing whose prefix has a "/".)
    func stalledUpload(_ s3: S3, _ location: S3Location, parts: Int) async throws -> S3Upload? {
        func found() async throws -> S3Upload? {
            guard let upload = try await s3.listMultipartUploads(S3Location(bucket: location.bucket, key: "")).first(where: { $0.key == location.key }),
                  try await s3.listParts(upload).count >= parts else { return nil }
            return upload
        }
        // Looked at once more after the deadline: a sleeping task on a busy machine may wake only after it.
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline {
            if let upload = try await found() { return upload }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await found()
    }

    /// The worker process of job `id` (its first `started` event).
    func workerPID(_ coordinator: Farm.Coordinator, _ id: Int64) -> Int32? {
        coordinator.events().first { $0["event"] as? String == "started" && ($0["job"] as? NSNumber)?.int64Value == id }
            .flatMap { ($0["pid"] as? NSNumber)?.int32Value }
    }

    /// The same passthrough, written to a local file by `mediafarm run`: what the object must be, byte for byte.
    func localExport(_ farm: Farm) throws -> Data {
        let manifest = try farm.manifest("local", """
            { "version": 1, "input": "\(try Self.largeMovie.get().path)", "export": { "mode": "passthrough", "output": "out/local.mp4" } }
            """)
        let ran = try farm.mediafarm(["run", manifest])
        guard ran.status == 0 else { throw FixtureError("mediafarm run: \(ran.stderr)") }
        return try Data(contentsOf: farm.out.appendingPathComponent("local.mp4"))
    }

    /// A passthrough of the large movie to an object, with `maxAttempts`, whose first upload stalls after
    /// two parts (a test hook of the worker's) and whose worker is killed there with SIGKILL; then the
    /// coordinator is left to finish.
    struct KilledMidUpload {
        let s3: S3
        let bucket: String
        let farm: Farm
        let id: Int64
        let coordinator: Farm.Coordinator
        let stalled: S3Upload
        var location: S3Location { S3Location(bucket: bucket, key: "out/large.mp4") }
    }

    func killMidUpload(_ label: String, maxAttempts: Int) async throws -> KilledMidUpload {
        let server = try TestS3.shared()
        let s3 = Self.client(server)
        do {
            return try await killMidUpload(label, maxAttempts: maxAttempts, server: server, s3: s3)
        } catch {
            await s3.shutdown()  // a client left open ends the whole test process: the failure is reported instead
            throw error
        }
    }

    func killMidUpload(_ label: String, maxAttempts: Int, server: TestS3.Endpoint, s3: S3) async throws -> KilledMidUpload {
        let bucket = TestS3.bucketName(label)
        try await s3.createBucket(bucket)
        let farm = try Farm("s3-\(label)")
        let id = try farm.submit(["--output-root", "s3://\(bucket)/out", "--max-attempts", String(maxAttempts),
                                  try passthroughManifest(farm, "large", bucket: bucket)])[0]
        let coordinator = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"],
                                                    environment: Self.environment(server, farm, ["MEDIAFARM_TEST_UPLOAD_STALL": "2"]))
        let location = S3Location(bucket: bucket, key: "out/large.mp4")
        guard let stalled = try await stalledUpload(s3, location, parts: 2) else {
            kill(coordinator.pid, SIGKILL)
            throw FixtureError("no upload stalled after 2 parts: \(coordinator.log.suffix(2000))")
        }
        #expect(kill(try #require(workerPID(coordinator, id)), SIGKILL) == 0)
        return KilledMidUpload(s3: s3, bucket: bucket, farm: farm, id: id, coordinator: coordinator, stalled: stalled)
    }

    @Test func aWorkerKilledMidUploadIsResumedByTheNextAttempt() async throws {
        let run = try await killMidUpload("resume", maxAttempts: 3)
        let (s3, farm, id, coordinator) = (run.s3, run.farm, run.id, run.coordinator)
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5); Task { await s3.shutdown() } }
        #expect(coordinator.wait(timeout: 180) == 0, "\(coordinator.log.suffix(3000))")
        let job = try #require(try farm.status()[id])
        #expect(job["state"] as? String == "succeeded" && job.int == 2, "\(job)")
        #expect(job.errors.count == 1 && job.errors[0].contains("SIGKILL"), "\(job)")
        // The second attempt went on with the first one's upload: its two parts were not sent again.
        let parts = Int((try FileManager.default.attributesOfItem(atPath: try Self.largeMovie.get().path)[.size] as! NSNumber).int64Value / (8 << 20)) + 1
        #expect(parts > 2)
        let resumed = coordinator.events().compactMap { $0["message"] as? String }.filter { $0.contains("resumed the upload") }
        #expect(resumed.count == 1 && resumed[0].contains(run.stalled.uploadID) && resumed[0].contains("2 of \(parts) parts were there"), "\(resumed)")
        // The object is the export, byte for byte, and no upload is left open.
        let object = try await s3.get(run.location)
        #expect(Data(Array(buffer: object.bytes)) == (try localExport(farm)))
        #expect(try await s3.listMultipartUploads(S3Location(bucket: run.bucket, key: "")).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: farm.folder.appendingPathComponent("spool").path).isEmpty)
    }

    @Test func aJobThatEndsWithoutSuccessLeavesNoUploadOpen() async throws {
        let run = try await killMidUpload("dead", maxAttempts: 1)
        let (s3, coordinator) = (run.s3, run.coordinator)
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5); Task { await s3.shutdown() } }
        #expect(coordinator.wait(timeout: 120) == 1, "\(coordinator.log.suffix(3000))")
        #expect(try run.farm.state(run.id) == "dead")
        #expect(try await s3.listMultipartUploads(S3Location(bucket: run.bucket, key: "")).isEmpty, "\(coordinator.log.suffix(2000))")
        #expect(try await s3.exists(run.location) == false)
        #expect(coordinator.log.contains("aborted 1 unfinished upload"), "\(coordinator.log.suffix(2000))")
    }

    /// Puts job `id` where a coordinator that died while publishing leaves it: claimed by "gone:1:a" with
    /// a lease that runs out at once, phase `publishing` with the worker's result, whose upload of the
    /// report is `upload` (its parts sent). Nothing is in any spool folder: the rescuer may be anywhere.
    func abandonWhilePublishing(_ farm: Farm, _ id: Int64, report: String, upload: S3Upload, parts: [S3Part]) async throws {
        let store = try SQLiteJobStore(path: farm.queue, create: false)
        let now = Date()
        let job = try #require(try await store.claim(limit: 1, owner: "gone:1:a", leaseDuration: 0.5, at: now).first)
        #expect(job.id == id)
        let token = try #require(job.lease?.token)
        var result = JobResult(name: job.name, succeeded: true, report: report, seconds: 1)
        result.uploads = [ObjectUpload(address: report, uploadID: upload.uploadID, size: parts.reduce(0) { $0 + $1.size },
                                       parts: parts.map { ObjectUpload.Part(number: $0.number, etag: $0.etag, size: $0.size) })]
        let resultJSON = String(decoding: try JSONEncoder().encode(result), as: UTF8.self)
        #expect(try await store.renew([LeaseRenewal(id: id, token: token, progress: 1, phase: "publishing", result: resultJSON)],
                                      leaseDuration: 0.5, at: now).isEmpty)
    }

    @Test func aPublicationCutShortIsCompletedFromTheQueueOnAnyHost() async throws {
        let server = try TestS3.shared()
        let s3 = Self.client(server)
        defer { Task { await s3.shutdown() } }
        let bucket = TestS3.bucketName("rescue")
        try await s3.createBucket(bucket)
        let farm = try Farm("s3-rescue")
        // Two jobs cut short while publishing: one before its upload was completed, one just after.
        var expected: [String: Data] = [:]
        for name in ["before", "after"] {
            let report = "s3://\(bucket)/out/\(name).json"
            let id = try farm.submit(["--output-root", "s3://\(bucket)/out",
                                      try farm.manifest(name, #"{ "version": 1, "name": "\#(name)", "input": "in.mp4", "report": "\#(report)" }"#)])[0]
            let location = S3Location(bucket: bucket, key: "out/\(name).json")
            let first = Data((0..<(5 << 20 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31) }), second = Data("the end of \(name)".utf8)
            expected[name] = first + second
            let upload = try await s3.createMultipartUpload(location)
            let parts = [try await s3.uploadPart(upload, number: 1, body: ByteBuffer(bytes: first)),
                         try await s3.uploadPart(upload, number: 2, body: ByteBuffer(bytes: second))]
            try await abandonWhilePublishing(farm, id, report: report, upload: upload, parts: parts)
            if name == "after" { try await s3.completeMultipartUpload(upload, parts: parts) }
        }
        let coordinator = try farm.startCoordinator(["--workers", "1", "--lease", "2", "--exit-when-idle"], environment: Self.environment(server, farm))
        #expect(coordinator.wait(timeout: 60) == 0, "\(coordinator.log)")
        for (id, job) in try farm.status() {
            #expect(job["state"] as? String == "succeeded" && job.int == 1 && job.errors.isEmpty, "job \(id): \(job)")
        }
        // Nothing ran again; each object is whole, once.
        #expect(!coordinator.events().contains { $0["event"] as? String == "started" }, "\(coordinator.log)")
        #expect(coordinator.log.components(separatedBy: "stopped while publishing attempt 1; publication completed here").count == 3, "\(coordinator.log)")
        for (name, data) in expected {
            #expect(Data(Array(buffer: try await s3.get(S3Location(bucket: bucket, key: "out/\(name).json")).bytes)) == data)
        }
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)
    }

    @Test func anEndpointThatStopsMidJobFailsTheAttemptClearlyAndTheRetrySucceeds() async throws {
        // A server of the test's own, which it stops and starts again on the same port (moto keeps
        // nothing: the bucket is made again). It takes any signature, since a new server has new keys.
        let first = try TestS3.Server(checksSignatures: false)
        let bucket = TestS3.bucketName("restart")
        let s3 = Self.client(first.endpoint)
        defer { Task { await s3.shutdown() } }
        try await s3.createBucket(bucket)
        let farm = try Farm("s3-restart")
        let manifest = try farm.manifest("slow", """
            { "version": 1, "name": "slow", "input": "in.mp4", "scale": [{"start": "0", "duration": "10", "rate": "1/30"}],
              "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "s3://\(bucket)/out/slow.mp4" } }
            """)
        let id = try farm.submit(["--output-root", "s3://\(bucket)/out", "--max-attempts", "5", manifest])[0]
        let coordinator = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"], environment: Self.environment(first.endpoint, farm))
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        #expect(try eventually(120) { try farm.status()[id]?["phase"] as? String == "encoding" }, "\(coordinator.log.suffix(2000))")
        first.stop()
        #expect(try eventually(120) { try farm.status()[id]?.errors.isEmpty == false }, "\(coordinator.log.suffix(2000))")
        let error = try #require(try farm.status()[id]?.errors.first)
        #expect(error.contains("s3://\(bucket)/out/slow.mp4") && error.contains("cannot upload") && error.contains(first.endpoint.url), "\(error)")
        let second = try TestS3.Server(port: first.port, checksSignatures: false)
        defer { second.stop() }
        try await s3.createBucket(bucket)

        #expect(coordinator.wait(timeout: 180) == 0, "\(coordinator.log.suffix(3000))")
        let job = try #require(try farm.status()[id])
        #expect(job["state"] as? String == "succeeded" && (job.int ?? 0) >= 2, "\(job)")
        let object = try await s3.head(S3Location(bucket: bucket, key: "out/slow.mp4"))
        #expect(object.size > 0)
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)
    }

    /// A chunked export from an object to an object: the chunks are objects beside the output (any host
    /// may run one), the join reads them through ranged reads, and when the export ends only its output and
    /// report are left in the bucket, with no upload open. (A private server that takes any signature: the
    /// chunks' removal lists their prefix, whose "/" moto refuses to sign.)
    @Test func aChunkedExportFromAnObjectToAnObjectLeavesOnlyItsOutput() async throws {
        let server = try TestS3.Server(checksSignatures: false)
        defer { server.stop() }
        let s3 = Self.client(server.endpoint)
        defer { Task { await s3.shutdown() } }
        let bucket = TestS3.bucketName("chunks")
        try await s3.createBucket(bucket)
        let farm = try Farm("s3-chunks")
        let source = try ChunkedExportTests.source(in: farm, seconds: 12, size: "320x240")
        try await s3.put(S3Location(bucket: bucket, key: "in/source.mp4"), body: ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: source))))
        let manifest = try farm.manifest("long", """
            { "version": 1, "name": "long", "edits": [{ "source": "s3://\(bucket)/in/source.mp4" }], "reuse": false,
              "report": "s3://\(bucket)/out/long.json",
              "export": { "mode": "constantFrameRate", "frameRate": 30, "chunkSeconds": 4, "output": "s3://\(bucket)/out/long.mp4",
                          "video": { "preset": "ultrafast" } } }
            """)
        let id = try farm.submit(["--output-root", "s3://\(bucket)/out", manifest])[0]
        let coordinator = try farm.startCoordinator(["--workers", "2", "--exit-when-idle"], environment: Self.environment(server.endpoint, farm))
        #expect(coordinator.wait(timeout: 240) == 0, "\(coordinator.log.suffix(3000))")
        let jobs = try farm.status()
        #expect(jobs[id]?["state"] as? String == "succeeded", "\(jobs[id] ?? [:])")
        let chunks = jobs.values.compactMap { $0["name"] as? String }.filter { $0.hasPrefix("long [chunk ") }
        #expect(chunks.count == 3, "\(chunks)")
        let keys = try await s3.list(S3Location(bucket: bucket, key: "")).map(\.location.key).sorted()
        #expect(keys == ["in/source.mp4", "out/long.json", "out/long.mp4"], "\(keys)")
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)
        let local = farm.folder.appendingPathComponent("long.mp4")
        try Data(try await s3.get(S3Location(bucket: bucket, key: "out/long.mp4")).bytes.readableBytesView).write(to: local)
        #expect(try ChunkedExportTests.decodedFrames(local.path) == 360)
        let report = try JSONSerialization.jsonObject(with: Data(try await s3.get(S3Location(bucket: bucket, key: "out/long.json")).bytes.readableBytesView))
        #expect(((report as? [String: Any])?["chunks"] as? [Any])?.count == 3, "\(report)")
    }
}
