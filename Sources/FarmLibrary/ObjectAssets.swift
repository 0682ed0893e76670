import Crypto
import FarmModel
import Foundation
import SafeFiles
import NIOCore
import S3Client

/// Assets whose location is an object in S3-compatible storage (`s3://BUCKET/KEY`). Such a location
/// belongs to no host: it is recorded under the host `*` (every host reaches it), with the object's size
/// and entity tag, and `asset:ID` resolves to it on any host that has no file of the asset itself. Its
/// content id is hashed from a stream of ranged reads: nothing is kept on disk.
extension ContentHash {
    /// Range reads of this size, this many at a time.
    static let streamChunk: Int64 = 8 << 20
    static let streamWindow = 4

    /// SHA-256 of `object`, read in 8 MiB ranges, four at once, each with `If-Match` its entity tag (an
    /// object replaced while it is read is an error, not a mixed hash).
    public static func streaming(_ object: S3Object, s3: S3) async throws(LibraryError) -> ContentHash {
        var hasher = SHA256()
        var offset: Int64 = 0
        do {
            while offset < object.size {
                let starts = stride(from: offset, to: min(object.size, offset + streamChunk * Int64(streamWindow)), by: Int(streamChunk)).map { $0 }
                let chunks = try await withThrowingTaskGroup(of: (Int64, ByteBuffer).self) { group in
                    for start in starts {
                        let range = start..<min(object.size, start + streamChunk)
                        group.addTask { (start, try await s3.get(object.location, range: range, ifMatch: object.etag).bytes) }
                    }
                    var got: [Int64: ByteBuffer] = [:]
                    for try await (start, bytes) in group { got[start] = bytes }
                    return got
                }
                for start in starts {
                    guard let bytes = chunks[start] else { continue }
                    bytes.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                    offset = start + Int64(bytes.readableBytes)
                }
            }
        } catch let error as S3Error {
            throw .unreadable(object.location.description, error.problem)
        } catch {
            throw .unreadable(object.location.description, "\(error)")
        }
        let digest = Array(hasher.finalize())
        return ContentHash(sha256: digest.map { String(format: "%02x", $0) }.joined(), id: AssetID(digest: digest))
    }
}

extension AssetLibrary {
    /// The host of locations that are objects: every host reaches them.
    public static let everyHost = "*"

    /// The client for objects (from the environment), or why there is none.
    public static func objectClient() throws(LibraryError) -> S3 {
        do throws(S3Error) { return try S3.shared() } catch { throw .invalid(error.description) }
    }

    /// What is at `address` now: its size and entity tag.
    static func head(_ address: String, _ s3: S3) async throws(LibraryError) -> S3Object {
        do throws(S3Error) {
            return try await s3.head(try S3Location(parsing: address))
        } catch {
            throw .unreadable(address, error.problem)
        }
    }

    /// Registers object `address` (`library add s3://...`, or a job's output): not read again when the
    /// library has it at that address with the same entity tag and size; otherwise hashed from a stream
    /// and, when its content is new, inspected through ranged reads (unless `facts` are given).
    func registerObject(_ address: String, album: String?, facts: AssetFacts? = nil) async throws(LibraryError) -> AddOutcome {
        let s3 = try Self.objectClient()
        let object = try await Self.head(address, s3)
        let known = try await read { s in
            try await s.rows("SELECT asset_id, size, etag FROM asset_locations WHERE host = ? AND path = ? AND state = 'present'",
                             [.text(Self.everyHost), .text(address)]).first
        }
        if let known, let id = known[0].string.flatMap(AssetID.init), known[1].int == object.size, known[2].string == object.etag {
            if let album { _ = try await write { s in try await insertMembers(s, album: album, [id], creating: true, checked: false, at: now()) } }
            return AddOutcome(path: address, id: id, status: .unchanged)
        }
        let hash = try await ContentHash.streaming(object, s3: s3)
        let status = try await record(hash, at: address, stamp: FileStamp(size: object.size, mtime: 0, inode: 0, device: 0),
                                      facts: facts, album: album, host: Self.everyHost, etag: object.etag)
        return AddOutcome(path: address, id: hash.id, status: status,
                          previous: known?[0].string.flatMap(AssetID.init).flatMap { $0 == hash.id ? nil : $0 })
    }

