import FarmModel
import QualityModel
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The queue for several hosts: one PostgreSQL database that every host's coordinator uses, over a pool
/// of postgres-nio connections (a command line: the one connection it opened).
///
/// - Claims are one prepared statement: `FOR UPDATE SKIP LOCKED` in priority, runAt, id order, so
///   concurrent claimers never wait for each other nor take the same job.
/// - Every other change reads the row, applies `JobStateMachine`, and writes it back with one UPDATE
///   that checks the row's revision and the lease token it read (fencing in the statement itself): a
///   coordinator whose lease was rescued and re-claimed cannot finish, fail or renew the newer attempt.
///   Batches (several finishes, the rescuer) lock their rows instead (`FOR UPDATE`, `SKIP LOCKED` for
///   the rescuer, so that many rescuers rescue each expired lease once).
/// - One live job per unique key is a partial unique index.
/// - Submissions and retries `NOTIFY` the schema's channel; a coordinator that asked to listen keeps
///   one connection on it (reconnecting with backoff) and wakes within milliseconds.
/// - The pool reconnects by itself when the server restarts; each call has a deadline, so a caller
///   (the lease heartbeat) gets an error and tries again rather than hanging on a dead network.
public final class PostgresJobStore: JobStore {
    public let server: PostgresLocation
    /// Where statements run.
    let lanes: Lanes
    let machine: JobStateMachine
    /// `"schema".jobs`, quoted.
    let table: String
    /// `"schema".job_dependencies`: who waits for whom.
    let edges: String
    /// `"schema".`: the other tables' (the library's) prefix.
    var schemaPrefix: String { String(table.dropLast("jobs".count)) }
    let channel: String
    /// postgres-nio's own messages (debug and trace); errors reach users through `JobStoreError`.
    static let logger = Logger(label: "mediafarm.queue.postgres")
    private let running: Task<Void, Never>?
    private let listener = Mutex<Task<Void, Never>?>(nil)
    private let work = WorkSignal()
    /// The connections whose open transaction recorded a webhook event: its commit wakes this process's senders.
    let recorded = Mutex<Set<ObjectIdentifier>>([])
    let outboxSignal = WorkSignal()
    /// How long one call may take before it fails (the server is unreachable).
    let deadline: Double

    /// The schema version this program writes; it refuses a newer one.
    public static let schemaVersion = PostgresSchema.migrations.count

    public let schemaChange: SchemaChange

    private init(server: PostgresLocation, policy: RetryPolicy, lanes: Lanes, schemaChange: SchemaChange) {
        self.schemaChange = schemaChange
        self.server = server
        self.machine = JobStateMachine(policy: policy)
        self.table = "\"\(server.schema)\".jobs"
        self.edges = "\"\(server.schema)\".job_dependencies"
        self.channel = "\(server.schema)_work"
        self.deadline = max(server.connectTimeout, 5) + 5
        self.lanes = lanes
        if case .pool(let client) = lanes {
            running = Task { await client.run() }
        } else {
            running = nil
        }
    }

    deinit {
        running?.cancel()
        listener.withLock { $0?.cancel() }
        // A store dropped without close(): its connection closes on its own (and lives until it has).
        if case .single(let connection, _) = lanes { connection.close().whenComplete { _ in withExtendedLifetime(connection) {} } }
    }

    /// Connects to check the server, the credentials and the schema (creating or upgrading it with
    /// `migrate`). With `connections` 1 (a command that makes a few calls one after another) that
    /// connection is the store's; otherwise a pool of up to `connections` opens, one connection at
    /// once, and reconnects by itself when connections drop.
    static func open(_ server: PostgresLocation, migrate: Bool, policy: RetryPolicy, connections: Int,
                     listen: Bool) async throws(JobStoreError) -> PostgresJobStore {
        let connection = try await connect(server)
        let change: SchemaChange
        do {
            change = try await PostgresSchema.check(connection, server: server, migrate: migrate, logger: logger)
        } catch {
            try? await connection.close()  // closing: nothing to lose
            throw (error as? JobStoreError) ?? .unavailable("\(server): \(describe(error))")
        }
        if connections <= 1 && !listen {
            return PostgresJobStore(server: server, policy: policy, lanes: .single(connection, Turnstile()), schemaChange: change)
        }
        try? await connection.close()  // closing: nothing to lose
        var configuration = Self.clientConfiguration(server)
        configuration.options.maximumConnections = max(2, connections + (listen ? 1 : 0))
        configuration.options.minimumConnections = 1
        // No keep-alive statements: the pool scheduled an idle connection's keep-alive timer at each release
        // and cancelled it at each lease, waking its own task twice a statement (claim+complete ran 8% faster
        // without). A coordinator's heartbeat, rescuer and registry use the pool every few seconds anyway,
        // and a call on a connection that died silently ends at the deadline.
        configuration.options.keepAliveBehavior = nil
        let client = PostgresClient(configuration: configuration, eventLoopGroup: PostgresLoop.group)
        let store = PostgresJobStore(server: server, policy: policy, lanes: .pool(client), schemaChange: change)
        if listen { store.startListening() }
        return store
    }

