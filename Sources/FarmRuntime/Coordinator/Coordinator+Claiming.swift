import FarmModel
import FarmStore
import Foundation

/// The claimer's side of a coordinator: claims for free slots (and, while jobs are short, a few ahead of
/// them), kept worker processes waiting for each free slot, and jobs claimed ahead given back when they
/// wait too long. A job's supervision (`supervise`) and the lease heartbeat are in Coordinator.swift.
extension Coordinator {
    /// Keeps a kept worker process waiting for each free slot (one started per turn of the loop).
    func topUpStandbys() {
        guard configuration.standbyWorkers else { return }
        state.withLock { s in
            let free = configuration.workers - s.workingCount
            guard !s.draining, s.claiming, s.standbys.count < free else { return }
            s.standbys.append(newKeptWorker(&s))
        }
    }

    /// Starts a kept worker process (on a thread of its own; it does not wait for it), counted in `s`.
    func newKeptWorker(_ s: inout State) -> StandbyWorker {
        s.keptWorkersAlive += 1
        return StandbyWorker(command: configuration.workerCommand + ["--standby"] + configuration.recycling.arguments, limits: configuration.limits, folders: workerFolders,
                             onIdle: { [weak self] worker in self?.workerIdle(worker) },
                             onRetire: { [weak self] reason in self?.workerRetired(reason) })
    }

    /// A kept worker finished a job and waits for another: first in line for the next job.
    private func workerIdle(_ worker: StandbyWorker) {
        let keep = state.withLock { s -> Bool in
            // Never more waiting than free slots (a job may have started a process of its own meanwhile).
            let free = configuration.workers - s.workingCount
            guard !s.draining, s.claiming, s.standbys.count < free else { return false }
            s.standbys.insert(worker, at: 0)
            return true
        }
        if keep { slotFreed.signal() } else { worker.retire() }
    }

    /// A kept worker given to a job that did not need it: waiting again, or retired when there are enough.
    func handBack(_ worker: StandbyWorker) {
        workerIdle(worker)
    }

    /// A kept worker's process ended: counted by why (`mediafarm_worker_retirements_total`).
    private func workerRetired(_ reason: WorkerRetirement?) {
        state.withLock { $0.keptWorkersAlive -= 1 }
        metrics.workerRetired(reason?.kind ?? "stopped")
        // Worth a line: a worker that died, grew or was left unclean; not one that ran its number of jobs
        // or was stopped with its job (a cancel).
        if let reason, !["jobs", "stopped"].contains(reason.kind) { events(.notice("worker replaced: \(reason.message)")) }
        slotFreed.signal()
    }

    func retireStandbys() {
        let idle = state.withLock { s -> [StandbyWorker] in
            s.claiming = false
            defer { s.standbys.removeAll() }
            return s.standbys
        }
        for standby in idle { standby.retire() }
    }

    /// How many jobs may be claimed now: one per free slot, and while recent jobs were short, up to
    /// `claimAhead` more (started the moment a worker is free, without a claim's round trip).
    private func claimable() -> Int {
        state.withLock { s in
            let short = (s.recentAttemptSeconds ?? .infinity) < configuration.claimAheadBelow
            return configuration.workers - s.workingCount - s.ahead.count + (short ? configuration.claimAhead : 0)
        }
    }

    /// Moves jobs claimed ahead into free slots; each with a kept worker if one waits.
    private func startAhead() -> [(Job, String, StandbyWorker?)] {
        let t = now()
        return state.withLock { s in
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
        state.withLock { s in
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

    /// Gives back every job claimed ahead (draining, stopping): queued again without using up an attempt.
    func releaseAhead() async {
        let waiting = state.withLock { s -> [Running] in
            defer { s.ahead.removeAll() }
            return s.ahead.compactMap { s.running.removeValue(forKey: $0) }
        }
        for entry in waiting { await finish(entry.job, token: entry.token, outcome: .released, seconds: 0) }
    }

    func claimLoop(group: inout DiscardingTaskGroup) async {
        defer { retireStandbys() }
        var poll = configuration.pollInterval
        while !Task.isCancelled {
            turned("claimer")
            let woke = now()
            if state.withLock({ $0.draining }) { return }
            for (job, token, standby) in startAhead() {
                group.addTask(executorPreference: JobWorkExecutor.shared) { await self.supervise(job, token: token, standby: standby) }
            }
            let want = claimable()
            let free = configuration.workers - state.withLock { $0.workingCount }
            var claimed: [Job] = []
            var nextRunAt: Date?
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
                }
            }
            for (job, token, standby) in place(claimed, woke: woke, at: now()) {
                group.addTask(executorPreference: JobWorkExecutor.shared) { await self.supervise(job, token: token, standby: standby) }
            }
            if configuration.exitWhenIdle, claimed.isEmpty, state.withLock({ $0.running.isEmpty }), await isQueueIdle() { return }
            topUpStandbys()
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
                await slotFreed.wait(upTo: poll)
                if Task.isCancelled { return }
                if want > 0 { poll = min(poll * 2, max(configuration.pollInterval, store.idlePollLimit)) }
            }
        }
    }

    /// The pause that stops this coordinator now, if any; a change is said once (a notice event).
    func notePause() async throws -> QueuePause? {
        let pause = try await store.pauses.all().first { $0.stops(owner: configuration.owner) }
        let before = state.withLock { state in
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
            group.addTask { await self.slotFreed.wait(upTo: seconds) }
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

    /// Jobs claimed ahead that have waited longer than `claimAheadHold` (the jobs before them turned out
    /// long) go back to the queue, for another coordinator's free slot.
    func releaseStaleAhead(at t: Date) async {
        let stale = state.withLock { s -> [Running] in
            let old = s.ahead.filter { s.running[$0].map { t.timeIntervalSince($0.started) > configuration.claimAheadHold } ?? true }
            s.ahead.removeAll { old.contains($0) }
            // Jobs are long now: no more claims ahead until short ones bring the average down again.
            if !old.isEmpty {
                s.recentAttemptSeconds = max(s.recentAttemptSeconds ?? 0, configuration.claimAheadHold, configuration.claimAheadBelow)
            }
            return old.compactMap { s.running.removeValue(forKey: $0) }
        }
        for entry in stale { await finish(entry.job, token: entry.token, outcome: .released, seconds: 0) }
    }
}