    /// Registers `object`, whose content the caller has hashed (ingest, from the object as listed): recorded
    /// under every host with its entity tag, inspected only when the library does not know the content and
    /// `facts` is nil.
    public func registerObject(_ object: S3Object, hash: ContentHash, facts: AssetFacts? = nil, album: String? = nil) async throws(LibraryError) -> AddOutcome {
        if let album { try Self.checkAlbumName(album) }
        let address = object.location.description
        let status = try await record(hash, at: address, stamp: FileStamp(size: object.size, mtime: 0, inode: 0, device: 0),
                                      facts: facts, album: album, host: Self.everyHost, etag: object.etag)
        if status == .added { try await maintain() }
        return AddOutcome(path: address, id: hash.id, status: status)
    }

    /// For `library add`: the object `address`, or every object under it when it is a prefix
    /// (`s3://BUCKET/PREFIX/`) or a bucket (`s3://BUCKET` or `s3://BUCKET/`). An object that is not there
    /// while a prefix of its name with a "/" added holds objects is refused with that hint.
    static func objects(at address: String) async -> [Result<String, AddOutcome>] {
        do {
            let location = try S3Location(parsing: address, prefix: true)
            let s3 = try objectClient()
            if !location.key.isEmpty && !address.hasSuffix("/") {
                if let hint = await prefixHint(location, address: address, s3) { return [.failure(hint)] }
                return [.success(location.description)]  // any other problem is the object's, said when it is read
            }
            return try await s3.list(location).filter { !$0.location.key.hasSuffix("/") }.map { .success($0.location.description) }
        } catch let error as S3Error {
            return [.failure(AddOutcome(path: address, status: .refused, reason: error.problem))]
        } catch let error as LibraryError {
            return [.failure(AddOutcome(path: address, status: .refused, reason: error.reasonOnly))]
        } catch {
            return [.failure(AddOutcome(path: address, status: .refused, reason: "\(error)"))]
        }
    }

    /// `library add s3://BUCKET/NAME` where no object NAME is, but objects are under `NAME/`: the refusal
    /// that says so. nil when the object is there, or when nothing is under the prefix either.
    private static func prefixHint(_ location: S3Location, address: String, _ s3: S3) async -> AddOutcome? {
        let missing: Bool
        do throws(S3Error) {
            _ = try await s3.head(location)
            missing = false
        } catch {
            missing = error.kind == .noSuchKey
        }
        guard missing else { return nil }
        // A listing that fails gives no hint: the object's own error is said when it is read.
        let under = ((try? await s3.list(S3Location(bucket: location.bucket, key: location.key + "/"))) ?? []).filter { !$0.location.key.hasSuffix("/") }
        guard !under.isEmpty else { return nil }
        return AddOutcome(path: address, status: .refused, reason: "no such object, but \(address)/ (with a \"/\" at the end) "
                          + "is a prefix of \(under.count) object\(under.count == 1 ? "" : "s"): give that to add them all")
    }

    /// Whether the server says nothing is at `address` (false when it cannot be asked: nothing is taken
    /// for gone on a guess).
    public static func objectIsGone(_ address: String) async -> Bool {
        do {
            return try await !objectClient().exists(try S3Location(parsing: address))
        } catch {
            return false
        }
    }

    /// Whether a present object location still holds what was registered (a HEAD: same size and entity
    /// tag); nil when it does, else why not.
    static func objectProblem(_ address: String, size: Int64, etag: String?) async -> String? {
        do {
            let object = try await head(address, try objectClient())
            if object.size != size || (etag.map { $0 != object.etag } ?? false) { return "the object changed since it was registered" }
            return nil
        } catch {
            return error.reasonOnly
        }
    }
}
