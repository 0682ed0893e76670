import FarmModel
import Foundation
import Testing

@Suite struct JobStateMachineTests {
    let t0 = Date(timeIntervalSince1970: 1_000_000)
    let machine = JobStateMachine(policy: RetryPolicy(maxAttempts: 3, baseDelay: 2, maxDelay: 60, jitter: 0))

    /// A job in `state`, holding lease "tok" (expired at t0 + 10) when running.
    func job(_ state: JobState, attempt: Int = 1) -> Job {
        var job = Job(id: 7, name: "j", manifest: "{}", baseDirectory: "/", createdAt: t0)
        job.state = state
        job.attempt = state == .queued ? 0 : attempt
        if state == .running { job.lease = Job.Lease(owner: "me", token: "tok", expiresAt: t0.addingTimeInterval(10)) }
        return job
    }

    static let transitions: [JobTransition] = [
        .claim(owner: "me", token: "new", leaseExpiresAt: Date(timeIntervalSince1970: 2_000_000)),
        .renew(token: "tok", leaseExpiresAt: Date(timeIntervalSince1970: 2_000_000), progress: 0.5, phase: "encoding", workerPID: 42),
        .succeed(token: "tok", result: "{}"),
        .fail(token: "tok", message: "input missing", result: nil),
        .crash(token: "tok", message: "killed by SIGKILL"),
        .expire,
        .release(token: "tok"),
        .cancel,
        .retry(by: "a test"),
        .ready,
        .dependencyFailed(id: 3, message: "dependency job 3 (scan) failed"),
    ]

    /// The whole table: which state each transition leads to from each state, nil where it is illegal.
    static let table: [JobState: [String: JobState]] = [
        .waiting: ["ready": .queued, "fail for a dependency": .failed, "cancel": .cancelled],
        .queued: ["claim": .running, "cancel": .cancelled],
        .running: ["renew": .running, "succeed": .succeeded, "fail": .failed, "crash": .queued, "expire": .queued,
                   "release": .queued, "cancel": .cancelled],
        .succeeded: [:],
        .failed: ["retry": .queued],
        .cancelled: ["retry": .queued],
        .dead: ["retry": .queued],
    ]

    @Test(arguments: JobState.allCases)
    func everyTransitionFromEveryState(state: JobState) throws {
        let later = t0.addingTimeInterval(20)  // past the lease, so that expire applies
        for t in Self.transitions {
            let expected = Self.table[state]?[t.name]
            do {
                let next = try machine.apply(t, to: job(state), at: later)
                #expect(expected == next.state, "\(t.name) from \(state) gave \(next.state)")
                #expect(next.updatedAt == later)
                if next.state.isTerminal {
                    #expect(next.lease == nil && next.finishedAt == later)
                }
            } catch {
                #expect(expected == nil, "\(t.name) from \(state) refused: \(error)")
                if case .illegal(let refused, let from) = error {
                    #expect(refused == t && from == state)
                }
            }
        }
    }

    @Test func aWaitingJobIsQueuedOrFailedByItsDependencies() throws {
        var waiting = job(.waiting)
        waiting.waitingFor = 1
        waiting.runAt = t0.addingTimeInterval(60)  // a delayed submission keeps its delay
        let ready = try machine.apply(.ready, to: waiting, at: t0.addingTimeInterval(5))
        #expect(ready.state == .queued && ready.waitingFor == 0 && ready.runAt == t0.addingTimeInterval(60))
        #expect(try machine.apply(.ready, to: waiting, at: t0.addingTimeInterval(90)).runAt == t0.addingTimeInterval(90))
        let failed = try machine.apply(.dependencyFailed(id: 3, message: "dependency job 3 (scan) failed"), to: waiting, at: t0)
        #expect(failed.state == .failed && failed.blockedBy == 3 && failed.errors.map(\.message) == ["dependency job 3 (scan) failed"])
        // Retried while a dependency has not ended: waiting again, not blocked.
        var again = failed
        again.waitingFor = 1
        let retried = try machine.apply(.retry(by: "a test"), to: again, at: t0)
        #expect(retried.state == .waiting && retried.blockedBy == nil)
    }

