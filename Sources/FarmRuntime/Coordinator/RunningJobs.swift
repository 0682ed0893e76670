import FarmModel
import FarmStore
import Foundation
import Synchronization

/// The jobs a coordinator is running, its kept workers waiting, and what its loops last did: the one
/// mutable state its parts share, in a `Mutex`. Worker threads reach it synchronously (a kept worker's
/// end must be answered at once, and a worker is killed under the lock), so it is no actor. Each step that
/// must see and change the state at once is one `withLock` scope, in the part that takes the step.
final class RunningJobs: Sendable {
    struct State: Sendable {
        var running: [Int64: Running] = [:]
        var draining = false
        /// When `beginDrain` was first called: the grace period's start.
        var drainBegan: Date?
        /// What became of the jobs this coordinator finished: a count, and the ids of those that failed.
        var tally = FinishedTally()
        /// A worker started: renew the leases (recording its process id) at the next check.
        var renewSoon = false
        /// Kept worker processes waiting for a job.
        var standbys: [StandbyWorker] = []
        /// Kept worker processes started and not yet reaped (waiting or running a job).
        var keptWorkersAlive = 0
        /// Claimed ahead of a free slot, in claim order: started the moment a worker is free.
        var ahead: [Int64] = []
        /// Whether the claimer still runs (a worker offered back after it ended is retired).
        var claiming = true
        /// How long recent attempts took (a moving average): jobs are claimed ahead only while they are short.
        var recentAttemptSeconds: Double?
        /// When each loop (claimer, heartbeat, rescuer) last began a turn: the HTTP face's liveness.
        var loopTurns: [String: Date] = [:]
        /// The pause that stops this coordinator's claims, as the claimer last found it (`queue pause`).
        var pause: QueuePause?

        /// Jobs holding a worker slot now.
        var workingCount: Int { running.values.count { $0.phase == .working } }
    }

    /// Why the coordinator stopped a worker itself.
    enum StopReason: Equatable, Sendable {
        case lost(JobState?)
        case timeout(Double)
        case drain
    }

    struct Running: Sendable {
        /// Claimed ahead, waiting for a slot; holding a worker slot; or done with its worker (publishing,
        /// recording the end).
        enum Phase: Sendable { case ahead, working, finishing }
        var phase: Phase = .working
        var job: Job
        var token: String
        var child: ChildProcess?
        var pid: Int32? { child?.pid }
        var progress: JobProgress?
        var result: JobResult?
        var started: Date
        var timeout: Double
        var stop: StopReason?
        /// Uploads the worker began, being recorded with the job: awaited before the attempt ends.
        var recordings: [Task<Void, Never>] = []
        /// The claimer's turn that claimed it began; the claim returned.
        var woke = Date.distantPast
        var claimed = Date.distantPast
    }

    let state = Mutex(State())
    /// Rung when a worker slot frees: the claimer starts the next job at once.
    let slotFreed = WorkSignal()

    /// Notes that `loop` began a turn at `t`.
    func turned(_ loop: String, at t: Date) {
        state.withLock { $0.loopTurns[loop] = t }
    }

    /// Counts a job's end (a finished attempt, or a rescue that ended it dead).
    func recordEnd(_ id: Int64, _ ended: JobState) {
        state.withLock { $0.tally.record(id, ended) }
    }

    var isDraining: Bool { state.withLock { $0.draining } }

    var isEmpty: Bool { state.withLock { $0.running.isEmpty } }

    /// Takes a job out of those running (its attempt has ended); nil when it was taken already.
    @discardableResult
    func remove(_ id: Int64) -> Running? {
        state.withLock { $0.running.removeValue(forKey: id) }
    }

    /// Marks a job to be stopped and kills its worker, or drops it when it was only claimed ahead (returned:
    /// its end is the caller's to say). nil when it runs (its supervisor records the end) or was stopped already.
    func stop(_ id: Int64, reason: StopReason) -> Running? {
        state.withLock { s -> Running? in
            guard var entry = s.running[id], entry.stop == nil else { return nil }
            if entry.phase == .ahead {
                s.ahead.removeAll { $0 == id }
                return s.running.removeValue(forKey: id)
            }
            entry.stop = reason
            s.running[id] = entry
            // Under the lock, through the child's pidfd: a kept worker that has already ended this job
            // (`workerReturned`) is never killed for it, and a reaped one never signalled.
            entry.child?.kill()
            return nil
        }
    }

    /// Takes every job claimed ahead out (to be given back).
    func takeAhead() -> [Running] {
        state.withLock { s in
            defer { s.ahead.removeAll() }
            return s.ahead.compactMap { s.running.removeValue(forKey: $0) }
        }
    }
}

/// The end of each job a coordinator finished, in memory that does not grow with the jobs that went well:
/// a coordinator that ran 100,000 jobs keeps a count, and the ids of the jobs that are still failed (a job
/// retried and then succeeding leaves the set), which its exit status and summary need.
struct FinishedTally: Sendable {
    private(set) var succeeded = 0
    private(set) var failed: Set<Int64> = []

    mutating func record(_ id: Int64, _ state: JobState) {
        switch state {
        case .succeeded:
            succeeded += 1
            failed.remove(id)
        case .failed, .dead:
            failed.insert(id)
        default:
            // Back in the queue (a retry) or cancelled: no longer a failure of this run.
            failed.remove(id)
        }
    }
}
