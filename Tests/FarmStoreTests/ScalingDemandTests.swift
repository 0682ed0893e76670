import FarmModel
@testable import FarmStore
import FarmTestSupport
import Foundation
import Testing

/// What an autoscaler reads, the same on both queues: the due queued jobs a kind of coordinator (a host and
/// its --provides) could claim, by the claim's own rule, plus the jobs running on that kind; pauses of the
/// farm or the host leave the queued ones out. On PostgreSQL, through the function KEDA's query calls, which
/// the deploy/kubernetes manifests name as the farm writes it, and which holds the claim's current rule.
@Suite struct ScalingDemandTests {
    func job(_ name: String, priority: Int = 0, runAt: Date, requires: [String] = []) -> NewJob {
        var job = NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data", priority: priority, runAt: runAt)
        job.requires = requires
        return job
    }

    func presence(_ owner: String, provides: [String] = []) -> CoordinatorPresence {
        CoordinatorPresence(owner: owner, host: Job.host(ofOwner: owner), slots: 2, busy: 0, draining: false, startedAt: Date(), seenAt: Date(),
                            provides: provides)
    }

    @Test(arguments: Backend.allCases)
    func theFigureIsWhatAKindCouldClaimPlusWhatRunsOnIt(backend: Backend) async throws {
        let store = try await backend.make()
        defer { Task { await store.close() } }
        let now = Date()
        // Four plain jobs due, one needing a GPU (first in line), one needing HEVC, one due in an hour.
        _ = try await store.enqueue([job("a", runAt: now - 60), job("b", runAt: now - 60), job("c", runAt: now - 60), job("d", runAt: now - 60),
                                     job("gpu", priority: 5, runAt: now - 60, requires: ["gpu"]), job("h265", runAt: now - 60, requires: ["hevc"]),
                                     job("later", runAt: now + 3600)], at: now - 60)
        let registry = try store.registry
        for p in [presence("cluster:1:a"), presence("cluster:1:g", provides: ["gpu"]), presence("other:1:o")] { try await registry.report(p) }
        // A plain pod of the cluster runs two, the GPU pod the GPU job, a host elsewhere one plain job.
        #expect(try await store.claim(limit: 2, owner: "cluster:1:a", leaseDuration: 600, provides: [], at: now).map(\.name) == ["a", "b"])
        #expect(try await store.claim(limit: 1, owner: "cluster:1:g", leaseDuration: 600, provides: ["gpu"], at: now).map(\.name) == ["gpu"])
        #expect(try await store.claim(limit: 1, owner: "other:1:o", leaseDuration: 600, provides: [], at: now).map(\.name) == ["c"])
        let scaling = try store.scaling

        let plain = try await scaling.demand(provides: [], host: "cluster", slots: 2, at: now)
        #expect(plain == ScalingDemand(provides: [], host: "cluster", slots: 2, queued: 1, running: 2, paused: false), "\(plain)")
        #expect(plain.jobs == 3 && plain.coordinators == 2)
        // The GPU kind could claim the plain job too, but does not need to: a plain kind runs it. It runs the GPU job.
        let gpu = try await scaling.demand(provides: ["gpu"], host: "cluster", slots: 1, at: now)
        #expect((gpu.queued, gpu.running, gpu.jobs, gpu.coordinators) == (0, 1, 1, 1), "\(gpu)")
        // Another host's coordinators are another kind: their running job is theirs.
        let other = try await scaling.demand(provides: [], host: "other", slots: 2, at: now)
        #expect((other.queued, other.running, other.coordinators) == (1, 1, 1), "\(other)")
        // A kind nobody runs yet sees what it could claim and is needed for: KEDA starts its first pod from zero.
        let hevc = try await scaling.demand(provides: ["hevc"], host: "fresh", slots: 4, at: now)
        #expect((hevc.queued, hevc.running, hevc.coordinators) == (1, 0, 1), "\(hevc)")
        let both = try await scaling.demand(provides: ["hevc", "gpu"], host: "fresh", slots: 4, at: now)
        #expect((both.provides, both.queued) == (["gpu", "hevc"], 1), "\(both)")
        // A kind no queued job needs is not asked for.
        let unused = try await scaling.demand(provides: ["av1"], host: "cluster", slots: 2, at: now)
        #expect((unused.jobs, unused.coordinators) == (0, 0), "\(unused)")

        // A pause of the host leaves its queued jobs out, not its running ones; one of the farm every host's.
        _ = try await store.pauses.pause("host:cluster", by: "test", at: now)
        #expect(try await scaling.demand(provides: [], host: "cluster", slots: 2, at: now)
            == ScalingDemand(provides: [], host: "cluster", slots: 2, queued: 0, running: 2, paused: true))
        #expect(try await scaling.demand(provides: [], host: "other", slots: 2, at: now).queued == 1)
        _ = try await store.pauses.pause("farm", by: "test", at: now)
        let paused = try await scaling.demand(provides: [], host: "other", slots: 2, at: now)
        #expect(paused.paused && paused.queued == 0 && paused.running == 1)
        _ = try await store.pauses.resume("farm")
        _ = try await store.pauses.resume("host:cluster")

