import FarmTestSupport
import Foundation
import NIOCore
import Testing
@testable import S3Client

/// The client against a real S3-compatible server (moto, which checks signatures): objects, ranges,
/// conditional writes, multipart uploads, listings, and the errors a user meets.
@Suite struct S3ClientTests {
    static func client(secret: String? = nil, accessKey: String? = nil, endpoint: String? = nil, server: TestS3.Endpoint? = nil) throws -> S3 {
        let server = try server ?? TestS3.shared()
        var configuration = S3Configuration(endpoint: endpoint ?? server.url, region: "us-east-1", pathStyle: true,
                                            credentials: SigV4Credentials(accessKeyID: accessKey ?? server.accessKey, secretAccessKey: secret ?? server.secret))
        configuration.maxAttempts = 3
        configuration.backoff = 0.05
        return S3(configuration: configuration)
    }

    static func bucket(_ s3: S3) async throws -> String {
        let name = TestS3.bucketName()
        try await s3.createBucket(name)
        return name
    }

    /// Keys as users write them: folders, spaces, non-ASCII, characters the signature encodes. A server of
    /// the test's own that takes any signature: moto's check refuses correct signatures of such keys, and
    /// of listings by a prefix with "/" (the signatures of such requests are the test suite's
    /// get-utf8, get-space and get-vanilla-query-unreserved cases).
    @Test func objectsAreWrittenReadInRangesListedAndDeleted() async throws {
        let server = try TestS3.Server(checksSignatures: false)
        defer { server.stop() }
        let s3 = try Self.client(server: server.endpoint)
        defer { Task { await s3.shutdown() } }
        let bucket = try await Self.bucket(s3)
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        for key in ["in/clip one.mp4", "in/été/(take 2)+final.mov", "a~b_c-d.e"] {
            let location = S3Location(bucket: bucket, key: key)
            let etag = try await s3.put(location, body: ByteBuffer(bytes: bytes))
            let head = try await s3.head(location)
            #expect(head.size == 100_000)
            #expect(head.etag == etag)
            let whole = try await s3.get(location)
            #expect(Array(buffer: whole.bytes) == bytes)
            let part = try await s3.get(location, range: 1000..<1010)
            #expect(Array(buffer: part.bytes) == Array(bytes[1000..<1010]))
            #expect(part.offset == 1000 && part.objectSize == 100_000 && part.etag == etag)
            // A range running past the end is cut at the end.
            let tail = try await s3.get(location, range: 99_990..<200_000)
            #expect(Array(buffer: tail.bytes) == Array(bytes[99_990...]))
        }
        let listed = try await s3.list(S3Location(bucket: bucket, key: "in/"))
        #expect(listed.map(\.location.key) == ["in/clip one.mp4", "in/été/(take 2)+final.mov"])
        #expect(listed.allSatisfy { $0.size == 100_000 })
        try await s3.delete(S3Location(bucket: bucket, key: "a~b_c-d.e"))
        #expect(try await s3.exists(S3Location(bucket: bucket, key: "a~b_c-d.e")) == false)
        #expect(try await s3.exists(S3Location(bucket: bucket, key: "in/clip one.mp4")))
    }

