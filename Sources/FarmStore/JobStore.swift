import FarmModel
import QualityModel
import Foundation

/// What a submission asks for.
public struct NewJob: Sendable, Hashable {
    public var name: String
    public var manifest: String
    public var baseDirectory: String
    public var outputRoots: [String]
    public var priority: Int
    public var maxAttempts: Int
    public var runAt: Date?
    public var uniqueKey: String?
    public var timeout: Double?
    /// Jobs this one waits for: each must exist (an id, or a key some job was submitted with, earlier or
    /// earlier in the same submission), else the submission is refused.
    public var after: [JobReference]
    public var afterPolicy: AfterPolicy
    /// Only a coordinator that provides every one of these claims the job.
    public var requires: [String]
    /// The chunked export this job encodes a chunk of (made by `split`).
    public var chunkOf: Int64?
    /// The files (and numbered files' patterns) it writes (`JobManifest.writes`): the queue refuses it when
    /// a live job writes one of them, unless it waits for that job.
    public var outputs: [String] = []

    public init(name: String, manifest: String, baseDirectory: String, outputRoots: [String] = [], priority: Int = 0,
                maxAttempts: Int = RetryPolicy.default.maxAttempts, runAt: Date? = nil, uniqueKey: String? = nil,
                timeout: Double? = nil, after: [JobReference] = [], afterPolicy: AfterPolicy = .success, requires: [String] = [],
                outputs: [String] = []) {
        self.name = name
        self.manifest = manifest
        self.baseDirectory = baseDirectory
        self.outputRoots = outputRoots
        self.priority = priority
        self.maxAttempts = maxAttempts
        self.runAt = runAt
        self.uniqueKey = uniqueKey
        self.timeout = timeout
        self.after = after
        self.afterPolicy = afterPolicy
        self.requires = requires
        self.outputs = outputs
    }
}

/// The outcome of one submitted job: a new id, or the live job that already holds its unique key.
public struct Enqueued: Sendable, Hashable {
    public var id: Int64
    /// false: a live job with the same unique key existed; `id` is that job's.
    public var inserted: Bool

    public init(id: Int64, inserted: Bool) {
        self.id = id
        self.inserted = inserted
    }
}

/// What a lease holder reports while a job runs.
public struct LeaseRenewal: Sendable, Hashable {
    public var id: Int64
    public var token: String
    public var progress: Double?
    public var phase: String?
    public var workerPID: Int32?
    /// The worker's result, recorded as publishing starts.
    public var result: String?

    public init(id: Int64, token: String, progress: Double? = nil, phase: String? = nil, workerPID: Int32? = nil, result: String? = nil) {
        self.id = id
        self.token = token
        self.progress = progress
        self.phase = phase
        self.workerPID = workerPID
        self.result = result
    }
}

/// One attempt to end, for `finish(_:at:)`.
public struct FinishedAttempt: Sendable, Hashable {
    public var id: Int64
    public var token: String
    public var outcome: AttemptOutcome

    public init(id: Int64, token: String, outcome: AttemptOutcome) {
        self.id = id
        self.token = token
        self.outcome = outcome
    }
}

/// How a finished attempt ended, as the lease holder reports it.
public enum AttemptOutcome: Sendable, Hashable {
    case succeeded(result: String?)
    /// The worker reported a failure in words: the job is `failed`, not retried.
    case failed(message: String, result: String?)
    /// Crash, signal, timeout: retried after a backoff, or `dead`.
    case crashed(message: String)
    /// Given back without using up the attempt (drain).
    case released
}

/// Which jobs `jobs(matching:)` returns, oldest first; nil fields do not filter.
public struct JobQuery: Sendable, Hashable {
    public var ids: [Int64]?
    public var states: [JobState]?
    /// At most this many (the newest ones when `newest` is set).
    public var limit: Int?
    public var newest: Bool
    /// Only jobs with a smaller id: the next page of a listing newest first, after the job `before`.
    public var before: Int64?
    /// Only jobs with a larger id: the next page of a listing oldest first.
    public var afterID: Int64?
    /// Only jobs whose name begins with this (case as given).
    public var namePrefix: String?
    /// Only jobs that are not a chunk of another (a chunked export's chunks folded under it).
    public var topLevel = false
    /// Only the chunks of this job.
    public var chunkOf: Int64?
    /// Only the jobs that wait for this one (its dependents).
    public var dependsOn: Int64?
    /// Only jobs due to run after this time (delayed), or at or before it (due).
    public var runAfter: Date?
    public var runBy: Date?
    /// Only jobs whose unique key begins with this.
    public var keyPrefix: String?
    /// Only jobs submitted at or after `createdFrom` and before `createdBefore`.
    public var createdFrom: Date?
    public var createdBefore: Date?
    /// Only jobs whose manifest holds this text (an input's or an output's path, or a part of one).
    public var mentions: String?
    /// Only jobs whose latest attempt ran (or runs) on this host.
    public var host: String?
    /// Only jobs that read an asset of this album.
    public var album: String?
    /// Only jobs with a failed attempt (retrying, failed or dead).
    public var failedAttempts = false
    /// Only jobs that failed because this job (which they waited for, directly or not) did not succeed.
    public var blockedBy: Int64?
    /// Only jobs whose quality checks gave this verdict (their result's `checks.verdict`).
    public var verdict: CheckVerdict?

