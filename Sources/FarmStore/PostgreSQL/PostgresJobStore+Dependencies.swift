import FarmModel
import Foundation
import PostgresNIO

/// Jobs that wait for others, in the PostgreSQL queue: dependencies resolved at submission, and the moves
/// of the graph made in the transaction of the change that caused them, on rows it locks (`Dependencies`
/// decides). A success's common case is in `SucceedStatement` itself.
extension PostgresJobStore {
    /// The ids of the jobs `references` name; refused (nothing queued) when one names no job.
    func resolve(_ references: [JobReference], for name: String, on c: PostgresConnection) async throws -> [Int64] {
        var ids: [Int64] = []
        for reference in references {
            let rows = switch reference {
            case .id(let id): try await c.run("SELECT id FROM \(unescaped: table) WHERE id = \(id)")
            case .key(let key): try await c.run("SELECT MAX(id) FROM \(unescaped: table) WHERE unique_key = \(key)")
            }
            guard let found = try rows.first?.decode(Int64?.self) else { throw JobStoreError.refused(Dependencies.unknown(reference, of: name)) }
            if !ids.contains(found) { ids.append(found) }
        }
        return ids
    }

    /// The jobs `ids` as the dependency verdict needs them.
    func dependencies(_ ids: [Int64], on c: PostgresConnection) async throws -> [DependencyVerdict.Dependency] {
        guard !ids.isEmpty else { return [] }
        return try await c.run("SELECT id, name, state, errors, result FROM \(unescaped: table) WHERE id = ANY(\(ids))").map { row in
            let (id, name, state, errors, result) = try row.decode((Int64, String, String, String, String?).self)
            return DependencyVerdict.Dependency(id: id, name: name, state: JobState(rawValue: state) ?? .dead,
                                                lastError: JobCoding.decode([Job.AttemptError].self, errors)?.last?.message, result: result)
        }
    }

    /// Applies and saves a transition to a row locked in this transaction, and follows it through the
    /// jobs that wait: a job that ended releases (or fails) its dependents, a retried one brings back
    /// those its failure had failed. `due`: a job became due (the caller notifies).
    func moved(_ job: Job, revision: Int64, _ t: JobTransition, at now: Date, on c: PostgresConnection) async throws -> (job: Job, due: Bool) {
        var job = job
        let original = job
        // A chunked export retried plans again: its old chunks are let go.
        if case .retry = t, job.state.isTerminal { try await detachChunks(&job, at: now, on: c) }
        let next = if case .retry(let who) = t {
            try Dependencies.retried(job, DependencyVerdict.of(try await dependencies(job.after, on: c), policy: job.afterPolicy),
                                     by: who, machine: machine, at: now)
        } else {
            try transition(job, t, now)
        }
        try await saveLocked(next, over: original, revision: revision, on: c)
        if next.state.isTerminal && !job.state.isTerminal {
            try await recordEvent(next, at: now, on: c)
            let due = try await release(next, at: now, on: c)
            try await cancelChunks(of: next, at: now, on: c)
            return (next, due)
        }
        if job.state.isTerminal && next.state.isLive { try await unblock(next, at: now, on: c) }
        return (next, next.state == .queued && next.runAt <= now)
    }

    /// After `ended` reached a terminal state: its waiting dependents count it as ended (queued when it
    /// was their last) or fail naming it, and so on down the graph. True when a job became due.
    func release(_ ended: Job, at now: Date, on c: PostgresConnection) async throws -> Bool {
        var due = false
        // Each job that ended, with the job whose failure made it end (nil: itself).
        var work: [(job: Job, root: DependencyVerdict.Dependency?)] = [(ended, nil)]
        while let (done, root) = work.popLast() {
            let rows = try await c.run("""
                SELECT \(unescaped: Self.columns()) FROM \(unescaped: table)
                WHERE state = 'waiting' AND id IN (SELECT job_id FROM \(unescaped: edges) WHERE depends_on = \(done.id)) ORDER BY id FOR UPDATE
                """)
            for (dependent, revision) in try decodeJobs(rows) {
                var next = dependent
                switch Dependencies.release(&next, after: done, root: root) {
                case .ready:
                    next = try transition(next, .ready, now)
                    due = true
                case .waiting:
                    next.updatedAt = now
                case let .failed(id, message):
                    next = try transition(next, .dependencyFailed(id: id, message: message), now)
                    Dependencies.unblockable(&next)
                    work.append((next, root ?? Dependencies.cause(done)))
                }
                try await saveLocked(next, over: dependent, revision: revision, on: c)
                if next.state.isTerminal {
                    try await recordEvent(next, at: now, on: c)
                    try await cancelChunks(of: next, at: now, on: c)
                }
            }
        }
        return due
    }

    /// After `retried` left a terminal state: the jobs its failure had failed wait again (unless another
    /// dependency of theirs failed too), and so on down the graph.
    func unblock(_ retried: Job, at now: Date, on c: PostgresConnection) async throws {
        var work = [retried.id]
        while let id = work.popLast() {
            let rows = try await c.run("""
                SELECT \(unescaped: Self.columns()) FROM \(unescaped: table) WHERE blocked_by = \(id) AND state = 'failed' ORDER BY id FOR UPDATE
                """)
            for (job, revision) in try decodeJobs(rows) {
                let verdict = DependencyVerdict.of(try await dependencies(job.after, on: c), policy: job.afterPolicy)
                let next = try Dependencies.unblocked(job, verdict, by: "with job \(id)", machine: machine, at: now)
                try await saveLocked(next, over: job, revision: revision, on: c)
                if next.state.isLive { work.append(next.id) }
            }
        }
    }

    /// `save` of a row this transaction locked: another writer cannot have changed it.
    func saveLocked(_ next: Job, over old: Job, revision: Int64, on c: PostgresConnection) async throws {
        try await saveLocked([RowWrite(next, over: old, revision: revision)], on: c)
    }

    /// `save` of rows this transaction locked.
    func saveLocked(_ writes: [RowWrite], on c: PostgresConnection) async throws {
        // An ended job's row is its pending deliveries' job until it changes (`recording`).
        let ended = writes.filter(\.old.state.isTerminal).map(\.old.id)
        if !ended.isEmpty {
            var binds = PostgresBindings(capacity: 1)
            binds.append(ended)
            _ = try await c.run(PostgresQuery(unsafeSQL: Self.keep("$1", jobs: table), binds: binds))
        }
        let written = try await save(writes, on: c)
        guard written == writes.count else {
            throw JobStoreError.unavailable("\(location): \(writes.count - written) of \(writes.count) jobs changed while locked")
        }
    }
}
