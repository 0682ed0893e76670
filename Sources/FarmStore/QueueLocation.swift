import FarmModel
import Foundation

/// Where a queue lives, as `--queue` and `MEDIAFARM_QUEUE` give it: `sqlite:PATH` (or a bare path), or
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?PARAMETERS]` (also `postgresql://`).
public enum QueueLocation: Sendable, Hashable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresLocation)

    /// Parses a queue URL. `environment` supplies PGPASSWORD and PGUSER, as libpq reads them.
    public static func parse(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(JobStoreError) -> QueueLocation {
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            return .postgres(try PostgresLocation(url: text, environment: environment))
        }
        var path = text
        for prefix in ["sqlite://", "sqlite:", "file://", "file:"] where path.hasPrefix(prefix) {
            path = String(path.dropFirst(prefix.count))
            break
        }
        if let scheme = path.firstRange(of: "://"), !path[..<scheme.lowerBound].contains("/") {
            throw .invalidLocation("\(text): unknown kind of queue (give sqlite:PATH or postgres://USER@HOST/DATABASE)")
        }
        guard !path.isEmpty else { throw .invalidLocation("\(text): the queue URL names no file") }
        return .sqlite(path: path)
    }

    /// For messages: never shows a password.
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let location): location.description
        }
    }
}

/// A PostgreSQL server and database, from a URL. Parameters (libpq's names where libpq has one):
/// `password`, `sslmode` (disable, prefer, require), `connect_timeout` (seconds), `application_name`,
/// `host` (a Unix-socket folder, or a host name), `port`, `user`, and MediaFarm's `schema` (where its
/// tables live, default `mediafarm`: several farms can share one database). Any other is an error.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    /// A Unix-domain socket instead of TCP.
    public var socketPath: String?
    public var user: String
    public var password: String?
    public var database: String
    public var schema: String
    public var tls: TLSMode
    public var connectTimeout: Double
    public var applicationName: String

    public static let parameters = ["application_name", "connect_timeout", "host", "password", "port", "schema", "sslmode", "user"]

    public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(JobStoreError) {
        func invalid(_ why: String) -> JobStoreError { .invalidLocation("\(Self.redacted(url)): \(why)") }
        guard let parts = URLComponents(string: url) else { throw invalid("not a valid URL") }
        var query: [String: String] = [:]
        for item in parts.queryItems ?? [] {
            guard Self.parameters.contains(item.name) else {
                throw invalid("unknown parameter \"\(item.name)\" (known: \(Self.parameters.joined(separator: ", ")))")
            }
            guard query[item.name] == nil else { throw invalid("parameter \"\(item.name)\" given twice") }
            query[item.name] = item.value ?? ""
        }
        var host = query["host"] ?? parts.host ?? ""
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let portText = query["port"] ?? parts.port.map(String.init) ?? "5432"
        guard let port = Int(portText), (1...65535).contains(port) else { throw invalid("port \(portText) is not a port number") }
        self.port = port
        if host.hasPrefix("/") {
            socketPath = host + "/.s.PGSQL.\(port)"
            self.host = "localhost"
        } else {
            self.host = host.isEmpty ? "localhost" : host
        }
        user = query["user"] ?? parts.user ?? environment["PGUSER"] ?? environment["USER"] ?? "postgres"
        password = query["password"] ?? parts.password ?? environment["PGPASSWORD"]
        let path = parts.path.hasPrefix("/") ? String(parts.path.dropFirst()) : parts.path
        guard !path.contains("/") else { throw invalid("the path names more than a database: \"\(path)\"") }
        database = path.isEmpty ? user : path
        schema = query["schema"] ?? "mediafarm"
        guard Self.isIdentifier(schema) else {
            throw invalid("schema \"\(schema)\": use lower-case letters, digits and _ (at most 63, not starting with a digit)")
        }
        let mode = query["sslmode"] ?? "prefer"
        guard let tls = TLSMode(rawValue: mode) else {
            throw invalid("sslmode \(mode): one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.tls = tls
        let timeoutText = query["connect_timeout"] ?? "10"
        switch UserNumbers.wait.narrowed(maximum: 3600).parse(timeoutText) {
        case .success(let timeout): connectTimeout = timeout
        case .failure(let error): throw invalid("connect_timeout \(timeoutText): \(error)")
        }
        applicationName = query["application_name"] ?? "mediafarm"
    }

    /// `postgres://USER@HOST:PORT/DATABASE`, and the schema when it is not the default. No password.
    public var description: String {
        let place = socketPath.map { "[\($0)]" } ?? (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        return "postgres://\(user)@\(place)/\(database)" + (schema == "mediafarm" ? "" : "?schema=\(schema)")
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 63, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// The URL with its password replaced, for error messages.
    static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "the queue URL" }
        if parts.password != nil { parts.password = "***" }
        if let items = parts.queryItems, items.contains(where: { $0.name == "password" }) {
            parts.queryItems = items.map { $0.name == "password" ? URLQueryItem(name: "password", value: "***") : $0 }
        }
        return parts.string ?? "the queue URL"
    }
}

/// Opens the queue a location names: nothing above FarmStore needs to know which backend it gets.
public enum JobStores {
    /// - Parameters:
    ///   - create: an SQLite queue is created where none exists (submit and the coordinator do this).
    ///   - migrate: a PostgreSQL schema is created or upgraded (`mediafarm queue migrate`); otherwise
    ///     a missing or older schema is an error that says to migrate.
    ///   - connections: the most PostgreSQL connections this process opens (size it from the workers);
    ///     on SQLite, 1 opens one connection (a command's), more a pool of them.
    ///   - listen: keep a connection that hears about new work (a coordinator's idle wait).
    public static func open(_ location: QueueLocation, create: Bool = false, migrate: Bool = false, policy: RetryPolicy = .default,
                            connections: Int = 4, listen: Bool = false) async throws(JobStoreError) -> any JobStore {
        switch location {
        case .sqlite(let path):
            return try SQLiteJobStore(path: path, create: create || migrate, policy: policy, connections: connections, listen: listen)
        case .postgres(let server):
            return try await PostgresJobStore.open(server, migrate: migrate, policy: policy, connections: connections, listen: listen)
        }
    }
}
