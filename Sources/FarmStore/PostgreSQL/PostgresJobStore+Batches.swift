import FarmModel
import Foundation
import PostgresNIO

/// The PostgreSQL queue's work on many jobs at once: new jobs inserted many to a statement, and a bulk
/// change's batch read, moved and written together when its jobs cannot reach one another.
extension PostgresJobStore {
    /// A new job's row: the job, and the columns made from its submission.
    struct RowInsert: Sendable {
        var job: Job, requires: String?, assets: String?, notify: String?

        /// A job with none of what `insert` looks up (a key, dependencies) or checks with the server (`notify`).
        init(plain new: NewJob, at now: Date) {
            self.init(PostgresJobStore.newJob(new, at: now), requires: Placement.requires(new), assets: Placement.assets(new),
                      notify: Outbox.notifyColumn(Outbox.notify(new.manifest)))
        }

        init(_ job: Job, requires: String?, assets: String?, notify: String?) {
            (self.job, self.requires, self.assets, self.notify) = (job, requires, assets, notify)
        }

        static let columns: [BoundColumn<RowInsert>] = [
            .init("name", "text") { $0.job.name }, .init("manifest", "text") { $0.job.manifest },
            .init("base_directory", "text") { $0.job.baseDirectory }, .init("output_roots", "text") { JobCoding.json($0.job.outputRoots) },
            .init("state", "text") { $0.job.state.rawValue }, .init("priority", "int8") { $0.job.priority },
            .init("attempt", "int8") { _ in 0 }, .init("max_attempts", "int8") { $0.job.maxAttempts },
            .init("run_at", "float8") { $0.job.runAt.timeIntervalSince1970 }, .init("unique_key", "text") { $0.job.uniqueKey },
            .init("timeout", "float8") { $0.job.timeout }, .init("created_at", "float8") { $0.job.createdAt.timeIntervalSince1970 },
            .init("updated_at", "float8") { $0.job.createdAt.timeIntervalSince1970 }, .init("errors", "text") { JobCoding.json($0.job.errors) },
            .init("after_ids", "text") { JobCoding.json($0.job.after) },
            .init("after_policy", "text") { $0.job.after.isEmpty ? nil : $0.job.afterPolicy.rawValue },
            .init("waiting_for", "int8") { Int64($0.job.waitingFor) }, .init("blocked_by", "int8") { $0.job.blockedBy },
            .init("finished_at", "float8") { $0.job.finishedAt?.timeIntervalSince1970 }, .init("requires", "text") { $0.requires },
            .init("assets", "text") { $0.assets }, .init("notify", "text") { $0.notify }, .init("chunk_of", "int8") { $0.job.chunkOf },
        ]
    }

    /// The INSERT of new jobs in one statement, in their order (their ids increase in it), with SQL of ours
    /// before and after it.
    func insertion(_ rows: [RowInsert], before: String = "", after: String) -> PostgresQuery {
        let (values, binds) = BoundColumn.values(rows, RowInsert.columns)
        return PostgresQuery(unsafeSQL: """
            \(before)INSERT INTO \(table) (\(RowInsert.columns.map(\.name).joined(separator: ", "))) VALUES \(values)
            \(after)
            """, binds: binds)
    }

    /// Inserts jobs that `enqueue` checked, in one statement.
    func insertPlain(_ news: [NewJob], at now: Date, on c: PostgresConnection, writers: OutputWriters) async throws -> [Enqueued] {
        guard !news.isEmpty else { return [] }
        let ids = try await c.run(insertion(news.map { RowInsert(plain: $0, at: now) }, after: "RETURNING id")).map { try $0.decode(Int64.self) }.sorted()
        guard ids.count == news.count else { throw JobStoreError.unavailable("\(location): \(news.count) jobs were inserted, \(ids.count) ids came back") }
        for (new, id) in zip(news, ids) { writers.add(new, id: id) }
        return ids.map { Enqueued(id: $0, inserted: true) }
    }

