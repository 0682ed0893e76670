import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own for an SQLite connection's blocking work (statements, commits and their fsync),
/// so that none of it runs on Swift's cooperative pool, where it would hold up the lease heartbeat and
/// the HTTP face. Work runs in submission order.
///
/// It is also a task executor: a caller that makes many store calls (a coordinator's loops) runs on it
/// (`withTaskExecutorPreference`), and then each call runs at once, in place, without a hop to the
/// thread and back (a hop costs a thread wake-up on each side: about 30 us here, several times the
/// cost of a claim). Other callers hop. The thread spins briefly for the next item before it sleeps.
final class DatabaseThread: TaskExecutor, @unchecked Sendable {  // unchecked: its queue of work is behind a lock; the thread owns the rest
    private let condition = NSCondition()
    private var items: [() -> Void] = []
    private var head = 0
    private var sleeping = false
    private var threadID: pthread_t?

    init(name: String) {
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            condition.lock()
            threadID = pthread_self()
            condition.unlock()
            started.signal()
            loop()
        }
        thread.name = name
        thread.start()
        started.wait()
    }

    /// Whether the caller runs on this thread (its work may then run in place).
    var isCurrent: Bool {
        guard let threadID else { return false }
        return pthread_equal(pthread_self(), threadID) != 0
    }

    /// Runs `body` on the thread (in place when already there) and returns what it returned.
    func run<T>(_ body: @escaping () throws -> T) async throws -> T {
        if isCurrent { return try body() }
        let work = Unchecked(body)
        return try await withCheckedThrowingContinuation { (done: CheckedContinuation<Unchecked<T>, any Error>) in
            submit {
                do {
                    done.resume(returning: Unchecked(try work.value()))
                } catch {
                    done.resume(throwing: error)
                }
            }
        }.value
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        submit { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }

    private func submit(_ item: @escaping () -> Void) {
        condition.lock()
        items.append(item)
        if sleeping { condition.signal() }
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            if head == items.count {
                // A short spin before sleeping: back-to-back work arrives within microseconds.
                condition.unlock()
                let spinUntil = DispatchTime.now().uptimeNanoseconds + 30_000
                while DispatchTime.now().uptimeNanoseconds < spinUntil {
                    condition.lock()
                    let waiting = head < items.count
                    condition.unlock()
                    if waiting { break }
                }
                condition.lock()
                while head == items.count {
                    sleeping = true
                    condition.wait()
                    sleeping = false
                }
            }
            let item = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
            condition.unlock()
            item()
        }
    }
}

/// A value handed between the caller and the database thread, which never use it at the same time
/// (the caller waits for the thread).
struct Unchecked<T>: @unchecked Sendable {  // unchecked: used by the caller or the thread, never both at once
    let value: T
    init(_ value: T) { self.value = value }
}