    /// A demuxer's sequential read of a 70 MB object in 32 KiB reads (as FFmpeg's AVIO asks): every byte
    /// fetched once, in windows growing to 16 MiB with the next ones fetched ahead (10 requests: the first
    /// 64 KiB, then windows doubling from 256 KiB; not one per read); a seek back to where nothing is kept
    /// fetches 64 KiB from there.
    @Test func aSequentialReadFetchesEachByteOnceInGrowingWindows() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let location = S3Location(bucket: try await Self.bucket(s3), key: "long.bin")
        let size = 70 << 20
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let bytes = (0..<size).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        try await s3.put(location, body: ByteBuffer(bytes: bytes))
        let reader = S3ObjectReader(s3: s3, location: location)
        // The reader blocks (it serves a demuxer's callback): off the concurrency pool.
        let (read, sequentialRequests, back) = try await withCheckedThrowingContinuation { (done: CheckedContinuation<([UInt8], Int, [UInt8]), any Error>) in
            Thread {
                do {
                    var read = [UInt8](repeating: 0, count: size)
                    var offset = 0
                    while offset < size {
                        let n = try read.withUnsafeMutableBytes { all in
                            try reader.read(at: Int64(offset), into: UnsafeMutableRawBufferPointer(rebasing: all[offset..<min(size, offset + 32_768)]))
                        }
                        guard n > 0 else { break }
                        offset += n
                    }
                    let requests = reader.requests
                    var back = [UInt8](repeating: 0, count: 1000)
                    _ = try back.withUnsafeMutableBytes { try reader.read(at: 5_000_000, into: $0) }
                    done.resume(returning: (read, requests, back))
                } catch {
                    done.resume(throwing: error)
                }
            }.start()
        }
        #expect(read == bytes)
        #expect(sequentialRequests == 10, "\(sequentialRequests) requests")
        #expect(reader.bytesFetched == Int64(size) + 65_536, "\(reader.bytesFetched) bytes fetched for \(size)")
        #expect(back == Array(bytes[5_000_000..<5_001_000]))
        #expect(reader.requests == 11)
    }

    /// Windows fetched ahead are stopped when their reader closes (an export that failed or was cancelled)
    /// or is freed: their requests are cancelled, nothing more is counted or fetched after it.
    @Test(arguments: [true, false]) func fetchesAheadStopWhenTheReaderCloses(explicitly: Bool) async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let location = S3Location(bucket: try await Self.bucket(s3), key: "ahead.bin")
        let size = 120 << 20
        try await s3.put(location, body: ByteBuffer(repeating: 0x5A, count: size))
        let outcome = try await withCheckedThrowingContinuation { (done: CheckedContinuation<(inFlight: Int, before: Int, after: Int, left: Int), any Error>) in
            Thread {
                do {
                    var reader: S3ObjectReader? = S3ObjectReader(s3: s3, location: location)
                    let counters = reader!.sharedCounters
                    var buffer = [UInt8](repeating: 0, count: 32_768)
                    var offset: Int64 = 0
                    // Read on until windows are being fetched ahead.
                    while reader!.fetchesInFlight == 0, offset < Int64(size) {
                        offset += Int64(try buffer.withUnsafeMutableBytes { try reader!.read(at: offset, into: $0) })
                    }
                    let inFlight = reader!.fetchesInFlight
                    let before = counters.withLock { $0.requests }
                    if explicitly { reader!.close() } else { reader = nil }
                    // The cancelled fetches end as soon as they are scheduled; beside the whole suite the task pool
                    // may take a while to get to them (on 2 cores, tests that wait on ffmpeg or GStreamer hold its
                    // threads: 3 were still unscheduled after 120 s in one CI run). Once none is in flight the
                    // count is final: a fetch ahead counts its request before its task ends, the closed reader
                    // starts no more, and this thread reads nothing more, so no wait after it could see another.
                    let deadline = Date().addingTimeInterval(900)
                    while counters.withLock({ $0.inFlight }) > 0, Date() < deadline { usleep(10_000) }
                    withExtendedLifetime(reader) {}
                    done.resume(returning: (inFlight, before, counters.withLock { $0.requests }, counters.withLock { $0.inFlight }))
                } catch {
                    done.resume(throwing: error)
                }
            }.start()
        }
        #expect(outcome.inFlight > 0)
        #expect(outcome.left == 0, "fetches still running after the reader closed")
        #expect(outcome.after == outcome.before, "\(outcome.after - outcome.before) fetches ahead were completed after the reader closed")
    }

    @Test func aConditionalWriteDoesNotReplaceAnObject() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let location = S3Location(bucket: try await Self.bucket(s3), key: "out.mp4")
        try await s3.put(location, body: ByteBuffer(string: "first"), ifNoneMatch: true)
        await #expect { try await s3.put(location, body: ByteBuffer(string: "second"), ifNoneMatch: true) } throws: { error in
            (error as? S3Error)?.kind == .alreadyExists
        }
        #expect(String(buffer: try await s3.get(location).bytes) == "first")
    }

    @Test func aReadOfAnObjectThatChangedFails() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let location = S3Location(bucket: try await Self.bucket(s3), key: "in.bin")
        let etag = try await s3.put(location, body: ByteBuffer(string: "version one"))
        _ = try await s3.get(location, range: 0..<3, ifMatch: etag)
        try await s3.put(location, body: ByteBuffer(string: "version two"))
        let error = await #expect(throws: S3Error.self) { try await s3.get(location, range: 0..<3, ifMatch: etag) }
        #expect(error?.kind == .changed)
        #expect(error?.description.contains("s3://\(location.bucket)/in.bin: the object changed") == true)
    }

    /// A copy on the server: a multipart object copied whole as the one part of an upload of another key
    /// (UploadPartCopy), only if its entity tag is still the one given, and completed only where no object is.
    /// A missing source is named. (moto ignores `x-amz-copy-source-if-match`: a changed source is copied
    /// there, so the refusal S3 answers with, a 412, is not seen here.)
    @Test func anObjectIsCopiedOnTheServerAsAPartOfAnUpload() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = try await Self.bucket(s3)
        let source = S3Location(bucket: bucket, key: "pkg/video-1/1.m4s")
        let bytes = (0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let upload = try await s3.createMultipartUpload(source)
        let parts = [try await s3.uploadPart(upload, number: 1, body: ByteBuffer(bytes: bytes[..<(5 << 20)])),
                     try await s3.uploadPart(upload, number: 2, body: ByteBuffer(bytes: bytes[(5 << 20)...]))]
        let etag = try await s3.completeMultipartUpload(upload, parts: parts)
        #expect(etag.hasSuffix("-2"), "\(etag)")
        let target = S3Location(bucket: bucket, key: "again/video-1/1.m4s")
        let copying = try await s3.createMultipartUpload(target, contentType: "video/iso.segment")
        let part = try await s3.uploadPartCopy(copying, number: 1, source: source, size: Int64(bytes.count), ifMatch: etag)
        #expect(part.size == Int64(bytes.count) && !part.etag.isEmpty)
        #expect(try await s3.exists(target) == false, "nothing is there before the completion")
        let copied = try await s3.completeMultipartUpload(copying, parts: [part], ifNoneMatch: true)
        let head = try await s3.head(target)
        #expect(head.etag == copied && copied == S3.multipartETag([part]) && head.size == Int64(bytes.count), "\(head) \(copied)")
        #expect(Array(buffer: try await s3.get(target, ifMatch: copied).bytes) == bytes)
        let response = try await s3.send(S3.Operation(method: .HEAD, bucket: bucket, key: target.key))
        #expect(response.header("Content-Type") == "video/iso.segment")
        // Completed again where the copy is: refused, the copy left as it was.
        let again = try await s3.createMultipartUpload(target)
        let second = try await s3.uploadPartCopy(again, number: 1, source: source, size: Int64(bytes.count))
        let refused = await #expect(throws: S3Error.self) { try await s3.completeMultipartUpload(again, parts: [second], ifNoneMatch: true) }
        #expect(refused?.kind == .alreadyExists, "\(String(describing: refused))")
        try await s3.abortMultipartUpload(again)
        let missing = await #expect(throws: S3Error.self) {
            try await s3.uploadPartCopy(again, number: 1, source: S3Location(bucket: bucket, key: "pkg/none.m4s"), size: 1)
        }
        #expect(missing?.kind == .noSuchKey || missing?.kind == .noSuchUpload, "\(String(describing: missing))")
        let none = try await s3.createMultipartUpload(S3Location(bucket: bucket, key: "again/none.m4s"))
        let noSource = await #expect(throws: S3Error.self) {
            try await s3.uploadPartCopy(none, number: 1, source: S3Location(bucket: bucket, key: "pkg/none.m4s"), size: 1)
        }
        #expect(noSource?.kind == .noSuchKey, "\(String(describing: noSource))")
        try await s3.abortMultipartUpload(none)
    }

    @Test func aMultipartUploadIsInvisibleUntilCompletedAndListedUntilEnded() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = try await Self.bucket(s3)
        let location = S3Location(bucket: bucket, key: "renders/big.mov")
        let part1 = [UInt8](repeating: 1, count: Int(S3.minimumPartSize)), part2 = [UInt8](repeating: 2, count: 1234)
        let upload = try await s3.createMultipartUpload(location, contentType: "video/quicktime")
        let p1 = try await s3.uploadPart(upload, number: 1, body: ByteBuffer(bytes: part1))
        #expect(try await s3.exists(location) == false)
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "renders")).map(\.uploadID) == [upload.uploadID])
        let p2 = try await s3.uploadPart(upload, number: 2, body: ByteBuffer(bytes: part2))
        // A worker that lost its memory finds its parts on the server.
        #expect(try await s3.listParts(upload) == [p1, p2])
        try await s3.completeMultipartUpload(upload, parts: [p2, p1], ifNoneMatch: true)
        let head = try await s3.head(location)
        #expect(head.size == Int64(part1.count + part2.count))
        #expect(head.etag.hasSuffix("-2"))
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)

        // Abandoned: aborted, and gone from the listing; aborting again is not an error.
        let other = try await s3.createMultipartUpload(S3Location(bucket: bucket, key: "renders/abandoned.mov"))
        _ = try await s3.uploadPart(other, number: 1, body: ByteBuffer(bytes: part2))
        try await s3.abortMultipartUpload(other)
        try await s3.abortMultipartUpload(other)
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)
        #expect(try await s3.exists(S3Location(bucket: bucket, key: "renders/abandoned.mov")) == false)
    }

    @Test func errorsNameTheObjectAndTheProblemAndNeverTheSecret() async throws {
        let server = try TestS3.shared()
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = try await Self.bucket(s3)
        try await s3.put(S3Location(bucket: bucket, key: "there.mp4"), body: ByteBuffer(string: "x"))

        let missingKey = await #expect(throws: S3Error.self) { try await s3.get(S3Location(bucket: bucket, key: "missing.mp4")) }
        #expect(missingKey?.kind == .noSuchKey)
        #expect(missingKey?.description == "s3://\(bucket)/missing.mp4: no such object (HTTP 404 NoSuchKey)")
        let missingHead = await #expect(throws: S3Error.self) { try await s3.head(S3Location(bucket: bucket, key: "missing.mp4")) }
        #expect(missingHead?.kind == .noSuchKey)

        let missingBucket = await #expect(throws: S3Error.self) { try await s3.get(S3Location(bucket: "no-such-bucket-here", key: "a.mp4")) }
        #expect(missingBucket?.kind == .noSuchBucket)
        #expect(missingBucket?.description.hasPrefix("s3://no-such-bucket-here/: no such bucket") == true)

        let wrongSecret = try Self.client(secret: "not-the-secret-at-all")
        defer { Task { await wrongSecret.shutdown() } }
        let refused = await #expect(throws: S3Error.self) { try await wrongSecret.get(S3Location(bucket: bucket, key: "there.mp4")) }
        #expect(refused?.kind == .signatureRefused)
        #expect(refused?.description.contains("AWS_SECRET_ACCESS_KEY") == true)
        #expect(refused?.description.contains("not-the-secret-at-all") == false)
        #expect(refused?.description.contains(server.secret) == false)

        let unknownKey = try Self.client(secret: "x", accessKey: "AKIANOTAKEYOFTHISSERVER")
        defer { Task { await unknownKey.shutdown() } }
        let unknown = await #expect(throws: S3Error.self) { try await unknownKey.head(S3Location(bucket: bucket, key: "there.mp4")) }
        #expect(unknown?.kind == .unknownAccessKey || unknown?.kind == .accessDenied)
    }

    @Test func anUnreachableEndpointFailsOnceItsConnectTimeoutIsOver() async throws {
        // A port nothing listens on: async-http-client tries to connect for the connect timeout (5 s), and
        // the client does not try again after that.
        let s3 = try Self.client(endpoint: "http://127.0.0.1:9")
        defer { Task { await s3.shutdown() } }
        let error = await #expect(throws: S3Error.self) { try await s3.get(S3Location(bucket: "media", key: "in.mp4")) }
        #expect(error?.kind == .unreachable)
        #expect(error?.description == "s3://media/in.mp4: cannot reach http://127.0.0.1:9: connection refused (tried for 5 s)")
    }

    @Test func theEnvironmentConfiguresTheClient() throws {
        let configured = try S3Configuration.fromEnvironment([
            "MEDIAFARM_S3_ENDPOINT": "http://10.0.0.5:9000/", "AWS_REGION": "eu-west-3",
            "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "very-secret", "AWS_SESSION_TOKEN": "token",
        ])
        #expect(configured.endpoint == "http://10.0.0.5:9000")
        #expect(configured.region == "eu-west-3")
        #expect(configured.pathStyle)
        #expect(configured.credentials.sessionToken == "token")
        #expect(!configured.description.contains("very-secret") && !configured.description.contains("token"))

        let aws = try S3Configuration.fromEnvironment(["AWS_DEFAULT_REGION": "us-west-2", "AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "B"])
        #expect(aws.endpoint == "https://s3.us-west-2.amazonaws.com")
        #expect(!aws.pathStyle)
        // The AWS tools' endpoint variables, in the SDKs' order (ours first, then the service's, then the global one).
        let keys = ["AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "B"]
        let global = try S3Configuration.fromEnvironment(keys.merging(["AWS_ENDPOINT_URL": "http://minio:9000"]) { a, _ in a })
        #expect(global.endpoint == "http://minio:9000" && global.pathStyle && global.endpointSource == "AWS_ENDPOINT_URL")
        let service = try S3Configuration.fromEnvironment(keys.merging(["AWS_ENDPOINT_URL": "http://minio:9000", "AWS_ENDPOINT_URL_S3": "http://s3only:9000"]) { a, _ in a })
        #expect(service.endpoint == "http://s3only:9000" && service.endpointSource == "AWS_ENDPOINT_URL_S3")
        let ours = try S3Configuration.fromEnvironment(keys.merging(["AWS_ENDPOINT_URL_S3": "http://s3only:9000", "MEDIAFARM_S3_ENDPOINT": "http://ours:9000"]) { a, _ in a })
        #expect(ours.endpoint == "http://ours:9000" && ours.endpointSource == "MEDIAFARM_S3_ENDPOINT")
        let bad = #expect(throws: S3Error.self) { try S3Configuration.fromEnvironment(keys.merging(["AWS_ENDPOINT_URL": "minio:9000/x"]) { a, _ in a }) }
        #expect(bad?.description.contains("AWS_ENDPOINT_URL") == true, "\(String(describing: bad))")

        // A credentials file's profile.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mf-credentials-\(UUID().uuidString)").path
        try "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = s1\n\n[profile render]\naws_access_key_id=AKIARENDER\naws_secret_access_key=s2\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try S3Configuration.fromEnvironment(["AWS_SHARED_CREDENTIALS_FILE": file]).credentials.accessKeyID == "AKIADEFAULT")
        #expect(try S3Configuration.fromEnvironment(["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "render"]).credentials.accessKeyID == "AKIARENDER")
        #expect(throws: S3Error.self) { try S3Configuration.fromEnvironment(["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "nope"]) }
        let none = #expect(throws: S3Error.self) { try S3Configuration.fromEnvironment(["HOME": "/nonexistent"]) }
        #expect(none?.description.contains("AWS_ACCESS_KEY_ID") == true)
        let badEndpoint = #expect(throws: S3Error.self) {
            try S3Configuration.fromEnvironment(["MEDIAFARM_S3_ENDPOINT": "ftp://x", "AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "B"])
        }
        #expect(badEndpoint?.description.hasPrefix("MEDIAFARM_S3_ENDPOINT:") == true)
    }

    @Test func locationsAreParsedAndBadOnesNamed() throws {
        let location = try S3Location(parsing: "s3://media-in/2026/clip one.mp4")
        #expect(location.bucket == "media-in" && location.key == "2026/clip one.mp4" && location.name == "clip one.mp4")
        #expect(location.description == "s3://media-in/2026/clip one.mp4")
        for (text, problem) in [("s3://Media/x", "lower-case"), ("s3://ab/x", "3 to 63"), ("s3://bucket", "names a bucket"),
                                ("s3://bucket/", "names a bucket"), ("s3:///x", "no bucket"), ("s3://-bucket/x", "begin and end")] {
            let error = #expect(throws: S3Error.self) { try S3Location(parsing: text) }
            #expect(error?.description.contains(problem) == true, "\(text): \(String(describing: error))")
        }
        #expect(try S3Location(parsing: "s3://bucket/", prefix: true).key == "")
    }
}
