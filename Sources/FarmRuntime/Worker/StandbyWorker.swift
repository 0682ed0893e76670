import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A worker process started ahead of its jobs and kept for many (`mediafarm worker --standby`), so that a
/// claimed job neither waits for a process to start (about 50 ms: the dynamic loader maps FFmpeg's
/// libraries) nor pays for one. A thread of its own starts it, then for each job: waits to be assigned
/// one, writes it as a line, hands each event line to the job's supervisor until the worker's "ended"
/// line, and offers the process back (`onIdle`). A process that dies (a crash, a kill by timeout or
/// cancellation) ends only the job it was running; one that says it is retiring is reaped after its job.
final class StandbyWorker: @unchecked Sendable {  // unchecked: its state behind `condition`, which its reader thread waits on
    /// One job for the process.
    struct Assignment {
        var input: Data
        var onStart: @Sendable (ChildProcess) -> Void
        var onLine: @Sendable (Substring) -> Void
        /// Called as soon as the job ended (with the worker's "ended" line, nil when it died), before
        /// `done`: whether the process may run another job.
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

    private let condition = NSCondition()
    private var slot = Slot.starting
    /// Called on the worker's thread after a job, when the process waits for another.
    private let onIdle: @Sendable (StandbyWorker) -> Void
    /// Called when the process has ended: why (nil: retired unused).
    private let onRetire: @Sendable (WorkerRetirement?) -> Void

    /// Starts the process on a new thread.
    init(command: [String], limits: WorkerLimits, folders: WorkerFolders, onIdle: @escaping @Sendable (StandbyWorker) -> Void = { _ in },
         onRetire: @escaping @Sendable (WorkerRetirement?) -> Void = { _ in }) {
        self.onIdle = onIdle
        self.onRetire = onRetire
        let thread = Thread { [self] in self.supervise(command: command, limits: limits, folders: folders) }
        thread.name = "mediafarm-kept-worker"
        thread.start()
    }

    /// Hands a job to the process when it is up and still alive; false (and the worker retired) when it
    /// is not, so that the caller starts a process of its own.
    func assign(_ assignment: Assignment) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        switch slot {
        case .starting:
            break  // run as soon as it is up
        case .ready(let process) where WorkerProcess.isRunning(process):
            break
        case .ready:
            slot = .retired
            condition.broadcast()
            return false
        case .failed, .assigned, .retired:
            return false
        }
        slot = .assigned(assignment)
        condition.broadcast()
        return true
    }

    /// Stops the process if it is waiting (a running job is left to finish: its worker retires after it).
    func retire() {
        condition.lock()
        if case .assigned = slot {} else { slot = .retired }
        condition.broadcast()
        condition.unlock()
    }

    private func supervise(command: [String], limits: WorkerLimits, folders: WorkerFolders) {
        let process: WorkerProcess.Spawned
        do {
            process = try WorkerProcess.spawn(command: command, limits: limits, folders: folders)
        } catch {
            condition.lock()
            let waiting: Assignment? = if case .assigned(let a) = slot { a } else { nil }
            slot = .failed
            condition.unlock()
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
        condition.lock()
        if case .starting = slot { slot = .ready(process) }
        condition.broadcast()
        while true {
            while true {
                if case .assigned = slot { break }
                if case .retired = slot { break }
                condition.wait()
            }
            guard case .assigned(let assignment) = slot else {
                condition.unlock()
                return
            }
            condition.unlock()
            assignment.onStart(process.child)
            let ended = WorkerProcess.driveOne(process, input: assignment.input, onLine: assignment.onLine)
            let keep = assignment.onEnd(ended.end)
            if let end = ended.end, end.retiring == nil, keep {
                // Back in the pool before the job's supervisor goes on: the next job finds it waiting.
                condition.lock()
                slot = .ready(process)
                condition.unlock()
                onIdle(self)
                assignment.done(.success(ended.exit))
                condition.lock()
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
