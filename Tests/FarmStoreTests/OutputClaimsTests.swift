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

    /// A package's folder is claimed whole: a live job writing into it is refused, as is a package whose
    /// folder holds what a live job writes, or is inside another package; a sibling whose name begins the
    /// same is not inside it.
    @Test(arguments: Backend.allCases)
    func aPackageFolderClashesWithWhatIsInsideIt(backend: Backend) async throws {
        let store = try await backend.make()
        defer { Task { await store.close() } }
        let package = try await store.enqueue([new("package", writes: [OutputClaim.folder("/data/out/show")])], at: t0)[0].id
        let inside = try await refusal(store, [new("poster", writes: ["/data/out/show/poster.jpg"])])
        #expect(inside.contains("/data/out/show/poster.jpg is inside /data/out/show/, written by job \(package) (package), which is queued"), "\(inside)")
        let deeper = try await refusal(store, [new("inner", writes: [OutputClaim.folder("/data/out/show/extras")])])
        #expect(deeper.contains("is inside /data/out/show/, written by job \(package)"), "\(deeper)")
        let same = try await refusal(store, [new("file", writes: ["/data/out/show"])])
        #expect(same.contains("written by job \(package) (package)"), "\(same)")
        // Beside it, not inside: "/data/out/show2/" and "/data/out/show.json" begin with the same letters.
        #expect(try await store.enqueue([new("sibling", writes: [OutputClaim.folder("/data/out/show2"), "/data/out/show.json"])], at: t0)[0].inserted)
        // A poster first, then a package over its folder.
        let poster = try await store.enqueue([new("poster", writes: ["/data/out/reel/a/poster.jpg"])], at: t0)[0].id
        let over = try await refusal(store, [new("reel", writes: [OutputClaim.folder("/data/out/reel")])])
        #expect(over.contains("/data/out/reel/ holds /data/out/reel/a/poster.jpg, written by job \(poster) (poster)"), "\(over)")
        // Waiting for the package, a job may write into its folder.
        #expect(try await store.enqueue([new("after", writes: ["/data/out/show/notes.txt"], after: [package])], at: t0)[0].inserted)
        // A package queued before folders were claimed with "/" (its bare path) still holds its folder.
        let legacy = try await store.enqueue([new("legacy", writes: ["/data/out/old-show"])], at: t0)[0].id
        let intoLegacy = try await refusal(store, [new("poster", writes: ["/data/out/old-show/poster.jpg"])])
        #expect(intoLegacy.contains("/data/out/old-show/poster.jpg is inside /data/out/old-show, written by job \(legacy)"), "\(intoLegacy)")
        // In one submission too.
        let both = try await refusal(store, [new("p", writes: [OutputClaim.folder("/data/out/pair")]), new("q", writes: ["/data/out/pair/q.mp4"])])
        #expect(both.contains("/data/out/pair/q.mp4 is inside /data/out/pair/"), "\(both)")
    }

    /// The claims' rule, written once: what clashes and what does not.
    @Test func claimsClashByPathAndFolder() {
        #expect(OutputClaim.clash("/a/b/", "/a/b/c.mp4") && OutputClaim.clash("/a/b/c.mp4", "/a/b/") && OutputClaim.clash("/a/b/", "/a/b"))
        #expect(OutputClaim.clash("/a/", "/a/b/") && OutputClaim.clash("/a/b.mp4", "/a/b.mp4"))
        #expect(!OutputClaim.clash("/a/b/", "/a/bc/d.mp4") && !OutputClaim.clash("/a/b.mp4", "/a/c.mp4") && !OutputClaim.clash("/a/b/c.mp4", "/a/b/d.mp4"))
        // Locks: each claim's own path exclusive, its folders shared, in one order.
        #expect(OutputClaim.locks(["/o/show/", "/o/a.mp4", "/o/show/p.jpg"]).map { "\($0.key)\($0.exclusive ? "!" : "")" }
                == ["/", "/o/", "/o/a.mp4/!", "/o/show/!", "/o/show/p.jpg/!"])
        var index = OutputClaimIndex<Int>()
        index.add("/a/b/c/d.mp4", 1)
        index.add("/x/", 2)
        #expect(index.clashing("/a/b/").map(\.holder) == [1] && index.clashing("/x/y.mp4").map(\.holder) == [2] && index.clashing("/a/bb/").isEmpty)
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
