import Foundation

/// Where the object storage is and who the farm is to it: the endpoint, the region, the addressing style
/// and the credentials. `description` never shows a secret.
public struct S3Configuration: Sendable, CustomStringConvertible {
    /// `http(s)://host[:port]`, without a path.
    public var endpoint: String
    public var region: String
    /// `http://endpoint/BUCKET/KEY` (S3-compatible servers: MinIO, Ceph, moto) rather than
    /// `http://BUCKET.endpoint/KEY` (AWS).
    public var pathStyle: Bool
    public var credentials: SigV4Credentials
    /// Where the endpoint came from (the variable that named it), or nil for AWS's default: said when the
    /// server cannot be reached.
    public var endpointSource: String?
    /// Seconds to connect, and to wait for an answer to a request.
    public var connectTimeout: Double = 5
    public var requestTimeout: Double = 120
    /// Tries of one request that fails transiently (5xx, SlowDown, a broken connection), with
    /// exponential backoff from `backoff` seconds.
    public var maxAttempts: Int = 5
    public var backoff: Double = 0.2

    public init(endpoint: String, region: String, pathStyle: Bool, credentials: SigV4Credentials) {
        self.endpoint = endpoint
        self.region = region
        self.pathStyle = pathStyle
        self.credentials = credentials
    }

    public var description: String {
        "\(endpoint) (\(region), \(pathStyle ? "path-style" : "virtual-hosted") addressing, \(credentials))"
    }

    /// The environment's settings, as the AWS tools read them:
    /// - `MEDIAFARM_S3_ENDPOINT`, else `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL` (the order of the AWS
    ///   SDKs: the service's own before the global one; default `https://s3.REGION.amazonaws.com`);
    /// - `AWS_REGION`, else `AWS_DEFAULT_REGION` (default `us-east-1`);
    /// - `MEDIAFARM_S3_ADDRESSING` `path` or `virtual` (default: path-style when an endpoint is given);
    /// - `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, else the profile
    ///   `AWS_PROFILE` (default `default`) of the credentials file `AWS_SHARED_CREDENTIALS_FILE`
    ///   (default `~/.aws/credentials`).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(S3Error) -> S3Configuration {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? "us-east-1"
        let source = ["MEDIAFARM_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"].first { value($0) != nil }
        let given = source.flatMap(value)
        var endpoint = given ?? "https://s3.\(region).amazonaws.com"
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        guard let url = URL(string: endpoint), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil,
              url.path.isEmpty, url.query == nil else {
            throw S3Error(.configuration, source ?? "MEDIAFARM_S3_ENDPOINT", "\"\(endpoint)\" is not an http:// or https:// address of a server (http://HOST:PORT)")
        }
        let pathStyle: Bool
        switch value("MEDIAFARM_S3_ADDRESSING") {
        case nil: pathStyle = given != nil
        case "path": pathStyle = true
        case "virtual": pathStyle = false
        case let other?: throw S3Error(.configuration, "MEDIAFARM_S3_ADDRESSING", "\"\(other)\" is neither \"path\" nor \"virtual\"")
        }
        let credentials = try Self.credentials(environment)
        var configuration = S3Configuration(endpoint: endpoint, region: region, pathStyle: pathStyle, credentials: credentials)
        configuration.endpointSource = source
        return configuration
    }

    static func credentials(_ environment: [String: String]) throws(S3Error) -> SigV4Credentials {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if let key = value("AWS_ACCESS_KEY_ID") {
            guard let secret = value("AWS_SECRET_ACCESS_KEY") else {
                throw S3Error(.configuration, "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
            }
            return SigV4Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
        }
        let profile = value("AWS_PROFILE") ?? "default"
        let home = value("HOME") ?? NSHomeDirectory()
        let file = value("AWS_SHARED_CREDENTIALS_FILE") ?? home + "/.aws/credentials"
        // No file (or none readable): the message names it and the other way to give credentials.
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw S3Error(.configuration, "credentials",
                          "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in \(file) (AWS_PROFILE)")
        }
        guard let entries = profileEntries(text, profile: profile) else {
            throw S3Error(.configuration, file, "no profile [\(profile)] (AWS_PROFILE names the profile to use)")
        }
        guard let key = entries["aws_access_key_id"], let secret = entries["aws_secret_access_key"] else {
            throw S3Error(.configuration, file, "the profile [\(profile)] has no aws_access_key_id and aws_secret_access_key")
        }
        return SigV4Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: entries["aws_session_token"])
    }

    /// The `name = value` lines of section `[profile]` of an INI-style credentials file.
    static func profileEntries(_ text: String, profile: String) -> [String: String]? {
        var entries: [String: String]?
        var inside = false
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                inside = name == profile || name == "profile \(profile)"
                if inside && entries == nil { entries = [:] }
                continue
            }
            guard inside, let eq = line.firstIndex(of: "=") else { continue }
            let name = line[..<eq].trimmingCharacters(in: .whitespaces).lowercased()
            entries?[name] = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
        }
        return entries
    }
}
