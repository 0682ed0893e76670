import Foundation
import MediaCore
import MediaTime

/// Scans decoded frames on threads of their own, so that scanning overlaps decoding (and, with more
/// than one worker, other scans). Frames are handed over by reference (no pixel copy) through a
/// bounded queue; results come back with their frame's index so they can be merged in order.
final class ScanWorkers: Sendable {
    private final class Job {
        let index: Int
        let time: MediaTime
        var frame = Frame()
        init(index: Int, time: MediaTime) { self.index = index; self.time = time }
    }

    private struct State {
        var queue: [Job] = []
        var results: [(Int, [DetectedCode])] = []
        var finished = false
        var running: Int
        var failure: (any Error)?
    }

    private let state: Guarded<State>
    private let capacity: Int

    init(configuration: CodeScanner.Configuration, workers: Int, capacity: Int = 8) {
        self.capacity = capacity
        state = Guarded(State(running: workers))
        for i in 0..<workers {
            let thread = Thread { [self] in work(CodeScanner(configuration)) }
            thread.name = "mediafarm-scan-\(i)"
            thread.stackSize = 4 << 20
            thread.start()
        }
    }

    /// Queues a frame (a new reference to it) for scanning; waits while the queue is full.
    func submit(index: Int, time: MediaTime, frame: borrowing Frame) throws {
        let job = Job(index: index, time: time)
        try job.frame.reference(frame)
        let capacity = self.capacity
        try state.wait(until: { $0.queue.count < capacity || $0.failure != nil }) { s in
            if let failure = s.failure { throw failure }
            s.queue.append(job)
        }
    }

    /// Waits for every queued frame and returns the detections in frame order.
    func finish() throws -> [[DetectedCode]] {
        state.withLock { $0.finished = true }
        return try state.wait(until: { $0.running == 0 }) { s in
            if let failure = s.failure { throw failure }
            return s.results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// Lets the workers stop after what is queued (on every path out of a scan, errors included).
    func shutDown() {
        state.withLock { $0.finished = true }
    }

    private func work(_ scanner: CodeScanner) {
        while true {
            let next: Job? = state.wait(until: { !$0.queue.isEmpty || $0.finished || $0.failure != nil }) { s in
                guard !s.queue.isEmpty, s.failure == nil else {
                    s.running -= 1
                    return nil
                }
                return s.queue.removeFirst()
            }
            guard let job = next else { return }
            do {
                let found = try scanner.scan(job.frame, at: job.time)
                state.withLock { $0.results.append((job.index, found)) }
            } catch {
                state.withLock { $0.failure = error }
            }
        }
    }
}
