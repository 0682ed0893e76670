import Foundation
import MediaCore
#if canImport(Glibc)
import Glibc
#endif

/// A worker process started ahead of its jobs and kept for many (`mediafarm worker --standby`), so that a
/// claimed job neither waits for a process to start (about 50 ms: the dynamic loader maps FFmpeg's
/// libraries) nor pays for one. A thread of its own starts it, then for each job: waits to be assigned
/// one, writes it as a line, hands each event line to the job's supervisor until the worker's "ended"
/// line, and offers the process back (the assignment's `onEnd`). A process that dies (a crash, a kill by timeout or
/// cancellation) ends only the job it was running; one that says it is retiring is reaped after its job.
final class StandbyWorker: Sendable {
    /// One job for the process.
    struct Assignment {
        var input: Data
        var onStart: @Sendable (ChildProcess) -> Void
        var onLine: @Sendable (Substring) -> Void
        /// Called as soon as the job ended (with the worker's "ended" line, nil when it died), before
        /// `done`: whether the supervisor took the process back for another job. A process that may run
        /// another (it ended its job and is not retiring) is ready to be assigned one by then, so that
        /// the job's slot and the process come free in one step.
        var onEnd: @Sendable (WorkerJobEnd?) -> Bool
        var done: @Sendable (Result<WorkerExit, any Error>) -> Void
    }

    private enum Slot {
        case starting
        case ready(WorkerProcess.Spawned)
        case failed
        case assigned(Assignment)
        case retired
    }

    private let slot = Guarded(Slot.starting)
    /// Called when the process has ended: why (nil: retired unused).
    private let onRetire: @Sendable (WorkerRetirement?) -> Void

    /// Starts the process on a new thread.
    init(command: [String], limits: WorkerLimits, folders: WorkerFolders, onRetire: @escaping @Sendable (WorkerRetirement?) -> Void = { _ in }) {
        self.onRetire = onRetire
        let thread = Thread { [self] in self.supervise(command: command, limits: limits, folders: folders) }
        thread.name = "mediafarm-kept-worker"
        thread.start()
    }

    /// Hands a job to the process when it is up and still alive; false (and the worker retired) when it
    /// is not, so that the caller starts a process of its own.
    func assign(_ assignment: Assignment) -> Bool {
        slot.withLock { slot in
            switch slot {
            case .starting:
                break  // run as soon as it is up
            case .ready(let process) where WorkerProcess.isRunning(process):
                break
            case .ready:
                slot = .retired
                return false
            case .failed, .assigned, .retired:
                return false
            }
            slot = .assigned(assignment)
            return true
        }
    }

    /// Stops the process if it is waiting (a running job is left to finish: its worker retires after it).
    func retire() {
        slot.withLock { slot in
            if case .assigned = slot {} else { slot = .retired }
        }
    }

    private func supervise(command: [String], limits: WorkerLimits, folders: WorkerFolders) {
        let process: WorkerProcess.Spawned
        do {
            process = try WorkerProcess.spawn(command: command, limits: limits, folders: folders)
        } catch {
            let waiting: Assignment? = slot.withLock { slot in
                defer { slot = .failed }
                return if case .assigned(let a) = slot { a } else { nil }
            }
            // A job given to it while it was starting learns why it cannot run.
            waiting?.done(.failure(error))
            onRetire(WorkerRetirement(kind: "died", message: "cannot start: \(error)"))
            return
        }
        var reason: WorkerRetirement?
        var reaped = false
        defer {
            WorkerProcess.release(process, reaped: reaped)
            onRetire(reason)
        }
        slot.withLock { slot in
            if case .starting = slot { slot = .ready(process) }
        }
        while true {
            // The next job, or nil once the worker is retired.
            let next: Assignment? = slot.wait(until: { slot in
                switch slot {
                case .assigned, .retired: true
                default: false
                }
            }, then: { slot in
                if case .assigned(let assignment) = slot { assignment } else { nil }
            })
            guard let assignment = next else { return }
            assignment.onStart(process.child)
            let ended = WorkerProcess.driveOne(process, input: assignment.input, onLine: assignment.onLine)
            let reusable = ended.end.map { $0.retiring == nil } ?? false
            // Ready before the supervisor hears of the end: it may take the process back for the next job.
            if reusable { slot.withLock { $0 = .ready(process) } }
            if assignment.onEnd(ended.end) && reusable {
                // Back in the pool before the job's supervisor goes on: the next job finds it waiting.
                assignment.done(.success(ended.exit))
                continue
            }
            assignment.done(.success(ended.exit))
            if let end = ended.end {
                reason = end.retiring ?? WorkerRetirement(kind: "stopped", message: "stopped with its job")
            } else if process.child.wasKilled {
                // The coordinator stopped it with its job (cancelled, its lease lost): nothing went wrong with it.
                reaped = true
                reason = WorkerRetirement(kind: "stopped", message: "stopped with its job")
            } else {
                reaped = true
                let how = (ended.exit.signal != nil ? "was " : "") + ended.exit.description
                reason = WorkerRetirement(kind: "died", message: "the worker \(how) while running a job; a new one starts")
            }
            return
        }
    }
}
