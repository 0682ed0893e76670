import FarmModel
import Foundation
import NIOCore
import S3Client
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Outputs that are objects in S3-compatible storage. The finished file is written to a local staged
/// file in the spool folder (as a file output is staged beside its final path), then uploaded as a
/// multipart upload whose completion is the publication: nothing is visible at the key before the
/// whole object is, and a failed upload is aborted, never left half-made. Without `overwrite` the
/// completion is conditional (`If-None-Match: *`): an object that appeared meanwhile is not replaced.
public enum ObjectOutput {
    /// Where outputs bound for objects are staged: `MEDIAFARM_SPOOL`, else `/var/tmp/mediafarm-spool`
    /// (on disk, unlike a `/tmp` that may be memory).
    public static var spoolFolder: String {
        let configured = ProcessInfo.processInfo.environment["MEDIAFARM_SPOOL"].flatMap { $0.isEmpty ? nil : $0 }
        return configured ?? defaultSpoolFolder
    }

    static let defaultSpoolFolder = "/var/tmp/mediafarm-spool"

    /// The staged file of object `final` for the attempt holding `token`: in the spool folder, named by a
    /// hash of the address (two outputs never share it) and the object's own name, its stem cut to
    /// `stagedNameBytes` (a key's last step may hold 1,000 bytes; a file's name, 255).
    public static func stagedPath(for final: String, token: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in final.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var name = final.split(separator: "/").last.map(String.init) ?? "object"
        if name.utf8.count > stagedNameBytes {
            let ext = (name as NSString).pathExtension.utf8.count <= 16 ? (name as NSString).pathExtension : ""
            var stem = ""
            for character in name where stem.utf8.count + character.utf8.count + ext.utf8.count + 1 <= stagedNameBytes { stem.append(character) }
            name = ext.isEmpty ? stem : stem + "." + ext
        }
        return spoolFolder + "/." + String(hash, radix: 16) + "-" + name + StagedOutput.marker + token
    }

    /// The most of an object's own name a staged file's name holds, in bytes.
    static let stagedNameBytes = 120

