import Foundation

/// Everything that can happen to a job. Each backend applies these through `JobStateMachine`, so that
/// the legal moves live in one place.
public enum JobTransition: Sendable, Hashable {
    /// queued -> running: a coordinator takes the job with a fresh lease token.
    case claim(owner: String, token: String, leaseExpiresAt: Date)
    /// running -> running: the lease holder extends it, and reports progress (and, as it starts
    /// publishing, the worker's result: a rescuer that finds the attempt publishing can finish it).
    case renew(token: String, leaseExpiresAt: Date, progress: Double?, phase: String?, workerPID: Int32?, result: String? = nil)
    /// running -> succeeded.
    case succeed(token: String, result: String?)
    /// running -> failed: the worker finished and reported a failure in words; not retried.
    case fail(token: String, message: String, result: String?)
    /// running -> queued (after a backoff) or dead: the attempt crashed, was killed or timed out.
    case crash(token: String, message: String)
    /// running -> queued or dead: nobody renewed the lease in time (a lost coordinator).
    case expire
    /// running -> queued without using up the attempt (a coordinator draining on SIGTERM).
    case release(token: String)
    /// queued or running -> cancelled.
    case cancel
    /// failed, dead or cancelled -> queued (or waiting, when `waitingFor` dependencies have not ended),
    /// with a fresh set of attempts. `by`: who retried it, as the attempt's row says it ("the console,
    /// session 1a2b3c4d…", "mediafarm retry, ana on render-2", "with job 12").
    case retry(by: String)
    /// waiting -> queued: the last dependency ended as the job's policy needs.
    case ready
    /// waiting -> failed: a dependency ended without success (the job's policy needs success).
    case dependencyFailed(id: Int64, message: String)
    /// running -> waiting: the attempt split a chunked export into the chunks of `plan` (their jobs made):
    /// the job waits for them, then runs again to join them. The attempt is not used up.
    case split(token: String, plan: ChunkPlan)

    public var name: String {
        switch self {
        case .claim: "claim"
        case .renew: "renew"
        case .succeed: "succeed"
        case .fail: "fail"
        case .crash: "crash"
        case .expire: "expire"
        case .release: "release"
        case .cancel: "cancel"
        case .retry: "retry"
        case .ready: "ready"
        case .dependencyFailed: "fail for a dependency"
        case .split: "split"
        }
    }
}

/// Why a transition was refused.
public enum JobTransitionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The transition does not apply to a job in this state.
    case illegal(JobTransition, from: JobState)
    /// The caller's lease token is not the job's current one: a newer attempt owns the job.
    case staleLease
    /// The lease has not expired yet.
    case leaseStillValid

    public var description: String {
        switch self {
        case let .illegal(t, from): "cannot \(t.name) a job that is \(from.rawValue)"
        case .staleLease: "the lease is no longer held: a newer attempt owns the job"
        case .leaseStillValid: "the lease has not expired"
        }
    }
}

/// The job state machine: pure, no I/O. `apply` returns the job after a transition, or refuses it.
public struct JobStateMachine: Sendable {
    public var policy: RetryPolicy

    public init(policy: RetryPolicy = .default) { self.policy = policy }

