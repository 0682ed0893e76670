import FarmModel
import Foundation
import QualityModel

/// What both backends do to jobs that wait for others (`DependencyVerdict` decides; the backends read
/// and write the rows, in the transaction of the change that moved a dependency).
enum Dependencies {
    static func unknown(_ reference: JobReference, of name: String) -> String {
        "\(name): waits for \(reference), which is not in the queue (a dependency must be submitted first, "
            + "or earlier in the same submission); nothing was queued"
    }

    /// A new job's state from its dependencies' verdict: waiting, queued, or failed naming the dependency.
    static func start(_ job: inout Job, _ verdict: DependencyVerdict, at now: Date) {
        switch verdict {
        case .ready: break
        case .waiting(let n):
            job.state = .waiting
            job.waitingFor = n
        case let .failed(id, message):
            job.state = .failed
            job.blockedBy = id
            job.finishedAt = now
            job.errors = [Job.AttemptError(attempt: 0, at: now, message: message)]
        }
    }

    /// A waiting `dependent` after its dependency `done` ended: one fewer to wait for (`.ready` when it
    /// was the last), or `.failed` naming `done` when the dependent needs success and `done` did not succeed
    /// (and `root`, the job whose failure ran down the graph to `done`, when it was not `done` itself).
    static func release(_ dependent: inout Job, after done: Job, root: DependencyVerdict.Dependency?) -> DependencyVerdict {
        if let chunk = dependent.chunkPlan?.chunks.first(where: { $0.job == done.id }), done.state != .succeeded {
            // A chunk of its own export: nothing to join. A retry of the export plans and encodes it again.
            let how = done.state == .dead ? "is dead (every attempt crashed)" : done.state.rawValue
            return .failed(by: done.id, message: "chunk job \(done.id) (frames \(chunk.frames.lowerBound)..<\(chunk.frames.upperBound)) \(how)"
                           + "\(done.errors.last.map { ": \($0.message)" } ?? ""); retry job \(dependent.id) to encode its chunks again")
        }
        let warned = dependent.afterPolicy == .passed && done.state == .succeeded && CheckVerdict.Said(result: done.result)?.verdict == .warnings
        if (done.state == .succeeded && !warned) || dependent.afterPolicy == .always {
            dependent.waitingFor -= 1
            return dependent.waitingFor <= 0 ? .ready : .waiting(dependent.waitingFor)
        }
        return .failed(by: done.id, message: DependencyVerdict.failureMessage(cause(done), root: root))
    }

    /// A job failed by a chunk of its own export waits for no retry of that chunk (the chunks' files go
    /// with the failure): a retry of the job itself plans again.
    static func unblockable(_ job: inout Job) {
        if let blocker = job.blockedBy, job.chunkPlan?.jobs.contains(blocker) == true { job.blockedBy = nil }
    }

    /// A job that ended, as the cause of its dependents' failure.
    static func cause(_ job: Job) -> DependencyVerdict.Dependency {
        DependencyVerdict.Dependency(id: job.id, name: job.name, state: job.state, lastError: job.errors.last?.message, result: job.result)
    }

    /// A job a dependency's failure had failed, after that dependency was retried: waiting again, or
    /// still failed, now for another dependency that did not succeed.
    static func unblocked(_ job: Job, _ verdict: DependencyVerdict, by who: String, machine: JobStateMachine, at now: Date) throws(JobStoreError) -> Job {
        var job = job
        switch verdict {
        case .failed(let other, _):
            job.blockedBy = other
            job.updatedAt = now
            return job
        case .waiting(let n): job.waitingFor = n
        case .ready: job.waitingFor = 0
        }
        return try apply(.retry(by: who), to: job, machine: machine, at: now)
    }

    /// `retry` of a job with dependencies: waiting while some have not ended; refused while one failed.
    static func retried(_ job: Job, _ verdict: DependencyVerdict, by who: String, machine: JobStateMachine, at now: Date) throws(JobStoreError) -> Job {
        var job = job
        switch verdict {
        case .failed(let other, let message):
            if message.contains("quality checks warned") { throw .refused("job \(job.id) cannot run: \(message)") }
            throw .refused("job \(job.id) waits for job \(other), which did not succeed: retry job \(other) (the jobs waiting for it follow)")
        case .waiting(let n): job.waitingFor = n
        case .ready: job.waitingFor = 0
        }
        return try apply(.retry(by: who), to: job, machine: machine, at: now)
    }

    static func apply(_ t: JobTransition, to job: Job, machine: JobStateMachine, at now: Date) throws(JobStoreError) -> Job {
        do {
            return try machine.apply(t, to: job, at: now, jitter: Double.random(in: 0...1))
        } catch {
            throw .transition(id: job.id, error)
        }
    }
}
