import FarmModel
import Foundation
import PostgresNIO

/// The webhook outbox in the PostgreSQL queue: events recorded in the transaction of the state change (a
/// success's common case in `SucceedStatement` itself), deliveries claimed with `FOR UPDATE SKIP LOCKED`
/// under leases, so that many coordinators send each once. Tables are found through the connection's
/// search path (the queue's schema).
extension PostgresJobStore {
    /// The endpoints that want events of type `type` (SQL: a placeholder or a literal).
    static func wanting(_ type: String) -> String {
        "SELECT url, host FROM webhook_endpoints WHERE events IS NULL OR events::jsonb @> jsonb_build_array(\(type)::text)"
    }

    /// Inserts the deliveries of the event of `source` (a row set with the job's columns and `notify`, one
    /// row) of type `type` at `now` (SQL: placeholders or literals): one per endpoint that wants it and per
    /// URL the job names, in the order `order` gives (SQL over `s`, the source's row). The CTE `sent`
    /// follows `prefix` (which defines `source`). The job is left out: its row is the job as it was until
    /// it changes, and the first claim or the change writes it into the delivery (`keep`).
    static func recording(after prefix: String, source: String, type: String, now: String, order: String? = nil) -> String {
        let wanting = wanting(type)
        return """
        \(prefix)
        sent AS (
            INSERT INTO webhook_deliveries (job_id, type, url, host, origin, state, attempts, next_at, created_at, job)
            SELECT s.id, \(type), t.url, t.host, t.origin, 'pending', 0, \(now), \(now), NULL
            FROM \(source) AS s, LATERAL (
                SELECT url, host, 'endpoint' AS origin FROM (\(wanting)) AS w
                UNION ALL
                SELECT n->>'url', n->>'host', 'notify' FROM jsonb_array_elements(COALESCE(s.notify, '[]')::jsonb) AS n
                WHERE n->>'url' NOT IN (SELECT url FROM (\(wanting)) AS w)) AS t
            \(order.map { "ORDER BY \($0)" } ?? "")
            RETURNING 1)
        """
    }

    /// Before the rows of ended jobs `ids` change or go, in this transaction: their deliveries still without
    /// a job get the row as it was. The deliveries are found by the job index; nothing is read when none is.
    static func keep(_ ids: String, jobs table: String) -> String {
        """
        UPDATE webhook_deliveries AS d SET job = (SELECT \(JobSnapshot.sql("j")) FROM \(table) AS j WHERE j.id = d.job_id)
        WHERE d.job_id = ANY(\(ids)) AND d.job IS NULL AND d.state = 'pending'
        """
    }

    /// Records `job`'s terminal event in this transaction, after its row was saved.
    func recordEvent(_ job: Job, at now: Date, on c: PostgresConnection) async throws {
        try await recordEvents([job], at: now, on: c)
    }

    /// Records the terminal events of `jobs` in this transaction, after their rows were saved: one
    /// statement for each type of event, the deliveries in the jobs' order.
    func recordEvents(_ jobs: [Job], at now: Date, on c: PostgresConnection) async throws {
        var ofType: [(type: WebhookEventType, ids: [Int64])] = []
        for job in jobs {
            guard let type = WebhookEventType(ending: job.state) else { continue }
            if let i = ofType.firstIndex(where: { $0.type == type }) { ofType[i].ids.append(job.id) } else { ofType.append((type, [job.id])) }
        }
        for (type, ids) in ofType {
            var binds = PostgresBindings(capacity: 3)
            binds.append(type.rawValue)
            binds.append(now.timeIntervalSince1970)
            binds.append(ids)
            let sql = Self.recording(after: """
                WITH source AS (SELECT j.*, o.position FROM unnest($3::int8[]) WITH ORDINALITY AS o(id, position) JOIN jobs AS j ON j.id = o.id),
                """, source: "source", type: "$1", now: "$2", order: "s.position") + " SELECT COUNT(*) FROM sent"
            let rows = try await c.run(PostgresQuery(unsafeSQL: sql, binds: binds))
            if try rows.first?.decode(Int64.self) ?? 0 > 0 { _ = recorded.withLock { $0.insert(ObjectIdentifier(c)) } }
        }
    }

    /// Refuses a submission whose `"notify"` names a host the farm does not send to.
    func checkNotify(_ urls: [WebhookURL], of name: String, on c: PostgresConnection) async throws {
        let hosts = try await Self.hosts(c)
        if let refused = urls.first(where: { !hosts.allow($0) }) { throw JobStoreError.refused(Outbox.refusal(refused, job: name)) }
    }