    public func close() async {
        listener.withLock { $0?.cancel() }
        running?.cancel()
        if case .single(let connection, _) = lanes { try? await connection.close() }  // closing: nothing to lose
    }

    public var location: String { server.description }

    // MARK: - JobStore

    public func enqueue(_ jobs: [NewJob], at now: Date) async throws(JobStoreError) -> [Enqueued] {
        guard !jobs.isEmpty else { return [] }
        if jobs.count == 1, jobs[0].uniqueKey == nil, jobs[0].after.isEmpty, jobs[0].outputs.isEmpty, Outbox.notify(jobs[0].manifest) == nil {
            // One job, no key, no dependency, no file: one statement (the notification goes out as it commits).
            let ids = try await run(insertion([RowInsert(plain: jobs[0], at: now)], before: "WITH inserted AS (", after: """
                RETURNING id), notified AS (SELECT pg_notify('\(channel)', '')) SELECT id FROM inserted, notified
                """)) { try $0.decode(Int64.self) }
            guard let id = ids.first else { throw .unavailable("\(location): the new job's id did not come back") }
            return [Enqueued(id: id, inserted: true)]
        }
        return try await transaction { [self] c in
            var results: [Enqueued] = []
            // The files' live writers, found for the whole submission at once (and the new jobs added as they go in).
            let writers = try await liveWriters(of: jobs, on: c)
            // Jobs with no key and no dependency go in together, a statement for up to 1,000, checked in
            // order as each other job is (a file written twice is refused naming the job inserted first).
            var plain: [NewJob] = [], files = OutputClaimIndex<Bool>()
            var hosts: Outbox.Hosts?
            for new in jobs {
                if new.uniqueKey == nil && new.after.isEmpty {
                    if plain.count == 1_000 || new.outputs.contains(where: { !files.clashing($0).isEmpty }) {
                        results += try await insertPlain(plain, at: now, on: c, writers: writers)
                        (plain, files) = ([], OutputClaimIndex())
                    }
                    if let notify = Outbox.notify(new.manifest) {
                        if hosts == nil { hosts = try await Self.hosts(c) }
                        if let refused = notify.first(where: { !(hosts?.allow($0) ?? false) }) {
                            throw JobStoreError.refused(Outbox.refusal(refused, job: new.name))
                        }
                    }
                    try writers.check(new, after: [])
                    plain.append(new)
                    for file in new.outputs { files.add(file, true) }
                } else {
                    results += try await insertPlain(plain, at: now, on: c, writers: writers)
                    (plain, files) = ([], OutputClaimIndex())
                    results.append(try await insert(new, at: now, on: c, writers: writers))
                }
            }
            results += try await insertPlain(plain, at: now, on: c, writers: writers)
            try await recordOutputs(writers, on: c)
            if results.contains(where: \.inserted) {
                _ = try await c.run("SELECT pg_notify(\(channel), '')")
            }
            return results
        }
    }

    static func newJob(_ new: NewJob, at now: Date) -> Job {
        var job = Job(name: new.name, manifest: new.manifest, baseDirectory: new.baseDirectory, outputRoots: new.outputRoots,
                      priority: new.priority, maxAttempts: new.maxAttempts, runAt: new.runAt, uniqueKey: new.uniqueKey,
                      timeout: new.timeout, createdAt: now)
        job.afterPolicy = new.afterPolicy
        job.chunkOf = new.chunkOf
        return job
    }

