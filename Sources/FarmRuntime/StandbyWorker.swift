import Foundation

/// A worker process started ahead of its job, so that a claimed job does not wait for a process to
/// start (about 50 ms: the dynamic loader maps FFmpeg's libraries). It runs `mediafarm worker --standby`,
/// which waits for one job on stdin: a header line (the job's options) and the manifest. Each process
/// still runs exactly one job. A thread of its own starts it, waits for the job, then supervises it.
final class StandbyWorker: @unchecked Sendable {
    /// What the standby process is given to run.
    struct Assignment {
        var input: Data
        var onStart: @Sendable (ChildProcess) -> Void
        var onLine: @Sendable (Substring) -> Void
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

    /// Starts the process on a new thread.
    init(command: [String], limits: WorkerLimits) {
        let thread = Thread { [self] in self.supervise(command: command, limits: limits) }
        thread.name = "mediafarm-standby-worker"
        thread.start()
    }

    /// Hands the job to the process when it is up and still alive; false (and the standby retired) when
    /// it is not, so that the caller starts a process of its own.
    func assign(_ assignment: Assignment) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard case .ready(let process) = slot, WorkerProcess.isRunning(process) else {
            if case .ready(let process) = slot { WorkerProcess.discard(process) }
            slot = .retired
            condition.broadcast()
            return false
        }
        slot = .assigned(assignment)
        condition.broadcast()
        return true
    }

    /// Whether the process is up and waiting.
    var isReady: Bool {
        condition.lock()
        defer { condition.unlock() }
        if case .ready = slot { return true }
        return false
    }

    /// Stops an unused standby process.
    func retire() {
        condition.lock()
        if case .ready(let process) = slot { WorkerProcess.discard(process) }
        if case .assigned = slot {} else { slot = .retired }
        condition.broadcast()
        condition.unlock()
    }

    private func supervise(command: [String], limits: WorkerLimits) {
        let process: WorkerProcess.Spawned
        do {
            process = try WorkerProcess.spawn(command: command, limits: limits)
        } catch {
            condition.lock()
            slot = .failed
            condition.unlock()
            return
        }
        condition.lock()
        if case .retired = slot {
            condition.unlock()
            WorkerProcess.discard(process)
            return
        }
        slot = .ready(process)
        while true {
            if case .assigned = slot { break }
            if case .retired = slot { break }
            condition.wait()
        }
        guard case .assigned(let assignment) = slot else {
            condition.unlock()
            return  // retired: the process was discarded by retire()/assign()
        }
        condition.unlock()
        assignment.onStart(process.child)
        assignment.done(.success(WorkerProcess.drive(process, input: assignment.input, onLine: assignment.onLine)))
    }
}
