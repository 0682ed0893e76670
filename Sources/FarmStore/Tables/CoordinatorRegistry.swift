import Foundation

/// A coordinator as it last reported itself in the queue: its host, its worker slots and whether it is
/// draining. What lets a status page on any host show every coordinator's slots.
public struct CoordinatorPresence: Sendable, Equatable {
    /// How often a coordinator reports itself, unless configured otherwise (seconds).
    public static let reportInterval: Double = 5
    /// One not heard from for three report intervals is shown as silent.
    public static let silentAfter: Double = 3 * reportInterval

    /// The coordinator's name in leases ("host:pid:random").
    public var owner: String
    public var host: String
    public var slots: Int
    public var busy: Int
    public var draining: Bool
    public var startedAt: Date
    /// When it last reported.
    public var seenAt: Date
    /// What it provides (`coordinator --provides`): the jobs requiring these it may claim.
    public var provides: [String] = []

    /// Seconds from its last report to `now`, to the millisecond.
    public func secondsSinceReport(at now: Date) -> Double {
        (max(0, now.timeIntervalSince(seenAt)) * 1000).rounded() / 1000
    }

    public init(owner: String, host: String, slots: Int, busy: Int, draining: Bool, startedAt: Date, seenAt: Date, provides: [String] = []) {
        self.provides = provides
        self.owner = owner
        self.host = host
        self.slots = slots
        self.busy = busy
        self.draining = draining
        self.startedAt = startedAt
        self.seenAt = seenAt
    }
}

/// The queue's list of coordinators (table `coordinators`, beside the jobs, in both backends). Each
/// coordinator reports itself every few seconds and removes its row when it stops; the row of one that died
/// stays, growing older (a reader calls it silent), until a report of any coordinator a day later removes it.
public struct CoordinatorRegistry: Sendable {
    public let database: any SQLDatabase
    /// A row not refreshed for this long is deleted by the next report.
    public static let forgetAfter: Double = 86400

    public init(_ database: any SQLDatabase) {
        self.database = database
    }

    static func statements(_ dialect: SQLDialect) -> [String] {
        let (integer, real, prefix) = switch dialect {
        case .sqlite: ("INTEGER", "REAL", "")
        case .postgres: ("BIGINT", "DOUBLE PRECISION", "{schema}.")
        }
        return ["""
            CREATE TABLE \(prefix)coordinators (
                owner TEXT PRIMARY KEY,
                host TEXT NOT NULL,
                slots \(integer) NOT NULL,
                busy \(integer) NOT NULL,
                draining \(integer) NOT NULL DEFAULT 0,
                started_at \(real) NOT NULL,
                seen_at \(real) NOT NULL
            )
            """]
    }

    /// What a coordinator provides, in its row (migration v13).
    static func providesStatements(_ dialect: SQLDialect) -> [String] {
        ["ALTER TABLE \(dialect == .postgres ? "{schema}." : "")coordinators ADD COLUMN provides TEXT"]
    }

    /// Records `presence` (a new row, or the coordinator's row updated) and forgets rows older than a day.
    public func report(_ presence: CoordinatorPresence) async throws {
        try await database.write { session in
            try await session.execute("""
                INSERT INTO coordinators (owner, host, slots, busy, draining, started_at, seen_at, provides) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (owner) DO UPDATE SET host = excluded.host, slots = excluded.slots, busy = excluded.busy,
                    draining = excluded.draining, seen_at = excluded.seen_at, provides = excluded.provides
                """, [SQLValue(presence.owner), SQLValue(presence.host), SQLValue(presence.slots), SQLValue(presence.busy),
                      SQLValue(presence.draining), SQLValue(presence.startedAt), SQLValue(presence.seenAt), SQLValue(JobCoding.json(presence.provides))])
            try await session.execute("DELETE FROM coordinators WHERE seen_at < ?",
                                      [SQLValue(presence.seenAt.addingTimeInterval(-Self.forgetAfter))])
        }
    }

    /// A coordinator that stops removes its row.
    public func leave(owner: String) async throws {
        try await database.write { session in
            try await session.execute("DELETE FROM coordinators WHERE owner = ?", [SQLValue(owner)])
        }
    }

    /// Every coordinator's last report, by host then owner.
    public func all() async throws -> [CoordinatorPresence] {
        try await database.read { session in
            try await session.rows("""
                SELECT owner, host, slots, busy, draining, started_at, seen_at, provides FROM coordinators ORDER BY host, owner
                """).map { row in
                CoordinatorPresence(owner: row[0].string ?? "", host: row[1].string ?? "", slots: Int(row[2].int ?? 0),
                                    busy: Int(row[3].int ?? 0), draining: row[4].bool,
                                    startedAt: row[5].date ?? .distantPast, seenAt: row[6].date ?? .distantPast,
                                    provides: JobCoding.decode([String].self, row[7].string) ?? [])
            }
        }
    }
}
