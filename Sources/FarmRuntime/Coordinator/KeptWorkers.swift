import FarmModel
import Foundation

/// Kept worker processes (`StandbyWorker`): one waiting for each free slot, taken back after a job when
/// there is room, counted as they end, and all retired when the claimer stops.
struct KeptWorkers: CoordinatorPart {
    let context: CoordinatorContext

    /// Keeps a kept worker process waiting for each free slot (one started per turn of the loop).
    func topUpStandbys() {
        guard configuration.standbyWorkers else { return }
        jobs.state.withLock { s in
            let free = configuration.workers - s.workingCount
            guard !s.draining, s.claiming, s.standbys.count < free else { return }
            s.standbys.append(newKeptWorker(&s))
        }
    }

    /// Starts a kept worker process (on a thread of its own; it does not wait for it), counted in `s`.
    func newKeptWorker(_ s: inout State) -> StandbyWorker {
        s.keptWorkersAlive += 1
        return StandbyWorker(command: configuration.workerCommand + ["--standby"] + configuration.recycling.arguments, limits: configuration.limits, folders: workerFolders,
                             onRetire: { reason in self.workerRetired(reason) })
    }

    /// Puts a kept worker first in line for the next job, unless as many wait as there are free slots
    /// (a job may have started a process of its own meanwhile). Whether it was taken.
    func takeBack(_ worker: StandbyWorker, _ s: inout State) -> Bool {
        let free = configuration.workers - s.workingCount
        guard !s.draining, s.claiming, s.standbys.count < free else { return false }
        s.standbys.insert(worker, at: 0)
        return true
    }

    /// A kept worker given to a job that did not need it: waiting again, or retired when there are enough.
    func handBack(_ worker: StandbyWorker) {
        if jobs.state.withLock({ takeBack(worker, &$0) }) { jobs.slotFreed.signal() } else { worker.retire() }
    }

    /// A kept worker's process ended: counted by why (`mediafarm_worker_retirements_total`).
    private func workerRetired(_ reason: WorkerRetirement?) {
        jobs.state.withLock { $0.keptWorkersAlive -= 1 }
        metrics.workerRetired(reason?.kind ?? "stopped")
        // Worth a line: a worker that died, grew or was left unclean; not one that ran its number of jobs
        // or was stopped with its job (a cancel).
        if let reason, !["jobs", "stopped"].contains(reason.kind) { events(.notice("worker replaced: \(reason.message)")) }
        jobs.slotFreed.signal()
    }

    func retireStandbys() {
        let idle = jobs.state.withLock { s -> [StandbyWorker] in
            s.claiming = false
            defer { s.standbys.removeAll() }
            return s.standbys
        }
        for standby in idle { standby.retire() }
    }

    /// Waits (up to 5 s) until every kept worker process has been reaped and its temporary folder removed:
    /// their threads would otherwise be ended with this process, leaving the folders behind.
    func waitForKeptWorkers() async {
        for _ in 0..<250 where jobs.state.withLock({ $0.keptWorkersAlive }) > 0 {
            await Self.waitWhileStopping(0.02)
        }
    }
}
