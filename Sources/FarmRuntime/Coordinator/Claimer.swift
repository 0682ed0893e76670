import FarmModel
import FarmStore
import Foundation

/// The claimer: claims for free slots (and, while jobs are short, a few ahead of them), starts a
/// supervising task for each job it places, and drains when the coordinator stops.
struct Claimer: CoordinatorPart {
    let context: CoordinatorContext
    let kept: KeptWorkers
    let supervisor: JobSupervisor
    let recorder: AttemptRecorder

    /// How many jobs may be claimed now: one per free slot, and while recent jobs were short, up to
    /// `claimAhead` more (started the moment a worker is free, without a claim's round trip).
    private func claimable() -> Int {
        jobs.state.withLock { s in
            let short = (s.recentAttemptSeconds ?? .infinity) < configuration.claimAheadBelow
            return configuration.workers - s.workingCount - s.ahead.count + (short ? configuration.claimAhead : 0)
        }
    }

    /// Moves jobs claimed ahead into free slots; each with a kept worker if one waits.
    private func startAhead() -> [(Job, String, StandbyWorker?)] {
        let t = now()
        return jobs.state.withLock { s in
            var started: [(Job, String, StandbyWorker?)] = []
            var working = s.workingCount
            while working < configuration.workers, !s.ahead.isEmpty {
                let id = s.ahead.removeFirst()
                guard var entry = s.running[id] else { continue }
                entry.phase = .working
                entry.started = t
                (entry.woke, entry.claimed) = (t, t)
                s.running[id] = entry
                working += 1
                started.append((entry.job, entry.token, s.standbys.isEmpty ? nil : s.standbys.removeFirst()))
            }
            return started
        }
    }

    /// Claimed jobs: into free slots at once, the rest waiting ahead.
    private func place(_ claimed: [Job], woke: Date, at claimedAt: Date) -> [(Job, String, StandbyWorker?)] {
        jobs.state.withLock { s in
            var started: [(Job, String, StandbyWorker?)] = []
            var working = s.workingCount
            for job in claimed {
                guard let token = job.lease?.token else { continue }
                var entry = Running(job: job, token: token, started: claimedAt, timeout: job.timeout ?? configuration.jobTimeout,
                                    woke: woke, claimed: claimedAt)
                if working < configuration.workers && s.ahead.isEmpty {
                    working += 1
                    started.append((job, token, s.standbys.isEmpty ? nil : s.standbys.removeFirst()))
                } else {
                    entry.phase = .ahead
                    s.ahead.append(job.id)
                }
                s.running[job.id] = entry
            }
            return started
        }
    }

    /// Claims until the coordinator drains or stops (or, with `exitWhenIdle`, the queue is idle), then
    /// drains: each job placed is supervised in a child task, and this returns when the last has ended.
    func run() async {
        // A discarding group: a finished job's task is freed at once (a plain task group keeps every
        // child's result until it is awaited, which grew the coordinator by ~16 KB a job).
        await withDiscardingTaskGroup { group in
            await claimLoop(group: &group)
            await drain()
            jobs.state.withLock { $0.draining = true }
        }
    }

