import FarmModel
import FarmStore
import Foundation
import Testing

/// Two live jobs may not write one file: both queues refuse the second at submission, naming the job that
/// writes it and the ways out; a job that waits for the writer may write it, and once the writer ended the
/// file is free again.
@Suite struct OutputClaimsTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func new(_ name: String, writes: [String], after: [Int64] = [], key: String? = nil, runAt: Date? = nil) -> NewJob {
        NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data", outputRoots: ["/data/out"], runAt: runAt,
               uniqueKey: key, after: after.map { .id($0) }, outputs: writes)
    }

    @Test(arguments: Backend.allCases)
    func aSecondLiveWriterOfAFileIsRefused(backend: Backend) async throws {
        let store = try await backend.make()
        defer { Task { await store.close() } }
        let first = try await store.enqueue([new("first", writes: ["/data/out/a.mp4", "/data/out/a.json"])], at: t0)[0].id
        // Another file, or none: queued.
        _ = try await store.enqueue([new("other", writes: ["/data/out/b.mp4"])], at: t0)
        _ = try await store.enqueue([new("inspect", writes: [])], at: t0)

        for (name, jobs) in [("same output", [new("second", writes: ["/data/out/a.mp4"])]),
                             ("same report, delayed", [new("later", writes: ["/data/out/c.mp4", "/data/out/a.json"], runAt: t0.addingTimeInterval(3600))]),
                             ("two in one submission", [new("x", writes: ["/data/out/d.mp4"]), new("y", writes: ["/data/out/d.mp4"])])] {
            let message = try await refusal(store, jobs)
            #expect(message.contains("is written by job") && message.contains("which is queued"), "\(name): \(message)")
            #expect(message.contains("\"after\": [") && message.contains("or write another path; nothing was queued"), "\(name): \(message)")
        }
        #expect(try await store.jobs(matching: JobQuery(newest: true)).map(\.name).sorted() == ["first", "inspect", "other"], "all or nothing")
        let refused = try await refusal(store, [new("second", writes: ["/data/out/a.mp4"])])
        #expect(refused.contains("job \(first) (first)"), "\(refused)")

        // Waiting for the writer, the same file may be written again.
        let after = try await store.enqueue([new("after-first", writes: ["/data/out/a.mp4"], after: [first])], at: t0)[0]
        #expect(after.inserted)
        // A unique key held by a live job answers with that job, as before (no refusal).
        let keyed = try await store.enqueue([new("keyed", writes: ["/data/out/k.mp4"], key: "k")], at: t0)[0].id
        #expect(try await store.enqueue([new("keyed again", writes: ["/data/out/k.mp4"], key: "k")], at: t0)[0] == Enqueued(id: keyed, inserted: false))

        // Once the writers ended, the file is free.
        _ = try await store.change([first, after.id], .cancel, at: t0, by: "a test")
        #expect(try await store.enqueue([new("third", writes: ["/data/out/a.mp4"])], at: t0)[0].inserted)
        // Deleting a job forgets its files (nothing left to refuse or to keep).
        #expect(try await store.delete([first]) == [first])
    }

    func refusal(_ store: any JobStore, _ jobs: [NewJob]) async throws -> String {
        do {
            _ = try await store.enqueue(jobs, at: t0)
            return "queued"
        } catch {
            guard case .refused(let message) = error else { throw error }
            return message
        }
    }
}
