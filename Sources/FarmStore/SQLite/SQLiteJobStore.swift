import FarmModel
import Foundation
import SafeFiles
import GRDB
internal import GRDBSQLite
import Synchronization

/// The embedded queue: one SQLite file in WAL mode, shared by every process on the host. Writes are
/// IMMEDIATE transactions (the write lock is taken up front, so a read-then-write never fails half-way).
/// A submission is committed with synchronous=FULL: once `submit` says a job is queued, it is on the
/// disk. Every other commit (claims, progress, completions) is synchronous=NORMAL, as GRDB sets up WAL
/// mode: it survives any process's crash, and an OS crash or power loss can only take back the last
/// ones, never corrupt the queue, leaving jobs as leased as they were (their leases expire and they run
/// again). A sync per commit would cost some 0.3 ms here, about nine times a commit without it.
/// A writer that finds another process holding the lock waits for it asleep, off any thread, for up to
/// the busy timeout.
public final class SQLiteJobStore: JobStore {
    public let path: String
    /// A pool (a writer and readers) for long-lived stores; one connection for a command's (`connections`).
    let pool: any DatabaseWriter
    public let schemaChange: SchemaChange
    /// One write transaction of this store at a time. It is held only while SQLite's write lock is too
    /// (never while waiting for another process), so waiting for it is waiting for one transaction.
    private let gate = Mutex(())
    private let busyTimeout: Double
    let machine: JobStateMachine
    private let libraryDatabase = Mutex<SQLiteSQLDatabase?>(nil)
    /// Touched after commits that make work due; watched when the store was opened to listen.
    let doorbell: Doorbell
    /// Where transactions run, and where reads run: never on the cooperative pool.
    private let writer = DatabaseThread(name: "mediafarm-queue-writer")
    private let reader = DatabaseThread(name: "mediafarm-queue-reader")
    /// Set when a transaction recorded a webhook event; its commit wakes this process's senders.
    let recorded = Atomic<Bool>(false)
    let outboxSignal = WorkSignal()
    private let closed = Atomic<Bool>(false)