    /// The hosts the farm sends to, as the queue holds them.
    static func hosts(_ c: PostgresConnection) async throws -> Outbox.Hosts {
        Outbox.Hosts(allowed: try await c.run("SELECT host FROM webhook_allowed_hosts").map { try $0.decode(String.self) },
                     endpoints: try await c.run("SELECT host FROM webhook_endpoints").map { try $0.decode(String.self) })
    }

    public func registerWebhooks(_ endpoints: [WebhookEndpoint], allowing hosts: [String], by owner: String, at now: Date) async throws(JobStoreError) {
        let t = now.timeIntervalSince1970
        try await transaction { c in
            for e in endpoints {
                _ = try await c.run("""
                    INSERT INTO webhook_endpoints (url, host, events, added_by, added_at)
                    VALUES (\(e.url.text), \(e.url.hostKey), \(e.events.map { JobCoding.json($0.map(\.rawValue)) }), \(owner), \(t))
                    ON CONFLICT (url) DO UPDATE SET events = excluded.events, added_by = excluded.added_by, added_at = excluded.added_at
                    """)
            }
            for host in hosts {
                _ = try await c.run("""
                    INSERT INTO webhook_allowed_hosts (host, added_by, added_at) VALUES (\(WebhookAllowance.normalized(host)), \(owner), \(t))
                    ON CONFLICT (host) DO NOTHING
                    """)
            }
        }
    }

    public func removeWebhookTarget(_ target: String) async throws(JobStoreError) -> Bool {
        try await transaction { c in
            let endpoints = try await c.run("DELETE FROM webhook_endpoints WHERE url = \(target) RETURNING 1").count
            let hosts = try await c.run("DELETE FROM webhook_allowed_hosts WHERE host = \(WebhookAllowance.normalized(target)) RETURNING 1").count
            return endpoints + hosts > 0
        }
    }

    public func webhookSettings(at now: Date) async throws(JobStoreError) -> WebhookSettings {
        let endpoints = try await run("SELECT url, host, events, added_by, added_at FROM webhook_endpoints ORDER BY url") { row in
            let (url, host, events, by, at) = try row.decode((String, String, String?, String, Double).self)
            return WebhookSettings.Endpoint(url: url, host: host, events: JobCoding.decode([String].self, events), addedBy: by,
                                            addedAt: Date(timeIntervalSince1970: at))
        }
        let hosts = try await run("SELECT host, added_by, added_at FROM webhook_allowed_hosts ORDER BY host") { row in
            let (host, by, at) = try row.decode((String, String, Double).self)
            return WebhookSettings.AllowedHost(host: host, addedBy: by, addedAt: Date(timeIntervalSince1970: at))
        }
        var counts: [WebhookDeliveryState: Int] = [:]
        for (state, n) in try await run("SELECT state, COUNT(*) FROM webhook_deliveries GROUP BY state", { try $0.decode((String, Int).self) }) {
            if let state = WebhookDeliveryState(rawValue: state) { counts[state] = n }
        }
        let oldest = try await run("SELECT MIN(created_at) FROM webhook_deliveries WHERE state = 'pending'") { try $0.decode(Double?.self) }
        return WebhookSettings(endpoints: endpoints, allowedHosts: hosts, counts: counts,
                               oldestPendingAt: (oldest.first ?? nil).map(Date.init(timeIntervalSince1970:)))
    }

    public func claimDeliveries(limit: Int, owner: String, leaseDuration: Double, at now: Date) async throws(JobStoreError) -> [WebhookDelivery] {
        guard limit > 0 else { return [] }
        let t = now.timeIntervalSince1970
        // One statement (atomic by itself, no transaction around it): the hand from commit to request is short.
        let rows = try await run("""
            WITH picked AS (
                SELECT d.id FROM webhook_deliveries AS d
                WHERE d.state = 'pending' AND d.next_at <= \(t) AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= \(t))
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries AS p
                                  WHERE p.state = 'pending' AND p.job_id = d.job_id AND p.url = d.url AND p.id < d.id)
                ORDER BY d.next_at, d.id LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED)
            UPDATE webhook_deliveries AS d
            SET lease_owner = \(owner), lease_token = replace(gen_random_uuid()::text, '-', ''), lease_expires_at = \(t + leaseDuration),
                attempts = d.attempts + 1,
                job = COALESCE(d.job, (SELECT \(unescaped: JobSnapshot.sql("j")) FROM \(unescaped: table) AS j WHERE j.id = d.job_id))
            FROM picked WHERE d.id = picked.id
            RETURNING d.id, d.job_id, d.type, d.url, d.origin, d.attempts, d.created_at, d.last_status, d.last_error, d.job, d.lease_token
            """)
        guard !rows.isEmpty else { return [] }
        var claimed: [WebhookDelivery] = []
        do {
            claimed = try rows.map { row in
                let r = row.makeRandomAccess()
                return WebhookDelivery(id: try r[0].decode(Int64.self), jobID: try r[1].decode(Int64.self),
                                       type: try r[2].decode(String.self), url: try r[3].decode(String.self), origin: try r[4].decode(String.self),
                                       state: .pending, attempts: try r[5].decode(Int.self),
                                       eventAt: Date(timeIntervalSince1970: try r[6].decode(Double.self)),
                                       lastStatus: try r[7].decode(Int?.self), lastError: try r[8].decode(String?.self),
                                       leaseToken: try r[10].decode(String.self), job: try r[9].decode(String.self))
            }.sorted { $0.id < $1.id }
        } catch {
            throw .unavailable("\(location): a webhook delivery could not be read: \(Self.describe(error))")
        }
        // A job's own URLs go only to hosts allowed now.
        if claimed.contains(where: { $0.origin != "endpoint" }) {
            let hosts = try await call { [lanes] in try await lanes.with { c in try await Self.hosts(c) } }
            for i in claimed.indices { claimed[i].allowed = hosts.allow(claimed[i].url, origin: claimed[i].origin) }
        }
        return claimed
    }