    @Test func theVerdictOfDependencies() {
        func d(_ id: Int64, _ state: JobState) -> DependencyVerdict.Dependency {
            DependencyVerdict.Dependency(id: id, name: "j\(id)", state: state, lastError: state == .failed ? "no such file" : nil)
        }
        #expect(DependencyVerdict.of([], policy: .success) == .ready)
        #expect(DependencyVerdict.of([d(1, .succeeded), d(2, .running), d(3, .waiting)], policy: .success) == .waiting(2))
        #expect(DependencyVerdict.of([d(1, .succeeded), d(5, .cancelled), d(2, .failed)], policy: .success)
                == .failed(by: 2, message: "dependency job 2 (j2) failed: no such file; retry job 2 to run this one after it"))
        #expect(DependencyVerdict.of([d(1, .dead), d(2, .failed), d(3, .queued)], policy: .always) == .waiting(1))
        #expect(DependencyVerdict.of([d(1, .dead), d(2, .cancelled)], policy: .always) == .ready)
        #expect(JobReference(parsing: "12") == .id(12) && JobReference(parsing: "scan-1") == .key("scan-1"))
        #expect(JobReference(parsing: "key:12") == .key("12") && JobReference(parsing: "0") == nil && JobReference(parsing: "") == nil)
    }

    @Test func claimTakesALeaseAndCountsTheAttempt() throws {
        let next = try machine.apply(.claim(owner: "host:1", token: "abc", leaseExpiresAt: t0.addingTimeInterval(30)), to: job(.queued), at: t0)
        #expect(next.attempt == 1)
        #expect(next.lease == Job.Lease(owner: "host:1", token: "abc", expiresAt: t0.addingTimeInterval(30)))
        #expect(next.startedAt == t0)
    }

    @Test func aStaleTokenChangesNothing() {
        for t: JobTransition in [.renew(token: "old", leaseExpiresAt: t0, progress: nil, phase: nil, workerPID: nil),
                                 .succeed(token: "old", result: nil), .fail(token: "old", message: "x", result: nil),
                                 .crash(token: "old", message: "x"), .release(token: "old")] {
            #expect(throws: JobTransitionError.staleLease) { try machine.apply(t, to: job(.running), at: t0) }
        }
    }

    @Test func expireWaitsForTheLeaseToRunOut() throws {
        #expect(throws: JobTransitionError.leaseStillValid) { try machine.apply(.expire, to: job(.running), at: t0.addingTimeInterval(9.9)) }
        let rescued = try machine.apply(.expire, to: job(.running), at: t0.addingTimeInterval(10))
        #expect(rescued.state == .queued)
        #expect(rescued.errors.count == 1 && rescued.errors[0].message.contains("lease of me expired"))
    }

    @Test func crashesBackOffThenTheJobIsDead() throws {
        var j = job(.queued)
        var runAts: [Date] = []
        for attempt in 1...3 {
            j = try machine.apply(.claim(owner: "me", token: "t\(attempt)", leaseExpiresAt: t0.addingTimeInterval(99)), to: j, at: t0)
            #expect(j.attempt == attempt)
            j = try machine.apply(.crash(token: "t\(attempt)", message: "killed by SIGSEGV"), to: j, at: t0)
            runAts.append(j.runAt)
        }
        #expect(j.state == .dead)
        #expect(j.errors.map(\.attempt) == [1, 2, 3])
        // No jitter: 2 s then 4 s.
        #expect(runAts[0] == t0.addingTimeInterval(2) && runAts[1] == t0.addingTimeInterval(4))
        #expect(j.finishedAt == t0)
    }

    @Test func releaseGivesTheAttemptBack() throws {
        let released = try machine.apply(.release(token: "tok"), to: job(.running, attempt: 2), at: t0)
        #expect(released.state == .queued && released.attempt == 1 && released.errors.isEmpty && released.runAt == t0)
    }

    @Test func aFailureInWordsIsNotRetried() throws {
        let failed = try machine.apply(.fail(token: "tok", message: "in.mp4: no such file", result: "{}"), to: job(.running), at: t0)
        #expect(failed.state == .failed && failed.errors.count == 1 && failed.result == "{}")
    }

    @Test func retryStartsAFreshSetOfAttempts() throws {
        let again = try machine.apply(.retry(by: "a test"), to: job(.dead, attempt: 3), at: t0.addingTimeInterval(5))
        #expect(again.state == .queued && again.attempt == 0 && again.runAt == t0.addingTimeInterval(5) && again.finishedAt == nil)
    }

    /// Each attempt keeps a row of its own through retries: numbered on (1, 2, 3), with its host, worker
    /// and when it was retried; a cancelled attempt that is retried gets its row. "N of M" is said only
    /// while another attempt can come.
    @Test func retriesKeepEachAttemptsRow() throws {
        var job = job(.queued)
        func run(_ ending: JobTransition?, at seconds: Double) throws {
            job = try machine.apply(.claim(owner: "host-a:1", token: "tok", leaseExpiresAt: t0.addingTimeInterval(seconds + 60)), to: job,
                                    at: t0.addingTimeInterval(seconds))
            job = try machine.apply(.renew(token: "tok", leaseExpiresAt: t0.addingTimeInterval(seconds + 60), progress: nil, phase: nil,
                                           workerPID: Int32(100 + seconds), result: nil), to: job, at: t0.addingTimeInterval(seconds))
            #expect(job.attemptsSummary == "1 of 3")
            if let ending { job = try machine.apply(ending, to: job, at: t0.addingTimeInterval(seconds + 1)) }
        }
        try run(.fail(token: "tok", message: "bad input", result: nil), at: 10)
        #expect(job.attemptsSummary == "failed (not retryable)")
        job = try machine.apply(.retry(by: "the console, session 1a2b3c4d…"), to: job, at: t0.addingTimeInterval(20))
        #expect(job.attemptNumber == 1 && job.attempt == 0)
        try run(.fail(token: "tok", message: "bad again", result: nil), at: 30)
        job = try machine.apply(.retry(by: "mediafarm retry, ana on render-2"), to: job, at: t0.addingTimeInterval(40))
        try run(.cancel, at: 50)
        #expect(job.attemptsSummary == "attempt 3")
        job = try machine.apply(.retry(by: "with job 12"), to: job, at: t0.addingTimeInterval(60))
        try run(nil, at: 70)
        #expect(job.attemptNumber == 4)
        #expect(job.errors.map(\.attempt) == [1, 2, 3])
        #expect(job.errors.map(\.message) == ["bad input", "bad again", "cancelled"])
        #expect(job.errors.map(\.retriedAt) == [20, 40, 60].map { t0.addingTimeInterval($0) })
        #expect(job.errors.map(\.retriedBy) == ["the console, session 1a2b3c4d…", "mediafarm retry, ana on render-2", "with job 12"])
        #expect(job.errors.map(\.host) == ["host-a", "host-a", "host-a"] && job.errors.map(\.worker) == [110, 130, nil])
        #expect(job.errors.map(\.startedAt) == [10, 30, 50].map { t0.addingTimeInterval($0) })
        // A job that used up its attempts says so.
        var dead = self.job(.running, attempt: 3)
        dead.maxAttempts = 3
        dead = try machine.apply(.crash(token: "tok", message: "killed"), to: dead, at: t0)
        #expect(dead.state == .dead && dead.attemptsSummary == "3 of 3, none left")
    }

    @Test func renewRecordsProgress() throws {
        let renewed = try machine.apply(.renew(token: "tok", leaseExpiresAt: t0.addingTimeInterval(40), progress: 1.7, phase: "encoding", workerPID: 99),
                                        to: job(.running), at: t0)
        #expect(renewed.lease?.expiresAt == t0.addingTimeInterval(40))
        #expect(renewed.progress == 1 && renewed.phase == "encoding" && renewed.workerPID == 99)
    }
}