    func insert(_ new: NewJob, at now: Date, on c: PostgresConnection, writers: OutputWriters? = nil) async throws -> Enqueued {
        // The live job holding its key answers for it before its files are looked at (they are that job's).
        if let key = new.uniqueKey, !new.outputs.isEmpty, let row = try await c.run("""
            SELECT id FROM \(unescaped: table) WHERE unique_key = \(key) AND state IN ('waiting', 'queued', 'running')
            """).first {
            return Enqueued(id: try row.decode(Int64.self), inserted: false)
        }
        var job = Self.newJob(new, at: now)
        if !new.after.isEmpty {
            job.after = try await resolve(new.after, for: new.name, on: c)
            Dependencies.start(&job, DependencyVerdict.of(try await dependencies(job.after, on: c), policy: job.afterPolicy), at: now)
        }
        let notify = Outbox.notify(new.manifest)
        if let notify { try await checkNotify(notify, of: new.name, on: c) }
        if let writers { try writers.check(new, after: job.after) }
        // A key held by a job that ends between the two statements: try again.
        for _ in 0..<10 {
            let inserted = try await c.run(insertion([RowInsert(job, requires: Placement.requires(new), assets: Placement.assets(new),
                                                                    notify: Outbox.notifyColumn(notify))], after: """
                ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('waiting', 'queued', 'running') DO NOTHING RETURNING id
                """))
            if let row = inserted.first {
                let id = try row.decode(Int64.self)
                writers?.add(new, id: id)
                if !job.after.isEmpty {
                    _ = try await c.run("INSERT INTO \(unescaped: edges) (depends_on, job_id) SELECT unnest(\(job.after)::int8[]), \(id)")
                }
                if job.state.isTerminal {
                    job.id = id
                    try await recordEvent(job, at: now, on: c)
                }
                return Enqueued(id: id, inserted: true)
            }
            let live = try await c.run("""
                SELECT id FROM \(unescaped: table) WHERE unique_key = \(new.uniqueKey) AND state IN ('waiting', 'queued', 'running')
                """)
            if let row = live.first { return Enqueued(id: try row.decode(Int64.self), inserted: false) }
        }
        throw JobStoreError.unavailable("\(location): the unique key \(new.uniqueKey ?? "") keeps changing hands; try again")
    }

    /// One prepared statement (`ClaimStatement`).
    public func claim(limit: Int, owner: String, leaseDuration: Double, provides: [String], at now: Date) async throws(JobStoreError) -> [Job] {
        guard limit > 0 else { return [] }
        let t = now.timeIntervalSince1970
        let rows = try await execute(ClaimStatement(now: t, limit: Int64(limit), owner: owner, expires: t + leaseDuration,
                                                    provides: JobCoding.json(provides), host: Job.host(ofOwner: owner)))
        return try decodeJobs(rows).map(\.job).sorted { a, b in
            (a.priority, b.runAt, b.id) > (b.priority, a.runAt, a.id)
        }
    }

    /// One statement for every renewal: what `JobStateMachine`'s renew sets, where the token still holds.
    public func renew(_ renewals: [LeaseRenewal], leaseDuration: Double, at now: Date) async throws(JobStoreError) -> Set<Int64> {
        guard !renewals.isEmpty else { return [] }
        let t = now.timeIntervalSince1970
        let renewed = try await run("""
            UPDATE \(unescaped: table) AS j
            SET lease_expires_at = \(t + leaseDuration), updated_at = \(t), revision = j.revision + 1,
                progress = COALESCE(LEAST(GREATEST(NULLIF(r.progress, 'NaN'::float8), 0), 1), j.progress),
                phase = COALESCE(NULLIF(r.phase, ''), j.phase),
                worker_pid = COALESCE(NULLIF(r.pid, 0), j.worker_pid),
                result = COALESCE(NULLIF(r.result, ''), j.result)
            FROM unnest(\(renewals.map(\.id))::int8[], \(renewals.map(\.token))::text[], \(renewals.map { $0.progress ?? .nan })::float8[],
                        \(renewals.map { $0.phase ?? "" })::text[], \(renewals.map { Int64($0.workerPID ?? 0) })::int8[],
                        \(renewals.map { $0.result ?? "" })::text[])
                 AS r(id, token, progress, phase, pid, result)
            WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
            RETURNING j.id
            """) { try $0.decode(Int64.self) }
        return Set(renewals.map(\.id)).subtracting(renewed)
    }