    @discardableResult
    public func finishDelivery(id: Int64, token: String, outcome: DeliveryOutcome, at now: Date) async throws(JobStoreError) -> Bool {
        let (state, status, error, next, delivered) = Outbox.columns(of: outcome, at: now)
        // A delivery that ended after its job was pruned goes with it (deleted instead of updated: one
        // statement cannot do both to a row).
        return try await run("""
            WITH orphan AS (
                DELETE FROM webhook_deliveries
                WHERE id = \(id) AND state = 'pending' AND lease_token = \(token) AND \(state != .pending)
                  AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = webhook_deliveries.job_id)
                RETURNING id),
            ended AS (
                UPDATE webhook_deliveries SET state = \(state.rawValue), last_status = COALESCE(\(status.map(Int64.init)), last_status),
                    last_error = \(error), next_at = \(next), delivered_at = \(delivered), lease_owner = NULL, lease_token = NULL,
                    lease_expires_at = NULL
                WHERE id = \(id) AND state = 'pending' AND lease_token = \(token) AND NOT EXISTS (SELECT 1 FROM orphan)
                RETURNING id)
            SELECT id FROM orphan UNION ALL SELECT id FROM ended
            """).count > 0
    }

    public func resendDeliveries(ids: [Int64]?, at now: Date) async throws(JobStoreError) -> [Int64] {
        // Senders look for due deliveries at least every second (`poll`): nothing to wake.
        try await run("""
            UPDATE webhook_deliveries SET state = 'pending', next_at = \(now.timeIntervalSince1970), delivered_at = NULL, lease_owner = NULL,
                lease_token = NULL, lease_expires_at = NULL
            WHERE CASE WHEN \(ids == nil) THEN state = 'failed' ELSE state IN ('failed', 'refused') AND id = ANY(\(ids ?? [])) END
            RETURNING id
            """, { try $0.decode(Int64.self) }).sorted()
    }

    public func deliveries(matching query: DeliveryQuery) async throws(JobStoreError) -> [WebhookDelivery] {
        try await run("""
            SELECT d.id, d.job_id, d.type, d.url, d.origin, d.state, d.attempts, d.created_at, d.next_at, d.last_status,
                   d.last_error, d.delivered_at
            FROM webhook_deliveries AS d
            WHERE (\(query.jobID == nil) OR d.job_id = \(query.jobID ?? 0))
              AND (\(query.states == nil) OR d.state = ANY(\((query.states ?? []).map(\.rawValue))))
              AND (\(query.ids == nil) OR d.id = ANY(\(query.ids ?? [])))
            ORDER BY d.id DESC LIMIT \(Int64(query.limit))
            """) { row in
            let r = row.makeRandomAccess()
            let state = WebhookDeliveryState(rawValue: try r[5].decode(String.self)) ?? .failed
            return WebhookDelivery(id: try r[0].decode(Int64.self), jobID: try r[1].decode(Int64.self),
                                   type: try r[2].decode(String.self), url: try r[3].decode(String.self), origin: try r[4].decode(String.self),
                                   state: state, attempts: try r[6].decode(Int.self), eventAt: Date(timeIntervalSince1970: try r[7].decode(Double.self)),
                                   nextAttemptAt: state == .pending ? Date(timeIntervalSince1970: try r[8].decode(Double.self)) : nil,
                                   lastStatus: try r[9].decode(Int?.self), lastError: try r[10].decode(String?.self),
                                   deliveredAt: try r[11].decode(Double?.self).map(Date.init(timeIntervalSince1970:)))
        }
    }

    public func waitForDeliveries(upTo seconds: Double) async {
        await outboxSignal.wait(upTo: seconds)
    }
}
