/// An object or a prefix in a bucket, written `s3://BUCKET/KEY`.
public struct S3Location: Sendable, Hashable, CustomStringConvertible {
    public var bucket: String
    /// The object's key ("" or ending in "/" for a prefix).
    public var key: String

    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    public static let scheme = "s3://"

    /// Whether `path` names an object (`s3://...`) rather than a file.
    public static func isObject(_ path: String) -> Bool { path.hasPrefix(scheme) }

    /// Parses `s3://BUCKET/KEY`, checking the bucket's name (3 to 63 lower-case letters, digits, dots and
    /// hyphens, beginning and ending with a letter or digit) and the key's length (at most 1,024 bytes).
    /// An empty key is allowed only when `prefix` is true.
    public init(parsing text: String, prefix: Bool = false) throws(S3Error) {
        guard text.hasPrefix(Self.scheme) else {
            throw S3Error(.invalidLocation, text, "not an s3:// address (s3://BUCKET/KEY)")
        }
        let rest = text.dropFirst(Self.scheme.count)
        let bucket = String(rest.prefix { $0 != "/" })
        let key = String(rest.dropFirst(bucket.count + 1))
        if let problem = Self.problem(bucket: bucket) { throw S3Error(.invalidLocation, text, problem) }
        if key.isEmpty && !prefix { throw S3Error(.invalidLocation, text, "names a bucket, not an object (s3://BUCKET/KEY)") }
        if key.utf8.count > 1024 { throw S3Error(.invalidLocation, text, "the key is \(key.utf8.count) bytes long; S3 allows 1,024") }
        if key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
            throw S3Error(.invalidLocation, text, "the key contains a control character")
        }
        self.init(bucket: bucket, key: key)
    }

    static func problem(bucket: String) -> String? {
        if bucket.isEmpty { return "no bucket named (s3://BUCKET/KEY)" }
        guard (3...63).contains(bucket.count) else { return "the bucket name \"\(bucket)\" must be 3 to 63 characters long" }
        let allowed = bucket.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "-" }
        guard allowed else { return "the bucket name \"\(bucket)\" may hold only lower-case letters, digits, dots and hyphens" }
        let ends = [bucket.unicodeScalars.first!, bucket.unicodeScalars.last!]
        guard ends.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) }) else {
            return "the bucket name \"\(bucket)\" must begin and end with a letter or a digit"
        }
        return nil
    }

    /// The location of `name` under this prefix.
    public func appending(_ name: String) -> S3Location {
        S3Location(bucket: bucket, key: key.isEmpty || key.hasSuffix("/") ? key + name : key + "/" + name)
    }

    /// The key's last component.
    public var name: String { String(key.split(separator: "/").last ?? "") }

    public var description: String { Self.scheme + bucket + "/" + key }
}