    /// The job after `transition` at `now`. `jitter` in [0, 1] is the random draw of the backoff.
    public func apply(_ transition: JobTransition, to job: Job, at now: Date, jitter: Double = 0.5) throws(JobTransitionError) -> Job {
        var next = job
        next.updatedAt = now
        switch (job.state, transition) {
        case let (.queued, .claim(owner, token, expiresAt)):
            Self.claim(&next, lease: Job.Lease(owner: owner, token: token, expiresAt: expiresAt), at: now)

        case let (.running, .renew(token, expiresAt, progress, phase, pid, result)):
            try Self.check(token, job)
            next.lease?.expiresAt = expiresAt
            if let progress { next.progress = min(max(progress, 0), 1) }
            if let phase { next.phase = phase }
            if let pid { next.workerPID = pid }
            if let result { next.result = result }

        case let (.running, .succeed(token, result)):
            try Self.check(token, job)
            next.state = .succeeded
            next.result = result
            next.progress = 1
            next.phase = "done"
            finish(&next, at: now)

        case let (.running, .fail(token, message, result)):
            try Self.check(token, job)
            next.state = .failed
            next.result = result
            next.errors.append(.of(job, at: now, message: message))
            finish(&next, at: now)

        case let (.running, .crash(token, message)):
            try Self.check(token, job)
            attemptLost(&next, message: message, at: now, jitter: jitter)

        case (.running, .expire):
            guard let lease = job.lease, lease.expiresAt <= now else { throw .leaseStillValid }
            attemptLost(&next, message: "lease of \(lease.owner) expired: its coordinator stopped renewing it", at: now, jitter: jitter)

        case let (.running, .release(token)):
            try Self.check(token, job)
            next.state = .queued
            next.attempt = max(0, job.attempt - 1)
            next.runAt = now
            clearAttempt(&next)

        case (.queued, .cancel), (.running, .cancel), (.waiting, .cancel):
            next.state = .cancelled
            next.waitingFor = 0
            finish(&next, at: now)

        case let (.running, .split(token, plan)):
            try Self.check(token, job)
            split(&next, into: plan)

        case (.failed, .retry(let by)), (.dead, .retry(let by)), (.cancelled, .retry(let by)):
            retried(&next, by: by, at: now)

        case (.waiting, .ready):
            next.state = .queued
            next.waitingFor = 0
            next.runAt = max(job.runAt, now)

        case let (.waiting, .dependencyFailed(id, message)):
            next.state = .failed
            next.waitingFor = 0
            next.blockedBy = id
            next.errors.append(Job.AttemptError(attempt: job.attemptNumber, at: now, message: message))
            finish(&next, at: now)

        default:
            throw .illegal(transition, from: job.state)
        }
        return next
    }

    /// A queued job claimed: its attempt begins under `lease`.
    private static func claim(_ next: inout Job, lease: Job.Lease, at now: Date) {
        next.state = .running
        next.attempt += 1
        next.lease = lease
        next.host = Job.host(ofOwner: lease.owner)
        next.startedAt = now
        next.finishedAt = nil
        next.progress = 0
        next.phase = "starting"
        next.workerPID = nil
    }

    /// A running job split into chunks: it waits for them, its attempt not counted.
    private func split(_ next: inout Job, into plan: ChunkPlan) {
        let job = next
        next.state = .waiting
        next.attempt = max(0, job.attempt - 1)
        next.after += plan.jobs.filter { !job.after.contains($0) }
        next.waitingFor = plan.chunks.count
        next.chunkPlan = plan
        clearAttempt(&next)
        next.progress = 0
        next.phase = "encoding \(plan.chunks.count) chunks"
    }

    /// A failed, dead or cancelled job queued again (or waiting again for its chunks), its attempts counted anew.
    private func retried(_ next: inout Job, by: String, at now: Date) {
        let job = next
        next.state = job.waitingFor > 0 ? .waiting : .queued
        // The attempt that ended the job keeps its row, marked retried: the next is numbered on from it.
        // A cancelled attempt has no row yet (only failures write one): it gets one now.
        if let last = job.errors.indices.last, job.errors[last].attempt == job.attemptNumber, job.errors[last].retriedAt == nil {
            next.errors[last].retriedAt = now
            next.errors[last].retriedBy = by
        } else if job.attempt > 0 {
            next.errors.append(Job.AttemptError(attempt: job.attemptNumber, at: job.finishedAt ?? now, message: "cancelled",
                                                startedAt: job.startedAt, host: job.host, retriedAt: now, retriedBy: by))
        }
        next.attempt = 0
        next.runAt = now
        next.result = nil
        next.finishedAt = nil
        next.blockedBy = nil
        clearAttempt(&next)
    }

    private static func check(_ token: String, _ job: Job) throws(JobTransitionError) {
        guard job.lease?.token == token else { throw .staleLease }
    }

    /// A crashed, killed, timed-out or abandoned attempt: back to the queue after a backoff, or dead.
    private func attemptLost(_ job: inout Job, message: String, at now: Date, jitter: Double) {
        job.errors.append(.of(job, at: now, message: message))
        if policy.allowsRetry(after: job.attempt, maxAttempts: job.maxAttempts) {
            job.state = .queued
            job.runAt = now.addingTimeInterval(policy.delay(afterAttempt: job.attempt, unit: jitter))
            clearAttempt(&job)
        } else {
            job.state = .dead
            finish(&job, at: now)
        }
    }

    private func finish(_ job: inout Job, at now: Date) {
        job.finishedAt = now
        job.lease = nil
        job.workerPID = nil
    }

    private func clearAttempt(_ job: inout Job) {
        job.lease = nil
        job.workerPID = nil
        job.progress = nil
        job.phase = nil
    }
}
