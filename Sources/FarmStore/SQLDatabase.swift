import Foundation

/// One value of a row or a parameter, as both backends store them: integers (also booleans, as 0 and 1),
/// doubles (times as epoch seconds), text (JSON too), or NULL.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    public init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    public init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    public init(_ value: Double?) { self = value.map { .real($0) } ?? .null }
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }
    public init(_ value: Date?) { self = value.map { .real($0.timeIntervalSince1970) } ?? .null }

    public var isNull: Bool { self == .null }

    public var int: Int64? {
        switch self {
        case .integer(let v): v
        case .real(let v): Int64(exactly: v.rounded()) ?? nil
        case .text(let s): Int64(s)
        case .null: nil
        }
    }

    public var double: Double? {
        switch self {
        case .integer(let v): Double(v)
        case .real(let v): v
        case .text(let s): Double(s)
        case .null: nil
        }
    }

    public var string: String? {
        switch self {
        case .text(let s): s
        case .integer(let v): String(v)
        case .real(let v): String(v)
        case .null: nil
        }
    }

    public var bool: Bool { (int ?? 0) != 0 }
    public var date: Date? { double.map(Date.init(timeIntervalSince1970:)) }
}

/// A row's values, by column position.
public struct SQLRow: Sendable, Hashable {
    public var values: [SQLValue]

    public init(_ values: [SQLValue]) { self.values = values }

    public subscript(_ index: Int) -> SQLValue { index < values.count ? values[index] : .null }
}

/// Which SQL a database speaks, where the two differ.
public enum SQLDialect: Sendable, Hashable {
    case sqlite, postgres
}

/// Statements inside one transaction. SQL is written once for both backends, with `?` placeholders
/// (outside string literals); the PostgreSQL session numbers them.
public protocol SQLSession: Sendable {
    var dialect: SQLDialect { get }
    func rows(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
}

extension SQLSession {
    public func rows(_ sql: String) async throws -> [SQLRow] {
        try await rows(sql, [])
    }

    @discardableResult
    public func execute(_ sql: String, _ binds: [SQLValue] = []) async throws -> [SQLRow] {
        try await rows(sql, binds)
    }

    /// The first column of the first row, or nil.
    public func value(_ sql: String, _ binds: [SQLValue] = []) async throws -> SQLValue? {
        try await rows(sql, binds).first.map { $0[0] }
    }
}

/// The database beside a queue's jobs, for the tables of other parts of the farm (the asset library):
/// transactions of plain SQL on the same SQLite file or PostgreSQL schema as the jobs.
public protocol SQLDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Where it is, for messages (never with a password).
    var location: String { get }
    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws (its error
    /// then reaches the caller unchanged; a database's own errors arrive as `JobStoreError`s). A writing
    /// transaction takes SQLite's write lock up front; a reading one sees one snapshot.
    func transaction<T: Sendable>(writing: Bool, _ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T
    /// One statement that reads, on its own: what `read { $0.rows(sql, binds) }` answers, where a backend
    /// can answer it for less (SQLite: on the job store's connection, without opening one for it).
    func readRows(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
}

extension SQLDatabase {
    public func readRows(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await read { s in try await s.rows(sql, binds) }
    }
}

extension SQLDatabase {
    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        try await transaction(writing: true, body)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        try await transaction(writing: false, body)
    }
}

extension SQLDialect {
    /// `?` placeholders numbered `$1`, `$2`… for PostgreSQL (those inside string literals and quoted
    /// names are left alone).
    static func numbered(_ sql: String) -> String {
        var out = ""
        out.reserveCapacity(sql.utf8.count + 16)
        var n = 0
        var quote: Character?
        for c in sql {
            if let q = quote {
                if c == q { quote = nil }
                out.append(c)
            } else if c == "'" || c == "\"" {
                quote = c
                out.append(c)
            } else if c == "?" {
                n += 1
                out += "$\(n)"
            } else {
                out.append(c)
            }
        }
        return out
    }
}
