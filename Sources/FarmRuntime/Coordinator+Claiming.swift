import FarmModel
import Foundation

/// The claimer's side of a coordinator: claims for free slots (and, while jobs are short, a few ahead of
/// them), kept worker processes waiting for each free slot, and jobs claimed ahead given back when they
/// wait too long. A job's supervision (`supervise`) and the lease heartbeat are in Coordinator.swift.
extension Coordinator {
    /// Keeps a kept worker process waiting for each free slot (one started per turn of the loop).
    func topUpStandbys() {
        guard configuration.standbyWorkers else { return }
        lock.withLock {
            let free = configuration.workers - workingCount
            guard !draining, claiming, standbys.count < free else { return }
            standbys.append(newKeptWorkerLocked())
        }
    }

    /// Starts a kept worker process (on a thread of its own; it does not wait for it). Call it holding `lock`.
    func newKeptWorkerLocked() -> StandbyWorker {
        keptWorkersAlive += 1
        return StandbyWorker(command: configuration.workerCommand + ["--standby"] + configuration.recycling.arguments, limits: configuration.limits,
                             onIdle: { [weak self] worker in self?.workerIdle(worker) },
                             onRetire: { [weak self] reason in self?.workerRetired(reason) })
    }

    /// A kept worker finished a job and waits for another: first in line for the next job.
    private func workerIdle(_ worker: StandbyWorker) {
        let keep = lock.withLock { () -> Bool in
            // Never more waiting than free slots (a job may have started a process of its own meanwhile).
            let free = configuration.workers - workingCount
            guard !draining, claiming, standbys.count < free else { return false }
            standbys.insert(worker, at: 0)
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
        lock.withLock { keptWorkersAlive -= 1 }
        metrics.workerRetired(reason?.kind ?? "stopped")
        if let reason, reason.kind != "jobs" { events(.notice("worker replaced: \(reason.message)")) }
        slotFreed.signal()
    }

    func retireStandbys() {
        let idle = lock.withLock { () -> [StandbyWorker] in
            claiming = false
            defer { standbys.removeAll() }
            return standbys
        }
        for standby in idle { standby.retire() }
    }

    /// How many jobs may be claimed now: one per free slot, and while recent jobs were short, up to
    /// `claimAhead` more (started the moment a worker is free, without a claim's round trip).
    private func claimable() -> Int {
        lock.withLock {
            let working = workingCount
            let short = (recentAttemptSeconds ?? .infinity) < configuration.claimAheadBelow
            return configuration.workers - working - ahead.count + (short ? configuration.claimAhead : 0)
        }
    }

    /// Moves jobs claimed ahead into free slots; each with a kept worker if one waits.
    private func startAhead() -> [(Job, String, StandbyWorker?)] {
        lock.withLock {
            var started: [(Job, String, StandbyWorker?)] = []
            var working = workingCount
            while working < configuration.workers, !ahead.isEmpty {
                let id = ahead.removeFirst()
                guard var entry = running[id] else { continue }
                entry.phase = .working
                entry.started = now()
                (entry.woke, entry.claimed) = (entry.started, entry.started)
                running[id] = entry
                working += 1
                started.append((entry.job, entry.token, standbys.isEmpty ? nil : standbys.removeFirst()))
            }
            return started
        }
    }

    /// Claimed jobs: into free slots at once, the rest waiting ahead.
    private func place(_ claimed: [Job], woke: Date, at claimedAt: Date) -> [(Job, String, StandbyWorker?)] {
        lock.withLock {
            var started: [(Job, String, StandbyWorker?)] = []
            var working = workingCount
            for job in claimed {
                guard let token = job.lease?.token else { continue }
                var entry = Running(job: job, token: token, started: claimedAt, timeout: job.timeout ?? configuration.jobTimeout,
                                    woke: woke, claimed: claimedAt)
                if working < configuration.workers && ahead.isEmpty {
                    working += 1
                    started.append((job, token, standbys.isEmpty ? nil : standbys.removeFirst()))
                } else {
                    entry.phase = .ahead
                    ahead.append(job.id)
                }
                running[job.id] = entry
            }
            return started
        }
    }

    /// Gives back every job claimed ahead (draining, stopping): queued again without using up an attempt.
    func releaseAhead() async {
        let waiting = lock.withLock { () -> [Running] in
            defer { ahead.removeAll() }
            return ahead.compactMap { running.removeValue(forKey: $0) }
        }
        for entry in waiting { await finish(entry.job, token: entry.token, outcome: .released, seconds: 0) }
    }

    func claimLoop(group: inout DiscardingTaskGroup) async {
        defer { retireStandbys() }
        var poll = configuration.pollInterval
        while !Task.isCancelled {
            turned("claimer")
            let woke = now()
            if lock.withLock({ draining }) { return }
            for (job, token, standby) in startAhead() {
                group.addTask { await self.supervise(job, token: token, standby: standby) }
            }
            let want = claimable()
            let free = configuration.workers - lock.withLock { workingCount }
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
                    }
                } catch {
                    events(.notice("queue: \(error)"))
                }
            }
            for (job, token, standby) in place(claimed, woke: woke, at: now()) {
                group.addTask { await self.supervise(job, token: token, standby: standby) }
            }
            if configuration.exitWhenIdle, claimed.isEmpty, lock.withLock({ running.isEmpty }), await isQueueIdle() { return }
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
        (try? await store.hasWork(provides: configuration.provides, host: Job.host(ofOwner: configuration.owner))) == false
    }

    /// Jobs claimed ahead that have waited longer than `claimAheadHold` (the jobs before them turned out
    /// long) go back to the queue, for another coordinator's free slot.
    func releaseStaleAhead(at t: Date) async {
        let stale = lock.withLock { () -> [Running] in
            let old = ahead.filter { running[$0].map { t.timeIntervalSince($0.started) > configuration.claimAheadHold } ?? true }
            ahead.removeAll { old.contains($0) }
            // Jobs are long now: no more claims ahead until short ones bring the average down again.
            if !old.isEmpty {
                recentAttemptSeconds = max(recentAttemptSeconds ?? 0, configuration.claimAheadHold, configuration.claimAheadBelow)
            }
            return old.compactMap { running.removeValue(forKey: $0) }
        }
        for entry in stale { await finish(entry.job, token: entry.token, outcome: .released, seconds: 0) }
    }
}