    /// The text a result holds when its checks gave `verdict`: results are compact JSON, and a string's own
    /// quotes are escaped in it, so only the report's key matches.
    static func verdictText(_ verdict: CheckVerdict) -> String { "\"verdict\":\"\(verdict.rawValue)\"" }

    public init(ids: [Int64]? = nil, states: [JobState]? = nil, limit: Int? = nil, newest: Bool = false, before: Int64? = nil) {
        self.ids = ids
        self.states = states
        self.limit = limit
        self.newest = newest
        self.before = before
    }
}

/// What `change(_:_:at:)` does to each job.
public enum BulkChange: String, Sendable, CaseIterable {
    case cancel, retry

    func transition(by who: String) -> JobTransition { self == .cancel ? .cancel : .retry(by: who) }

    /// A batch's size: one transaction each.
    static let batch = 500
}

/// `mediafarm queue stats`: the queue at a glance.
public struct QueueStats: Sendable, Hashable, Codable {
    public var counts: [String: Int]
    /// The runAt of the queued job that has waited longest (due now or earlier); nil when none is due.
    public var oldestDueAt: Date?
    /// Running jobs by the host in their lease.
    public var runningByHost: [String: Int]
    /// Jobs that used up their attempts.
    public var dead: Int
    public var total: Int
    /// Queued jobs not due yet (counted among `counts["queued"]`).
    public var delayed: Int

    public init(counts: [String: Int], oldestDueAt: Date?, runningByHost: [String: Int], dead: Int, total: Int, delayed: Int = 0) {
        self.counts = counts
        self.delayed = delayed
        self.oldestDueAt = oldestDueAt
        self.runningByHost = runningByHost
        self.dead = dead
        self.total = total
    }
}

extension QueueStats {
    /// The counts as people see them: `queued` those due, `delayed` the others (`ShownState`).
    public var shown: [ShownState: Int] {
        var shown: [ShownState: Int] = [:]
        for state in ShownState.allCases { shown[state] = counts[state.stored.rawValue] ?? 0 }
        shown[.queued] = max(0, (counts[JobState.queued.rawValue] ?? 0) - delayed)
        shown[.delayed] = delayed
        return shown
    }
}

