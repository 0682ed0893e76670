import Foundation

/// One job of the queue, as every backend stores it. Times are seconds since 1970 (UTC), as `Date`.
public struct Job: Sendable, Hashable, Codable {
    public var id: Int64
    public var name: String
    /// The manifest as submitted (JSON text); relative paths in it resolve against `baseDirectory`.
    public var manifest: String
    public var baseDirectory: String
    /// Folders the job may write under, checked again by the worker; none given: the manifest's folder
    /// (`writableRoots`).
    public var outputRoots: [String]
    public var state: JobState
    /// Higher runs first.
    public var priority: Int
    /// Attempts started so far.
    public var attempt: Int
    public var maxAttempts: Int
    /// Not claimed before this time (backoff after a failure, or a delayed submission).
    public var runAt: Date
    /// At most one live (queued or running) job holds a given key.
    public var uniqueKey: String?
    /// Wall-clock limit of one attempt, seconds; nil: the coordinator's default.
    public var timeout: Double?
    public var lease: Lease?
    public var progress: Double?
    public var phase: String?
    /// The worker process of the running attempt.
    public var workerPID: Int32?
    public var createdAt: Date
    public var startedAt: Date?
    public var finishedAt: Date?
    public var updatedAt: Date
    /// The worker's result of the last finished attempt (JSON text).
    public var result: String?
    /// One entry per failed attempt.
    public var errors: [AttemptError]
    /// The jobs this one waits for (ids, resolved at submission; they existed then, so there are no cycles).
    public var after: [Int64] = []
    public var afterPolicy: AfterPolicy = .success
    /// How many of `after` have not ended yet (a `waiting` job's count; 0 otherwise).
    public var waitingFor: Int = 0
    /// The dependency whose failure failed this job: retrying that one brings this one back to waiting.
    public var blockedBy: Int64?
    /// What a host must provide to claim the job (`coordinator --provides`).
    public var requires: [String] = []
    /// A chunked export that was split: its chunks (jobs this one waits for, then joins).
    public var chunkPlan: ChunkPlan?
    /// The chunked export this job encodes a chunk of.
    public var chunkOf: Int64?

    /// Who runs the job now, and until when the claim holds without renewal.
    public struct Lease: Sendable, Hashable, Codable {
        /// The coordinator: "host:pid:random".
        public var owner: String
        /// Changes with every claim: completion and publication must present it (fencing).
        public var token: String
        public var expiresAt: Date

        public init(owner: String, token: String, expiresAt: Date) {
            self.owner = owner
            self.token = token
            self.expiresAt = expiresAt
        }
    }

    /// The host part of a lease owner ("host:pid:random").
    /// The phase of a job a coordinator claimed ahead of a free slot (it holds a lease; no worker runs it yet).
    public static let claimedAheadPhase = "claimed, waiting for a slot"

    public static func host(ofOwner owner: String) -> String {
        String(owner.prefix { $0 != ":" })
    }

    /// An attempt that did not succeed: its number over the job's life, when it ended and why, and when it
    /// was retried.
    public struct AttemptError: Sendable, Hashable, Codable {
        public var attempt: Int
        public var at: Date
        public var message: String
        /// When the attempt started, and on which host (absent for a job that failed before any attempt ran,
        /// its dependency having failed, and in errors recorded before they were kept).
        public var startedAt: Date?
        public var host: String?
        /// The worker process that ran it, when one had started.
        public var worker: Int32?
        /// When the job was retried after this attempt (a fresh set of attempts, numbered on from it), and
        /// by whom (absent in rows recorded before it was kept).
        public var retriedAt: Date?
        public var retriedBy: String?

        public init(attempt: Int, at: Date, message: String, startedAt: Date? = nil, host: String? = nil, worker: Int32? = nil,
                    retriedAt: Date? = nil, retriedBy: String? = nil) {
            self.attempt = attempt
            self.at = at
            self.message = message
            self.startedAt = startedAt
            self.host = host
            self.worker = worker
            self.retriedAt = retriedAt
            self.retriedBy = retriedBy
        }

        /// The error of `job`'s attempt now running, ending at `now`.
        public static func of(_ job: Job, at now: Date, message: String) -> AttemptError {
            AttemptError(attempt: job.attemptNumber, at: now, message: message, startedAt: job.startedAt,
                         host: job.lease.map { Job.host(ofOwner: $0.owner) }, worker: job.workerPID)
        }
    }

    /// The number of the latest attempt over the job's life: a retry gives a fresh set of `maxAttempts`
    /// (`attempt` counts those), and the numbers go on from the attempts before it.
    public var attemptNumber: Int { (errors.last { $0.retriedAt != nil }?.attempt ?? 0) + attempt }

    /// Whether another attempt can come without a retry: the job has not ended.
    public var mayRunAgain: Bool { !state.isTerminal }

    /// How its attempts stand, as the console and `mediafarm status` say it: "2 of 3" while another attempt
    /// can come; once ended, how many ran and whether a retry is the way on.
    public var attemptsSummary: String {
        switch state {
        case .queued, .running, .waiting:
            return "\(attempt) of \(maxAttempts)"
        case .succeeded:
            return "attempt \(attemptNumber)"
        case .failed:
            return "failed (not retryable)"
        case .dead:
            return "\(attempt) of \(maxAttempts), none left"
        case .cancelled:
            return attempt == 0 ? "none ran" : "attempt \(attemptNumber)"
        }
    }

    /// The host that ran its latest attempt, kept when the attempt ends (the lease names it while it runs);
    /// nil before any started.
    public var host: String?

    /// A new queued job.
    /// The folders the job may write under, as the validator reads them: its output roots, or its
    /// manifest's folder when it was submitted with none.
    public var writableRoots: [String] { outputRoots.isEmpty ? [baseDirectory] : outputRoots }

    public init(id: Int64 = 0, name: String, manifest: String, baseDirectory: String, outputRoots: [String] = [],
                priority: Int = 0, maxAttempts: Int = RetryPolicy.default.maxAttempts, runAt: Date? = nil,
                uniqueKey: String? = nil, timeout: Double? = nil, createdAt: Date) {
        self.id = id
        self.name = name
        self.manifest = manifest
        self.baseDirectory = baseDirectory
        self.outputRoots = outputRoots
        self.state = .queued
        self.priority = priority
        self.attempt = 0
        self.maxAttempts = max(1, maxAttempts)
        self.runAt = runAt ?? createdAt
        self.uniqueKey = uniqueKey
        self.timeout = timeout
        self.createdAt = createdAt
        self.updatedAt = createdAt
        self.errors = []
    }
}
