import FarmModel
import Foundation
import GRDB

/// Jobs that wait for others, in the SQLite queue: dependencies resolved at submission, and the moves of
/// the graph made in the transaction of the change that caused them (`Dependencies` decides).
extension SQLiteJobStore {
    /// The ids of the jobs `references` name; refused (nothing queued) when one names no job.
    func resolve(_ references: [JobReference], for name: String, _ db: Database) throws -> [Int64] {
        var ids: [Int64] = []
        for reference in references {
            let found: Int64? = switch reference {
            case .id(let id): try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM jobs WHERE id = ?"), arguments: [id])
            case .key(let key):
                try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(id) FROM jobs WHERE unique_key = ?"), arguments: [key])
            }
            guard let found else { throw JobStoreError.refused(Dependencies.unknown(reference, of: name)) }
            if !ids.contains(found) { ids.append(found) }
        }
        return ids
    }

    /// The jobs `ids` as the dependency verdict needs them.
    func dependencies(_ ids: [Int64], _ db: Database) throws -> [DependencyVerdict.Dependency] {
        guard !ids.isEmpty else { return [] }
        return try Row.fetchAll(db, sql: "SELECT id, name, state, errors, result FROM jobs WHERE id IN (\(ids.map { String($0) }.joined(separator: ",")))").map { row in
            DependencyVerdict.Dependency(id: row[0], name: row[1], state: JobState(rawValue: row[2]) ?? .dead,
                                         lastError: JobCoding.decode([Job.AttemptError].self, row[3])?.last?.message, result: row[4])
        }
    }

    /// After `ended` reached a terminal state: its waiting dependents count it as ended (queued when it
    /// was their last) or fail naming it, and so on down the graph. True when a job became due.
    func release(_ ended: Job, at now: Date, _ db: Database) throws -> Bool {
        var due = false
        // Each job that ended, with the job whose failure made it end (nil: itself).
        var work: [(job: Job, root: DependencyVerdict.Dependency?)] = [(ended, nil)]
        while let (done, root) = work.popLast() {
            let dependents = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(Self.columns) FROM jobs WHERE state = 'waiting' AND id IN (SELECT job_id FROM job_dependencies WHERE depends_on = ?)
                """), arguments: [done.id]).map(Self.job)
            for var dependent in dependents {
                switch Dependencies.release(&dependent, after: done, root: root) {
                case .ready:
                    try save(try transition(dependent, .ready, now), db)
                    due = true
                case .waiting:
                    dependent.updatedAt = now
                    try save(dependent, db)
                case let .failed(id, message):
                    var failed = try transition(dependent, .dependencyFailed(id: id, message: message), now)
                    Dependencies.unblockable(&failed)
                    try save(failed, db)
                    try recordEvent(failed, at: now, db)
                    try cancelChunks(of: failed, at: now, db)
                    work.append((failed, root ?? Dependencies.cause(done)))
                }
            }
        }
        return due
    }

    /// After `retried` left a terminal state: the jobs its failure had failed wait again (unless another
    /// dependency of theirs failed too), and so on down the graph.
    func unblock(_ retried: Job, at now: Date, _ db: Database) throws {
        var work = [retried.id]
        while let id = work.popLast() {
            let blocked = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(Self.columns) FROM jobs WHERE blocked_by = ? AND state = 'failed'
                """), arguments: [id]).map(Self.job)
            for job in blocked {
                let verdict = DependencyVerdict.of(try dependencies(job.after, db), policy: job.afterPolicy)
                let next = try Dependencies.unblocked(job, verdict, by: "with job \(id)", machine: machine, at: now)
                try keepEvents(of: job.id, db)  // it failed: its row is its event's job until now
                try save(next, db)
                if next.state.isLive { work.append(next.id) }
            }
        }
    }

    /// A job's retry: its dependencies decide whether it waits; one that failed refuses it.
    func retried(_ job: Job, by who: String, at now: Date, _ db: Database) throws -> Job {
        let verdict = DependencyVerdict.of(try dependencies(job.after, db), policy: job.afterPolicy)
        return try Dependencies.retried(job, verdict, by: who, machine: machine, at: now)
    }

    /// Applies and saves a transition, and follows it through the jobs that wait: a job that ended
    /// releases (or fails) its dependents, a retried one brings back those its failure had failed.
    /// `due`: a job became due.
    func moved(_ job: Job, _ t: JobTransition, _ now: Date, _ db: Database) throws -> (job: Job, due: Bool) {
        var job = job
        // An ended job's row is its events' job until it changes (`WebhookEventSchema`).
        if job.state.isTerminal { try keepEvents(of: job.id, db) }
        // A chunked export retried plans again: its old chunks are let go.
        if case .retry = t, job.state.isTerminal { try detachChunks(&job, at: now, db) }
        let next = if case .retry(let who) = t { try retried(job, by: who, at: now, db) } else { try transition(job, t, now) }
        try save(next, db)
        if next.state.isTerminal && !job.state.isTerminal {
            try recordEvent(next, at: now, db)
            let due = try release(next, at: now, db)
            try cancelChunks(of: next, at: now, db)
            return (next, due)
        }
        if job.state.isTerminal && next.state.isLive { try unblock(next, at: now, db) }
        return (next, false)
    }
}
