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
    /// The port the URL's scheme has when none is written: 80 for http, 443 for https.
    public let schemePort: Int

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
        // The host as the HTTP client reads it (Foundation's URL; URLComponents turns xn-- names into
        // Unicode): one spelling for the check and the connection.
        guard var host = (URL(string: text)?.host ?? c.host)?.lowercased(), !host.isEmpty else {
            return .failure(.init("\(text): the URL names no host"))
        }
        guard host.unicodeScalars.allSatisfy(\.isASCII) else {
            return .failure(.init("\(text): write an international host name in its ASCII form (xn--…, as `idn2` prints it)"))
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard c.fragment == nil else { return .failure(.init("\(text): a webhook URL has no #fragment")) }
        let schemePort = scheme == "https" ? 443 : 80
        return .success(WebhookURL(text: text, host: host, port: c.port ?? schemePort, schemePort: schemePort))
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
/// endpoints': "host" allows the scheme's own port of it (80 for http, 443 for https), "host:port" that
/// port, "host:low-high" the ports of the range. A name allows what it resolves to only where that is a
/// public address (the sender checks at each delivery); an address written out is allowed as it is.
public enum WebhookAllowance {
    /// An entry as it matches: the host as `WebhookURL.bareHost` spells it, and its ports (nil: the scheme's own).
    struct Rule: Equatable {
        var host: String
        var ports: ClosedRange<Int>?
    }

    static func parse(_ entry: String) -> Rule? {
        guard entry.utf8.count <= 300 else { return nil }
        let text = entry.lowercased()
        // The port part follows the ':' after an IPv6 address's brackets, or the last ':' of anything else.
        let colon: String.Index?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            colon = text[close...].firstIndex(of: ":")
        } else {
            colon = text.lastIndex(of: ":")
        }
        let host = colon.map { String(text[..<$0]) } ?? text
        guard let url = URLComponents(string: "http://" + host), let name = url.host, !name.isEmpty, url.path.isEmpty, url.port == nil,
              url.query == nil, url.user == nil, url.fragment == nil else { return nil }
        guard let colon else { return Rule(host: host, ports: nil) }
        let bounds = text[text.index(after: colon)...].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let numbers = bounds.compactMap { $0.allSatisfy(\.isASCIIDigit) && $0.count <= 5 ? Int($0) : nil }
        guard numbers.count == bounds.count, let low = numbers.first, let high = numbers.last, 1 <= low, low <= high, high <= 65535 else {
            return nil
        }
        return Rule(host: host, ports: low...high)
    }

    /// Why `entry` is not a host, host:port or host:low-high; nil when it is one.
    public static func problem(_ entry: String) -> String? {
        guard parse(entry) == nil else { return nil }
        return "\"\(entry)\" is not a host name, host:port or host:low-high with ports from 1 to 65535 "
            + "(e.g. hooks.example.com, 10.0.0.5:8080 or hooks.example.com:8000-8099)"
    }

    /// The normal spelling of an entry: lowercased, the port kept when given.
    public static func normalized(_ entry: String) -> String { entry.lowercased() }

    /// Whether `url` goes to a host and port `entries` allow.
    public static func allows(_ url: WebhookURL, entries: some Sequence<String>) -> Bool {
        entries.contains { text in
            guard let entry = parse(text), entry.host == url.bareHost else { return false }
            return entry.ports.map { $0.contains(url.port) } ?? (url.port == url.schemePort)
        }
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

extension JSONDecoder {
    /// Reads what `JSONEncoder.farm` writes: ISO 8601 times, with or without fractions of a second.
    public static func farm() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            let style = Date.ISO8601FormatStyle.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)
            // A time without a fraction is read by the plain style.
            if let date = (try? style.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text)) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(text): not an ISO 8601 time")
        }
        return decoder
    }
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
