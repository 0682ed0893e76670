import FarmModel
import FarmStore
import Foundation
import Testing

/// The charts' figures from the queue itself, the same on both queues: jobs ended per bucket by outcome,
/// the p50 and p95 of their waits and runs, and the depth samples (one per minute, the first kept).
@Suite struct QueueHistoryTests {
    @Test(arguments: Backend.allCases)
    func theHistoryCountsWhatEndedWhenAndHowLongItTook(backend: Backend) async throws {
        let store = try await backend.make()
        defer { Task { await store.close() } }
        let now = Date(timeIntervalSince1970: 1_800_000_000)  // a whole minute
        let start = now.addingTimeInterval(-30 * 60)
        // Five jobs claimed at start + 10 s after they were due; they end 20, 40, 60, 80 and 100 s later.
        let ids = try await store.enqueue((0..<5).map { NewJob(name: "j\($0)", manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/d") }, at: start).map(\.id)
        let claimed = try await store.claim(limit: 5, owner: "h:1:a", leaseDuration: 3600, at: start.addingTimeInterval(10))
        for (i, job) in claimed.sorted(by: { $0.id < $1.id }).enumerated() {
            let token = try #require(job.lease?.token)
            let outcome: AttemptOutcome = i == 4 ? .failed(message: "broken", result: nil) : .succeeded(result: nil)
            _ = try await store.finish(id: job.id, token: token, outcome: outcome, at: start.addingTimeInterval(10 + 20 * Double(i + 1)))
        }
        #expect(ids.count == 5)
        let history = QueueHistory(try store.database)
        try await history.sample(queued: 7, running: 2, waiting: 0, at: now.addingTimeInterval(-90))
        try await history.sample(queued: 99, running: 9, waiting: 0, at: now.addingTimeInterval(-89))  // the same minute: the first stays
        let hour = try await history.chart(.hour, at: now)
        #expect(hour.count == 60)
        let ended = hour.filter { !$0.ended.isEmpty }
        #expect(ended.map { $0.ended.values.reduce(0, +) }.reduce(0, +) == 5)
        #expect(hour.reduce(0) { $0 + ($1.ended["failed"] ?? 0) } == 1)
        // Minute buckets: ends at 30 and 50 s (the first minute), 70, 90 and 110 s (the second).
        #expect(ended.map { $0.ended.values.reduce(0, +) } == [2, 3], "\(ended)")
        #expect(ended.allSatisfy { $0.waitP50 == 10 && $0.waitP95 == 10 })
        #expect(ended[0].runP50 == 20 && ended[0].runP95 == 40)
        let sampled = hour.filter { $0.queued != nil }
        #expect(sampled.count == 1 && sampled[0].queued == 7 && sampled[0].running == 2, "\(sampled)")
        let days = try await history.chart(.days, at: now)
        #expect(days.count == 72 && days.reduce(0) { $0 + $1.ended.values.reduce(0, +) } == 5)
    }
}
