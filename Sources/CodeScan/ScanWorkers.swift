import Foundation
import MediaCore
import MediaTime

/// Scans decoded frames on threads of their own, so that scanning overlaps decoding (and, with more
/// than one worker, other scans). Frames are handed over by reference (no pixel copy) through a
/// bounded queue; results come back with their frame's index so they can be merged in order.
final class ScanWorkers: @unchecked Sendable {  // unchecked: its queue behind `condition`, which the worker threads wait on
    private final class Job {
        let index: Int
        let time: MediaTime
        var frame = Frame()
        init(index: Int, time: MediaTime) { self.index = index; self.time = time }
    }

    private let condition = NSCondition()
    // Guarded by `condition`:
    private var queue: [Job] = []
    private var results: [(Int, [DetectedCode])] = []
    private var finished = false
    private var running = 0
    private var failure: (any Error)?
    private let capacity: Int

    init(configuration: CodeScanner.Configuration, workers: Int, capacity: Int = 8) {
        self.capacity = capacity
        running = workers
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
        condition.lock()
        defer { condition.unlock() }
        while queue.count >= capacity && failure == nil { condition.wait() }
        if let failure { throw failure }
        queue.append(job)
        condition.broadcast()
    }

    /// Waits for every queued frame and returns the detections in frame order.
    func finish() throws -> [[DetectedCode]] {
        condition.lock()
        defer { condition.unlock() }
        finished = true
        condition.broadcast()
        while running > 0 { condition.wait() }
        if let failure { throw failure }
        return results.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Lets the workers stop after what is queued (on every path out of a scan, errors included).
    func shutDown() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    private func work(_ scanner: CodeScanner) {
        while true {
            condition.lock()
            while queue.isEmpty && !finished && failure == nil { condition.wait() }
            guard let job = queue.first, failure == nil else {
                running -= 1
                condition.broadcast()
                condition.unlock()
                return
            }
            queue.removeFirst()
            condition.broadcast()
            condition.unlock()
            do {
                let found = try scanner.scan(job.frame, at: job.time)
                condition.lock()
                results.append((job.index, found))
                condition.unlock()
            } catch {
                condition.lock()
                failure = error
                condition.broadcast()
                condition.unlock()
            }
        }
    }
}
