import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmStore
import FarmSubmit
import FarmTestSupport
import Foundation
import Testing

/// The one way jobs enter the queue, in-process against a real SQLite queue and its library: every problem
/// of every manifest said at once, unknown assets among them, a scoped token's limits, all or nothing.
@Suite struct SubmissionTests {
    struct Site {
        let dir: URL
        let store: SQLiteJobStore
        let library: AssetLibrary

        init() throws {
            dir = try TestPaths.makeTemporaryFolder("submission")
            store = try SQLiteJobStore(path: dir.appendingPathComponent("queue.sqlite").path)
            library = AssetLibrary(database: try store.database, host: "here", inspector: .media)
            FileManager.default.createFile(atPath: dir.appendingPathComponent("in.mp4").path, contents: Data("not media, but there".utf8))
        }

        func offer(_ text: String, _ name: String) -> ManifestOffer {
            ManifestOffer(text: text, file: name + ".json", name: name, baseDirectory: dir.path)
        }

        var submitter: Submitter { .commandLine(outputRoots: [dir.path]) }
    }

    @Test func everyProblemOfEveryManifestIsSaidAtOnceWithUnknownAssets() async throws {
        let site = try Site()
        let unknown = "asset:0000000000000000000000000g"
        let offers = [
            site.offer(#"{"version": 1, "input": "in.mp4"}"#, "good"),
            site.offer(#"{"version": 1, "input": "missing.mp4", "scale": 3}"#, "two-problems"),
            site.offer(#"{"version": 1, "input": "\#(unknown)"}"#, "unknown-asset"),
            site.offer(#"{"version": 2, "input": "\#(unknown)"}"#, "invalid-and-unknown"),
        ]
        let unreadable = ManifestValidationError(file: "gone.json", issues: [ManifestIssue(path: "$", message: "no such file")])
        var asked = 0
        let checked = try await Submission.check(offers, unreadable: [unreadable], as: site.submitter) { allValid in
            asked += 1
            #expect(!allValid)
            return site.library
        }
        #expect(asked == 1, "the library is asked once for every offer")
        #expect(checked.valid.map(\.offer.name) == ["good"])
        #expect(checked.count == 5)
        let byFile = Dictionary(uniqueKeysWithValues: checked.invalid.map { ($0.file ?? "", $0.issues.map(\.path)) })
        #expect(byFile["gone.json"] == ["$"])
        #expect(byFile["two-problems.json"]?.contains("$.input") == true && byFile["two-problems.json"]?.contains("$.scale") == true, "\(byFile)")
        #expect(byFile["unknown-asset.json"] == ["$.input"])
        #expect(byFile["invalid-and-unknown.json"]?.count == 2, "\(byFile)")
        do {
            _ = try Submission.refusingInvalid(checked)
            Issue.record("invalid manifests were accepted")
        } catch {
            #expect(error.description.hasSuffix("nothing was queued: 4 of 5 manifests are invalid"), "\(error)")
            #expect(error.issues.contains { $0.message.contains("no asset 0000000000000000000000000g") }, "\(error.issues)")
        }
    }

    @Test func noLibraryIsAskedWhenNoManifestNamesAnAsset() async throws {
        let site = try Site()
        let checked = try await Submission.check([site.offer(#"{"version": 1, "input": "in.mp4"}"#, "a")], as: site.submitter) { _ in
            Issue.record("the library was asked")
            return nil
        }
        #expect(checked.valid.count == 1 && checked.invalid.isEmpty)
    }

    @Test func aScopedTokenSubmitsOnlyAssets() async throws {
        let site = try Site()
        let checked = try await Submission.check([site.offer(#"{"version": 1, "edits": [{"source": "in.mp4"}, {"source": "in.mp4"}]}"#, "files")],
                                                 as: site.submitter) { _ in site.library }
        let valid = try Submission.refusingInvalid(checked)
        #expect(Submission.scopedRefusals(valid, access: .full).isEmpty)
        let refusals = Submission.scopedRefusals(valid, access: .limited(name: "t", albums: []))
        #expect(refusals.first?.issues.map(\.path) == ["$.edits[0].source", "$.edits[1].source"])
        // Enqueueing checks it again, whatever its caller did.
        let scoped = AssetLibrary(database: try site.store.database, host: "here", access: .limited(name: "t", albums: []), inspector: .media)
        let job = NewJob(name: "files", manifest: valid[0].offer.text, baseDirectory: site.dir.path, outputRoots: [site.dir.path])
        await #expect(throws: SubmissionError.self) { try await Submission(store: site.store, library: scoped).enqueue([job], sources: [["in.mp4"]]) }
        #expect(try await site.store.counts().values.reduce(0, +) == 0)
    }

    @Test func aRefusalQueuesNothingAndSaysSoOnce() async throws {
        let site = try Site()
        let ok = NewJob(name: "ok", manifest: #"{"version": 1, "input": "in.mp4"}"#, baseDirectory: site.dir.path, outputRoots: [site.dir.path])
        var orphan = ok
        orphan.name = "orphan"
        orphan.after = [.key("no-such-key")]
        do {
            _ = try await Submission(store: site.store, library: site.library).enqueue([ok, orphan], sources: [["in.mp4"], ["in.mp4"]])
            Issue.record("a job waiting for nothing was queued")
        } catch {
            guard case .refused = error else { Issue.record("\(error)"); return }
            #expect(error.description.components(separatedBy: "nothing was queued").count == 2, "\(error)")
        }
        #expect(try await site.store.counts().values.reduce(0, +) == 0)
        let queued = try await Submission(store: site.store, library: site.library).enqueue([ok], sources: [["in.mp4"]])
        #expect(queued.jobs.count == 1 && queued.jobs[0].inserted)
    }
}
