import Crypto
import NIOCore
import NIOHTTP1

/// A multipart upload under way: its object and the server's id for it.
public struct S3Upload: Sendable, Hashable, Codable {
    public var bucket: String
    public var key: String
    public var uploadID: String
    /// When the server says it began (ISO 8601), from a listing.
    public var initiated: String?

    public init(bucket: String, key: String, uploadID: String, initiated: String? = nil) {
        self.bucket = bucket
        self.key = key
        self.uploadID = uploadID
        self.initiated = initiated
    }

    public var location: S3Location { S3Location(bucket: bucket, key: key) }
}

/// A part uploaded: its number (1...10,000), entity tag and size.
public struct S3Part: Sendable, Hashable, Codable {
    public var number: Int
    public var etag: String
    public var size: Int64

    public init(number: Int, etag: String, size: Int64) {
        self.number = number
        self.etag = etag
        self.size = size
    }
}

extension S3 {
    /// S3's limits for multipart uploads.
    public static let minimumPartSize: Int64 = 5 << 20
    public static let maximumPartSize: Int64 = 5 << 30
    public static let maximumParts = 10_000

    /// Begins a multipart upload of `location`; nothing is visible until it is completed.
    public func createMultipartUpload(_ location: S3Location, contentType: String? = nil) async throws(S3Error) -> S3Upload {
        var headers: [(name: String, value: String)] = []
        if let contentType { headers.append(("Content-Type", contentType)) }
        let response = try await send(Operation(method: .POST, bucket: location.bucket, key: location.key, query: [("uploads", "")], headers: headers))
        guard let id = S3XML.value("UploadId", in: response.text), !id.isEmpty else {
            throw S3Error(.badResponse, location.description, "the server's answer to CreateMultipartUpload has no UploadId")
        }
        return S3Upload(bucket: location.bucket, key: location.key, uploadID: id)
    }

    /// Uploads part `number` of `upload`; its entity tag goes into the completion.
    public func uploadPart(_ upload: S3Upload, number: Int, body: ByteBuffer) async throws(S3Error) -> S3Part {
        let response = try await send(Operation(method: .PUT, bucket: upload.bucket, key: upload.key,
                                                query: [("partNumber", String(number)), ("uploadId", upload.uploadID)], body: body))
        guard let etag = response.header("ETag") else {
            throw S3Error(.badResponse, upload.location.description, "the server's answer to part \(number) has no ETag")
        }
        return S3Part(number: number, etag: Self.unquoted(etag), size: Int64(body.readableBytes))
    }