    /// Opens (and with `create`, creates) the queue at `path` and migrates it to the current schema.
    /// - Parameter connections: 1 for a command's short use (one connection, opened without GRDB's pool
    ///   set-up, which writes to the queue when its write-ahead log is empty); more for a pool.
    /// - Parameter listen: watch for other processes' submissions (a coordinator's idle wait).
    public init(path: String, create: Bool = true, policy: RetryPolicy = .default, busyTimeout: Double = 10,
                connections: Int = 4, listen: Bool = false) throws(JobStoreError) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.machine = JobStateMachine(policy: policy)
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if isDirectory.boolValue { throw .unavailable("\(path): is a folder, not a queue file") }
        if !exists && !create { throw .unavailable("\(path): no queue there (submit a job to create it, or give --queue)") }
        if exists, let handle = FileHandle(forReadingAtPath: path) {
            let header = (try? handle.read(upToCount: 16)) ?? Data()  // unreadable: not an SQLite file, said below
            try? handle.close()  // read-only: closing cannot lose anything
            if !header.isEmpty && header != Data("SQLite format 3\0".utf8) {
                throw .unavailable("\(path): not a MediaFarm queue (the file is not an SQLite database); give another --queue")
            }
        }
        // No job's output may replace the queue (nor the asset library in it) while this process uses it.
        ProtectedFiles.shared.protectDatabase(path, role: "the queue's database")
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "mediafarm-queue"
        configuration.prepareDatabase { db in
            try Self.keepWriteAheadLog(db)
            // The writing connection never blocks in SQLite's busy handler: `write` waits for the lock
            // itself, asleep (readers in WAL mode do not wait for writers).
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA busy_timeout = 0") }
        }
        (pool, schemaChange) = try Self.open(path: path, configuration: configuration, patience: busyTimeout, single: connections <= 1)
        doorbell = listen ? Doorbell(listeningBeside: path) : Doorbell(queuePath: path)
    }

    /// The write-ahead log stays beside the queue when its last connection closes, checkpointed and
    /// emptied (so the queue file alone is whole):
    /// - kept, because opening a queue whose log is gone costs a write and three syncs, since GRDB then
    ///   makes one by creating and dropping a table (that was a third of a `submit` or a `status`);
    /// - emptied (a journal size limit makes SQLite truncate a kept log to nothing as its last
    ///   connection closes), because the first connection to open a queue reads the whole log to index
    ///   it, and each command appended to it: after 370 commands the log was 4 MB, 1,000 reads at every
    ///   opening. The limit also bounds the log of a long-running coordinator, cut back to 8 MiB whenever
    ///   it starts over.
    static func keepWriteAheadLog(_ db: Database) throws {
        var keep: Int32 = 1
        // Not kept (an SQLite without the control): the next opening makes the log again; nothing is lost.
        _ = sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_PERSIST_WAL, &keep)
        try db.execute(sql: "PRAGMA journal_size_limit = 8388608")
    }

    /// Opens the pool and migrates it. Several processes opening a new queue at once contend for the
    /// switch to WAL and for the migration, where SQLite reports "busy" without waiting: those are retried.
    /// So is a migration that failed because another process applied it at the same moment (GRDB reads
    /// which migrations are applied before it begins each one's transaction: "table ... already exists").
    private static func open(path: String, configuration: Configuration, patience: Double,
                             single: Bool) throws(JobStoreError) -> (any DatabaseWriter, SchemaChange) {
        let deadline = Date().addingTimeInterval(patience)
        var delay = 0.005
        var first: Int?
        while true {
            var pool: (any DatabaseWriter)?
            var before: Int?
            do {
                pool = single ? try connection(path: path, configuration: configuration) : try DatabasePool(path: path, configuration: configuration)
                try pool!.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = NORMAL") }
                before = try pool!.read { try migrator.appliedIdentifiers($0).count }
                if first == nil { first = before }
                try migrator.migrate(pool!)
                return (pool!, SchemaChange(from: first ?? before!, to: migrator.migrations.count))
            } catch let error as DatabaseError where (error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED) && Date() < deadline {
                Thread.sleep(forTimeInterval: delay * Double.random(in: 0.5...1.5))
                delay = min(delay * 2, 0.2)
            } catch let error as DatabaseError where single && error.resultCode == .SQLITE_ERROR && Date() < deadline
                        && (error.message ?? "").hasPrefix("no such table: grdb_migrations") {
                // Another process was making the queue as this one's connection read its schema: open again.
                Thread.sleep(forTimeInterval: delay * Double.random(in: 0.5...1.5))
                delay = min(delay * 2, 0.2)
            } catch {
                if let pool, let before, Date() < deadline,
                   let now = try? pool.read({ try migrator.appliedIdentifiers($0).count }), now > before {  // only for the notice of a migration
                    continue  // another process migrated meanwhile: look again
                }
                throw .unavailable("\(path): cannot open the queue: \(describe(error))")
            }
        }
    }

    /// One connection, in WAL mode (a new queue is switched to it; an existing one is in it already, which
    /// GRDB's own set-up would check by writing to the queue whenever its log is empty, as it is after
    /// every command: see `keepWriteAheadLog`).
    private static func connection(path: String, configuration: Configuration) throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.writeWithoutTransaction { db in
            if try String.fetchOne(db, sql: "PRAGMA journal_mode") != "wal" {
                guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                    throw DatabaseError(message: "cannot switch the queue to WAL mode")
                }
            }
        }
        return queue
    }

    /// The tables beside the jobs (the asset library's): transactions on a connection of their own,
    /// opened when first needed; reads of one statement on this store's.
    public var database: any SQLDatabase {
        get throws(JobStoreError) {
            libraryDatabase.withLock { (opened: inout SQLiteSQLDatabase?) -> SQLiteSQLDatabase in
                if let opened { return opened }
                let database = SQLiteSQLDatabase(path: path, busyTimeout: busyTimeout) { [weak self, path] sql, binds in
                    guard let self else { throw JobStoreError.unavailable("\(path): the queue was closed") }
                    let arguments = SQLiteSQLDatabase.arguments(binds)
                    return try await read { db in try SQLiteSQLDatabase.rows(db, sql, arguments) }
                }
                opened = database
                return database
            }
        }
    }

    // MARK: - JobStore

    public func enqueue(_ jobs: [NewJob], at now: Date) async throws(JobStoreError) -> [Enqueued] {
        defer { doorbell.ring() }
        return try await write(durable: true) { [self] db in
            try jobs.map { new in try insert(new, at: now, db) }
        }
    }

    /// Inserts one new job (or finds the live job holding its key), in the caller's transaction.
    func insert(_ new: NewJob, at now: Date, _ db: Database) throws -> Enqueued {
        if let key = new.uniqueKey,
           let live = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM jobs WHERE unique_key = ? AND state IN ('waiting', 'queued', 'running')"),
                                         arguments: [key]) {
            return Enqueued(id: live, inserted: false)
        }
        var job = Job(name: new.name, manifest: new.manifest, baseDirectory: new.baseDirectory, outputRoots: new.outputRoots,
                      priority: new.priority, maxAttempts: new.maxAttempts, runAt: new.runAt, uniqueKey: new.uniqueKey,
                      timeout: new.timeout, createdAt: now)
        job.afterPolicy = new.afterPolicy
        if !new.after.isEmpty {
            job.after = try resolve(new.after, for: new.name, db)
            Dependencies.start(&job, DependencyVerdict.of(try dependencies(job.after, db), policy: job.afterPolicy), at: now)
        }
        let notify = Outbox.notify(new.manifest)
        if let notify { try checkNotify(notify, of: new.name, db) }
        try checkOutputs(new, after: job.after, db)
        try db.cachedStatement(sql: """
            INSERT INTO jobs (name, manifest, base_directory, output_roots, state, priority, attempt, max_attempts, run_at,
                              unique_key, timeout, created_at, updated_at, errors, after_ids, after_policy, waiting_for, blocked_by,
                              finished_at, requires, assets, notify, chunk_of)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [job.name, job.manifest, job.baseDirectory, JobCoding.json(job.outputRoots), job.state.rawValue,
                             job.priority, job.attempt, job.maxAttempts, job.runAt.timeIntervalSince1970, job.uniqueKey,
                             job.timeout, now.timeIntervalSince1970, now.timeIntervalSince1970, JobCoding.json(job.errors),
                             JobCoding.json(job.after), job.after.isEmpty ? nil : job.afterPolicy.rawValue, job.waitingFor,
                             job.blockedBy, job.finishedAt?.timeIntervalSince1970, Placement.requires(new), Placement.assets(new),
                             Outbox.notifyColumn(notify), new.chunkOf])
        let id = db.lastInsertedRowID
        try recordOutputs(new, id: id, db)
        for dependency in job.after {
            try db.cachedStatement(sql: "INSERT INTO job_dependencies (depends_on, job_id) VALUES (?, ?)").execute(arguments: [dependency, id])
        }
        if job.state.isTerminal {
            job.id = id
            try recordEvent(job, at: now, db)
        }
        return Enqueued(id: id, inserted: true)
    }

    public func claim(limit: Int, owner: String, leaseDuration: Double, provides: [String], at now: Date) async throws(JobStoreError) -> [Job] {
        guard limit > 0 else { return [] }
        return try await write { [self] db in
            let candidates = try Array(Row.fetchCursor(db.cachedStatement(sql: """
                SELECT \(Self.columns) FROM jobs WHERE state = 'queued' AND run_at <= ? AND \(Self.runnable)
                    AND \(QueuePauses.notPaused(host: "?", owner: "?"))
                ORDER BY priority DESC, run_at, id LIMIT ?
                """), arguments: [now.timeIntervalSince1970, JobCoding.json(provides), Job.host(ofOwner: owner), Job.host(ofOwner: owner), owner,
                                  limit]).map(Self.job))
            return try candidates.map { job in
                let token = Self.newToken()
                let claimed = try transition(job, .claim(owner: owner, token: token, leaseExpiresAt: now.addingTimeInterval(leaseDuration)), now)
                try save(claimed, db)
                return claimed
            }
        }
    }

    public func renew(_ renewals: [LeaseRenewal], leaseDuration: Double, at now: Date) async throws(JobStoreError) -> Set<Int64> {
        guard !renewals.isEmpty else { return [] }
        return try await write { [self] db in
            var lost = Set<Int64>()
            for r in renewals {
                guard let job = try fetch(r.id, db) else { lost.insert(r.id); continue }
                do {
                    let renewed = try machine.apply(.renew(token: r.token, leaseExpiresAt: now.addingTimeInterval(leaseDuration),
                                                           progress: r.progress, phase: r.phase, workerPID: r.workerPID,
                                                           result: r.result), to: job, at: now)
                    try save(renewed, db)
                } catch {
                    lost.insert(r.id)
                }
            }
            return lost
        }
    }

    public func lostLeases(_ leases: [Int64: String], at now: Date) async throws(JobStoreError) -> Set<Int64> {
        guard !leases.isEmpty else { return [] }
        return try await read { [self] db in
            var held = Set<Int64>()
            let ids = leases.keys.map { String($0) }.joined(separator: ",")
            for row in try Row.fetchAll(db, sql: "SELECT id, lease_token FROM jobs WHERE state = 'running' AND id IN (\(ids))") {
                let id: Int64 = row["id"]
                if let token: String = row["lease_token"], leases[id] == token { held.insert(id) }
            }
            return Set(leases.keys).subtracting(held)
        }
    }

    public func finish(id: Int64, token: String, outcome: AttemptOutcome, at now: Date) async throws(JobStoreError) -> Job {
        // A released job is due again at once.
        defer { if case .released = outcome { doorbell.ring() } }
        return try await change(id, Self.transition(token, outcome), at: now)
    }

    public func finish(_ attempts: [FinishedAttempt], at now: Date) async throws(JobStoreError) -> [Result<Job, JobStoreError>] {
        guard !attempts.isEmpty else { return [] }
        // A released job is due again at once, and so is a job whose last dependency succeeded.
        var due = attempts.contains(where: { if case .released = $0.outcome { true } else { false } })
        defer { if due { doorbell.ring() } }
        let (results, released) = try await write { [self] db in
            let ids = attempts.map { String($0.id) }.joined(separator: ",")
            let rows = try Array(Row.fetchCursor(db, sql: "SELECT \(Self.columns) FROM jobs WHERE id IN (\(ids))").map(Self.job))
            var jobs = Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            var released = false
            return (try attempts.map { a in
                guard let job = jobs[a.id] else { return Result<Job, JobStoreError>.failure(.notFound(a.id)) }
                do {
                    let (next, due) = try moved(job, Self.transition(a.token, a.outcome), now, db)
                    released = released || due
                    jobs[a.id] = next
                    return .success(next)
                } catch let e as JobStoreError {
                    return .failure(e)
                }
            }, released)
        }
        due = due || released
        return results
    }

    static func transition(_ token: String, _ outcome: AttemptOutcome) -> JobTransition {
        switch outcome {
        case .succeeded(let result): .succeed(token: token, result: result)
        case let .failed(message, result): .fail(token: token, message: message, result: result)
        case .crashed(let message): .crash(token: token, message: message)
        case .released: .release(token: token)
        }
    }

    public func rescueExpired(at now: Date, publishingGrace: Double) async throws(JobStoreError) -> [Job] {
        let rescued = try await write { [self] db in
            let expired = try Row.fetchAll(db, sql: """
                SELECT \(Self.columns) FROM jobs WHERE state = 'running' AND lease_expires_at <= ?
                AND (phase IS NOT 'publishing' OR lease_expires_at <= ?)
                """, arguments: [now.timeIntervalSince1970, now.timeIntervalSince1970 - publishingGrace]).map(Self.job)
            for job in expired {
                _ = try moved(job, .expire, now, db)
            }
            return expired
        }
        if !rescued.isEmpty { doorbell.ring() }
        return rescued
    }

    public func expireLeases(ofOwners owners: [String], at now: Date) async throws(JobStoreError) -> Int {
        guard !owners.isEmpty else { return 0 }
        return try await write { db in
            try db.execute(sql: """
                UPDATE jobs SET lease_expires_at = ? WHERE state = 'running' AND lease_expires_at > ?
                AND lease_owner IN (\(owners.map { _ in "?" }.joined(separator: ", ")))
                """, arguments: StatementArguments([now.timeIntervalSince1970, now.timeIntervalSince1970] + owners.map { $0 as any DatabaseValueConvertible }))
            return db.changesCount
        }
    }

    public func expiredPublications(at now: Date) async throws(JobStoreError) -> [Job] {
        try await read { [self] db in
            try Row.fetchAll(db, sql: """
                SELECT \(Self.columns) FROM jobs WHERE state = 'running' AND phase = 'publishing' AND lease_expires_at <= ? ORDER BY id
                """, arguments: [now.timeIntervalSince1970]).map(Self.job)
        }
    }

    public func cancel(id: Int64, at now: Date) async throws(JobStoreError) -> Job { try await change(id, .cancel, at: now) }

    public func retry(id: Int64, at now: Date, by who: String) async throws(JobStoreError) -> Job {
        defer { doorbell.ring() }
        do {
            return try await change(id, .retry(by: who), at: now)
        } catch .unavailable(let message) where message.contains("UNIQUE") {
            throw .refused("job \(id): another live job holds its unique key; cancel that one first")
        }
    }

    public func change(_ ids: [Int64], _ action: BulkChange, at now: Date, by who: String) async throws(JobStoreError) -> [Result<Job, JobStoreError>] {
        var outcomes: [Result<Job, JobStoreError>] = []
        for start in stride(from: 0, to: ids.count, by: BulkChange.batch) {
            let batch = Array(ids[start..<min(start + BulkChange.batch, ids.count)])
            let (done, due) = try await write { [self] db in
                // The events recorded so far made into deliveries first: a retried job keeps its events'
                // job by a lookup that reads them all (`keepEvents`).
                try fanOut(db)
                var done: [Result<Job, JobStoreError>] = []
                var due = false
                for id in batch {
                    guard let job = try fetch(id, db) else {
                        done.append(.failure(.notFound(id)))
                        continue
                    }
                    // Each in a savepoint: a refused one leaves nothing half done, and the others go on.
                    do {
                        try db.inSavepoint {
                            let moved = try moved(job, action.transition(by: who), now, db)
                            done.append(.success(moved.job))
                            due = due || moved.due || action == .retry
                            return .commit
                        }
                    } catch let error as JobStoreError {
                        done.append(.failure(error))
                    } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                        done.append(.failure(.refused("job \(id): another live job holds its unique key; cancel that one first")))
                    }
                }
                return (done, due)
            }
            if due { doorbell.ring() }
            outcomes += done
        }
        return outcomes
    }

    public func job(id: Int64) async throws(JobStoreError) -> Job? {
        try await read { [self] db in try fetch(id, db) }
    }

    public func prune(finishedBefore date: Date, limit: Int) async throws(JobStoreError) -> Int {
        try await write { [self] db in
            try fanOut(db)  // as in `change`: `remove` then reads no events
            let pruned = try Row.fetchAll(db, sql: """
                SELECT id, after_ids FROM jobs WHERE state IN ('succeeded', 'failed', 'cancelled', 'dead')
                AND finished_at < ? ORDER BY finished_at LIMIT ?
                """, arguments: [date.timeIntervalSince1970, limit]).map { row in (id: row[0] as Int64, after: JobCoding.decode([Int64].self, row[1]) ?? []) }
            for job in pruned { try remove(job, db) }
            return pruned.count
        }
    }

    public func delete(_ ids: [Int64]) async throws(JobStoreError) -> [Int64] {
        var deleted: [Int64] = []
        for start in stride(from: 0, to: ids.count, by: BulkChange.batch) {
            let batch = ids[start..<min(start + BulkChange.batch, ids.count)]
            deleted += try await write { [self] db in
                try fanOut(db)  // as in `change`
                // The jobs that ended, and the chunks of those (which ended with them).
                let rows = try Row.fetchAll(db, sql: """
                    SELECT id, after_ids FROM jobs WHERE state IN ('succeeded', 'failed', 'cancelled', 'dead')
                    AND (id IN (\(batch.map { String($0) }.joined(separator: ","))) OR chunk_of IN (\(batch.map { String($0) }.joined(separator: ","))))
                    """).map { row in (id: row[0] as Int64, after: JobCoding.decode([Int64].self, row[1]) ?? []) }
                for job in rows { try remove(job, db) }
                let asked = Set(batch)
                return rows.map(\.id).filter(asked.contains)
            }
        }
        return deleted
    }

    /// Deletes an ended job's row and what hangs on it.
    private func remove(_ job: (id: Int64, after: [Int64]), _ db: Database) throws {
        try keepEvents(of: job.id, db)  // its events' job until now (`WebhookEventSchema`)
        try db.cachedStatement(sql: "DELETE FROM jobs WHERE id = ?").execute(arguments: [job.id])
        // Its edges: nothing waits for a job that ended any more, and it waits for nothing.
        try db.cachedStatement(sql: "DELETE FROM job_dependencies WHERE depends_on = ?").execute(arguments: [job.id])
        // Its webhook deliveries that ended (a pending one outlives it: its row carries the job).
        try db.cachedStatement(sql: "DELETE FROM webhook_deliveries WHERE job_id = ? AND state <> 'pending'").execute(arguments: [job.id])
        // Uploads recorded for it that nothing forgot (their aborting failed).
        try db.cachedStatement(sql: "DELETE FROM object_uploads WHERE job_id = ?").execute(arguments: [job.id])
        // Its result kept for reuse, and the files it wrote.
        try db.cachedStatement(sql: "DELETE FROM job_results WHERE job_id = ?").execute(arguments: [job.id])
        try db.cachedStatement(sql: "DELETE FROM job_outputs WHERE job_id = ?").execute(arguments: [job.id])
        for dependency in job.after {
            try db.cachedStatement(sql: "DELETE FROM job_dependencies WHERE depends_on = ? AND job_id = ?").execute(arguments: [dependency, job.id])
        }
    }

    public func nextRunAt(provides: [String], host: String) async throws(JobStoreError) -> Date? {
        try await read { [self] db in
            try Double.fetchOne(db.cachedStatement(sql: "SELECT MIN(run_at) FROM jobs WHERE state = 'queued' AND \(Self.runnable)"),
                                arguments: [JobCoding.json(provides), host]).map(Date.init(timeIntervalSince1970:))
        }
    }

    public func hasWork(provides: [String], host: String) async throws(JobStoreError) -> Bool {
        try await read { [self] db in
            try Bool.fetchOne(db.cachedStatement(sql: """
                SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'running')
                    OR EXISTS (SELECT 1 FROM jobs WHERE state = 'queued' AND \(Self.runnable))
                """), arguments: [JobCoding.json(provides), host]) ?? false
        }
    }

    /// The condition on a queued job that a claimer can run it: it provides (the first argument, a JSON
    /// array) every capability the job requires, and its host (the second) holds every asset the job reads.
    static let runnable = """
        (requires IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(jobs.requires) AS r WHERE r.value NOT IN (SELECT value FROM json_each(?))))
        AND (assets IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(jobs.assets) AS a WHERE NOT EXISTS (
            SELECT 1 FROM asset_locations AS l WHERE l.asset_id = a.value AND l.host IN (?, '*') AND l.state = 'present')))
        """

    /// Other processes' submissions ring the doorbell beside the queue (when this store listens);
    /// otherwise a plain sleep.
    public func waitForWork(upTo seconds: Double) async {
        if doorbell.listening {
            await doorbell.wait(upTo: seconds)
        } else {
            try? await Task.sleep(for: .seconds(seconds))  // cancelled: the wait ends early, as it should
        }
    }

    public var hearsOfWork: Bool { doorbell.listening }
    /// The callers in `waitForWork` now.
    var waitingForWork: Int { doorbell.waiting }
    /// The writer thread: a coordinator's loops run there, and its transactions in place.
    public var executor: (any TaskExecutor)? { writer }
    /// Without the doorbell's watch, idle coordinators poll this often.
    public var idlePollLimit: Double { 0.01 }
    public var location: String { path }
    /// Closes the queue's connections now, rather than when the last reference to the store goes (which
    /// may be after the process has exited): the last connection of the last process to close checkpoints
    /// the write-ahead log and empties it (see `keepWriteAheadLog`). Once only; the store is not used after.
    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        libraryDatabase.withLock { $0?.close() }
        try? pool.close()  // fails only with statements still running: then the connections close with the store
    }

    // MARK: - Transactions

    /// One IMMEDIATE transaction on the store's writer thread (never on the cooperative pool: a commit's
    /// fsync must not hold up the tasks that share it); `durable`, committed with synchronous=FULL. When another
    /// process holds SQLite's write lock, the caller sleeps (backing off, holding no thread) and tries
    /// again, for up to the busy timeout. (GRDB's async API, a hop to a dispatch queue per transaction,
    /// measured 2 to 3 times slower here; the writer thread spins briefly for the next transaction.)
    func write<T: Sendable>(durable: Bool = false, _ body: @escaping (Database) throws -> T) async throws(JobStoreError) -> T {
        let deadline = Date().addingTimeInterval(busyTimeout)
        var delay = 0.001
        while true {
            do {
                if let value = try await writer.run({ [self] in
                    try gate.withLock { _ in
                        recorded.store(false, ordering: .relaxed)
                        let value = try transaction(durable: durable, body)
                        // Committed (or not begun: nil): a recorded event wakes this process's senders.
                        if recorded.exchange(false, ordering: .relaxed) && value != nil { outboxSignal.signal() }
                        return value
                    }
                }) {
                    return value
                }
            } catch {
                throw Self.storeError(error, path)
            }
            guard Date() < deadline else {
                throw .unavailable("\(path): the queue stayed locked by another process for \(Int(busyTimeout)) s")
            }
            await Self.pause(delay * Double.random(in: 0.5...1.5))
            delay = min(delay * 2, 0.05)
        }
    }

    /// The transaction, or nil when another connection holds the write lock.
    private func transaction<T>(durable: Bool, _ body: @escaping (Database) throws -> T) throws -> T? {
        try pool.writeWithoutTransaction { db in
            if durable { try db.execute(sql: "PRAGMA synchronous = FULL") }
            defer { if durable { try? db.execute(sql: "PRAGMA synchronous = NORMAL") } }  // fails only with the connection, which the error below reports
            // BEGIN and COMMIT as cached statements: prepared anew each time (as `beginTransaction` and
            // `commit` do), they took 4% of a claim and completion's processor time.
            do {
                try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                return nil
            }
            do {
                let value = try body(db)
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                return value
            } catch {
                try? db.rollback()  // the error being thrown is the cause
                throw error
            }
        }
    }

    /// Reads see the last commit (WAL): they never wait for a writer. On the reader thread.
    func read<T: Sendable>(_ body: @escaping (Database) throws -> T) async throws(JobStoreError) -> T {
        do {
            // On the writer thread (a coordinator's loops), in place; elsewhere on the reader thread.
            if writer.isCurrent { return try pool.read(body) }
            return try await reader.run { [pool] in try pool.read(body) }
        } catch {
            throw Self.storeError(error, path)
        }
    }

    /// A sleep that a cancelled task still takes: a cancelled coordinator still writes its last
    /// releases, and a cancelled sleep would turn its wait for the lock into a spin.
    private static func pause(_ seconds: Double) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { done.resume() }
        }
    }

    static func storeError(_ error: any Error, _ path: String) -> JobStoreError {
        (error as? JobStoreError) ?? .unavailable("\(path): \(describe(error))")
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? DatabaseError {
            if e.resultCode == .SQLITE_NOTADB { return "not a MediaFarm queue (the file is not an SQLite database)" }
            if e.resultCode == .SQLITE_BUSY { return "the queue stayed locked by another process (\(e.message ?? "busy"))" }
            return e.message ?? e.description
        }
        return String(describing: error)
    }
}
