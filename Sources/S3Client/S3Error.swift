/// A request to object storage that failed, naming the object (or bucket), what was asked and why.
/// Never carries a secret: messages are built from the location, the status and the server's error code.
public struct S3Error: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case invalidLocation, configuration
        case noSuchBucket, noSuchKey, noSuchUpload
        /// The server refused the signature (a wrong secret) or does not know the access key.
        case signatureRefused, unknownAccessKey, accessDenied
        /// A conditional write found the object already there.
        case alreadyExists
        /// The object changed between two reads of one reader (its ETag differs).
        case changed
        case invalidRange
        /// No connection could be made (async-http-client keeps trying for the connect timeout first).
        case unreachable
        /// The connection broke during the request.
        case connectionBroken
        case timedOut
        /// Any other answer the request cannot go on from (a 4xx, or a 5xx after the retries).
        case refused
        case badResponse
        /// The request was given up by its caller (a reader closed while it fetched ahead).
        case cancelled
    }

    public var kind: Kind
    /// `s3://bucket/key`, `s3://bucket/` or the endpoint.
    public var subject: String
    public var detail: String
    /// The HTTP status and the server's error code, when there was an answer.
    public var status: Int?
    public var code: String?

    public init(_ kind: Kind, _ subject: String, _ detail: String, status: Int? = nil, code: String? = nil) {
        self.kind = kind
        self.subject = subject
        self.detail = detail
        self.status = status
        self.code = code
    }

    /// Whether a later attempt of the whole operation (another job attempt, minutes later) may succeed:
    /// the transient failures, and a server that could not be reached at all.
    public var mayPass: Bool { isTransient || kind == .unreachable }

    /// Whether trying the same request again may succeed (server errors, throttling, broken connections).
    public var isTransient: Bool {
        switch kind {
        case .connectionBroken, .timedOut: return true
        case .refused: return status.map { $0 >= 500 } ?? false
        default: return false
        }
    }

    /// The detail with the server's status and code, without the subject.
    public var problem: String {
        guard let status else { return detail }
        return detail + " (HTTP \(status)\(code.map { " \($0)" } ?? ""))"
    }

    public var description: String { "\(subject): \(problem)" }
}
