import FarmModel
import FarmRuntime
import FarmStore
import FarmTestSupport
import Foundation
import Testing

/// A coordinator that dies after its worker succeeded and it began publishing (the lease renewed in
/// phase `publishing`, outputs staged, some perhaps already renamed): the next rescuer completes that
/// publication instead of running the job again, so every output is published once.
@Suite(.serialized) struct InterruptedPublicationTests {
    /// Puts job `id` where a coordinator that died while publishing leaves it: claimed by "gone:1:a"
    /// with a lease that runs out at once, phase `publishing` with the worker's result, outputs staged.
    func abandonWhilePublishing(_ farm: Farm, _ id: Int64, staged: [String: Data], result recorded: String? = nil) async throws -> String {
        let store = try SQLiteJobStore(path: farm.queue, create: false)
        let now = Date()
        let job = try #require(try await store.claim(limit: 1, owner: "gone:1:a", leaseDuration: 0.5, at: now).first)
        #expect(job.id == id)
        let token = try #require(job.lease?.token)
        let result = JobResult(name: job.name, succeeded: true, report: staged.keys.first { $0.hasSuffix(".json") }, seconds: 1)
        let resultJSON = try recorded ?? String(decoding: try JSONEncoder().encode(result), as: UTF8.self)
        #expect(try await store.renew([LeaseRenewal(id: id, token: token, progress: 1, phase: "publishing", result: resultJSON)],
                                      leaseDuration: 0.5, at: now).isEmpty)
        for (final, data) in staged {
            #expect(FileManager.default.createFile(atPath: StagedOutput.path(for: final, token: token), contents: data))
        }
        return token
    }

    @Test func aPublicationCutShortIsCompletedByTheRescuerNotRunAgain() async throws {
        let farm = try Farm("interrupted-publication")
        let id = try await farm.queued([try farm.exportManifest("p")])[0]
        let movie = farm.out.appendingPathComponent("p.mp4").path, report = farm.out.appendingPathComponent("p.json").path
        try FileManager.default.createDirectory(at: farm.out, withIntermediateDirectories: true)
        let movieBytes = Data("the staged movie".utf8), reportBytes = Data(#"{"staged":true}"#.utf8)
        // The movie was renamed into place before the coordinator died; the report is still staged.
        _ = try await abandonWhilePublishing(farm, id, staged: [report: reportBytes])
        #expect(FileManager.default.createFile(atPath: movie, contents: movieBytes))

        let coordinator = try await farm.coordinate(["--workers", "1", "--lease", "2", "--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let job = try #require(try await farm.jobs()[id])
        // Finished by the first attempt: nothing ran again, nothing was published twice.
        #expect(job["state"] as? String == "succeeded" && job.int == 1 && job.errors.isEmpty, "\(job)")
        #expect(FileManager.default.contents(atPath: movie) == movieBytes)
        #expect(FileManager.default.contents(atPath: report) == reportBytes)
        #expect(!coordinator.events().contains { $0["event"] as? String == "started" }, "\(coordinator.log)")
        #expect(coordinator.log.contains("stopped while publishing attempt 1; publication completed here"))
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    @Test func aPublicationThatCannotBeCompletedIsRescuedAfterItsGrace() async throws {
        let farm = try Farm("lost-publication")
        let id = try await farm.queued([try farm.inspectManifest("q")])[0]
        // Phase publishing, but nothing staged and nothing in place: the outputs are gone.
        _ = try await abandonWhilePublishing(farm, id, staged: [:])
        let coordinator = try await farm.coordinate(["--workers", "1", "--lease", "2", "--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let job = try #require(try await farm.jobs()[id])
        #expect(job["state"] as? String == "succeeded" && job.int == 2 && job.errors.count == 1, "\(job)")
        #expect(coordinator.log.contains("cannot complete the publication of gone:1:a"))
        #expect(FileManager.default.fileExists(atPath: farm.out.appendingPathComponent("q.json").path))
    }

    /// A coordinator killed while its worker had staged the report, then the coordinator that rescued the
    /// job killed before it removed that staged file: the job's next attempt, publishing, removes it.
    @Test func whatAnAttemptStagedIsRemovedWhenItsRescuerDiedToo() async throws {
        let farm = try Farm("rescuer-died")
        let id = try await farm.queued([try farm.inspectManifest("r")])[0]
        let report = farm.out.appendingPathComponent("r.json").path
        try FileManager.default.createDirectory(at: farm.out, withIntermediateDirectories: true)
        let store = try SQLiteJobStore(path: farm.queue, create: false)
        let job = try #require(try await store.claim(limit: 1, owner: "gone:1:a", leaseDuration: 0.1, at: Date()).first)
        let staged = StagedOutput.path(for: report, token: try #require(job.lease?.token))
        #expect(FileManager.default.createFile(atPath: staged, contents: Data(#"{"staged":true}"#.utf8)))
        // The rescue recorded, and nothing more: its coordinator died there.
        #expect(try await store.rescueExpired(at: Date().addingTimeInterval(1), publishingGrace: 0).map(\.id) == [id])
        await store.close()

        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let done = try #require(try await farm.jobs()[id])
        #expect(done["state"] as? String == "succeeded" && done.int == 2, "\(done)")
        #expect(!FileManager.default.fileExists(atPath: staged))
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// A worker's recorded result that cannot be read is said, naming the job and the fault, and the attempt
    /// is rescued after its grace; it is not published as "left no upload" with the cause lost.
    @Test func aRecordedResultThatCannotBeReadIsSaidAndTheAttemptRescued() async throws {
        let farm = try Farm("unreadable-result")
        let id = try await farm.queued([try farm.inspectManifest("r")])[0]
        _ = try await abandonWhilePublishing(farm, id, staged: [:], result: #"{"name": "r", "succeeded": "#)
        let coordinator = try await farm.coordinate(["--workers", "1", "--lease", "2", "--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        #expect(coordinator.log.contains("job \(id) (r): gone:1:a stopped while publishing attempt 1, but its worker's recorded result cannot be read"),
                "\(coordinator.log)")
        #expect(!coordinator.log.contains("left no upload"))
        let job = try #require(try await farm.jobs()[id])
        #expect(job["state"] as? String == "succeeded" && job.int == 2, "\(job)")
    }
}
