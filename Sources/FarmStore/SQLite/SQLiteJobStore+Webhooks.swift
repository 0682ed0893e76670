import FarmModel
import Foundation
import GRDB

/// The webhook outbox in the SQLite queue: events recorded in the transaction of the state change,
/// deliveries claimed under leases (`WebhookOutbox`).
extension SQLiteJobStore {
    /// Records `job`'s terminal event when anyone wants it (an endpoint that takes its type, or a URL the
    /// job names): one small row without an index, in the caller's transaction, after the job's row was
    /// saved; the job itself stays in its row (`WebhookEventSchema`). Its deliveries are made later, in
    /// batches (`fanOut`).
    func recordEvent(_ job: Job, at now: Date, _ db: Database) throws {
        guard let type = WebhookEventType(ending: job.state) else { return }
        let notify = Outbox.notify(job.manifest)
        if notify == nil {
            let filters = try String?.fetchAll(db.cachedStatement(sql: "SELECT events FROM webhook_endpoints"))
            guard filters.contains(where: { Outbox.wants($0, type.rawValue) }) else { return }
        }
        try db.cachedStatement(sql: "INSERT INTO webhook_events (job_id, type, created_at, notify) VALUES (?, ?, ?, ?)")
            .execute(arguments: [job.id, type.rawValue, now.timeIntervalSince1970, Outbox.notifyColumn(notify)])
        recorded.store(true, ordering: .relaxed)
    }

