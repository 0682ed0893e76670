import FarmModel
import Foundation
import NIOCore
import S3Client
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
        return configured ?? "/var/tmp/mediafarm-spool"
    }

    /// The staged file of object `final` for the attempt holding `token`: in the spool folder, named by a
    /// hash of the address (two outputs never share it) and the object's own name.
    public static func stagedPath(for final: String, token: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in final.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let name = final.split(separator: "/").last.map(String.init) ?? "object"
        return spoolFolder + "/." + String(hash, radix: 16) + "-" + name + StagedOutput.marker + token
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
    public static func upload(_ file: String, to final: String, allowExisting: Bool, s3: S3? = nil) async throws -> String {
        let location: S3Location
        let client: S3
        do throws(S3Error) {
            location = try S3Location(parsing: final)
            if let s3 { client = s3 } else { client = try S3.shared() }
        } catch { throw JobError(error.description) }
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw JobError("\(final): the finished file \(file) cannot be read to upload it")
        }
        defer { try? handle.close() }
        let size = Int64(try handle.seekToEnd())
        let partSize = partSize(for: size)
        let contentType = contentType(of: final)
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
                try? await client.abortMultipartUpload(upload)
                throw error
            }
        } catch let error as S3Error where error.kind == .alreadyExists {
            throw JobError("\(final): already exists; set \"overwrite\": true in the manifest to replace it")
        } catch let error as S3Error {
            throw JobError("\(final): cannot publish the finished file: \(error.problem)")
        }
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
        default: nil
        }
    }
}