    public func lostLeases(_ leases: [Int64: String], at now: Date) async throws(JobStoreError) -> Set<Int64> {
        guard !leases.isEmpty else { return [] }
        let rows = try await run("SELECT id, lease_token FROM \(unescaped: table) WHERE state = 'running' AND id = ANY(\(Array(leases.keys)))") {
            try $0.decode((Int64, String?).self)
        }
        var held = Set<Int64>()
        for (id, token) in rows {
            if let token, leases[id] == token { held.insert(id) }
        }
        return Set(leases.keys).subtracting(held)
    }

    /// A success whose quality checks warned: its dependents' policies decide (`"afterPolicy": "passed"` does
    /// not take it), so it goes through the state machine, not the one statement that releases them all.
    static func warned(_ result: String?) -> Bool {
        result?.contains("\"verdict\"") == true && CheckVerdict.Said(result: result)?.verdict == .warnings
    }

    /// A success (the common end) is one prepared statement (`SucceedStatement`); any other outcome, or
    /// a refused success (to say why), goes through the state machine.
    public func finish(id: Int64, token: String, outcome: AttemptOutcome, at now: Date) async throws(JobStoreError) -> Job {
        if case .succeeded(let result) = outcome, !Self.warned(result) {
            if let done = try succeeded(try await execute(SucceedStatement(id: id, token: token, result: result, now: now.timeIntervalSince1970))) {
                if done.recorded { outboxSignal.signal() }
                // Jobs whose last dependency this was are due: wake the coordinators.
                if done.released { _ = try? await run("SELECT pg_notify(\(channel), '')") }  // a missed wake-up: claimers poll
                return done.job
            }
        }
        return try await change(id, SQLiteJobStore.transition(token, outcome), at: now)
    }

    public func finish(_ attempts: [FinishedAttempt], at now: Date) async throws(JobStoreError) -> [Result<Job, JobStoreError>] {
        guard !attempts.isEmpty else { return [] }
        return try await transaction { [self] c in
            let rows = try await c.run("""
                SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE id = ANY(\(attempts.map(\.id))) ORDER BY id FOR UPDATE
                """)
            var jobs = Dictionary(try decodeJobs(rows).map { ($0.job.id, $0) }, uniquingKeysWith: { a, _ in a })
            var results: [Result<Job, JobStoreError>] = []
            var wake = false
            for a in attempts {
                guard let (job, revision) = jobs[a.id] else {
                    results.append(.failure(.notFound(a.id)))
                    continue
                }
                // A success is one statement, as a single one is (the job saved, its dependents released,
                // its webhook deliveries recorded): a third of the round trips of the general path.
                if case .succeeded(let result) = a.outcome, job.state == .running, job.lease?.token == a.token, !Self.warned(result) {
                    let statement = SucceedStatement(id: a.id, token: a.token, result: result, now: now.timeIntervalSince1970)
                    if let done = try succeeded(try await c.rows(of: statement)) {
                        jobs[a.id] = (done.job, revision + 1)
                        wake = wake || done.released
                        // (Signalled once the transaction commits.)
                        if done.recorded { _ = recorded.withLock { $0.insert(ObjectIdentifier(c)) } }
                        results.append(.success(done.job))
                        continue
                    }
                }
                do {
                    let (next, due) = try await moved(job, revision: revision, SQLiteJobStore.transition(a.token, a.outcome), at: now, on: c)
                    jobs[a.id] = (next, revision + 1)
                    wake = wake || due
                    results.append(.success(next))
                } catch let e as JobStoreError {
                    results.append(.failure(e))
                }
            }
            if wake { _ = try await c.run("SELECT pg_notify(\(channel), '')") }
            return results
        }
    }

    /// Each expired lease is rescued once however many coordinators run this at once: the rows are
    /// locked, and rows another rescuer holds are skipped (it rescues them).
    public func rescueExpired(at now: Date, publishingGrace: Double) async throws(JobStoreError) -> [Job] {
        try await transaction { [self] c in
            let rows = try await c.run("""
                SELECT \(unescaped: Self.columns()) FROM \(unescaped: table)
                WHERE state = 'running' AND lease_expires_at <= \(now.timeIntervalSince1970)
                  AND (phase IS DISTINCT FROM 'publishing' OR lease_expires_at <= \(now.timeIntervalSince1970 - publishingGrace))
                ORDER BY id FOR UPDATE SKIP LOCKED
                """)
            var rescued: [Job] = []
            var wake = false
            for (job, revision) in try decodeJobs(rows) {
                let (_, due) = try await moved(job, revision: revision, .expire, at: now, on: c)
                rescued.append(job)
                wake = wake || due
            }
            if wake { _ = try await c.run("SELECT pg_notify(\(channel), '')") }
            return rescued
        }
    }