@Suite struct RetryPolicyTests {
    @Test func delaysDoubleUpToTheCap() {
        let p = RetryPolicy(maxAttempts: 10, baseDelay: 1, maxDelay: 10, jitter: 0)
        #expect((1...6).map { p.delay(afterAttempt: $0, unit: 0.3) } == [1, 2, 4, 8, 10, 10])
    }

    @Test func jitterStaysInItsBand() {
        let p = RetryPolicy(maxAttempts: 3, baseDelay: 4, maxDelay: 100, jitter: 0.25)
        #expect(p.delay(afterAttempt: 1, unit: 0) == 3)
        #expect(p.delay(afterAttempt: 1, unit: 1) == 5)
        #expect(p.delay(afterAttempt: 1, unit: 0.5) == 4)
        for _ in 0..<100 {
            let d = p.delay(afterAttempt: 2, unit: Double.random(in: 0...1))
            #expect(d >= 6 && d <= 10)
        }
    }

    @Test func attemptsAreBounded() {
        let p = RetryPolicy.default
        #expect(p.maxAttempts == 3)
        #expect(p.allowsRetry(after: 2) && !p.allowsRetry(after: 3))
        #expect(p.allowsRetry(after: 4, maxAttempts: 5))
        #expect(RetryPolicy(maxAttempts: 0).maxAttempts == 1)
        #expect(p.delay(afterAttempt: 1000, unit: 0.5) == p.maxDelay)
    }
}
