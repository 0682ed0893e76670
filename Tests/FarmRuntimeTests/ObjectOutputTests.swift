import Crypto
import FarmTestSupport
import Foundation
import NIOCore
import S3Client
import Testing
@testable import FarmRuntime

/// Outputs published to object storage (a real server: moto): the multipart upload of a large file,
/// its parts' sizes, a conditional completion, and no upload left behind on failure.
@Suite struct ObjectOutputTests {
    static func client() throws -> S3 {
        let server = try TestS3.shared()
        return S3(configuration: S3Configuration(endpoint: server.url, region: "us-east-1", pathStyle: true,
                                                 credentials: SigV4Credentials(accessKeyID: server.accessKey, secretAccessKey: server.secret)))
    }

    /// An object's name may hold 1,000 bytes; the staged file's name holds 255: the stem is cut, the
    /// extension kept, and two addresses still stage apart.
    @Test func aLongObjectNameIsStagedUnderAFileNameThatFits() {
        let long = "s3://media/out/" + String(repeating: "é", count: 450) + ".mp4"
        let staged = (ObjectOutput.stagedPath(for: long, token: "0123456789abcdef0123456789abcdef") as NSString).lastPathComponent
        #expect(staged.utf8.count <= 255 && staged.hasSuffix(".mp4.mediafarm-staged-0123456789abcdef0123456789abcdef"), "\(staged.utf8.count) bytes: \(staged)")
        #expect(ObjectOutput.stagedPath(for: long, token: "t") != ObjectOutput.stagedPath(for: long.replacingOccurrences(of: ".mp4", with: "x.mp4"), token: "t"))
        #expect((ObjectOutput.stagedPath(for: "s3://media/out/show.mp4", token: "t") as NSString).lastPathComponent.hasSuffix("-show.mp4.mediafarm-staged-t"))
    }

    @Test func partsAreEightMebibytesUnlessTenThousandWouldNotHoldTheObject() {
        #expect(ObjectOutput.partSize(for: 1) == 8 << 20)
        #expect(ObjectOutput.partSize(for: 200_000_000) == 8 << 20)
        #expect(ObjectOutput.partSize(for: 10_000 * (8 << 20)) == 8 << 20)
        #expect(ObjectOutput.partSize(for: 10_000 * (8 << 20) + 1) == 9 << 20)
        #expect(ObjectOutput.partSize(for: 100 << 30) == 11 << 20)
        #expect(ObjectOutput.partSize(for: 5 << 40) == 525 << 20)
        #expect(ObjectOutput.partSize(for: 100 << 40) == 5 << 30)
        for size: Int64 in [1, 5 << 20, 200_000_000, 1 << 40, 48 << 40] {
            let part = ObjectOutput.partSize(for: size)
            #expect((size + part - 1) / part <= 10_000 && part >= S3.minimumPartSize && part <= S3.maximumPartSize)
        }
    }

    /// A 200 MB output: 24 parts of 8 MiB and a last one, uploaded 4 at once; the object is the file,
    /// byte for byte, and no upload is left open.
    @Test func aLargeOutputIsUploadedInPartsAndIsTheFile() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let bucket = TestS3.bucketName("big")
        try await s3.createBucket(bucket)
        let file = try TestPaths.makeTemporaryFolder("s3-big").appendingPathComponent("big.mov")
        FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        // A random mebibyte, each copy made different by its number in its first bytes.
        var random = SeededRandom(state: 200)
        var mebibyte = [UInt64](repeating: 0, count: (1 << 20) / 8)
        for i in mebibyte.indices { mebibyte[i] = random.next() }
        var hash = SHA256()
        let total = 200_000_000
        var written = 0
        while written < total {
            let count = min(1 << 20, total - written)
            mebibyte[0] = UInt64(written)
            let block = mebibyte.withUnsafeBytes { Data($0.prefix(count)) }
            hash.update(data: block)
            try handle.write(contentsOf: block)
            written += count
        }
        try handle.close()

        let final = "s3://\(bucket)/renders/big.mov"
        let etag = try await ObjectOutput.upload(file.path, to: final, allowExisting: false, s3: s3)
        #expect(etag.hasSuffix("-24"), "\(etag): 200 MB in 8 MiB parts is 24 parts")
        let location = S3Location(bucket: bucket, key: "renders/big.mov")
        let head = try await s3.head(location)
        #expect(head.size == Int64(total))
        var fetched = SHA256()
        var offset: Int64 = 0
        while offset < Int64(total) {
            let chunk = try await s3.get(location, range: offset..<min(offset + (32 << 20), Int64(total)))
            chunk.bytes.withUnsafeReadableBytes { fetched.update(bufferPointer: $0) }
            offset += Int64(chunk.bytes.readableBytes)
        }
        #expect(Array(fetched.finalize()) == Array(hash.finalize()))
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)

        // Again, without overwrite: refused by the conditional completion, the object untouched, the
        // upload aborted.
        await #expect { try await ObjectOutput.upload(file.path, to: final, allowExisting: false, s3: s3) } throws: { error in
            "\(error)" == "\(final): already exists; set \"overwrite\": true at the manifest's top level to replace it"
        }
        #expect(try await s3.head(location).etag == etag)
        #expect(try await s3.listMultipartUploads(S3Location(bucket: bucket, key: "")).isEmpty)
    }

    @Test func anUploadToAMissingBucketFailsNamingIt() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        let file = try TestPaths.makeTemporaryFolder("s3-small").appendingPathComponent("small.json")
        try Data("{}".utf8).write(to: file)
        await #expect { try await ObjectOutput.upload(file.path, to: "s3://no-such-bucket-28/x.json", allowExisting: false, s3: s3) } throws: { error in
            "\(error)".hasPrefix("s3://no-such-bucket-28/x.json: cannot publish the finished file: no such bucket")
        }
    }

    /// A job whose bucket does not exist began no upload: nothing is said about aborting (the line came
    /// before the real error and misled); an upload the job recorded is still worth a word.
    @Test func nothingIsSaidAboutAbortingWhereNoUploadCouldHaveBegun() async throws {
        let s3 = try Self.client()
        defer { Task { await s3.shutdown() } }
        #expect(await ObjectOutput.abortUnfinished("s3://no-such-bucket-28/x.mp4", recorded: [], s3: s3).problem == nil)
        let recorded = await ObjectOutput.abortUnfinished("s3://no-such-bucket-28/x.mp4", recorded: ["upload-1"], s3: s3).problem
        #expect(recorded?.contains("cannot abort its unfinished uploads: no such bucket") == true, "\(recorded ?? "nil")")
    }
}