    public func expireLeases(ofOwners owners: [String], at now: Date) async throws(JobStoreError) -> Int {
        guard !owners.isEmpty else { return 0 }
        return try await run("""
            UPDATE \(unescaped: table) SET lease_expires_at = \(now.timeIntervalSince1970)
            WHERE state = 'running' AND lease_expires_at > \(now.timeIntervalSince1970) AND lease_owner = ANY(\(owners)) RETURNING id
            """).count
    }

    public func expiredPublications(at now: Date) async throws(JobStoreError) -> [Job] {
        try decodeJobs(try await run("""
            SELECT \(unescaped: Self.columns()) FROM \(unescaped: table)
            WHERE state = 'running' AND phase = 'publishing' AND lease_expires_at <= \(now.timeIntervalSince1970) ORDER BY id
            """)).map(\.job)
    }

    public func cancel(id: Int64, at now: Date) async throws(JobStoreError) -> Job { try await change(id, .cancel, at: now) }

    public func retry(id: Int64, at now: Date, by who: String) async throws(JobStoreError) -> Job {
        do {
            return try await change(id, .retry(by: who), at: now)
        } catch .unavailable(let message) where message.contains("jobs_unique_live") {
            throw .refused("job \(id): another live job holds its unique key; cancel that one first")
        }
    }

    public func change(_ ids: [Int64], _ action: BulkChange, at now: Date, by who: String) async throws(JobStoreError) -> [Result<Job, JobStoreError>] {
        var outcomes: [Result<Job, JobStoreError>] = []
        for start in stride(from: 0, to: ids.count, by: BulkChange.batch) {
            let batch = Array(ids[start..<min(start + BulkChange.batch, ids.count)])
            outcomes += try await transaction { [self] c in
                let (done, due) = if let together = try await changedTogether(batch, action, at: now, by: who, on: c) {
                    together
                } else {
                    try await changedOneByOne(batch, action, at: now, by: who, on: c)
                }
                if due { _ = try await c.run("SELECT pg_notify(\(channel), '')") }
                return done
            }
        }
        return outcomes
    }

    public func job(id: Int64) async throws(JobStoreError) -> Job? {
        try await fetch(id)?.job
    }

    public func jobs(matching query: JobQuery) async throws(JobStoreError) -> [Job] {
        // One statement for every filter: the server plans it with the values given, so an unused filter
        // folds away. The dependents are an array (found first, by the edges' key): as `id IN (…)`, the
        // planner walks every job in id order to fill the limit.
        let order = query.newest ? "DESC" : "ASC"
        let limit = query.limit.map { String($0) } ?? "ALL"  // a number: safe in the text
        let jobs = try decodeJobs(try await run(filtered(query, select: "SELECT \(Self.columns())", tail: "ORDER BY id \(order) LIMIT \(limit)"))).map(\.job)
        return query.newest ? jobs.reversed() : jobs
    }

    public func count(matching query: JobQuery) async throws(JobStoreError) -> Int {
        try await run(filtered(query, select: "SELECT COUNT(*)", tail: "")) { try $0.decode(Int.self) }.first ?? 0
    }

