import Foundation
import NIOCore
import NIOHTTP1

/// An object's facts from a HEAD or a listing.
public struct S3Object: Sendable, Hashable {
    public var location: S3Location
    public var size: Int64
    /// The entity tag, without quotes.
    public var etag: String
    public var lastModified: String?
}

/// A ranged read: the bytes and the object's facts from the answer's headers.
public struct S3Chunk: Sendable {
    public var bytes: ByteBuffer
    /// Where the bytes begin in the object.
    public var offset: Int64
    /// The whole object's size and entity tag.
    public var objectSize: Int64
    public var etag: String
}

extension S3 {
    /// The object's size and entity tag; `noSuchKey` (or `noSuchBucket`) when it is not there.
    public func head(_ location: S3Location) async throws(S3Error) -> S3Object {
        try object(location, try await send(Operation(method: .HEAD, bucket: location.bucket, key: location.key)))
    }

    /// `head`, waiting on the calling thread (a blocking thread).
    public func headBlocking(_ location: S3Location) throws(S3Error) -> S3Object {
        try object(location, try sendBlocking(Operation(method: .HEAD, bucket: location.bucket, key: location.key)))
    }

    /// Whether the object exists (a 404 is an answer here, not an error).
    public func exists(_ location: S3Location) async throws(S3Error) -> Bool {
        let response = try await send(Operation(method: .HEAD, bucket: location.bucket, key: location.key, expected: [404]))
        return response.status != 404
    }

    /// Bytes `range` of the object (the whole object when nil), only if its entity tag is still `ifMatch`
    /// when one is given (`changed` otherwise).
    public func get(_ location: S3Location, range: Range<Int64>? = nil, ifMatch: String? = nil) async throws(S3Error) -> S3Chunk {
        let op = getOperation(location, range: range, ifMatch: ifMatch)
        do { return try chunk(location, range: range, try await send(op)) } catch { throw changed(error, ifMatch) }
    }

    /// `get`, waiting on the calling thread (a blocking thread: FFmpeg's read callback).
    public func getBlocking(_ location: S3Location, range: Range<Int64>? = nil, ifMatch: String? = nil) throws(S3Error) -> S3Chunk {
        let op = getOperation(location, range: range, ifMatch: ifMatch)
        do { return try chunk(location, range: range, try sendBlocking(op)) } catch { throw changed(error, ifMatch) }
    }

    /// Writes `body` as the object in one request. With `ifNoneMatch`, only if no object has the key
    /// (`alreadyExists` otherwise). Returns the new object's entity tag.
    @discardableResult
    public func put(_ location: S3Location, body: ByteBuffer, contentType: String? = nil, ifNoneMatch: Bool = false) async throws(S3Error) -> String {
        var headers: [(name: String, value: String)] = []
        if let contentType { headers.append(("Content-Type", contentType)) }
        if ifNoneMatch { headers.append(("If-None-Match", "*")) }
        let response = try await send(Operation(method: .PUT, bucket: location.bucket, key: location.key, headers: headers, body: body))
        return Self.unquoted(response.header("ETag") ?? "")
    }

    /// Whether the server of `bucket` honours `If-None-Match: *` on writes (S3 and most compatible servers
    /// do; some ignore the header and replace the object). Asked once per bucket and client, by writing a
    /// small probe object twice under a name of its own (the second write must be refused) and deleting it.
    public func honoursConditionalWrites(_ bucket: String) async throws(S3Error) -> Bool {
        if let known = conditionalWrites.withLock({ $0[bucket] }) { return known }
        let probe = S3Location(bucket: bucket, key: ".mediafarm-conditional-write-probe-\(UUID().uuidString.lowercased())")
        _ = try await put(probe, body: ByteBuffer(string: "1"), ifNoneMatch: true)
        let honoured: Bool
        do throws(S3Error) {
            _ = try await put(probe, body: ByteBuffer(string: "2"), ifNoneMatch: true)
            honoured = false
        } catch {
            guard error.kind == .alreadyExists else {
                try? await delete(probe)  // the probe object: best effort
                throw error
            }
            honoured = true
        }
        try? await delete(probe)  // the probe object: best effort
        conditionalWrites.withLock { $0[bucket] = honoured }
        return honoured
    }

