import FarmModel
import FarmStore
import Foundation

/// What every part of a coordinator shares: its queue, its settings, its workers' folders, where its
/// events go, its clock, its metrics, and the jobs it is running (`RunningJobs`, the one mutable state).
struct CoordinatorContext: Sendable {
    let store: any JobStore
    let configuration: CoordinatorConfiguration
    /// Its workers' folders, in its queue's folder on this host.
    let workerFolders: WorkerFolders
    let events: @Sendable (CoordinatorEvent) -> Void
    let now: @Sendable () -> Date
    let metrics: CoordinatorMetrics
    let jobs: RunningJobs
}

/// A part of a coordinator (the claimer, the lease keeper, the rescuer, a job's supervisor, publication,
/// reuse, chunks, the library): a value holding the shared context and the parts it calls, so that each
/// reads as the coordinator did (`store`, `events(...)`, `now()`), and each is small enough to read whole.
protocol CoordinatorPart: Sendable {
    var context: CoordinatorContext { get }
}

extension CoordinatorPart {
    typealias Running = RunningJobs.Running
    typealias StopReason = RunningJobs.StopReason
    typealias State = RunningJobs.State

    var store: any JobStore { context.store }
    var configuration: CoordinatorConfiguration { context.configuration }
    var workerFolders: WorkerFolders { context.workerFolders }
    var events: @Sendable (CoordinatorEvent) -> Void { context.events }
    var now: @Sendable () -> Date { context.now }
    var metrics: CoordinatorMetrics { context.metrics }
    var jobs: RunningJobs { context.jobs }

    /// Notes that `loop` began a turn now (the HTTP face's liveness).
    func turned(_ loop: String) {
        jobs.turned(loop, at: now())
    }

    /// Stops the worker of a running job (its supervisor records the end), or drops a job claimed ahead
    /// that never started (its end said here: nothing ran).
    func stopWorker(_ id: Int64, reason: StopReason) {
        guard let dropped = jobs.stop(id, reason: reason) else { return }
        let cancelled = reason == .lost(.cancelled)
        metrics.attemptEnded(cancelled ? "cancelled" : "lost", seconds: 0)
        events(.finished(id: id, name: dropped.job.name, state: cancelled ? "cancelled" : "lost", attempt: dropped.job.attempt,
                         message: cancelled ? "cancelled before it started" : "lease lost before it started", seconds: 0))
    }

    /// Waits `seconds` even when the task is cancelled, without holding a thread: for the short waits
    /// of a cancelled coordinator while its stopped workers are reaped (a cancelled `Task.sleep` would
    /// return at once and spin).
    static func waitWhileStopping(_ seconds: Double) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { done.resume() }
        }
    }

    /// Sleeps `seconds`; false when the task was cancelled (the caller's loop should end).
    static func pause(_ seconds: Double) async -> Bool {
        do {
            try await Task.sleep(for: .seconds(seconds))
            return true
        } catch {
            return false
        }
    }

    /// Seconds as a notice says them: whole when they are, else to a tenth.
    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }
}