        // A coordinator that left (its row removed) no longer counts its jobs as its kind's running ones.
        for owner in ["cluster:1:a", "cluster:1:g", "other:1:o"] {
            try await registry.leave(owner: owner)
        }
        #expect(try await scaling.demand(provides: [], host: "cluster", slots: 2, at: now)
            == ScalingDemand(provides: [], host: "cluster", slots: 2, queued: 1, running: 0, paused: false))
    }

    /// KEDA's query as deploy/kubernetes writes it is the farm's (`ScalingDemand.query`), answers the same
    /// figure as `queue depth`, and the function a migrated schema has is the one this version builds from the
    /// claim's rule: a change of the claim needs a migration that replaces the function (this test fails until
    /// there is one; the released migrations' text is never edited).
    @Test func kedasQueryIsTheFarmsAndTheFunctionHoldsTheClaimsRule() async throws {
        let manifests = TestPaths.packageRoot.appendingPathComponent("deploy/kubernetes")
        for file in ["base/scaledobject.yaml", "overlays/long-jobs/scaledjob.yaml"] {
            let text = try String(contentsOf: manifests.appendingPathComponent(file), encoding: .utf8)
            let query = try #require(text.split(separator: "\n").first { $0.contains("query: ") }).split(separator: "query: ", maxSplits: 1)[1]
            #expect(String(query) == ScalingDemand.query(schema: "mediafarm", provides: [], host: "cluster"), "\(file)")
        }
        let url = try TestPostgres.url(freshSchema: true)
        guard case .postgres(let server) = try QueueLocation.parse(url) else { Issue.record("not a PostgreSQL URL: \(url)"); return }
        let store = try await JobStores.open(.postgres(server), migrate: true)
        defer { Task { await store.close() } }
        let now = Date()
        _ = try await store.enqueue([job("a", runAt: now - 1), job("b", runAt: now - 1), job("c", runAt: now - 1)], at: now - 1)
        try await store.registry.report(presence("cluster:1:a"))
        _ = try await store.claim(limit: 1, owner: "cluster:1:a", leaseDuration: 600, provides: [], at: now)
        let database = try store.database
        let keda = try await database.readRows(ScalingDemand.query(schema: server.schema, provides: [], host: "cluster"), [])
        #expect(keda.count == 1 && keda[0].values.count == 1 && keda[0][0].int == 3, "\(keda)")
        #expect(try await store.scaling.demand(provides: [], host: "cluster", slots: 2).jobs == 3)
        let installed = try await database.readRows("""
            SELECT prosrc FROM pg_proc WHERE proname = 'scaling_demand' AND pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?)
            """, [SQLValue(server.schema)])
        #expect(installed.count == 1)
        // Compared word by word: the migration's literal and the built text may break lines differently.
        func words(_ text: String?) -> [Substring] { (text ?? "").split(whereSeparator: \.isWhitespace) }
        #expect(words(installed.first?[0].string) == words(ScalingDemands.functionBody),
                "the schema's scaling_demand is not the claim's rule of this version: add a migration that replaces the function")
    }
}