    /// The parts of `upload` the server holds, in order.
    public func listParts(_ upload: S3Upload) async throws(S3Error) -> [S3Part] {
        var parts: [S3Part] = []
        var marker: String?
        repeat {
            var query: [(name: String, value: String)] = [("uploadId", upload.uploadID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let text = try await send(Operation(method: .GET, bucket: upload.bucket, key: upload.key, query: query)).text
            for entry in S3XML.elements("Part", in: text) {
                guard let number = S3XML.value("PartNumber", in: entry).flatMap({ Int($0) }),
                      let etag = S3XML.value("ETag", in: entry), let size = S3XML.value("Size", in: entry).flatMap({ Int64($0) }) else { continue }
                parts.append(S3Part(number: number, etag: Self.unquoted(etag), size: size))
            }
            marker = S3XML.value("IsTruncated", in: text) == "true" ? S3XML.value("NextPartNumberMarker", in: text) : nil
        } while marker != nil
        return parts.sorted { $0.number < $1.number }
    }

    /// Completes `upload` from `parts`: the object appears whole, at once. With `ifNoneMatch`, only if no
    /// object has the key (`alreadyExists` otherwise, the upload left to abort). Returns the entity tag.
    @discardableResult
    public func completeMultipartUpload(_ upload: S3Upload, parts: [S3Part], ifNoneMatch: Bool = false) async throws(S3Error) -> String {
        let list = parts.sorted { $0.number < $1.number }
            .map { "<Part><PartNumber>\($0.number)</PartNumber><ETag>\"\(S3XML.escape($0.etag))\"</ETag></Part>" }.joined()
        let body = ByteBuffer(string: "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\(list)</CompleteMultipartUpload>")
        var headers: [(name: String, value: String)] = [("Content-Type", "application/xml")]
        if ifNoneMatch { headers.append(("If-None-Match", "*")) }
        let response = try await send(Operation(method: .POST, bucket: upload.bucket, key: upload.key,
                                                query: [("uploadId", upload.uploadID)], headers: headers, body: body))
        // A completion can fail after a 200: the error is in the body.
        if let code = S3XML.value("Code", in: response.text), S3XML.elements("Error", in: response.text).isEmpty == false {
            throw failure(Operation(method: .POST, bucket: upload.bucket, key: upload.key), Response(status: 500, headers: response.headers, body: response.body))
                .withCode(code)
        }
        return Self.unquoted(S3XML.value("ETag", in: response.text) ?? response.header("ETag") ?? "")
    }

    /// Makes part `number` of `upload` the whole object at `source` (of `size` bytes), copied on the server
    /// (UploadPartCopy: no byte passes through here), only if the source's entity tag is still `ifMatch` when
    /// one is given (`changed` otherwise; a server that ignores the condition copies whatever is there). A
    /// part holds at most 5 GiB (`maximumPartSize`).
    public func uploadPartCopy(_ upload: S3Upload, number: Int, source: S3Location, size: Int64, ifMatch: String? = nil) async throws(S3Error) -> S3Part {
        let path = ("/" + source.bucket + "/" + source.key).split(separator: "/", omittingEmptySubsequences: false)
            .map { SigV4Signer.encode(String($0)) }.joined(separator: "/")
        var headers: [(name: String, value: String)] = [("x-amz-copy-source", path)]
        if let ifMatch { headers.append(("x-amz-copy-source-if-match", "\"\(ifMatch)\"")) }
        let op = Operation(method: .PUT, bucket: upload.bucket, key: upload.key, query: [("partNumber", String(number)), ("uploadId", upload.uploadID)],
                           headers: headers)
        let response: Response
        do {
            response = try await send(op)
        } catch {
            guard ifMatch != nil, error.kind == .alreadyExists else { throw error }
            throw S3Error(.changed, source.description, "the object changed since (its entity tag is no longer \(ifMatch!)): not copied to \(upload.location)",
                          status: error.status, code: error.code)
        }
        // A copy can fail after a 200: the error is in the body.
        if let code = S3XML.value("Code", in: response.text), !S3XML.elements("Error", in: response.text).isEmpty {
            throw failure(op, Response(status: 500, headers: response.headers, body: response.body)).withCode(code)
        }
        guard let etag = S3XML.value("ETag", in: response.text) else {
            throw S3Error(.badResponse, upload.location.description, "the server's answer to a copy of part \(number) names no entity tag")
        }
        return S3Part(number: number, etag: Self.unquoted(etag), size: size)
    }

    /// Abandons `upload`, freeing its parts. An upload already gone is not an error.
    public func abortMultipartUpload(_ upload: S3Upload) async throws(S3Error) {
        _ = try await send(Operation(method: .DELETE, bucket: upload.bucket, key: upload.key,
                                     query: [("uploadId", upload.uploadID)], expected: [404]))
    }

    /// The multipart uploads under way in `prefix`'s bucket whose keys begin with its key.
    public func listMultipartUploads(_ prefix: S3Location) async throws(S3Error) -> [S3Upload] {
        var uploads: [S3Upload] = []
        var markers: (key: String, id: String)?
        repeat {
            var query: [(name: String, value: String)] = [("uploads", "")]
            if !prefix.key.isEmpty { query.append(("prefix", prefix.key)) }
            if let markers { query += [("key-marker", markers.key), ("upload-id-marker", markers.id)] }
            let text = try await send(Operation(method: .GET, bucket: prefix.bucket, key: nil, query: query)).text
            for entry in S3XML.elements("Upload", in: text) {
                guard let key = S3XML.value("Key", in: entry), let id = S3XML.value("UploadId", in: entry) else { continue }
                uploads.append(S3Upload(bucket: prefix.bucket, key: key, uploadID: id, initiated: S3XML.value("Initiated", in: entry)))
            }
            if S3XML.value("IsTruncated", in: text) == "true", let key = S3XML.value("NextKeyMarker", in: text),
               let id = S3XML.value("NextUploadIdMarker", in: text) {
                markers = (key, id)
            } else {
                markers = nil
            }
        } while markers != nil
        return uploads
    }
}

extension S3 {
    /// The entity tag a single-request upload of `bytes` gets: their MD5, in hex (what a part's is too).
    public static func md5Hex(_ bytes: ByteBuffer) -> String {
        bytes.withUnsafeReadableBytes { Insecure.MD5.hash(data: $0) }.map { String(format: "%02x", $0) }.joined()
    }

    /// The entity tag of the object a multipart upload of `parts` makes: the MD5 of the parts' MD5s, then
    /// "-" and their number (what S3 and compatible servers answer). nil when a part's tag is not an MD5.
    public static func multipartETag(_ parts: [S3Part]) -> String? {
        var digests: [UInt8] = []
        for part in parts.sorted(by: { $0.number < $1.number }) {
            let hex = Array(part.etag.utf8)
            guard hex.count == 32 else { return nil }
            for i in stride(from: 0, to: 32, by: 2) {
                guard let byte = UInt8(String(decoding: hex[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
                digests.append(byte)
            }
        }
        return Insecure.MD5.hash(data: digests).map { String(format: "%02x", $0) }.joined() + "-\(parts.count)"
    }
}

extension S3Error {
    func withCode(_ code: String) -> S3Error {
        var error = self
        error.code = code
        return error
    }
}
