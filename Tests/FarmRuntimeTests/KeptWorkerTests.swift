import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Worker processes kept for many jobs: each job starts as the first did, a crash or a kill ends only
/// the attempt it hit, and a worker is replaced after its number of jobs, above its memory limit, and
/// after a job that left what cannot be put right.
@Suite(.serialized) struct KeptWorkerTests {
    /// The worker pid of each job's first `started` event, in job order.
    static func pids(_ coordinator: some CoordinatorPrintout, _ ids: [Int64]) -> [Int32] {
        let started = coordinator.events().filter { $0["event"] as? String == "started" }
        return ids.map { id in
            started.first { ($0["job"] as? NSNumber)?.int64Value == id }.flatMap { ($0["pid"] as? NSNumber)?.int32Value } ?? -1
        }
    }

    /// The state lines a `--test-misbehave report` worker logged at each job's start, by job id.
    static func states(_ coordinator: some CoordinatorPrintout) -> [Int64: [String: String]] {
        var states: [Int64: [String: String]] = [:]
        for event in coordinator.events() where event["event"] as? String == "notice" {
            guard let message = event["message"] as? String, message.hasPrefix("job "), let range = message.range(of: ": debug: state ") else { continue }
            let id = Int64(message.dropFirst(4).prefix { $0.isNumber })!
            var fields: [String: String] = [:]
            for pair in message[range.upperBound...].split(separator: " ") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
            }
            states[id] = fields
        }
        return states
    }

    func worker(_ misbehave: String) -> String {
        "\(TestPaths.mediafarmExecutable) worker --test-misbehave \(misbehave)"
    }

    @Test func whatAJobChangesInItsWorkerNeverReachesTheNextJob() async throws {
        let farm = try Farm("kept-clean")
        let ids = try await farm.queued((0..<3).map { try farm.inspectManifest("c\($0)") })
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle",
                                                     "--worker-command", worker("cwd,env,temp,limit,umask,report")])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let pids = Self.pids(coordinator, ids)
        #expect(Set(pids).count == 1 && pids[0] > 0, "one kept worker ran every job: \(pids)")
        let states = Self.states(coordinator)
        let first = try #require(states[ids[0]], "\(coordinator.log)")
        for id in ids.dropFirst() {
            let state = try #require(states[id])
            // Each job left a changed directory, a variable, a temporary, a lowered limit and a umask.
            #expect(state["cwd"] == first["cwd"] && state["cwd"] != "/", "\(state)")
            #expect(state["left"] == "unset", "\(state)")
            #expect(state["tmpEntries"] == "0" && state["oldTmpFolders"] == "0", "\(state)")
            #expect(state["nofile"] == first["nofile"] && state["nofile"] != "100", "\(state)")
            #expect(state["umask"] == first["umask"] && state["umask"] != "77", "\(state)")
            #expect(state["descriptors"] == first["descriptors"], "\(state) after \(first)")
        }
        // The operator hears what was put back.
        let notices = coordinator.events().compactMap { $0["message"] as? String }.filter { $0.contains("the worker put back what the job left") }
        #expect(notices.count == 3, "\(notices)")
        #expect(notices.first.map { $0.contains("changed directory back") && $0.contains("MEDIAFARM_TEST_LEFT_BEHIND")
            && $0.contains("temporary file") && $0.contains("RLIMIT_NOFILE") && $0.contains("umask") } == true, "\(notices)")
        for id in ids { #expect(try await farm.jobState(id) == "succeeded") }
        // No job's temporary folder is left.
        let tmp = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []
        #expect(!tmp.contains { $0.hasPrefix("mediafarm-worker-\(pids[0])-") }, "\(tmp.filter { $0.hasPrefix("mediafarm-worker-") })")
    }

    @Test func aDescriptorLeftOpenRetiresTheWorkerAndTheNextJobStartsClean() async throws {
        let farm = try Farm("kept-fd")
        let ids = try await farm.queued((0..<3).map { try farm.inspectManifest("f\($0)") })
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle", "--worker-command", worker("fd,report")])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let pids = Self.pids(coordinator, ids)
        #expect(Set(pids).count == 3, "each job after a leaking one runs in a new worker: \(pids)")
        let states = Self.states(coordinator)
        let descriptors = ids.compactMap { states[$0]?["descriptors"] }
        #expect(descriptors.count == 3 && Set(descriptors).count == 1, "\(states)")
        let replaced = coordinator.events().compactMap { $0["message"] as? String }.filter { $0.hasPrefix("worker replaced:") }
        #expect(replaced.count == 3 && replaced.allSatisfy { $0.contains("left descriptor") && $0.contains("/dev/null") }, "\(replaced)")
        for id in ids { #expect(try await farm.jobState(id) == "succeeded") }
    }

    @Test func jobsPerWorkerSetsHowManyJobsAProcessRuns() async throws {
        for (perWorker, distinct) in [(1, 4), (2, 2), (100, 1)] {
            let farm = try Farm("kept-n\(perWorker)")
            let ids = try await farm.queued((0..<4).map { try farm.inspectManifest("n\($0)") })
            let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle", "--jobs-per-worker", String(perWorker)])
            #expect(coordinator.status == 0, "\(coordinator.log)")
            let pids = Self.pids(coordinator, ids)
            #expect(Set(pids).count == distinct && !pids.contains(-1), "--jobs-per-worker \(perWorker): \(pids)")
            if perWorker == 2 { #expect(pids[0] == pids[1] && pids[2] == pids[3] && pids[1] != pids[2], "\(pids)") }
            for id in ids { #expect(try await farm.jobState(id) == "succeeded" && farm.status()[id]?.int == 1) }
        }
    }

    @Test func aWorkerAboveItsMemoryLimitIsReplaced() throws {
        // Every job leaves more than 1 MiB resident (the runtime and FFmpeg alone take tens).
        let farm = try Farm("kept-memory")
        let ids = try farm.submit([try farm.inspectManifest("m0"), try farm.exportManifest("m1"), try farm.inspectManifest("m2")])
        let coordinator = try farm.startCoordinator(["--workers", "1", "--exit-when-idle", "--recycle-memory", "1M"])
        #expect(coordinator.wait(timeout: 120) == 0, "\(coordinator.log)")
        #expect(Set(Self.pids(coordinator, ids)).count == 3)
        let replaced = coordinator.events().compactMap { $0["message"] as? String }.filter { $0.hasPrefix("worker replaced:") }
        #expect(replaced.count == 3 && replaced.allSatisfy { $0.contains("resident memory after a job") && $0.contains("limit of 1 MiB") },
                "\(replaced)")
        // Under the default limit the same jobs share one process.
        let again = try Farm("kept-memory-default")
        let more = try again.submit([try again.inspectManifest("m0"), try again.exportManifest("m1"), try again.inspectManifest("m2")])
        let second = try again.startCoordinator(["--workers", "1", "--exit-when-idle"])
        #expect(second.wait(timeout: 120) == 0, "\(second.log)")
        #expect(Set(Self.pids(second, more)).count == 1)
    }

    @Test func aWorkerKilledDuringItsFifthJobFailsOnlyThatAttempt() throws {
        let farm = try Farm("kept-kill")
        // Four quick jobs, a slow fifth (about 2 s of work), then two more.
        var manifests = try (0..<4).map { try farm.inspectManifest("k\($0)") }
        manifests.append(try farm.exportManifest("k4", slow: 2))
        manifests += try (5..<7).map { try farm.inspectManifest("k\($0)") }
        let ids = try farm.submit(manifests)
        let temporaries = farm.folder.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: temporaries, withIntermediateDirectories: false)
        let coordinator = try farm.startCoordinator(["--workers", "1"], environment: ["TMPDIR": temporaries.path])
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        var fifth: Int32 = -1
        #expect(eventually(120) {
            fifth = Self.pids(coordinator, [ids[4]])[0]
            return fifth > 0
        }, "\(coordinator.log)")
        #expect(kill(fifth, SIGKILL) == 0)
        #expect(try eventually(120) { try ids.allSatisfy { try farm.state($0) == "succeeded" } }, "\(coordinator.log.suffix(3000))")
        let jobs = try farm.status()
        let pids = Self.pids(coordinator, ids)
        #expect(Set(pids[0..<5]).count == 1, "the first five jobs ran in one worker: \(pids)")
        #expect(!pids[5...].contains(pids[4]), "the jobs after the kill run in a new worker: \(pids)")
        for (n, id) in ids.enumerated() {
            let job = try #require(jobs[id])
            if n == 4 {
                #expect(job.int == 2 && job.errors.count == 1 && job.errors[0].contains("SIGKILL"), "\(job)")
            } else {
                #expect(job.int == 1 && job.errors.isEmpty, "job \(n): \(job)")
            }
        }
        #expect(try MediaProbe.packets(farm.out.appendingPathComponent("k4.mp4").path, stream: "v").count == 600)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
        // The killed worker's temporary folder went with it; the kept worker's goes when the coordinator stops.
        kill(coordinator.pid, SIGTERM)
        #expect(coordinator.wait(timeout: 60) != nil)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: temporaries.path)) ?? ["(unreadable)"]
        #expect(left.isEmpty, "\(left)")
    }

    @Test func jobsClaimedAheadOfALongJobGoBackOnceAndRunLater() async throws {
        let farm = try Farm("kept-ahead")
        // Short jobs first (claims ahead begin), then a long one (4 s or more, where a job claimed ahead waits
        // 2 s), then short ones again. Short is under 5 s here, so that a loaded machine's inspections still
        // count as short.
        var manifests = try (0..<4).map { try farm.inspectManifest("a\($0)") }
        manifests.append(try farm.exportManifest("long", slow: 30))
        manifests += try (4..<7).map { try farm.inspectManifest("a\($0)") }
        let ids = try await farm.queued(manifests)
        let coordinator = try await farm.coordinate(["--workers", "1", "--exit-when-idle",
                                                     "--claim-ahead-below", "5", "--claim-ahead-hold", "2"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let jobs = try await farm.jobs()
        for id in ids { #expect(jobs[id]?["state"] as? String == "succeeded" && jobs[id]?.int == 1, "\(jobs[id] ?? [:])") }
        // What was claimed behind the long job went back to the queue once, not again and again.
        let released = coordinator.events().filter { $0["event"] as? String == "finished" && $0["state"] as? String == "queued" }
        #expect(released.count >= 1 && released.count <= 2, "\(released)")
        let order = coordinator.events().filter { $0["event"] as? String == "finished" && $0["state"] as? String == "succeeded" }
            .compactMap { ($0["job"] as? NSNumber)?.int64Value }
        #expect(Set(order) == Set(ids))
    }

    @Test func aTimeoutOrACancellationInAKeptWorkerEndsOnlyThatJob() throws {
        let farm = try Farm("kept-stop")
        let warm = try farm.submit([try farm.inspectManifest("w0")])
        let timedOut = try farm.submit(["--timeout", "1", "--max-attempts", "1", try farm.exportManifest("t1", slow: 8)])
        let cancelled = try farm.submit([try farm.exportManifest("c1", slow: 8)])
        let after = try farm.submit([try farm.inspectManifest("w1"), try farm.inspectManifest("w2")])
        let coordinator = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"])
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        #expect(try eventually(120) { try farm.state(cancelled[0]) == "running" }, "\(coordinator.log.suffix(2000))")
        #expect(try farm.mediafarm(["cancel", String(cancelled[0])]).status == 0)
        #expect(coordinator.wait(timeout: 120) != nil, "\(coordinator.log.suffix(2000))")
        let jobs = try farm.status()
        #expect(jobs[warm[0]]?["state"] as? String == "succeeded")
        #expect(jobs[timedOut[0]]?["state"] as? String == "dead" && jobs[timedOut[0]]?.errors.first?.contains("timed out") == true,
                "\(jobs[timedOut[0]] ?? [:])")
        #expect(jobs[cancelled[0]]?["state"] as? String == "cancelled")
        for id in after { #expect(jobs[id]?["state"] as? String == "succeeded" && jobs[id]?.int == 1) }
        let pids = Self.pids(coordinator, warm + timedOut + cancelled + after)
        #expect(pids[0] == pids[1], "the timed-out job ran in the kept worker: \(pids)")
        #expect(pids[2] != pids[1] && pids[3] != pids[2], "a stopped worker is replaced: \(pids)")
        #expect(!FileManager.default.fileExists(atPath: farm.out.appendingPathComponent("t1.mp4").path))
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }
}
