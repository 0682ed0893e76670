import FarmModel
import Foundation

/// How many coordinators of one kind the queue asks for: what an autoscaler (KEDA's `postgresql` trigger, an
/// HPA on `/metrics`) reads. A kind is the coordinators of one host name (the pods that share one set of
/// volumes) with one set of `--provides`, each with `slots` workers.
///
/// `jobs` = queued + running, where
/// - `queued` counts the due queued jobs such a coordinator could claim, by the claim's own rule
///   (`ClaimStatement.runnable`, `SQLiteJobStore.runnable`: it provides what they require, its host holds their
///   assets), and needs (a kind providing nothing counts the jobs that require nothing; a kind providing tags
///   the jobs that require one of them), none while the farm or the host is paused;
/// - `running` counts the jobs running on the coordinators of that host and kind, so that a scale-in never
///   asks for fewer coordinators than are busy.
/// An autoscaler whose target is `slots` jobs a coordinator (KEDA's `targetQueryValue`, an HPA's average value)
/// asks for ⌈jobs / slots⌉ of them: `coordinators`.
public struct ScalingDemand: Sendable, Equatable, Codable {
    public var provides: [String]
    public var host: String
    public var slots: Int
    public var queued: Int
    public var running: Int
    /// Whether the farm or the host is paused: nothing queued is counted.
    public var paused: Bool
    /// queued + running: the figure an autoscaler reads.
    public var jobs: Int
    /// ⌈jobs / slots⌉: the coordinators an autoscaler with a target of `slots` asks for.
    public var coordinators: Int

    public init(provides: [String], host: String, slots: Int, queued: Int, running: Int, paused: Bool) {
        (self.provides, self.host, self.slots, self.queued, self.running, self.paused) = (provides, host, slots, queued, running, paused)
        jobs = queued + running
        coordinators = (queued + running + max(slots, 1) - 1) / max(slots, 1)
    }

    /// The query an autoscaler runs on a PostgreSQL queue, in schema `schema`: one number, `jobs`. Its text is
    /// what docs/operations.md and deploy/kubernetes give; the function it calls is kept by every migration
    /// after the one that made it.
    public static func query(schema: String, provides: [String], host: String) -> String {
        "SELECT jobs FROM \(quotedIdentifier(schema)).scaling_demand(\(literal(JobCoding.json(provides.sorted()))), \(literal(host)))"
    }

    static func quotedIdentifier(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
}

/// The demand on the store's database: through the schema's `scaling_demand` function on PostgreSQL (the
/// function an autoscaler calls), through the same conditions in one query on SQLite.
public struct ScalingDemands: Sendable {
    public let database: any SQLDatabase

    public init(_ database: any SQLDatabase) {
        self.database = database
    }

    /// `scaling_demand(provides, host)`: one row of (jobs, queued, running, paused), its tables the function's
    /// schema's (its own `search_path`). `functionBody` is built from the claim's own condition, so the two
    /// cannot drift apart within a version; a released migration is never edited, so each migration that
    /// (re)creates the function holds its body as written then (`migration16`), and `ScalingDemandTests`
    /// holds the function a migrated schema has to `functionBody`: a change of the claim's rule fails it
    /// until a new migration replaces the function.
    static func functionStatement(body: String) -> String {
        """
        CREATE OR REPLACE FUNCTION {schema}.scaling_demand(provides TEXT, host TEXT)
        RETURNS TABLE (jobs BIGINT, queued BIGINT, running BIGINT, paused BOOLEAN)
        LANGUAGE sql STABLE SET search_path = {schema} AS $body$
        \(body)
        $body$
        """
    }

    /// The function's body: $1 provides (a JSON array), $2 the host. A queued job counts for a kind that could
    /// claim it and needs it: one that requires nothing for a kind that provides nothing, else one that requires
    /// one of the kind's tags (a GPU kind is not asked for by plain jobs, which a plain kind runs).
    static let functionBody = """
        SELECT q.n + r.n, q.n, r.n, p.paused
        FROM (SELECT EXISTS (SELECT 1 FROM queue_pauses WHERE scope IN ('farm', 'host:' || $2)) AS paused) AS p,
        LATERAL (SELECT COUNT(*) AS n FROM jobs WHERE NOT p.paused AND state = 'queued' AND run_at <= EXTRACT(EPOCH FROM now())
            AND \(ClaimStatement.runnable(provides: "$1", host: "$2"))
            AND (CASE WHEN $1::jsonb = '[]'::jsonb THEN requires IS NULL OR requires::jsonb = '[]'::jsonb
                 ELSE EXISTS (SELECT 1 FROM jsonb_array_elements_text(COALESCE(requires, '[]')::jsonb) AS t(tag) WHERE $1::jsonb @> jsonb_build_array(t.tag)) END)) AS q,
        LATERAL (SELECT COUNT(*) AS n FROM jobs WHERE state = 'running' AND lease_owner IN (
            SELECT owner FROM coordinators AS c WHERE c.host = $2
                AND COALESCE(c.provides, '[]')::jsonb @> $1::jsonb AND COALESCE(c.provides, '[]')::jsonb <@ $1::jsonb)) AS r
        """

