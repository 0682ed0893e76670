import FarmModel
import Foundation

/// Claiming paused, kept in the queue (table `queue_pauses`, migration v13) so that every coordinator of
/// the farm obeys it: for the whole farm, for one host, or for one coordinator. A paused claimer takes no
/// new job (the claim's own statement checks); jobs already running go on.
public struct QueuePause: Sendable, Hashable, Codable {
    /// `farm`, `host:NAME` or `coordinator:OWNER`.
    public var scope: String
    public var since: Date
    /// Who paused it, as the pausing side said (a command line, the console, the API).
    public var by: String?

    public init(scope: String, since: Date, by: String?) {
        (self.scope, self.since, self.by) = (scope, since, by)
    }

    /// The scope of a pause: the farm, a host, or a coordinator (its owner name).
    public static func scope(host: String?, coordinator: String?) -> String {
        if let coordinator { return "coordinator:" + coordinator }
        if let host { return "host:" + host }
        return "farm"
    }

    /// Whether this pause stops the claimer `owner` ("host:pid:random").
    public func stops(owner: String) -> Bool {
        scope == "farm" || scope == "host:" + Job.host(ofOwner: owner) || scope == "coordinator:" + owner
    }
}

/// The queue's pauses: set, lifted and listed through the database beside the jobs (both backends).
public struct QueuePauses: Sendable {
    public let database: any SQLDatabase

    public init(_ database: any SQLDatabase) {
        self.database = database
    }

    static func statements(_ dialect: SQLDialect) -> [String] {
        let (real, prefix) = dialect == .postgres ? ("DOUBLE PRECISION", "{schema}.") : ("REAL", "")
        return ["CREATE TABLE \(prefix)queue_pauses (scope TEXT PRIMARY KEY, since \(real) NOT NULL, paused_by TEXT)"]
    }

    /// The condition a claim adds: no pause stops this claimer (`host` and `owner` are its placeholders).
    static func notPaused(host: String, owner: String) -> String {
        "NOT EXISTS (SELECT 1 FROM queue_pauses WHERE scope IN ('farm', 'host:' || \(host), 'coordinator:' || \(owner)))"
    }

    /// Pauses `scope` (kept as it was when already paused); every pause after it.
    @discardableResult
    public func pause(_ scope: String, by: String?, at now: Date) async throws -> [QueuePause] {
        try await database.write { session in
            try await session.execute("INSERT INTO queue_pauses (scope, since, paused_by) VALUES (?, ?, ?) ON CONFLICT (scope) DO NOTHING",
                                      [SQLValue(scope), SQLValue(now), SQLValue(by)])
            return try await Self.list(session)
        }
    }

    /// Lifts the pause of `scope`; whether there was one, and every pause after it.
    public func resume(_ scope: String) async throws -> (lifted: Bool, pauses: [QueuePause]) {
        try await database.write { session in
            let before = try await Self.list(session)
            try await session.execute("DELETE FROM queue_pauses WHERE scope = ?", [SQLValue(scope)])
            return (before.contains { $0.scope == scope }, before.filter { $0.scope != scope })
        }
    }

    /// Every pause, the farm's first, then by scope.
    public func all() async throws -> [QueuePause] {
        try await database.read { session in try await Self.list(session) }
    }

    static func list(_ session: any SQLSession) async throws -> [QueuePause] {
        try await session.rows("SELECT scope, since, paused_by FROM queue_pauses ORDER BY scope <> 'farm', scope").map { row in
            QueuePause(scope: row[0].string ?? "", since: row[1].date ?? .distantPast, by: row[2].string)
        }
    }
}