/// The queue: one contract, two backends (SQLite on one host, PostgreSQL for several). Every state change goes through
/// `JobStateMachine`; every change to a running job carries its lease token (fencing). Times are
/// passed in, so that callers and tests own the clock. Calls are async: a backend waits for its
/// database without holding a thread of the caller's (one transaction each).
public protocol JobStore: WebhookOutbox {
    /// Adds `jobs` in one transaction: all of them or none.
    func enqueue(_ jobs: [NewJob], at now: Date) async throws(JobStoreError) -> [Enqueued]
    /// Atomically claims up to `limit` queued jobs whose runAt has come, highest priority first, then
    /// oldest runAt; each gets a fresh lease token valid for `leaseDuration` seconds.
    ///
    /// Only jobs the claimer can run: those whose `requires` are all in `provides`, and whose `asset:ID`
    /// inputs are all present on the owner's host (per the asset library); the others wait for such a host.
    func claim(limit: Int, owner: String, leaseDuration: Double, provides: [String], at now: Date) async throws(JobStoreError) -> [Job]
    /// Extends the leases (and records progress) of running jobs; returns the ids whose lease is no longer
    /// held (cancelled, rescued and re-claimed, finished): their workers must stop.
    func renew(_ renewals: [LeaseRenewal], leaseDuration: Double, at now: Date) async throws(JobStoreError) -> Set<Int64>
    /// Ids among `leases` (id -> token) whose lease is no longer held. Read only.
    func lostLeases(_ leases: [Int64: String], at now: Date) async throws(JobStoreError) -> Set<Int64>
    /// Ends the attempt holding `token`. Throws `.transition(.staleLease)` when a newer attempt owns the job.
    func finish(id: Int64, token: String, outcome: AttemptOutcome, at now: Date) async throws(JobStoreError) -> Job
    /// Ends several attempts in one transaction (each fenced by its own token); one result per item.
    func finish(_ attempts: [FinishedAttempt], at now: Date) async throws(JobStoreError) -> [Result<Job, JobStoreError>]
    /// Returns running jobs whose lease expired to the queue (or makes them dead); returns them as they
    /// were before, with the expired lease, so the caller can clean up what that attempt left. Jobs whose
    /// attempt was publishing (phase `publishing`) are spared for `publishingGrace` seconds past their
    /// lease: their publication is finished by `expiredPublications` and a rescuer instead.
    func rescueExpired(at now: Date, publishingGrace: Double) async throws(JobStoreError) -> [Job]
    /// Ends now the leases of running jobs held by `owners`, coordinators known to be gone (their lock on
    /// this host is free): `rescueExpired` then takes those jobs back without waiting out the leases.
    /// Returns how many leases it ended.
    func expireLeases(ofOwners owners: [String], at now: Date) async throws(JobStoreError) -> Int
    /// Running jobs in phase `publishing` whose lease expired: their worker succeeded and their outputs
    /// were staged; a rescuer completes the publication and finishes them under the expired lease's token.
    func expiredPublications(at now: Date) async throws(JobStoreError) -> [Job]
    func cancel(id: Int64, at now: Date) async throws(JobStoreError) -> Job
    /// `who`: who retried it, kept on the attempt's row (`JobTransition.retry`).
    func retry(id: Int64, at now: Date, by who: String) async throws(JobStoreError) -> Job
    /// Cancels or retries each of `ids` as `cancel`/`retry` would, a few hundred to a transaction; one
    /// outcome per id, in their order: the job as it became, or why the queue refused that one (no such
    /// job, a state that does not allow it, a unique key another live job holds). A refusal leaves the
    /// others be; an unavailable queue throws.
    func change(_ ids: [Int64], _ action: BulkChange, at now: Date, by who: String) async throws(JobStoreError) -> [Result<Job, JobStoreError>]
    /// Deletes those of `ids` that ended (succeeded, failed, cancelled, dead), with their chunks, as `prune`
    /// deletes; returns the ids deleted (a live job or a missing id is left out).
    func delete(_ ids: [Int64]) async throws(JobStoreError) -> [Int64]
    func job(id: Int64) async throws(JobStoreError) -> Job?
    /// The jobs a query selects (missing ids are skipped), oldest first; filtered by the database.
    func jobs(matching query: JobQuery) async throws(JobStoreError) -> [Job]
    func counts() async throws(JobStoreError) -> [JobState: Int]
    /// How many jobs a query selects (its limit aside).
    func count(matching query: JobQuery) async throws(JobStoreError) -> Int
    func stats(at now: Date) async throws(JobStoreError) -> QueueStats
    /// Deletes up to `limit` jobs that finished (succeeded, failed, cancelled, dead) before `date`;
    /// returns how many.
    func prune(finishedBefore date: Date, limit: Int) async throws(JobStoreError) -> Int
    /// Records the multipart upload the attempt holding `token` began for one of the job's outputs
    /// (replacing an earlier attempt's for the same address). false when the token no longer holds the job.
    func recordUpload(_ upload: RecordedUpload, token: String, at now: Date) async throws(JobStoreError) -> Bool
    /// The uploads recorded for job `id`, by address.
    func recordedUploads(of id: Int64) async throws(JobStoreError) -> [RecordedUpload]
    /// Forgets these records (completed or aborted); a record replaced meanwhile by a newer attempt's stays.
    func forgetUploads(_ uploads: [RecordedUpload]) async throws(JobStoreError)
    /// Splits the running job `id` (its attempt holding `token`) into `chunks`, made in the same transaction
    /// and recorded in `plan` (in its order): the job waits for them, its attempt given back, and runs again
    /// to join them once they all succeeded. Its live chunks are cancelled when it ends; its plan is let go
    /// (and planned again) when it is retried.
    func split(id: Int64, token: String, chunks: [NewJob], plan: ChunkPlan, at now: Date) async throws(JobStoreError) -> Job
    /// Folders of chunked exports to remove (their job ended, or a retry planned again), oldest first.
    func abandonedChunkFolders(limit: Int) async throws(JobStoreError) -> [String]
    /// Forgets a folder that was removed.
    func forgetChunkFolder(_ location: String) async throws(JobStoreError)
    /// Split jobs waiting for their chunks (at most `limit`), and their chunks, for their progress.
    func waitingChunkedJobs(limit: Int) async throws(JobStoreError) -> [(job: Job, chunks: [Job])]
    /// Records the progress of a split job that waits for its chunks (the sum of theirs); nothing when it
    /// no longer waits.
    func recordWaitingProgress(id: Int64, progress: Double, phase: String, at now: Date) async throws(JobStoreError)
    /// The earliest runAt among queued jobs that a claimer providing `provides` on `host` can run, to sleep until.
    func nextRunAt(provides: [String], host: String) async throws(JobStoreError) -> Date?
    /// Whether a job is running anywhere, or one is queued that a claimer providing `provides` on `host`
    /// can run (an idle coordinator with `--exit-when-idle` exits when neither is so).
    func hasWork(provides: [String], host: String) async throws(JobStoreError) -> Bool
    /// Returns when work may have arrived (a submission, a retry, a released job) or after `seconds`,
    /// whichever comes first; at once when the task is cancelled. Without notifications, a sleep.
    func waitForWork(upTo seconds: Double) async
    /// Whether `waitForWork` hears of new work (so an idle caller may wait long), or only sleeps.
    var hearsOfWork: Bool { get }
    /// Where a caller that makes many calls (a coordinator's loops) should run, so that the store's
    /// blocking work runs there without a hop per call and never on the cooperative pool (SQLite: its
    /// writer thread); nil when the store never blocks a thread (PostgreSQL: non-blocking I/O).
    var executor: (any TaskExecutor)? { get }
    /// Without notifications, how far an idle caller's polls may back off: a local file is cheap to
    /// look at often; a server shared by many hosts is not.
    var idlePollLimit: Double { get }
    /// Where the queue is, for messages (never with a password).
    var location: String { get }
    /// What opening the store did to its schema (created, upgraded, or nothing).
    var schemaChange: SchemaChange { get }
    /// The tables beside the jobs (the asset library's), in the same database.
    var database: any SQLDatabase { get throws(JobStoreError) }
    /// Closes connections; the store is not used afterwards.
    func close() async
}

