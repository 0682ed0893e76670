import Foundation

/// What a webhook tells: a job reached a terminal state. The names are the body's `type`.
public enum WebhookEventType: String, CaseIterable, Sendable, Hashable, Codable {
    case succeeded = "job.succeeded"
    case failed = "job.failed"
    case dead = "job.dead"
    case cancelled = "job.cancelled"

    /// The event a job's move into `state` makes; nil for a state that is not an end.
    public init?(ending state: JobState) {
        switch state {
        case .succeeded: self = .succeeded
        case .failed: self = .failed
        case .dead: self = .dead
        case .cancelled: self = .cancelled
        case .waiting, .queued, .running: return nil
        }
    }

    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// An http or https address a webhook goes to: no user or password in it, a host, at most 2,000
/// characters. `hostKey` ("host:port", the port written out) is what the farm's allowed hosts match.
public struct WebhookURL: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    /// Lowercased; an IPv6 address without its brackets.
    public let host: String
    public let port: Int

    /// The host as an allowance names it: an IPv6 address in brackets.
    public var bareHost: String { host.contains(":") ? "[\(host)]" : host }
    public var hostKey: String { "\(bareHost):\(port)" }
    public var description: String { text }

    /// The URL, or why `text` is not one a webhook can go to.
    public static func parse(_ text: String) -> Result<WebhookURL, WebhookError> {
        guard text.utf8.count <= 2000 else { return .failure(.init("a webhook URL has at most 2000 characters")) }
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased() else {
            return .failure(.init("\(text) is not a URL (expected http://HOST/PATH or https://HOST/PATH)"))
        }
        guard scheme == "http" || scheme == "https" else {
            return .failure(.init("\(text): only http and https URLs can receive webhooks, not \(scheme)"))
        }
        guard c.user == nil, c.password == nil else {
            return .failure(.init("\(scheme)://…: a webhook URL must not carry a user or password (the body is signed instead)"))
        }
        guard var host = c.host?.lowercased(), !host.isEmpty else { return .failure(.init("\(text): the URL names no host")) }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard c.fragment == nil else { return .failure(.init("\(text): a webhook URL has no #fragment")) }
        return .success(WebhookURL(text: text, host: host, port: c.port ?? (scheme == "https" ? 443 : 80)))
    }
}

/// A coordinator's `--webhook [TYPES=]URL`: where every terminal event goes, or only those of `events`
/// (`job.failed,job.dead=https://pager.example/hook`).
public struct WebhookEndpoint: Sendable, Hashable {
    public var url: WebhookURL
    /// nil: every type.
    public var events: [WebhookEventType]?

    public init(url: WebhookURL, events: [WebhookEventType]? = nil) {
        self.url = url
        self.events = events
    }

    public static func parse(_ spec: String) -> Result<WebhookEndpoint, WebhookError> {
        var text = Substring(spec)
        var events: [WebhookEventType]?
        // An event list comes before the first '=' that precedes the scheme's "://".
        if let equals = spec.firstIndex(of: "="), let scheme = spec.range(of: "://"), equals < scheme.lowerBound {
            var types: [WebhookEventType] = []
            for name in spec[..<equals].split(separator: ",", omittingEmptySubsequences: false) {
                let name = name.trimmingCharacters(in: .whitespaces)
                guard let type = WebhookEventType(rawValue: name) ?? WebhookEventType(rawValue: "job." + name) else {
                    return .failure(.init("\(spec): \"\(name)\" is not an event type (one of \(WebhookEventType.names))"))
                }
                if !types.contains(type) { types.append(type) }
            }
            events = types
            text = spec[spec.index(after: equals)...]
        }
        return WebhookURL.parse(String(text)).map { WebhookEndpoint(url: $0, events: events) }
    }

    public func wants(_ type: WebhookEventType) -> Bool { events?.contains(type) ?? true }
}

/// The hosts a job's `"notify"` may name (`coordinator --webhook-allow-host`), besides the farm's own
/// endpoints': "host" allows every port of it, "host:port" that port only.
public enum WebhookAllowance {
    /// Why `entry` is not a host or host:port; nil when it is one.
    public static func problem(_ entry: String) -> String? {
        guard let url = URLComponents(string: "http://" + entry), let host = url.host, !host.isEmpty, url.path.isEmpty,
              url.query == nil, url.user == nil, entry.utf8.count <= 300 else {
            return "\"\(entry)\" is not a host name or host:port (e.g. hooks.example.com or 10.0.0.5:8080)"
        }
        return nil
    }

    /// The normal spelling of an entry: lowercased, the port kept when given.
    public static func normalized(_ entry: String) -> String { entry.lowercased() }

    /// Whether `url` goes to a host `entries` allow.
    public static func allows(_ url: WebhookURL, entries: some Sequence<String>) -> Bool {
        entries.contains { $0 == url.bareHost || $0 == url.hostKey }
    }
}

/// Why a webhook address or option was not taken.
/// How a webhook signing secret is written (Standard Webhooks): `whsec_` and the key in base64.
public enum WebhookSecretText {
    public static let prefix = "whsec_"

    /// A new secret: 32 bytes from the system's secure generator (getrandom), for `--webhook-secret-file`
    /// and the receivers.
    public static func generate() -> String {
        var random = SystemRandomNumberGenerator()
        return prefix + Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &random) }).base64EncodedString()
    }
}

public struct WebhookError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension JSONEncoder {
    /// The API's encoder, which webhook bodies share: sorted keys, ISO 8601 times with milliseconds.
    public static let api: JSONEncoder = farm(pretty: false)

    /// The farm's one JSON encoding of its objects (jobs, views, settings), for the API, webhooks and the
    /// command line's `--json` alike: sorted keys, slashes as they are, ISO 8601 times with milliseconds
    /// (attempts are timed to better than a second). `pretty` only lays it out on lines for people.
    public static func farm(pretty: Bool) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)))
        }
        return encoder
    }
}