    public func delete(_ location: S3Location) async throws(S3Error) {
        _ = try await send(Operation(method: .DELETE, bucket: location.bucket, key: location.key))
    }

    /// Makes a bucket (in the configured region).
    public func createBucket(_ bucket: String) async throws(S3Error) {
        var body: ByteBuffer?
        if configuration.region != "us-east-1" {
            body = ByteBuffer(string: "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>\(configuration.region)</LocationConstraint></CreateBucketConfiguration>")
        }
        _ = try await send(Operation(method: .PUT, bucket: bucket, key: nil, body: body))
    }

    /// Every object whose key begins with `prefix.key`, in key order (ListObjectsV2, page after page).
    public func list(_ prefix: S3Location) async throws(S3Error) -> [S3Object] {
        var objects: [S3Object] = []
        var token: String?
        repeat {
            var query: [(name: String, value: String)] = [("list-type", "2")]
            if !prefix.key.isEmpty { query.append(("prefix", prefix.key)) }
            if let token { query.append(("continuation-token", token)) }
            let text = try await send(Operation(method: .GET, bucket: prefix.bucket, key: nil, query: query)).text
            for entry in S3XML.elements("Contents", in: text) {
                guard let key = S3XML.value("Key", in: entry), let size = S3XML.value("Size", in: entry).flatMap({ Int64($0) }) else { continue }
                objects.append(S3Object(location: S3Location(bucket: prefix.bucket, key: key), size: size,
                                        etag: Self.unquoted(S3XML.value("ETag", in: entry) ?? ""), lastModified: S3XML.value("LastModified", in: entry)))
            }
            token = S3XML.value("IsTruncated", in: text) == "true" ? S3XML.value("NextContinuationToken", in: text) : nil
        } while token != nil
        return objects
    }

    // MARK: Pieces

    func getOperation(_ location: S3Location, range: Range<Int64>?, ifMatch: String?) -> Operation {
        var headers: [(name: String, value: String)] = []
        if let range { headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")) }
        if let ifMatch { headers.append(("If-Match", "\"\(ifMatch)\"")) }
        return Operation(method: .GET, bucket: location.bucket, key: location.key, headers: headers)
    }

    func changed(_ error: S3Error, _ ifMatch: String?) -> S3Error {
        guard ifMatch != nil, error.kind == .alreadyExists else { return error }
        var changed = error
        changed.kind = .changed
        changed.detail = "the object changed while it was being read (its entity tag is no longer \(ifMatch!))"
        return changed
    }

    func object(_ location: S3Location, _ response: Response) throws(S3Error) -> S3Object {
        guard let size = response.header("Content-Length").flatMap({ Int64($0) }) else {
            throw S3Error(.badResponse, location.description, "the server's answer to HEAD has no Content-Length")
        }
        return S3Object(location: location, size: size, etag: Self.unquoted(response.header("ETag") ?? ""),
                        lastModified: response.header("Last-Modified"))
    }

    func chunk(_ location: S3Location, range: Range<Int64>?, _ response: Response) throws(S3Error) -> S3Chunk {
        let bytes = response.body ?? ByteBuffer()
        let etag = Self.unquoted(response.header("ETag") ?? "")
        if response.status == 206 {
            // Content-Range: bytes FIRST-LAST/TOTAL
            guard let value = response.header("Content-Range"), value.hasPrefix("bytes "), let slash = value.lastIndex(of: "/"),
                  let total = Int64(value[value.index(after: slash)...]),
                  let dash = value.firstIndex(of: "-"), let first = Int64(value.dropFirst(6)[..<dash]) else {
                throw S3Error(.badResponse, location.description, "the server's partial answer has no usable Content-Range")
            }
            return S3Chunk(bytes: bytes, offset: first, objectSize: total, etag: etag)
        }
        // A whole answer: to a GET without a range, or to one whose range covers the object.
        if let range, range.lowerBound > 0 {
            throw S3Error(.badResponse, location.description, "the server ignored the range asked for (bytes \(range.lowerBound)-)")
        }
        return S3Chunk(bytes: bytes, offset: 0, objectSize: Int64(bytes.readableBytes), etag: etag)
    }

    static func unquoted(_ etag: String) -> String {
        etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count >= 2 ? String(etag.dropFirst().dropLast()) : etag
    }
}