extension JobStore {
    public var executor: (any TaskExecutor)? { nil }

    /// A claim by a coordinator that provides nothing: jobs without requirements.
    public func claim(limit: Int, owner: String, leaseDuration: Double, at now: Date) async throws(JobStoreError) -> [Job] {
        try await claim(limit: limit, owner: owner, leaseDuration: leaseDuration, provides: [], at: now)
    }

    public func nextRunAt() async throws(JobStoreError) -> Date? {
        try await nextRunAt(provides: [], host: "")
    }

    /// Rescues every expired lease, publishing or not.
    public func rescueExpired(at now: Date) async throws(JobStoreError) -> [Job] {
        try await rescueExpired(at: now, publishingGrace: 0)
    }

    /// Jobs by id (missing ids are skipped), or every job when `ids` is nil, oldest first.
    public func jobs(ids: [Int64]?) async throws(JobStoreError) -> [Job] {
        try await jobs(matching: JobQuery(ids: ids))
    }
}

public enum JobStoreError: Error, Sendable, CustomStringConvertible {
    case notFound(Int64)
    case transition(id: Int64, JobTransitionError)
    /// The queue cannot be opened or used.
    case unavailable(String)
    /// The queue URL itself is wrong (a usage error).
    case invalidLocation(String)
    /// The caller's request cannot be taken as it is, the queue being as it is: a submission naming a
    /// dependency that does not exist (nothing was queued), a retry whose unique key another live job
    /// holds or whose dependency failed. Never a fault of the queue's.
    case refused(String)

    public var description: String {
        switch self {
        case .notFound(let id): "no job \(id) in the queue"
        case let .transition(id, e): "job \(id): \(e.description)"
        case .unavailable(let message), .invalidLocation(let message), .refused(let message): message
        }
    }

    public var isStaleLease: Bool {
        if case .transition(_, .staleLease) = self { return true }
        return false
    }
}

/// The schema's version before and after a store was opened: `from` 0 is a queue created now.
public struct SchemaChange: Sendable, Hashable {
    public var from: Int
    public var to: Int

    public init(from: Int, to: Int) {
        self.from = from
        self.to = to
    }

    /// "created the queue (schema version 4)", "upgraded the queue's schema from version 3 to 4", or "the
    /// queue's schema (version 4) is current".
    public var description: String {
        from == to ? "the queue's schema (version \(to)) is current"
            : from == 0 ? "created the queue (schema version \(to))"
            : "upgraded the queue's schema from version \(from) to \(to)"
    }
}