    private func claimLoop(group: inout DiscardingTaskGroup) async {
        defer { kept.retireStandbys() }
        var poll = configuration.pollInterval
        // Since when this coordinator has run nothing and claimed nothing (`exitAfterIdle`).
        var idleSince: Date?
        while !Task.isCancelled {
            turned("claimer")
            let woke = now()
            if jobs.state.withLock({ $0.draining }) { return }
            for (job, token, standby) in startAhead() {
                group.addTask(executorPreference: JobWorkExecutor.shared) { await supervisor.supervise(job, token: token, standby: standby) }
            }
            let want = claimable()
            let free = configuration.workers - jobs.state.withLock { $0.workingCount }
            var claimed: [Job] = []
            var nextRunAt: Date?
            var claimFailed = false
            if want > 0 {
                do {
                    // The claim first (one round trip when work is due); when nothing was, when it will be.
                    claimed = try await store.claim(limit: want, owner: configuration.owner, leaseDuration: configuration.leaseDuration,
                                                    provides: configuration.provides, at: now())
                    if !claimed.isEmpty {
                        metrics.claims.increment(by: claimed.count)
                    } else {
                        nextRunAt = try await store.nextRunAt(provides: configuration.provides, host: Job.host(ofOwner: configuration.owner))
                        // Nothing claimed: a pause may be why (the claim's statement obeys it). Due work then
                        // waits for a resume, not for a time.
                        if try await notePause() != nil { nextRunAt = nil }
                    }
                } catch {
                    events(.notice("queue: \(error)"))
                    claimFailed = true
                }
            }
            for (job, token, standby) in place(claimed, woke: woke, at: now()) {
                group.addTask(executorPreference: JobWorkExecutor.shared) { await supervisor.supervise(job, token: token, standby: standby) }
            }
            if configuration.exitWhenIdle, claimed.isEmpty, jobs.state.withLock({ $0.running.isEmpty }), await isQueueIdle() { return }
            if let limit = configuration.exitAfterIdle {
                // A queue that does not answer is not known to have nothing: the wait starts again.
                if !claimed.isEmpty || claimFailed || jobs.state.withLock({ !$0.running.isEmpty }) {
                    idleSince = nil
                } else if let since = idleSince {
                    if now().timeIntervalSince(since) >= limit {
                        events(.notice("nothing to run for \(Spoken.duration(limit)): exiting (--exit-after-idle)"))
                        return
                    }
                } else {
                    idleSince = now()
                }
            }
            kept.topUpStandbys()
            guard claimed.isEmpty else {
                poll = configuration.pollInterval
                continue
            }
            if free > 0 && store.hearsOfWork {
                // Idle with a free slot: a submission anywhere wakes the store's listener; otherwise look
                // again when the next delayed job is due, or after a while (a missed notification).
                let due = nextRunAt.map { max(0.001, $0.timeIntervalSince(now())) } ?? configuration.idleWait
                await waitForWorkOrSlot(upTo: min(due, configuration.idleWait))
                poll = configuration.pollInterval
                if Task.isCancelled { return }
            } else {
                // No notifications (the listener is reconnecting), or every slot is busy: a freed slot
                // wakes the claimer at once; otherwise it polls, backing off as far as the store advises.
                await jobs.slotFreed.wait(upTo: poll)
                if Task.isCancelled { return }
                if want > 0 { poll = min(poll * 2, max(configuration.pollInterval, store.idlePollLimit)) }
            }
        }
    }

    /// The pause that stops this coordinator now, if any; a change is said once (a notice event).
    func notePause() async throws -> QueuePause? {
        let pause = try await store.pauses.all().first { $0.stops(owner: configuration.owner) }
        let before = jobs.state.withLock { state in
            defer { state.pause = pause }
            return state.pause
        }
        if before?.scope != pause?.scope {
            if let pause {
                events(.notice("claiming paused (\(pause.scope == "farm" ? "the farm" : pause.scope)); jobs already running go on"))
            } else {
                events(.notice("claiming resumed"))
            }
        }
        return pause
    }

    /// Returns at the first of: the store hears of new work, a job ends (a slot frees: with
    /// `exitWhenIdle` that may be the last), `seconds` pass, or the task is cancelled.
    private func waitForWorkOrSlot(upTo seconds: Double) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.store.waitForWork(upTo: seconds) }
            group.addTask { await self.jobs.slotFreed.wait(upTo: seconds) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Nothing running anywhere (a running job elsewhere may come back for a retry) and nothing queued that
    /// this coordinator can run (a job that needs another host waits for it).
    private func isQueueIdle() async -> Bool {
        // a queue that does not answer is not known idle: the claimer goes on (and reports it)
        (try? await store.hasWork(provides: configuration.provides, host: Job.host(ofOwner: configuration.owner))) == false
    }

    private func drain() async {
        await recorder.releaseAhead()
        let deadline = (jobs.state.withLock { $0.drainBegan } ?? now()).addingTimeInterval(configuration.grace)
        while jobs.state.withLock({ !$0.running.isEmpty }) {
            if now() >= deadline || Task.isCancelled {
                let ids = jobs.state.withLock { Array($0.running.keys) }
                events(.notice("grace period over: stopping \(ids.count) job(s) and giving them back to the queue"))
                for id in ids { stopWorker(id, reason: .drain) }
                while jobs.state.withLock({ !$0.running.isEmpty }) { await Self.waitWhileStopping(0.02) }
                return
            }
            if !(await Self.pause(0.05)) { continue }
        }
    }
}