    /// `select` from the jobs with a query's filters, then `tail` (text of ours: no value of a user's).
    func filtered(_ query: JobQuery, select: String, tail: String) -> PostgresQuery {
        """
            \(unescaped: select) FROM \(unescaped: table)
            WHERE (\(query.ids == nil) OR id = ANY(\(query.ids ?? []))) AND (\(query.states == nil) OR state = ANY(\((query.states ?? []).map(\.rawValue))))
              AND id < \(query.before ?? Int64.max) AND id > \(query.afterID ?? Int64.min)
              AND (\(query.namePrefix ?? "") = '' OR starts_with(name, \(query.namePrefix ?? "")))
              AND (NOT \(query.topLevel) OR chunk_of IS NULL)
              AND (\(query.chunkOf == nil) OR chunk_of = \(query.chunkOf ?? 0))
              AND (\(query.dependsOn == nil) OR id = ANY(ARRAY(SELECT job_id FROM \(unescaped: edges) WHERE depends_on = \(query.dependsOn ?? 0))))
              AND run_at > \(query.runAfter?.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude)
              AND run_at <= \(query.runBy?.timeIntervalSince1970 ?? Double.greatestFiniteMagnitude)
              AND (\(query.keyPrefix ?? "") = '' OR starts_with(unique_key, \(query.keyPrefix ?? "")))
              AND created_at >= \(query.createdFrom?.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude)
              AND created_at < \(query.createdBefore?.timeIntervalSince1970 ?? Double.greatestFiniteMagnitude)
              AND (\(query.mentions ?? "") = '' OR strpos(manifest, \(query.mentions ?? "")) > 0)
              AND (NOT \(query.failedAttempts) OR errors <> '[]')
              AND (\(query.blockedBy == nil) OR blocked_by = \(query.blockedBy ?? 0))
              AND (\(query.verdict == nil) OR strpos(COALESCE(result, ''), \(query.verdict.map(JobQuery.verdictText) ?? "")) > 0)
              AND (\(query.host ?? "") = '' OR COALESCE(split_part(lease_owner, ':', 1), host) = \(query.host ?? ""))
              AND (\(query.album ?? "") = '' OR id = ANY(ARRAY(SELECT i.job_id FROM \(unescaped: schemaPrefix)job_inputs i
                  JOIN \(unescaped: schemaPrefix)album_assets a ON a.asset_id = i.asset_id WHERE a.album = \(query.album ?? ""))))
            \(unescaped: tail)
            """
    }

    public func counts() async throws(JobStoreError) -> [JobState: Int] {
        var counts: [JobState: Int] = [:]
        for (state, n) in try await run("SELECT state, COUNT(*) FROM \(unescaped: table) GROUP BY state", { try $0.decode((String, Int).self) }) {
            if let state = JobState(rawValue: state) { counts[state] = n }
        }
        return counts
    }

    public func stats(at now: Date) async throws(JobStoreError) -> QueueStats {
        var counts: [String: Int] = [:]
        for (state, n) in try await run("SELECT state, COUNT(*) FROM \(unescaped: table) GROUP BY state", { try $0.decode((String, Int).self) }) {
            counts[state] = n
        }
        var hosts: [String: Int] = [:]
        for (host, n) in try await run("""
            SELECT split_part(lease_owner, ':', 1), COUNT(*) FROM \(unescaped: table) WHERE state = 'running' GROUP BY 1
            """, { try $0.decode((String, Int).self) }) {
            hosts[host] = n
        }
        let oldest = try await run("""
            SELECT MIN(run_at) FROM \(unescaped: table) WHERE state = 'queued' AND run_at <= \(now.timeIntervalSince1970)
            """, { try $0.decode(Double?.self) }).first ?? nil
        let delayed = try await run("""
            SELECT COUNT(*) FROM \(unescaped: table) WHERE state = 'queued' AND run_at > \(now.timeIntervalSince1970)
            """, { try $0.decode(Int.self) }).first ?? 0
        return QueueStats(counts: counts, oldestDueAt: oldest.map(Date.init(timeIntervalSince1970:)), runningByHost: hosts,
                          dead: counts["dead"] ?? 0, total: counts.values.reduce(0, +), delayed: delayed)
    }

    public func prune(finishedBefore date: Date, limit: Int) async throws(JobStoreError) -> Int {
        try await run("""
            WITH pruned AS (
                DELETE FROM \(unescaped: table) WHERE id IN (
                    SELECT id FROM \(unescaped: table) WHERE state IN ('succeeded', 'failed', 'cancelled', 'dead')
                    AND finished_at < \(date.timeIntervalSince1970) ORDER BY finished_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING id, after_ids),
            \(unescaped: removals)
            SELECT id FROM pruned
            """).count
    }