    /// Removes every file the attempt holding `token` staged in the spool folder (numbered outputs whose
    /// count it did not report): its token is its own.
    static func discardStaged(token: String) {
        let folder = spoolFolder
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }  // nothing staged then
        for name in names where name.hasSuffix(StagedOutput.marker + token) { unlink(folder + "/" + name) }
    }

    /// Makes the spool folder (private to the user) when it is missing.
    static func ensureSpool() throws {
        let folder = spoolFolder
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw JobError("\(folder): cannot make the spool folder for outputs bound for object storage: \(String(cString: strerror(errno))) (MEDIAFARM_SPOOL names another)")
        }
    }

    /// Part sizes: 8 MiB, larger for objects that would need more than 10,000 parts (S3's limit), at
    /// most 5 GiB.
    public static func partSize(for size: Int64) -> Int64 {
        let smallest: Int64 = 8 << 20
        let needed = (size + Int64(S3.maximumParts) - 1) / Int64(S3.maximumParts)
        let rounded = ((needed + (1 << 20) - 1) >> 20) << 20
        return min(max(smallest, rounded), S3.maximumPartSize)
    }

    /// Parts uploaded at once.
    static let concurrentParts = 4

    /// Uploads `file` as object `final` and completes it: one PUT for a file of one part, else a multipart
    /// upload (aborted if any part or the completion fails). Unless `allowExisting`, the write is
    /// conditional. Returns the object's entity tag.
    @discardableResult
    public static func upload(_ file: String, to final: String, allowExisting: Bool, s3: S3? = nil,
                              log: @Sendable (String) -> Void = { _ in }) async throws -> String {
        let location: S3Location
        let client: S3
        do throws(S3Error) {
            location = try S3Location(parsing: final)
            if let s3 { client = s3 } else { client = try S3.shared() }
        } catch { throw JobError(error.description) }
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw JobError("\(final): the finished file \(file) cannot be read to upload it")
        }
        defer { try? handle.close() }  // read-only: closing cannot lose anything
        let size = Int64(try handle.seekToEnd())
        let partSize = partSize(for: size)
        let contentType = contentType(of: final)
        try await checkAbsence(location, final, allowExisting: allowExisting, client, log)
        do {
            if size <= partSize {
                let bytes = try read(handle, at: 0, count: Int(size))
                return try await client.put(location, body: bytes, contentType: contentType, ifNoneMatch: !allowExisting)
            }
            let upload = try await client.createMultipartUpload(location, contentType: contentType)
            do {
                let count = Int((size + partSize - 1) / partSize)
                let parts = try await withThrowingTaskGroup(of: S3Part.self) { group in
                    var parts: [S3Part] = []
                    var next = 1
                    func add() throws {
                        let number = next
                        next += 1
                        let offset = Int64(number - 1) * partSize
                        let bytes = try read(handle, at: offset, count: Int(min(partSize, size - offset)))
                        group.addTask { try await client.uploadPart(upload, number: number, body: bytes) }
                    }
                    while next <= min(count, concurrentParts) { try add() }
                    while let part = try await group.next() {
                        parts.append(part)
                        if next <= count { try add() }
                    }
                    return parts
                }
                return try await client.completeMultipartUpload(upload, parts: parts, ifNoneMatch: !allowExisting)
            } catch {
                // best effort: the error thrown is the cause; an upload left open is aborted at the job's end (abortUnfinished)
                try? await client.abortMultipartUpload(upload)
                throw error
            }
        } catch let error as S3Error where error.kind == .alreadyExists {
            throw JobError("\(final): already exists; set \"overwrite\": true at the manifest's top level to replace it")
        } catch let error as S3Error {
            throw JobError("\(final): cannot publish the finished file: \(error.problem)")
        }
    }

    // MARK: - Through the queue: the worker sends the parts, the coordinator completes

    /// A worker's side of publishing object `final` from the finished `file`: the parts of a multipart
    /// upload, without completing it (nothing is visible at the key yet). `resuming`, an upload an
    /// earlier attempt began (its worker was killed), is gone on with: only the parts whose MD5 differs
    /// from what the server holds are sent (`log` says how many were there). A new upload is announced
    /// (`began`) before any part is sent, so that the coordinator records it with the job. A failure
    /// leaves the upload for the next attempt to go on with, or for the coordinator to abort when the
    /// job ends without success.
    public static func uploadParts(_ file: String, to final: String, resuming: String? = nil, s3: S3? = nil,
                                   underWay listed: UnfinishedUploads? = nil,
                                   began: @Sendable (String) -> Void = { _ in },
                                   log: @Sendable (String) -> Void = { _ in }) async throws -> ObjectUpload {
        let (location, client) = try target(final, s3)
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw JobError("\(final): the finished file \(file) cannot be read to upload it")
        }
        defer { try? handle.close() }  // read-only: closing cannot lose anything
        let size = Int64(try handle.seekToEnd())
        let partSize = partSize(for: size)
        let count = max(1, Int((size + partSize - 1) / partSize))
        func range(_ number: Int) -> (offset: Int64, count: Int) {
            let offset = Int64(number - 1) * partSize
            return (offset, Int(min(partSize, size - offset)))
        }
        do {
            var upload: S3Upload?
            var parts: [Int: S3Part] = [:]
            // The key's uploads under way: the recorded one an earlier attempt began, and any that a
            // coordinator killed before it could record one left. One is gone on with (announced, so that
            // it is recorded under this attempt); the others are aborted.
            let underWay = try await (listed ?? UnfinishedUploads()).of(location, client)
            var candidates = underWay
            if let resuming, !candidates.contains(where: { $0.uploadID == resuming }) {
                candidates.append(S3Upload(bucket: location.bucket, key: location.key, uploadID: resuming))
            }
            let chosen = candidates.first { $0.uploadID == resuming } ?? candidates.last
            // best effort: one left open is aborted at the job's end
            for other in candidates where other.uploadID != chosen?.uploadID { try? await client.abortMultipartUpload(other) }
            if let chosen {
                if let listed = try await partsIfThere(chosen, client) {
                    upload = chosen
                    if chosen.uploadID != resuming { began(chosen.uploadID) }
                    for part in listed where part.number <= count && part.size == Int64(range(part.number).count) {
                        let (offset, length) = range(part.number)
                        if S3.md5Hex(try read(handle, at: offset, count: length)) == part.etag.lowercased() { parts[part.number] = part }
                    }
                    log("resumed the upload \(chosen.uploadID) of \(final) that an earlier attempt began: \(parts.count) of \(count) parts were there")
                } else {
                    log("the upload \(chosen.uploadID) of \(final) that an earlier attempt began is gone; beginning another")
                }
            }
            let isNew = upload == nil
            if isNew {
                let created = try await client.createMultipartUpload(location, contentType: contentType(of: final))
                began(created.uploadID)
                upload = created
            }
            let target = upload!
            // A test hook: a new upload stops after this many parts, for a test to kill its worker there.
            let stall = isNew ? ProcessInfo.processInfo.environment["MEDIAFARM_TEST_UPLOAD_STALL"].flatMap { Int($0) } : nil
            let missing = (1...count).filter { parts[$0] == nil }
            let sent = try await withThrowingTaskGroup(of: S3Part.self) { group in
                var sent: [S3Part] = []
                var next = missing.makeIterator()
                func add() throws {
                    guard let number = next.next() else { return }
                    let (offset, length) = range(number)
                    let bytes = try read(handle, at: offset, count: length)
                    group.addTask { try await client.uploadPart(target, number: number, body: bytes) }
                }
                for _ in 0..<(stall == nil ? concurrentParts : 1) { try add() }
                while let part = try await group.next() {
                    sent.append(part)
                    if let stall, sent.count >= stall { try await Task.sleep(for: .seconds(600)) }
                    try add()
                }
                return sent
            }
            for part in sent { parts[part.number] = part }
            return ObjectUpload(address: final, uploadID: target.uploadID, size: size,
                                parts: (1...count).compactMap { parts[$0] }.map { ObjectUpload.Part(number: $0.number, etag: $0.etag, size: $0.size) })
        } catch let error as S3Error {
            throw JobError("\(final): cannot upload the finished file: \(error.problem)", retryable: error.mayPass)
        }
    }

    /// Without `allowExisting`, on a server that ignores `If-None-Match` (asked once per bucket,
    /// `S3.honoursConditionalWrites`): a HEAD first, and an object already there is refused. `log` says
    /// that the server ignores it, and what that leaves open.
    static func checkAbsence(_ location: S3Location, _ final: String, allowExisting: Bool, _ client: S3,
                             _ log: @Sendable (String) -> Void) async throws {
        guard !allowExisting else { return }
        let exists: Bool
        do throws(S3Error) {
            if try await client.honoursConditionalWrites(location.bucket) { return }
            exists = try await client.exists(location)
        } catch {
            throw JobError("\(final): cannot publish the finished file: \(error.problem)", retryable: error.mayPass)
        }
        log("the server of bucket \(location.bucket) ignores If-None-Match: \(final) was checked with a HEAD before it was written "
            + "(an object written there between the check and the write would be replaced)")
        if exists { throw JobError("\(final): already exists; set \"overwrite\": true at the manifest's top level to replace it") }
    }

    /// The multipart uploads of `location`'s key under way. The bucket's uploads under way are listed
    /// (few: uploads that ended are not) and filtered by key, rather than asked for by prefix: moto
    /// refuses the correct signature of a listing whose prefix holds a "/".
    static func unfinishedUploads(of location: S3Location, _ client: S3) async throws(S3Error) -> [S3Upload] {
        try await UnfinishedUploads().of(location, client)
    }

    /// The uploads under way of each bucket asked about, listed once: a job sending a package's thousand files
    /// lists its bucket once, not once a file (a thousand listings of a thousand uploads).
    public final class UnfinishedUploads: Sendable {
        private let listed = Mutex<[String: [S3Upload]]>([:])

        public init() {}

        /// The uploads under way of `location`'s key, from its bucket's listing (made on the first question).
        func of(_ location: S3Location, _ client: S3) async throws(S3Error) -> [S3Upload] {
            let bucket: [S3Upload]
            if let known = listed.withLock({ $0[location.bucket] }) {
                bucket = known
            } else {
                bucket = try await client.listMultipartUploads(S3Location(bucket: location.bucket, key: ""))
                listed.withLock { $0[location.bucket] = bucket }
            }
            return bucket.filter { $0.key == location.key }
        }
    }

    /// The parts the server holds of `upload`; nil when the upload is gone (completed or aborted).
    static func partsIfThere(_ upload: S3Upload, _ client: S3) async throws(S3Error) -> [S3Part]? {
        let failure: S3Error
        do throws(S3Error) {
            return try await client.listParts(upload)
        } catch {
            failure = error
        }
        if failure.kind == .noSuchUpload { return nil }
        throw failure
    }

    /// The coordinator's side: completes `record` (the caller holds the lease), which publishes the object
    /// whole. Unless `allowExisting` the completion is conditional. An upload that is gone because it was
    /// completed already (a publication that a coordinator began before it died) is recognised by the
    /// object's entity tag, which a multipart upload's parts determine. A record of a copy (`record.copy`) is
    /// published by copying its source on the server (`copy`). Returns the published object's entity tag.
    @discardableResult
    public static func complete(_ record: ObjectUpload, allowExisting: Bool, s3: S3? = nil,
                                log: @Sendable (String) -> Void = { _ in }) async throws -> String {
        let (location, client) = try target(record.address, s3)
        if let copy = record.copy { return try await Self.copy(copy, size: record.size, to: record.address, allowExisting: allowExisting, client, log: log) }
        try await checkAbsence(location, record.address, allowExisting: allowExisting, client, log)
        let upload = S3Upload(bucket: location.bucket, key: location.key, uploadID: record.uploadID)
        let parts = record.parts.map { S3Part(number: $0.number, etag: $0.etag, size: $0.size) }
        let failure: S3Error
        do throws(S3Error) {
            return try await client.completeMultipartUpload(upload, parts: parts, ifNoneMatch: !allowExisting)
        } catch {
            failure = error
        }
        switch failure.kind {
        case .noSuchUpload:
            // Completed already by a publication that was interrupted: the object is the upload's.
            let object: S3Object
            do throws(S3Error) {
                object = try await client.head(location)
            } catch where error.kind == .noSuchKey {
                throw JobError("\(record.address): cannot publish the finished file: its upload \(record.uploadID) is gone and no object is there")
            } catch {
                throw JobError("\(record.address): cannot publish the finished file: its upload \(record.uploadID) is gone, and the object "
                               + "cannot be checked: \(error.problem)", retryable: error.mayPass)
            }
            if object.etag == S3.multipartETag(parts) { return object.etag }
            throw JobError("\(record.address): cannot publish the finished file: its upload \(record.uploadID) is gone and the object is not it")
        case .alreadyExists:
            try? await client.abortMultipartUpload(upload)  // best effort: the refusal is what matters; one left open is aborted at the job's end
            throw JobError("\(record.address): already exists; set \"overwrite\": true at the manifest's top level to replace it")
        default:
            throw JobError("\(record.address): cannot publish the finished file: \(failure.problem)", retryable: failure.mayPass)
        }
    }

    /// Publishes object `address` by copying `copy.source` (`size` bytes) on the server, only while the source's
    /// entity tag is `copy.etag` (on a server that honours `x-amz-copy-source-if-match`): a multipart upload of
    /// one part copied from it (UploadPartCopy), completed as any upload is, conditionally unless `allowExisting`,
    /// so that no object written there meanwhile is replaced. A copy done already (a publication that was
    /// interrupted) is done again. Returns the new object's entity tag.
    static func copy(_ copy: ObjectUpload.Copy, size: Int64, to address: String, allowExisting: Bool, _ client: S3,
                     log: @Sendable (String) -> Void) async throws -> String {
        let (location, _) = try target(address, client)
        let (source, _) = try target(copy.source, client)
        guard size <= S3.maximumPartSize else {
            throw JobError("\(address): cannot copy \(copy.source) there: it holds \(size) bytes, more than a copy on the server takes (5 GiB)")
        }
        try await checkAbsence(location, address, allowExisting: allowExisting, client, log)
        let upload: S3Upload
        do throws(S3Error) { upload = try await client.createMultipartUpload(location, contentType: contentType(of: address)) } catch {
            throw JobError("\(address): cannot publish the copy: \(error.problem)", retryable: error.mayPass)
        }
        do throws(S3Error) {
            let part = try await client.uploadPartCopy(upload, number: 1, source: source, size: size, ifMatch: copy.etag)
            return try await client.completeMultipartUpload(upload, parts: [part], ifNoneMatch: !allowExisting)
        } catch {
            try? await client.abortMultipartUpload(upload)  // best effort: the error below is the cause; one left open is taken by the bucket's lifecycle rule
            if error.kind == .alreadyExists && !allowExisting {
                throw JobError("\(address): already exists; set \"overwrite\": true at the manifest's top level to replace it")
            }
            // A source that changed or is gone since it was checked: the job's next attempt finds so and runs.
            let gone = error.kind == .changed || error.kind == .noSuchKey
            throw JobError("\(address): cannot copy \(copy.source) there: \(error.problem)", retryable: gone || error.mayPass)
        }
    }

    /// Aborts `record`'s upload (an attempt whose lease was lost: only its own upload, since a newer
    /// attempt may be uploading the same key).
    public static func abort(_ record: ObjectUpload, s3: S3? = nil) async {
        guard record.copy == nil, let (location, client) = try? target(record.address, s3) else { return }  // an address that names no object has no upload to abort
        // best effort: a stale attempt's upload; the bucket's lifecycle rule or the job's end takes one left open
        try? await client.abortMultipartUpload(S3Upload(bucket: location.bucket, key: location.key, uploadID: record.uploadID))
    }

    /// Aborts the uploads of object `address` that are under way, and `recorded` (a job that ended without
    /// success: no attempt of it will go on with them; one a coordinator killed before recording it is
    /// found by listing). An upload already gone is not an error. Returns the ids aborted, and what could
    /// not be done.
    public static func abortUnfinished(_ address: String, recorded: [String], s3: S3? = nil) async -> (aborted: [String], problem: String?) {
        var aborted: [String] = []
        do {
            let (location, client) = try target(address, s3)
            var ids = recorded
            for upload in try await unfinishedUploads(of: location, client) where !ids.contains(upload.uploadID) { ids.append(upload.uploadID) }
            for id in ids {
                try await client.abortMultipartUpload(S3Upload(bucket: location.bucket, key: location.key, uploadID: id))
                aborted.append(id)
            }
            return (aborted, nil)
        } catch let error as S3Error {
            // No bucket, no credentials the store takes: no upload can have begun, nothing to say (the job's
            // own error names the problem); only an upload this job recorded is worth a word.
            if recorded.isEmpty && [.noSuchBucket, .signatureRefused, .unknownAccessKey, .accessDenied, .configuration, .invalidLocation].contains(error.kind) {
                return (aborted, nil)
            }
            return (aborted, "\(address): cannot abort its unfinished uploads: \(error.problem)")
        } catch {
            return (aborted, "\(address): cannot abort its unfinished uploads: \(error)")
        }
    }

    /// Fails (naming the output and the bucket; retryable) when the bucket of an object among `finals` does not exist.
    /// A server that cannot be asked now is not a failure here: the upload says so, and it may pass.
    public static func checkBuckets(_ finals: [String], s3: S3? = nil) async throws {
        var seen = Set<String>()
        for final in finals where PathRules.isObject(final) {
            let (location, client) = try target(final, s3)
            guard seen.insert(location.bucket).inserted else { continue }
            do {
                _ = try await client.listMultipartUploads(S3Location(bucket: location.bucket, key: "mediafarm-bucket-check"))
            } catch where error.kind == .noSuchBucket {
                // Retried like an unreachable server (the bucket may be made meanwhile), each attempt cheap.
                throw JobError("\(final): no such bucket \(location.bucket): nothing was done (make the bucket, or write elsewhere)", retryable: true)
            } catch {
                continue
            }
        }
    }

    /// The location of object `final` and the client to reach it.
    static func target(_ final: String, _ s3: S3?) throws -> (S3Location, S3) {
        do throws(S3Error) {
            let location = try S3Location(parsing: final)
            if let s3 { return (location, s3) }
            return (location, try S3.shared())
        } catch { throw JobError(error.description) }
    }

    /// `count` bytes of `handle` from `offset` (pread: safe from several tasks at once).
    static func read(_ handle: FileHandle, at offset: Int64, count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
            var done = 0
            while done < count {
                let n = pread(handle.fileDescriptor, bytes.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n <= 0 { return n < 0 ? -1 : done }
                done += n
            }
            return done
        }
        guard got == count else { throw JobError("reading the finished file to upload it failed at byte \(offset)") }
        return buffer
    }

    static func contentType(of final: String) -> String? {
        switch final.split(separator: ".").last?.lowercased() {
        case "mp4", "m4v": "video/mp4"
        case "mov": "video/quicktime"
        case "m4a": "audio/mp4"
        case "mkv": "video/x-matroska"
        case "json": "application/json"
        case "m3u8": "application/vnd.apple.mpegurl"
        case "mpd": "application/dash+xml"
        case "m4s": "video/iso.segment"
        case "ts": "video/mp2t"
        case "vtt": "text/vtt"
        default: nil
        }
    }
}
