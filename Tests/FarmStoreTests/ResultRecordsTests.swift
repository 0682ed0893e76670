import FarmModel
import FarmStore
import Foundation
import Testing

/// The queue's reusable results, on every backend: recorded once per job and key, listed newest first by
/// key from another connection, forgotten one by one, and removed with their job when it is pruned.
@Suite struct ResultRecordsTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func result(_ key: String, job: Int64, at t: Date, report: String? = nil) -> ReusableResult {
        ReusableResult(key: key, jobID: job, jobName: "job \(job)", output: "/out/\(job).mp4", sha256: String(repeating: "a", count: 64),
                       size: 1234, report: report, createdAt: t)
    }

    @Test(arguments: Backend.allCases)
    func resultsAreKeptByKeyNewestFirstAndGoWithTheirJob(backend: Backend) async throws {
        let (store, other) = try await backend.makePair()
        let ids = try await store.enqueue((1...3).map { NewJob(name: "j\($0)", manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data") },
                                          at: t0).map(\.id)
        let records = ResultRecords(try store.database), seen = ResultRecords(try other.database)
        let report = #"{"name":"j1","export":{"video":{"frames":300}}}"#
        try await records.record(result("k1", job: ids[0], at: t0, report: report))
        try await records.record(result("k1", job: ids[1], at: t0.addingTimeInterval(5)))
        try await records.record(result("k2", job: ids[2], at: t0.addingTimeInterval(9)))
        // The same job and key again changes nothing.
        try await records.record(result("k1", job: ids[0], at: t0.addingTimeInterval(20)))
        let k1 = try await seen.results(key: "k1")
        #expect(k1.map(\.jobID) == [ids[1], ids[0]])
        #expect(k1.last == result("k1", job: ids[0], at: t0, report: report))
        #expect(try await seen.results(key: "k1", limit: 1).map(\.jobID) == [ids[1]])
        #expect(try await seen.results(key: "nothing").isEmpty)
        try await seen.forget(key: "k1", jobID: ids[1])
        #expect(try await records.results(key: "k1").map(\.jobID) == [ids[0]])

        // Pruning a job removes its result, and only its.
        for (i, id) in ids.prefix(1).enumerated() {
            let token = try #require(try await store.claim(limit: 1, owner: "h:1:a", leaseDuration: 60, at: t0).first { $0.id == id }?.lease?.token)
            _ = try await store.finish(id: id, token: token, outcome: .succeeded(result: nil), at: t0.addingTimeInterval(Double(i + 1)))
        }
        #expect(try await store.prune(finishedBefore: t0.addingTimeInterval(100), limit: 10) == 1)
        #expect(try await seen.results(key: "k1").isEmpty)
        #expect(try await seen.results(key: "k2").map(\.jobID) == [ids[2]])
    }
}
