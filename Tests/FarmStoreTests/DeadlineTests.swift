@testable import FarmStore
import Foundation
import Testing

/// A call's deadline: on its whole length without a heartbeat (connecting), on the silence since its last
/// sign of life with one (a transaction's statements, each answer a beat). The calls' work runs on threads
/// of their own, as a server's answers arrive on the event loop's: other tests that hold the task pool's
/// few threads do not hold up their beats.
@Suite struct DeadlineTests {
    /// Beats `heartbeat` every 0.1 s for `beating` seconds, then stays silent until `seconds` have passed.
    func work(beating: Double, lasting seconds: Double, _ heartbeat: Heartbeat?) async -> Int {
        await withCheckedContinuation { done in
            Thread {
                let start = Date()
                var beats = 0
                while Date().timeIntervalSince(start) < seconds {
                    Thread.sleep(forTimeInterval: 0.1)
                    if Date().timeIntervalSince(start) <= beating {
                        heartbeat?.beat()
                        beats += 1
                    }
                }
                done.resume(returning: beats)
            }.start()
        }
    }

    @Test func aCallThatKeepsAnsweringRunsPastTheLimitAndOneThatFallsSilentEnds() async throws {
        // 6 s of work that answers every 0.1 s, under a limit of 3 s: it finishes. The call's task finds
        // its heartbeat as `Heartbeat.current`. (The calls run on the store's event loop, as its own do: on
        // the task pool, a test beside this one that holds the pool's threads would hold up a call's start.)
        let heartbeat = Heartbeat()
        let beats = try await Deadline.run(seconds: 3, heartbeat: heartbeat, executor: PostgresLoop.executor) {
            #expect(Heartbeat.current === heartbeat)
            return await work(beating: 6, lasting: 6, heartbeat)
        }
        // (Past the limit: 30 beats take at least 3 s, however late each sleep ends on a busy machine.)
        #expect(beats > 30)

        // The same work without a heartbeat: the limit is on the whole call.
        let started = ContinuousClock.now
        await #expect(throws: Deadline.Expired.self) {
            try await Deadline.run(seconds: 3, executor: PostgresLoop.executor) { await work(beating: 6, lasting: 6, nil) }
        }
        #expect(ContinuousClock.now - started < .seconds(5.5))

        // Answers for 3.5 s, then silence (a statement waiting on a lock, a server gone): it ends 3 s after
        // the last answer, not at 3 s from the start, and not when the work would have ended.
        let beganAt = ContinuousClock.now
        let silent = Heartbeat()
        await #expect(throws: Deadline.Expired.self) {
            try await Deadline.run(seconds: 3, heartbeat: silent, executor: PostgresLoop.executor) { await work(beating: 3.5, lasting: 15, silent) }
        }
        let ended = ContinuousClock.now - beganAt
        // Measured from its last answer (when that was depends on how late each 0.1 s sleep ended): 3 s of
        // silence, and that answer came after the first 3 s.
        let quiet = silent.silence
        let lastAnswer = ended - .seconds(quiet)
        #expect(quiet >= 3 && lastAnswer > .seconds(3) && ended < .seconds(14), "ended at \(ended), \(quiet) s after the last answer")
    }

    /// The queue's calls run on the event loop their connections live on (`PostgresLoop`): the call's
    /// task is there, and so is its body after each await; the caller gets its value back where it was.
    @Test func aCallGivenAnExecutorRunsOnItsEventLoopAndStillEndsAtTheLimit() async throws {
        let loop = PostgresLoop.executor.loop
        #expect(!loop.inEventLoop)
        let onLoop = try await Deadline.run(seconds: 3, executor: PostgresLoop.executor) {
            let first = loop.inEventLoop
            try await Task.sleep(for: .milliseconds(20))
            // An answer from the loop (what a connection's statement resolves) resumes the call in place.
            let answered = try await loop.submit { loop.inEventLoop }.get()
            return [first, loop.inEventLoop, answered]
        }
        #expect(onLoop == [true, true, true])
        #expect(!loop.inEventLoop)

        // A body that never answers still ends at the limit, and the loop is free for the next call.
        let started = ContinuousClock.now
        await #expect(throws: Deadline.Expired.self) {
            try await Deadline.run(seconds: 1, executor: PostgresLoop.executor) { await work(beating: 0, lasting: 4, nil) }
        }
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(try await Deadline.run(seconds: 3, executor: PostgresLoop.executor) { loop.inEventLoop })
    }
}