    /// Before ended job `id`'s row changes or goes: its events still without a job get the row as it was
    /// (`WebhookEventSchema`). The lookup reads the events not yet made into deliveries, usually none.
    func keepEvents(of id: Int64, _ db: Database) throws {
        let waiting = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM webhook_events WHERE job_id = ? AND job IS NULL)"),
                                        arguments: [id]) ?? false
        guard waiting, let row = try Row.fetchOne(db, sql: "SELECT \(Self.columns) FROM jobs WHERE id = ?", arguments: [id]) else { return }
        try db.cachedStatement(sql: "UPDATE webhook_events SET job = ? WHERE job_id = ? AND job IS NULL").execute(arguments: [JobSnapshot(row).json, id])
    }

    /// `columns` of the jobs table as `j`.
    private static let jobColumns = columns.split(separator: ",").map { "j." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", ")

    /// Turns the recorded events into deliveries, oldest first, up to `batches` batches of 500: one per
    /// endpoint that wants the event now and per URL its job named, with the job as it was (kept in the
    /// event when its row changed since, its row otherwise). In the caller's write transaction.
    func fanOut(_ db: Database, batches: Int = .max) throws {
        for _ in 0..<batches {
            // With the job's row where the event has no job of its own: one statement, read once.
            var events: [(id: Int64, job: Int64, type: String, at: Double, notify: String?, snapshot: String?)] = []
            let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT e.id, e.job_id, e.type, e.created_at, e.notify, e.job, \(Self.jobColumns)
                FROM webhook_events AS e LEFT JOIN jobs AS j ON e.job IS NULL AND j.id = e.job_id ORDER BY e.id LIMIT 500
                """))
            while let row = try rows.next() {
                let kept: String? = row[5]
                events.append((row[0], row[1], row[2], row[3], row[4], kept ?? ((row[6] as Int64?) == nil ? nil : JobSnapshot(row, from: 6).json)))
            }
            guard let last = events.last else { return }
            let endpoints = try Row.fetchAll(db.cachedStatement(sql: "SELECT url, host, events FROM webhook_endpoints ORDER BY url")).map {
                Outbox.Endpoint(url: $0[0], host: $0[1], events: $0[2])
            }
            let insert = try db.cachedStatement(sql: """
                INSERT INTO webhook_deliveries (job_id, type, url, host, origin, state, attempts, next_at, created_at, job)
                VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)
                """)
            for event in events {
                // Always one or the other: a row that changed or went kept the job first (`keepEvents`).
                guard let job = event.snapshot else { continue }
                for t in Outbox.targets(of: event.type, endpoints: endpoints, notify: event.notify) {
                    try insert.execute(arguments: [event.job, event.type, t.url, t.host, t.origin, event.at, event.at, job])
                }
            }
            try db.cachedStatement(sql: "DELETE FROM webhook_events WHERE id <= ?").execute(arguments: [last.id])
        }
    }

    /// Makes the deliveries of the events recorded so far before a reader looks at them.
    func fannedOut() async throws(JobStoreError) {
        guard try await read({ db in try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM webhook_events)")) ?? false }) else { return }
        try await write { [self] db in try fanOut(db) }
    }

    /// Refuses a submission whose `"notify"` names a host the farm does not send to.
    func checkNotify(_ urls: [WebhookURL], of name: String, _ db: Database) throws {
        let hosts = try Self.hosts(db)
        if let refused = urls.first(where: { !hosts.allow($0) }) { throw JobStoreError.refused(Outbox.refusal(refused, job: name)) }
    }

    /// The hosts the farm sends to, as the queue holds them.
    static func hosts(_ db: Database) throws -> Outbox.Hosts {
        Outbox.Hosts(allowed: try String.fetchAll(db, sql: "SELECT host FROM webhook_allowed_hosts"),
                     endpoints: try String.fetchAll(db, sql: "SELECT host FROM webhook_endpoints"))
    }

    public func registerWebhooks(_ endpoints: [WebhookEndpoint], allowing hosts: [String], by owner: String, at now: Date) async throws(JobStoreError) {
        try await write { db in
            for e in endpoints {
                try db.execute(sql: """
                    INSERT INTO webhook_endpoints (url, host, events, added_by, added_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (url) DO UPDATE SET events = excluded.events, added_by = excluded.added_by, added_at = excluded.added_at
                    """, arguments: [e.url.text, e.url.hostKey, e.events.map { JobCoding.json($0.map(\.rawValue)) }, owner, now.timeIntervalSince1970])
            }
            for host in hosts {
                try db.execute(sql: "INSERT INTO webhook_allowed_hosts (host, added_by, added_at) VALUES (?, ?, ?) ON CONFLICT (host) DO NOTHING",
                               arguments: [WebhookAllowance.normalized(host), owner, now.timeIntervalSince1970])
            }
        }
    }

    public func removeWebhookTarget(_ target: String) async throws(JobStoreError) -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM webhook_endpoints WHERE url = ?", arguments: [target])
            var removed = db.changesCount
            try db.execute(sql: "DELETE FROM webhook_allowed_hosts WHERE host = ?", arguments: [WebhookAllowance.normalized(target)])
            removed += db.changesCount
            return removed > 0
        }
    }

    public func webhookSettings(at now: Date) async throws(JobStoreError) -> WebhookSettings {
        try await fannedOut()
        return try await read { db in
            let endpoints = try Row.fetchAll(db, sql: "SELECT url, host, events, added_by, added_at FROM webhook_endpoints ORDER BY url").map { row in
                WebhookSettings.Endpoint(url: row[0], host: row[1], events: JobCoding.decode([String].self, row[2] as String?), addedBy: row[3],
                                         addedAt: Date(timeIntervalSince1970: row[4]))
            }
            let hosts = try Row.fetchAll(db, sql: "SELECT host, added_by, added_at FROM webhook_allowed_hosts ORDER BY host").map { row in
                WebhookSettings.AllowedHost(host: row[0], addedBy: row[1], addedAt: Date(timeIntervalSince1970: row[2]))
            }
            var counts: [WebhookDeliveryState: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) FROM webhook_deliveries GROUP BY state") {
                if let state = WebhookDeliveryState(rawValue: row[0]) { counts[state] = row[1] }
            }
            let oldest = try Double.fetchOne(db, sql: "SELECT MIN(created_at) FROM webhook_deliveries WHERE state = 'pending'")
            return WebhookSettings(endpoints: endpoints, allowedHosts: hosts, counts: counts,
                                   oldestPendingAt: oldest.map(Date.init(timeIntervalSince1970:)))
        }
    }

    public func claimDeliveries(limit: Int, owner: String, leaseDuration: Double, at now: Date) async throws(JobStoreError) -> [WebhookDelivery] {
        guard limit > 0 else { return [] }
        return try await write { [self] db in
            // A batch at a time: a sender that finds a backlog (events recorded while none ran) holds the
            // queue's lock for one batch per claim, not for the whole backlog.
            try fanOut(db, batches: 1)
            let t = now.timeIntervalSince1970
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT d.id, d.job_id, d.type, d.url, d.origin, d.attempts, d.created_at, d.last_status, d.last_error, d.job
                FROM webhook_deliveries AS d
                WHERE d.state = 'pending' AND d.next_at <= ?1 AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ?1)
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries AS p
                                  WHERE p.state = 'pending' AND p.job_id = d.job_id AND p.url = d.url AND p.id < d.id)
                ORDER BY d.next_at, d.id LIMIT ?2
                """), arguments: [t, limit])
            guard !rows.isEmpty else { return [] }
            // A job's own URLs go only to hosts allowed now.
            let hosts = rows.allSatisfy({ ($0[4] as String) == "endpoint" }) ? Outbox.Hosts(allowed: [], endpoints: []) : try Self.hosts(db)
            var claimed: [WebhookDelivery] = []
            for row in rows {
                let token = Outbox.token()
                try db.cachedStatement(sql: """
                    UPDATE webhook_deliveries SET lease_owner = ?, lease_token = ?, lease_expires_at = ?, attempts = attempts + 1 WHERE id = ?
                    """).execute(arguments: [owner, token, t + leaseDuration, row[0] as Int64])
                claimed.append(WebhookDelivery(id: row[0], jobID: row[1], type: row[2], url: row[3], origin: row[4],
                                               state: .pending, attempts: (row[5] as Int) + 1, eventAt: Date(timeIntervalSince1970: row[6]),
                                               lastStatus: row[7], lastError: row[8], leaseToken: token, job: row[9],
                                               allowed: hosts.allow(row[3], origin: row[4])))
            }
            return claimed
        }
    }

    @discardableResult
    public func finishDelivery(id: Int64, token: String, outcome: DeliveryOutcome, at now: Date) async throws(JobStoreError) -> Bool {
        let (state, status, error, next, delivered) = Outbox.columns(of: outcome, at: now)
        return try await write { db in
            try db.cachedStatement(sql: """
                UPDATE webhook_deliveries SET state = ?, last_status = COALESCE(?, last_status), last_error = ?, next_at = ?, delivered_at = ?,
                    lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
                WHERE id = ? AND state = 'pending' AND lease_token = ?
                """).execute(arguments: [state.rawValue, status, error, next, delivered, id, token])
            let held = db.changesCount > 0
            // A delivery that ended after its job was pruned goes with it.
            if held && state != .pending {
                try db.cachedStatement(sql: "DELETE FROM webhook_deliveries WHERE id = ? AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = job_id)")
                    .execute(arguments: [id])
            }
            return held
        }
    }

    public func deliveries(matching query: DeliveryQuery) async throws(JobStoreError) -> [WebhookDelivery] {
        try await fannedOut()
        return try await read { db in
            var conditions: [String] = []
            var arguments: [any DatabaseValueConvertible] = []
            if let job = query.jobID {
                conditions.append("d.job_id = ?")
                arguments.append(job)
            }
            if let states = query.states {
                conditions.append("d.state IN (\(states.map { _ in "?" }.joined(separator: ",")))")
                arguments += states.map(\.rawValue)
            }
            if let ids = query.ids {
                conditions.append("d.id IN (\(ids.map { _ in "?" }.joined(separator: ",")))")
                arguments += ids
            }
            arguments.append(query.limit)
            return try Row.fetchAll(db, sql: """
                SELECT d.id, d.job_id, d.type, d.url, d.origin, d.state, d.attempts, d.created_at, d.next_at, d.last_status,
                       d.last_error, d.delivered_at
                FROM webhook_deliveries AS d
                \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")) ORDER BY d.id DESC LIMIT ?
                """, arguments: StatementArguments(arguments)).map { row in
                let state = WebhookDeliveryState(rawValue: row[5]) ?? .failed
                return WebhookDelivery(id: row[0], jobID: row[1], type: row[2], url: row[3], origin: row[4], state: state,
                                       attempts: row[6], eventAt: Date(timeIntervalSince1970: row[7]),
                                       nextAttemptAt: state == .pending ? Date(timeIntervalSince1970: row[8]) : nil, lastStatus: row[9],
                                       lastError: row[10], deliveredAt: (row[11] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    public func resendDeliveries(ids: [Int64]?, at now: Date) async throws(JobStoreError) -> [Int64] {
        let resent = try await write { db in
            let which = ids.map { "state IN ('failed', 'refused') AND id IN (\($0.map { String($0) }.joined(separator: ",")))" } ?? "state = 'failed'"
            let found = try Int64.fetchAll(db, sql: "SELECT id FROM webhook_deliveries WHERE \(which) ORDER BY id")
            try db.execute(sql: """
                UPDATE webhook_deliveries SET state = 'pending', next_at = ?, delivered_at = NULL, lease_owner = NULL, lease_token = NULL,
                    lease_expires_at = NULL WHERE \(which)
                """, arguments: [now.timeIntervalSince1970])
            return found
        }
        if !resent.isEmpty { outboxSignal.signal() }
        return resent
    }

    public func waitForDeliveries(upTo seconds: Double) async {
        await outboxSignal.wait(upTo: seconds)
    }
}

extension JobSnapshot {
    /// The job's row as `SQLiteJobStore.columns` reads it (the same columns in the same order as the
    /// snapshot's keys, from column `first` on), taken as it is: the fan-out makes hundreds at a time, and
    /// the list columns need not be decoded and written again.
    init(_ row: Row, from first: Int = 0) {
        id = row[first + 0]
        name = row[first + 1]
        manifest = row[first + 2]
        baseDirectory = row[first + 3]
        outputRoots = row[first + 4]
        priority = row[first + 5]
        maxAttempts = row[first + 6]
        runAt = row[first + 7]
        uniqueKey = row[first + 8]
        timeout = row[first + 9]
        createdAt = row[first + 10]
        state = row[first + 11]
        attempt = row[first + 12]
        leaseOwner = row[first + 13]
        leaseToken = row[first + 14]
        leaseExpiresAt = row[first + 15]
        progress = row[first + 16]
        phase = row[first + 17]
        workerPID = row[first + 18]
        startedAt = row[first + 19]
        finishedAt = row[first + 20]
        updatedAt = row[first + 21]
        result = row[first + 22]
        errors = row[first + 23]
        afterIDs = row[first + 24]
        afterPolicy = row[first + 25]
        waitingFor = row[first + 26]
        blockedBy = row[first + 27]
        requires = row[first + 28]
        chunkPlan = row[first + 29]
        chunkOf = row[first + 30]
        host = row[first + 31]
    }
}
