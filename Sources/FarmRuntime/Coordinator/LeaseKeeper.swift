import FarmModel
import FarmStore
import Foundation

/// The lease heartbeat: renews the leases of the jobs running, stops the workers of those lost or cancelled
/// and of those over their time, and gives back jobs claimed ahead that waited too long.
struct LeaseKeeper: CoordinatorPart {
    let context: CoordinatorContext
    let recorder: AttemptRecorder

    /// The lease heartbeat. It runs until draining has ended every job; when cancelled, it stops every
    /// worker (their jobs are released) and waits for their supervisors to finish.
    func run() async {
        var lastRenew = now()
        var due: Date?
        while true {
            turned("heartbeat")
            if let due { metrics.heartbeatLateness.recordSeconds(max(0, now().timeIntervalSince(due))) }
            let (entries, stop) = jobs.state.withLock { ($0.running, $0.draining && $0.running.isEmpty) }
            if stop { return }
            if Task.isCancelled {
                await recorder.releaseAhead()
                for id in entries.keys { stopWorker(id, reason: .drain) }
                while jobs.state.withLock({ !$0.running.isEmpty }) { await Self.waitWhileStopping(0.01) }
                return
            }
            let t = now()
            for (id, entry) in entries where entry.phase == .working && entry.stop == nil && t.timeIntervalSince(entry.started) > entry.timeout {
                stopWorker(id, reason: .timeout(entry.timeout))
            }
            let live = entries.filter { $0.value.stop == nil }
            do {
                var lost = try await store.lostLeases(live.mapValues(\.token), at: t)
                let soon = jobs.state.withLock { s -> Bool in defer { s.renewSoon = false }; return s.renewSoon }
                if soon || t.timeIntervalSince(lastRenew) >= configuration.renewInterval {
                    lastRenew = t
                    let renewals = live.map { id, e in
                        LeaseRenewal(id: id, token: e.token, progress: e.progress?.fraction,
                                     phase: e.phase == .ahead ? Job.claimedAheadPhase : e.progress?.phase, workerPID: e.pid)
                    }
                    lost.formUnion(try await store.renew(renewals, leaseDuration: configuration.leaseDuration, at: t))
                    if !renewals.isEmpty { metrics.renewals.increment(by: renewals.count) }
                }
                for id in lost {
                    stopWorker(id, reason: .lost(try? await store.job(id: id)?.state))  // the state only words the notice (cancelled or lost)
                }
                await releaseStaleAhead(at: t)
            } catch {
                events(.notice("lease check: \(error)"))
            }
            due = now().addingTimeInterval(configuration.checkInterval)
            _ = await Self.pause(configuration.checkInterval)
        }
    }

    /// Jobs claimed ahead that have waited longer than `claimAheadHold` (the jobs before them turned out
    /// long) go back to the queue, for another coordinator's free slot.
    func releaseStaleAhead(at t: Date) async {
        let stale = jobs.state.withLock { s -> [Running] in
            let old = s.ahead.filter { s.running[$0].map { t.timeIntervalSince($0.started) > configuration.claimAheadHold } ?? true }
            s.ahead.removeAll { old.contains($0) }
            // Jobs are long now: no more claims ahead until short ones bring the average down again.
            if !old.isEmpty {
                s.recentAttemptSeconds = max(s.recentAttemptSeconds ?? 0, configuration.claimAheadHold, configuration.claimAheadBelow)
            }
            return old.compactMap { s.running.removeValue(forKey: $0) }
        }
        for entry in stale { await recorder.finish(entry.job, token: entry.token, outcome: .released, seconds: 0) }
    }
}
