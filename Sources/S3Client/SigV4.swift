import Crypto
import Foundation

/// Credentials for Signature Version 4: an access key, its secret, and a session token for temporary
/// credentials. `description` never shows the secret or the token.
public struct SigV4Credentials: Sendable, Hashable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String { "access key \(accessKeyID)" + (sessionToken == nil ? "" : " (temporary)") }
}

/// AWS Signature Version 4 (HMAC-SHA256), as S3 and S3-compatible servers check it: a request's method,
/// path, query, headers and payload hash made canonical, hashed into the string to sign with the date and
/// the scope (date/region/service/aws4_request), and signed with a key derived from the secret for that
/// scope. Paths and query values are given decoded; the signer encodes them (RFC 3986's unreserved
/// characters stay, everything else is %XX of its UTF-8). S3 neither normalizes paths nor encodes them
/// twice (`normalizesPath` false, its default for the service "s3").
public struct SigV4Signer: Sendable {
    public var credentials: SigV4Credentials
    public var region: String
    public var service: String
    /// Remove "." and ".." segments and empty ones (every service but S3).
    public var normalizesPath: Bool

    public init(credentials: SigV4Credentials, region: String, service: String = "s3", normalizesPath: Bool? = nil) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.normalizesPath = normalizesPath ?? (service != "s3")
    }

    /// A request to sign: headers as given (names in any case, repeated names allowed).
    public struct Request: Sendable {
        public var method: String
        /// The decoded path, from "/".
        public var path: String
        /// Decoded name/value pairs (a name without "=" has the value "").
        public var query: [(name: String, value: String)]
        public var headers: [(name: String, value: String)]
        /// Hex SHA-256 of the body, or "UNSIGNED-PAYLOAD".
        public var payloadHash: String

        public init(method: String, path: String, query: [(name: String, value: String)] = [],
                    headers: [(name: String, value: String)] = [], payloadHash: String = SigV4Signer.emptyPayloadHash) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }

        /// The value of header `name` (any case), the first one given.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// Hex SHA-256 of `data`.
    public static func hash(_ data: some DataProtocol) -> String { hex(SHA256.hash(data: data)) }

    /// "20150830T123600Z" and "20150830" of `date`, UTC.
    public static func stamps(_ date: Date) -> (time: String, day: String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let day = String(format: "%04d%02d%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
        return (day + String(format: "T%02d%02d%02dZ", c.hour ?? 0, c.minute ?? 0, c.second ?? 0), day)
    }

    // MARK: The steps (each checked against the published test suite)

    /// The canonical request and the signed headers' names ("host;x-amz-date").
    public func canonicalRequest(_ request: Request) -> (text: String, signedHeaders: String) {
        let headers = Self.canonicalHeaders(request.headers)
        let signed = headers.map(\.name).joined(separator: ";")
        let text = [
            request.method.uppercased(),
            canonicalPath(request.path),
            Self.canonicalQuery(request.query),
            headers.map { "\($0.name):\($0.value)\n" }.joined(),
            signed,
            request.payloadHash,
        ].joined(separator: "\n")
        return (text, signed)
    }

    /// "day/region/service/aws4_request".
    public func scope(day: String) -> String { "\(day)/\(region)/\(service)/aws4_request" }

    public func stringToSign(canonicalRequest: String, time: String) -> String {
        "AWS4-HMAC-SHA256\n\(time)\n\(scope(day: String(time.prefix(8))))\n\(Self.hash(Data(canonicalRequest.utf8)))"
    }

    /// Hex HMAC-SHA256 of `stringToSign` with the key derived for the day's scope.
    public func signature(stringToSign: String, day: String) -> String {
        var key = SymmetricKey(data: Data(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
    }

    // MARK: Signing

    /// The `Authorization` header's value for a request whose headers already hold its `X-Amz-Date`
    /// (and whatever else is to be signed).
    public func authorization(_ request: Request, time: String) -> String {
        let (canonical, signed) = canonicalRequest(request)
        let signature = signature(stringToSign: stringToSign(canonicalRequest: canonical, time: time), day: String(time.prefix(8)))
        return "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope(day: String(time.prefix(8)))), SignedHeaders=\(signed), Signature=\(signature)"
    }

    /// The headers to send with `request` at `date`: its own, `X-Amz-Date`, `X-Amz-Content-Sha256` (S3
    /// wants the payload's hash), the session token if any, and `Authorization` over all of them.
    public func signedHeaders(_ request: Request, at date: Date) -> [(name: String, value: String)] {
        let time = Self.stamps(date).time
        var request = request
        request.headers.append(("X-Amz-Date", time))
        if service == "s3", request.header("x-amz-content-sha256") == nil { request.headers.append(("X-Amz-Content-Sha256", request.payloadHash)) }
        if let token = credentials.sessionToken { request.headers.append(("X-Amz-Security-Token", token)) }
        return request.headers + [("Authorization", authorization(request, time: time))]
    }

    /// A presigned request's query (query-string authentication): the request's own query plus the
    /// X-Amz-* parameters and the signature, valid for `expires` seconds from `date`. The payload is
    /// unsigned; only `Host` is signed unless `request` has other headers.
    public func presignedQuery(_ request: Request, at date: Date, expires: Int) -> [(name: String, value: String)] {
        let (time, day) = Self.stamps(date)
        var request = request
        request.payloadHash = Self.unsignedPayload
        var query = request.query + [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(day: day))"),
            ("X-Amz-Date", time),
            ("X-Amz-Expires", String(expires)),
        ]
        if let token = credentials.sessionToken { query.append(("X-Amz-Security-Token", token)) }
        query.append(("X-Amz-SignedHeaders", Self.canonicalHeaders(request.headers).map(\.name).joined(separator: ";")))
        request.query = query
        let canonical = canonicalRequest(request).text
        return query + [("X-Amz-Signature", signature(stringToSign: stringToSign(canonicalRequest: canonical, time: time), day: day))]
    }

    // MARK: Canonical forms

    /// The path encoded segment by segment ("/" kept); for services other than S3, "." and ".." resolved
    /// and empty segments removed first.
    func canonicalPath(_ path: String) -> String {
        var segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if normalizesPath {
            var kept: [String] = []
            for segment in segments.dropFirst() {
                switch segment {
                case "", ".": continue
                case "..": _ = kept.popLast()
                default: kept.append(segment)
                }
            }
            let trailing = path.count > 1 && (path.hasSuffix("/") || path.hasSuffix("/.") || path.hasSuffix("/.."))
            segments = [""] + kept + (trailing && !kept.isEmpty ? [""] : [])
        }
        let encoded = segments.map { Self.encode($0) }.joined(separator: "/")
        return encoded.isEmpty ? "/" : (encoded.hasPrefix("/") ? encoded : "/" + encoded)
    }

    /// Pairs encoded, sorted by name then value, joined with "&".
    static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { (encode($0.name), encode($0.value)) }
        let sorted = encoded.sorted { a, b in a.name == b.name ? a.value < b.value : a.name < b.name }
        return sorted.map { pair in pair.name + "=" + pair.value }.joined(separator: "&")
    }

    /// Names lower-cased and sorted; values trimmed, inner runs of spaces made one, a name's values
    /// joined with "," in the order given.
    static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        var values: [String: [String]] = [:]
        for (name, value) in headers {
            let trimmed = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
            values[name.lowercased(), default: []].append(trimmed)
        }
        return values.keys.sorted().map { ($0, values[$0]!.joined(separator: ",")) }
    }

    /// RFC 3986 percent-encoding: A-Z a-z 0-9 - . _ ~ stay, every other byte of the UTF-8 is %XX.
    public static func encode(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