    /// A batch changed in a few statements, whatever its size, when no job's change can reach another
    /// job: none is a chunked export, none of those cancelled has jobs waiting for it, none of those
    /// retried waits for others or was named by another's failure. Nil (nothing written) when one could,
    /// or when a retried job's unique key is held by another live job: then each is changed on its own.
    func changedTogether(_ batch: [Int64], _ action: BulkChange, at now: Date, by who: String,
                         on c: PostgresConnection) async throws -> (done: [Result<Job, JobStoreError>], due: Bool)? {
        let rows = try await c.run("SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE id = ANY(\(batch)) ORDER BY id FOR UPDATE")
        let locked = try decodeJobs(rows)
        guard locked.allSatisfy({ $0.job.chunkPlan == nil && (action == .cancel || $0.job.after.isEmpty) }) else { return nil }
        let ids = locked.map(\.job.id)
        let reaching: PostgresQuery = switch action {
        case .cancel: """
            SELECT 1 FROM \(unescaped: edges) AS e JOIN \(unescaped: table) AS d ON d.id = e.job_id
            WHERE e.depends_on = ANY(\(ids)) AND d.state = 'waiting' LIMIT 1
            """
        case .retry: "SELECT 1 FROM \(unescaped: table) WHERE blocked_by = ANY(\(ids)) AND state = 'failed' LIMIT 1"
        }
        guard try await c.run(reaching).isEmpty else { return nil }
        // Each in the batch's order, against the job as the ones before left it (an id may come twice).
        var current = Dictionary(uniqueKeysWithValues: locked.map { ($0.job.id, $0.job) })
        var done: [Result<Job, JobStoreError>] = []
        for id in batch {
            guard let job = current[id] else {
                done.append(.failure(.notFound(id)))
                continue
            }
            do throws(JobStoreError) {
                let next = switch action {
                case .cancel: try transition(job, .cancel, now)
                case .retry: try Dependencies.retried(job, DependencyVerdict.of([], policy: job.afterPolicy), by: who, machine: machine, at: now)
                }
                current[id] = next
                done.append(.success(next))
            } catch {
                done.append(.failure(error))
            }
        }
        let writes = locked.compactMap { old, revision in
            current[old.id].flatMap { $0 == old ? nil : RowWrite($0, over: old, revision: revision) }
        }
        let changed = Set(writes.map(\.next.id))
        _ = try await c.run("SAVEPOINT bulk_all")
        do {
            try await saveLocked(writes, on: c)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {  // unique_violation: a key is held
            _ = try await c.run("ROLLBACK TO SAVEPOINT bulk_all")
            return nil
        }
        // The events in the batch's order (an id given twice, at its first place).
        var recorded = Set<Int64>()
        let ended = batch.filter { changed.contains($0) && recorded.insert($0).inserted }.compactMap { current[$0] }.filter(\.state.isTerminal)
        try await recordEvents(ended, at: now, on: c)
        return (done, changed.contains { current[$0].map { $0.state == .queued && $0.runAt <= now } ?? false })
    }

    /// A batch changed one job after the other, each read as locked when its turn comes (an earlier one's
    /// change may have changed it) and moved in a savepoint of its own, so that a refused one leaves
    /// nothing half done and the others go on.
    func changedOneByOne(_ batch: [Int64], _ action: BulkChange, at now: Date, by who: String,
                         on c: PostgresConnection) async throws -> (done: [Result<Job, JobStoreError>], due: Bool) {
        var done: [Result<Job, JobStoreError>] = []
        var due = false
        for id in batch {
            let rows = try await c.run("SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE id = \(id) FOR UPDATE")
            guard let (job, revision) = try decodeJobs(rows).first else {
                done.append(.failure(.notFound(id)))
                continue
            }
            _ = try await c.run("SAVEPOINT bulk_one")
            do {
                let moved = try await moved(job, revision: revision, action.transition(by: who), at: now, on: c)
                _ = try await c.run("RELEASE SAVEPOINT bulk_one")
                done.append(.success(moved.job))
                due = due || moved.due
            } catch let error as JobStoreError {
                _ = try await c.run("ROLLBACK TO SAVEPOINT bulk_one")
                done.append(.failure(error))
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {  // unique_violation: the key
                _ = try await c.run("ROLLBACK TO SAVEPOINT bulk_one")
                done.append(.failure(.refused("job \(id): another live job holds its unique key; cancel that one first")))
            }
        }
        return (done, due)
    }
}