    /// Migration 16's function, as released: never edited (a new migration replaces the function).
    static let migration16 = functionStatement(body: """
        SELECT q.n + r.n, q.n, r.n, p.paused
        FROM (SELECT EXISTS (SELECT 1 FROM queue_pauses WHERE scope IN ('farm', 'host:' || $2)) AS paused) AS p,
        LATERAL (SELECT COUNT(*) AS n FROM jobs WHERE NOT p.paused AND state = 'queued' AND run_at <= EXTRACT(EPOCH FROM now())
            AND (requires IS NULL OR requires::jsonb <@ $1::jsonb)
            AND (assets IS NULL OR NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(assets::jsonb) AS a(id) WHERE NOT EXISTS (
                SELECT 1 FROM asset_locations AS l WHERE l.asset_id = a.id AND l.host IN ($2, '*') AND l.state = 'present')))
            AND (CASE WHEN $1::jsonb = '[]'::jsonb THEN requires IS NULL OR requires::jsonb = '[]'::jsonb
                 ELSE EXISTS (SELECT 1 FROM jsonb_array_elements_text(COALESCE(requires, '[]')::jsonb) AS t(tag) WHERE $1::jsonb @> jsonb_build_array(t.tag)) END)) AS q,
        LATERAL (SELECT COUNT(*) AS n FROM jobs WHERE state = 'running' AND lease_owner IN (
            SELECT owner FROM coordinators AS c WHERE c.host = $2
                AND COALESCE(c.provides, '[]')::jsonb @> $1::jsonb AND COALESCE(c.provides, '[]')::jsonb <@ $1::jsonb)) AS r
        """)

    /// The same on SQLite. Its placeholders: now, then provides and host (the claim's two), provides twice (the
    /// need), host and provides twice (the kind's coordinators), host (the pauses).
    static let sqliteQuery = """
        SELECT (SELECT COUNT(*) FROM jobs WHERE NOT p.paused AND state = 'queued' AND run_at <= ? AND \(SQLiteJobStore.runnable)
                AND (CASE WHEN ? = '[]' THEN requires IS NULL OR requires = '[]'
                     ELSE EXISTS (SELECT 1 FROM json_each(COALESCE(jobs.requires, '[]')) AS t WHERE t.value IN (SELECT value FROM json_each(?))) END)),
            (SELECT COUNT(*) FROM jobs WHERE state = 'running' AND lease_owner IN (
                SELECT owner FROM coordinators AS c WHERE c.host = ?
                    AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(c.provides, '[]')) AS h WHERE h.value NOT IN (SELECT value FROM json_each(?)))
                    AND NOT EXISTS (SELECT 1 FROM json_each(?) AS w WHERE w.value NOT IN (SELECT value FROM json_each(COALESCE(c.provides, '[]')))))),
            p.paused
        FROM (SELECT EXISTS (SELECT 1 FROM queue_pauses WHERE scope IN ('farm', 'host:' || ?)) AS paused) AS p
        """

    /// The demand for coordinators of `host` providing `provides`, with `slots` workers each.
    public func demand(provides: [String], host: String, slots: Int, at now: Date = Date()) async throws -> ScalingDemand {
        let tags = JobCoding.json(provides.sorted())
        let row: SQLRow? = switch database.dialect {
        case .postgres:
            try await database.readRows("SELECT queued, running, paused FROM scaling_demand(?, ?)", [SQLValue(tags), SQLValue(host)]).first
        case .sqlite:
            try await database.readRows(Self.sqliteQuery, [SQLValue(now), SQLValue(tags), SQLValue(host), SQLValue(tags), SQLValue(tags),
                                                           SQLValue(host), SQLValue(tags), SQLValue(tags), SQLValue(host)]).first
        }
        return ScalingDemand(provides: provides.sorted(), host: host, slots: slots, queued: Int(row?[0].int ?? 0),
                             running: Int(row?[1].int ?? 0), paused: row?[2].bool ?? false)
    }
}