    public func delete(_ ids: [Int64]) async throws(JobStoreError) -> [Int64] {
        var deleted: [Int64] = []
        for start in stride(from: 0, to: ids.count, by: BulkChange.batch) {
            let batch = Array(ids[start..<min(start + BulkChange.batch, ids.count)])
            // The jobs that ended, and the chunks of those (which ended with them).
            deleted += try await run("""
                WITH pruned AS (
                    DELETE FROM \(unescaped: table) WHERE state IN ('succeeded', 'failed', 'cancelled', 'dead')
                    AND (id = ANY(\(batch)) OR chunk_of = ANY(\(batch)))
                    RETURNING id, after_ids),
                \(unescaped: removals)
                SELECT id FROM pruned WHERE id = ANY(\(batch))
                """, { try $0.decode(Int64.self) })
        }
        return deleted
    }

    /// What goes with the ended jobs of a `pruned` (id, after_ids) selection, as more of its statement:
    /// their edges (nothing waits for a job that ended any more, and it waits for nothing), their webhook
    /// deliveries that ended (a pending one outlives its job: its row carries the job, written here from the
    /// job's row when no claim wrote it yet: every part of a statement reads the rows as they were before it),
    /// the uploads recorded for them that nothing forgot (their aborting failed), their results kept for
    /// reuse, and the files they wrote.
    private var removals: String {
        """
        kept AS (
            \(Self.keep("ARRAY(SELECT id FROM pruned)", jobs: table))),
        edges AS (
            DELETE FROM \(edges) AS e USING pruned
            WHERE e.depends_on = pruned.id
               OR (e.job_id = pruned.id AND e.depends_on = ANY(SELECT jsonb_array_elements_text(pruned.after_ids::jsonb)::int8))),
        hooks AS (
            DELETE FROM webhook_deliveries AS d USING pruned WHERE d.job_id = pruned.id AND d.state <> 'pending'),
        uploads AS (
            DELETE FROM object_uploads AS u USING pruned WHERE u.job_id = pruned.id),
        results AS (
            DELETE FROM job_results AS r USING pruned WHERE r.job_id = pruned.id),
        outputs AS (
            DELETE FROM job_outputs AS w USING pruned WHERE w.job_id = pruned.id)
        """
    }

    public func nextRunAt(provides: [String], host: String) async throws(JobStoreError) -> Date? {
        let next = try await run(Self.placed("""
            SELECT MIN(run_at) FROM \(table) WHERE state = 'queued' AND \(ClaimStatement.runnable(provides: "$1", host: "$2"))
            """, provides, host)) { try $0.decode(Double?.self) }
        return (next.first ?? nil).map(Date.init(timeIntervalSince1970:))
    }

    public func hasWork(provides: [String], host: String) async throws(JobStoreError) -> Bool {
        let work = try await run(Self.placed("""
            SELECT EXISTS (SELECT 1 FROM \(table) WHERE state = 'running')
                OR EXISTS (SELECT 1 FROM \(table) WHERE state = 'queued' AND \(ClaimStatement.runnable(provides: "$1", host: "$2")))
            """, provides, host), { try $0.decode(Bool.self) })
        return work.first ?? false
    }

    /// `sql` with what a claimer provides ($1, a JSON array) and its host ($2) bound.
    private static func placed(_ sql: String, _ provides: [String], _ host: String) -> PostgresQuery {
        var binds = PostgresBindings(capacity: 2)
        binds.append(JobCoding.json(provides))
        binds.append(host)
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    // MARK: - Work notifications

    public func waitForWork(upTo seconds: Double) async {
        await work.wait(upTo: seconds)
    }

    public var hearsOfWork: Bool { work.listening.load(ordering: .relaxed) }
    /// The callers in `waitForWork` now.
    var waitingForWork: Int { work.waiting }
    public var idlePollLimit: Double { 0.5 }

    /// Keeps one connection listening on the channel; after it drops, reconnects with backoff (waking
    /// waiters meanwhile, so that they poll).
    private func startListening() {
        let task = Task { [server, channel, work] in
            var delay = 0.05
            while !Task.isCancelled {
                do {
                    try await Self.withConnection(server) { connection, _ in
                        try await connection.listen(on: channel) { notifications in
                            work.listening.store(true, ordering: .relaxed)
                            work.signal()  // anything submitted while no one listened
                            for try await _ in notifications { work.signal() }
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                }
                if work.listening.exchange(false, ordering: .relaxed) { delay = 0.05 }
                work.signal()
                try? await Task.sleep(for: .seconds(delay * Double.random(in: 0.5...1.5)))  // cancelled: the retry loop ends at its next check
                delay = min(delay * 2, 5)
            }
        }
        listener.withLock { $0 = task }
    }
}
