import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The farm as operators use it: submit, a coordinator with worker processes, crashes and restarts.
/// Serialized: each test runs real worker processes, and the machine has two cores.
@Suite(.serialized) struct FarmTests {

    @Test func examplesRunThroughTheQueue() async throws {
        let farm = try Farm("basic")
        let ids = try await farm.queued([try farm.exportManifest("a"), try farm.inspectManifest("b")])
        #expect(ids.count == 2)
        #expect(try await farm.jobState(ids[0]) == "queued")
        let coordinator = try await farm.coordinate(["--exit-when-idle"])
        #expect(coordinator.status == 0, "\(coordinator.log)")
        let jobs = try await farm.jobs()
        for id in ids {
            #expect(jobs[id]?["state"] as? String == "succeeded")
            #expect(jobs[id]?.int == 1)
        }
        let result = try #require(jobs[ids[0]]?["result"] as? [String: Any])
        #expect(result["output"] as? String == farm.out.appendingPathComponent("a.mp4").path)
        #expect(try MediaProbe.packets(farm.out.appendingPathComponent("a.mp4").path, stream: "v").count == 300)
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("a.json"))) as? [String: Any]
        #expect((report?["export"] as? [String: Any])?["output"] as? String == farm.out.appendingPathComponent("a.mp4").path)
        #expect(farm.leftovers().isEmpty)
        let started = coordinator.events().filter { $0["event"] as? String == "started" }
        #expect(Set(started.compactMap { ($0["job"] as? NSNumber)?.int64Value }) == Set(ids))
        // The table.
        let table = try farm.mediafarm(["status"])
        #expect(table.status == 0 && table.stdout.contains("succeeded") && table.stdout.contains("a.mp4"))
    }

    @Test func workersKilledAtRandomMomentsAreRetriedAndNothingPartialIsLeft() throws {
        let farm = try Farm("sigkill")
        // About 2 s each; every kill comes within 0.5 s of the worker's start, before it can be finishing.
        let manifests = try (0..<20).map { try farm.exportManifest("kill\($0)", slow: 2) }
        let ids = try farm.submit(manifests)
        // A process per job: a kept worker goes on to its next job a moment before the queue shows the
        // last one ended, so a kill aimed at one job by its worker's pid could land on the next.
        // (KeptWorkerTests kills a kept worker in the middle of a job.)
        let coordinator = try farm.startCoordinator(["--workers", "2", "--lease", "5", "--jobs-per-worker", "1"])
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        var kills: [Int64: Int] = [:]
        for (seed, id) in ids.enumerated() {
            var random = SeededRandom(state: UInt64(seed + 1))
            var pid: Int32?
            let seen = try eventually(60) {
                pid = try farm.workerPID(id)
                if pid != nil { return true }
                return try farm.state(id) == "succeeded"
            }
            #expect(seen, "job \(id) never ran")
            guard let pid else { continue }  // it ended before this test saw it: no kill
            usleep(UInt32.random(in: 0...500_000, using: &random))
            // Only a kill that lands on a live worker counts.
            if isAlive(pid), kill(pid, SIGKILL) == 0 { kills[id] = 1 }
        }
        // A limit on a queue that never empties, not on its speed: busy, the 20 jobs and their retries took
        // longer than 120 s.
        let done = try eventually(600) { try farm.status().values.allSatisfy { ($0["state"] as? String) == "succeeded" } }
        #expect(done, "\(coordinator.log.suffix(2000))")
        let jobs = try farm.status()
        #expect(jobs.count == 20)
        #expect(kills.values.reduce(0, +) >= 10, "most kills should land: \(kills.count)")
        for (n, id) in ids.enumerated() {
            let job = try #require(jobs[id])
            #expect(job["state"] as? String == "succeeded")
            #expect(job.int == (kills[id] ?? 0) + 1, "job \(id): attempt \(job.int ?? -1), killed \(kills[id] ?? 0) times")
            #expect(job.errors.count == kills[id] ?? 0)
            #expect(job.errors.allSatisfy { $0.contains("SIGKILL") })
            let output = farm.out.appendingPathComponent("kill\(n).mp4").path
            #expect(try MediaProbe.packets(output, stream: "v").count == 600, "\(output)")
        }
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    @Test func jobsOfAKilledCoordinatorAreRescuedAndCompleteOnce() throws {
        let farm = try Farm("rescue")
        let ids = try farm.submit([try farm.exportManifest("r1", slow: 4), try farm.exportManifest("r2", slow: 4)])
        let first = try farm.startCoordinator(["--workers", "2", "--lease", "2"], log: "first.log")
        var pids: [Int32] = []
        #expect(try eventually(30) {
            pids = try ids.compactMap { try farm.workerPID($0) }
            return pids.count == 2
        })
        kill(first.pid, SIGKILL)
        _ = first.wait(timeout: 5)
        // Its workers die with it.
        #expect(eventually(20) { pids.allSatisfy { !isAlive($0) } })
        #expect(try ids.allSatisfy { try farm.state($0) == "running" })
        // The first's 2 s leases are what expire; the second's own are long, so that a busy machine's pause
        // in its heartbeat cannot cost its attempts a lease.
        let second = try farm.startCoordinator(["--workers", "2", "--lease", "20", "--exit-when-idle"], log: "second.log")
        #expect(second.wait(timeout: 90) == 0, "\(second.log)")
        let jobs = try farm.status()
        for id in ids {
            let job = try #require(jobs[id])
            #expect(job["state"] as? String == "succeeded")
            #expect(job.int == 2)
            #expect(job.errors.count == 1 && job.errors[0].contains("expired"))
        }
        let finished = second.events().filter { $0["event"] as? String == "finished" && $0["state"] as? String == "succeeded" }
        #expect(finished.count == 2)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// A killed attempt's staged movie is removed by the rescuer even when its manifest no longer checks
    /// against the files (its report's path became a hard link to its input in between): the outputs are
    /// found from the manifest's shape, and the notice says so.
    @Test func whatAKilledAttemptStagedIsRemovedWhenItsManifestNoLongerChecks() async throws {
        let farm = try Farm("rescue-gone")
        let id = try farm.submit([try farm.exportManifest("g", slow: 4)])[0]
        let first = try farm.startCoordinator(["--workers", "1", "--lease", "2"], log: "first.log")
        var worker: Int32?
        #expect(try eventually(30) {
            worker = try farm.workerPID(id)
            return worker != nil
        })
        #expect(!TestPaths.waitForTemporary(in: farm.out, timeout: 30, holding: 16 << 10).isEmpty, "the worker wrote nothing")
        kill(first.pid, SIGKILL)
        _ = first.wait(timeout: 5)
        let pid = try #require(worker)
        #expect(eventually(20) { !isAlive(pid) })
        #expect(!farm.leftovers().isEmpty, "nothing was staged")
        try FileManager.default.linkItem(at: farm.folder.appendingPathComponent("in.mp4"), to: farm.out.appendingPathComponent("g.json"))
        // The job comes back to the queue and fails for good: its report would overwrite its input.
        let second = try await farm.coordinate(["--workers", "1", "--lease", "20", "--exit-when-idle"])
        #expect(second.status == 1, "\(second.log)")
        #expect(second.log.contains("its manifest no longer checks against the files")
                && second.log.contains("what its attempt staged was looked for where the manifest names its outputs"), "\(second.log)")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    @Test func aStaleWorkerNeverPublishes() throws {
        let farm = try Farm("stale")
        let id = try farm.submit([try farm.exportManifest("s", slow: 3)])[0]
        let first = try farm.startCoordinator(["--workers", "1", "--lease", "2"], log: "first.log")
        var stalePID: Int32?
        #expect(try eventually(30) {
            stalePID = try farm.workerPID(id)
            return stalePID != nil
        })
        let workerPID = try #require(stalePID)
        // Stopped mid-export: part of its movie written.
        #expect(!TestPaths.waitForTemporary(in: farm.out, timeout: 30, holding: 16 << 10).isEmpty, "the worker wrote nothing")
        kill(first.pid, SIGSTOP)
        kill(workerPID, SIGSTOP)
        // (Its own lease long: only the stopped first's must expire.)
        let second = try farm.startCoordinator(["--workers", "1", "--lease", "20", "--exit-when-idle"], log: "second.log")
        #expect(second.wait(timeout: 90) == 0, "\(second.log)")
        let output = farm.out.appendingPathComponent("s.mp4").path
        let before = try FileManager.default.attributesOfItem(atPath: output)
        let afterSecond = try #require(try farm.status()[id])
        #expect(afterSecond["state"] as? String == "succeeded" && afterSecond.int == 2)

        // The stale attempt wakes up and runs on.
        kill(workerPID, SIGCONT)
        kill(first.pid, SIGCONT)
        #expect(eventually(20) {
            first.events().contains { $0["event"] as? String == "finished" && ["lost", "stale", "succeeded"].contains($0["state"] as? String ?? "") }
        }, "\(first.log)")
        let staleEnd = first.events().last { $0["event"] as? String == "finished" }
        #expect(staleEnd?["state"] as? String != "succeeded", "\(first.log)")
        kill(first.pid, SIGTERM)
        #expect(first.wait(timeout: 30) == 0, "\(first.log)")

        let after = try FileManager.default.attributesOfItem(atPath: output)
        #expect(after[.systemFileNumber] as? Int == before[.systemFileNumber] as? Int, "the output was replaced by the stale attempt")
        #expect(after[.modificationDate] as? Date == before[.modificationDate] as? Date)
        let job = try #require(try farm.status()[id])
        #expect(job["state"] as? String == "succeeded" && job.int == 2 && job["finishedAt"] as? String == afterSecond["finishedAt"] as? String)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    @Test func aWorkerThatCrashesEveryTimeEndsDeadWhileOthersFlow() async throws {
        let farm = try Farm("crash")
        let script = farm.folder.appendingPathComponent("worker.sh").path
        try """
            #!/bin/sh
            # A kept worker reads a job per line: the wrapper passes them on, and crashes (its whole
            # process group, the worker included) on the poisoned one. The worker is already running:
            # without its crash backtrace (seconds of symbolication in a debug build under load).
            export SWIFT_BACKTRACE=enable=no
            while IFS= read -r job; do
                case "$job" in *crash-me*) for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "crash log line $i" >&2; done; kill -SEGV 0 ;; esac
                printf '%s\n' "$job"
            done | "\(TestPaths.mediafarmExecutable)" worker "$@"
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let crash = try await farm.queued(["--max-attempts", "3", try farm.inspectManifest("crash-me")])[0]
        let others = try await farm.queued((0..<4).map { try farm.inspectManifest("fine\($0)") })
        let coordinator = try await farm.coordinate(["--workers", "2", "--exit-when-idle", "--worker-command", script])
        #expect(coordinator.status == 1, "\(coordinator.log)")
        let jobs = try await farm.jobs()
        let dead = try #require(jobs[crash])
        #expect(dead["state"] as? String == "dead" && dead.int == 3)
        #expect(dead.errors.count == 3 && dead.errors.allSatisfy { $0.contains("SIGSEGV") }, "\(dead.errors)")
        // Each attempt's error ends with the worker's last 10 lines.
        let tail = (3...12).map { "crash log line \($0)" }.joined(separator: "\n")
        #expect(dead.errors.allSatisfy { $0.hasSuffix("; its last output:\n" + tail) }, "\(dead.errors)")
        let attempts = (dead["errors"] as? [[String: Any]] ?? []).compactMap { ($0["attempt"] as? NSNumber)?.intValue }
        #expect(attempts == [1, 2, 3])
        for id in others { #expect(jobs[id]?["state"] as? String == "succeeded") }
        // The fine jobs did not wait for the crashing one's retries.
        let finished = coordinator.events().filter { $0["event"] as? String == "finished" }
        let lastFine = finished.lastIndex { $0["state"] as? String == "succeeded" } ?? 99
        let deadAt = finished.firstIndex { $0["state"] as? String == "dead" } ?? -1
        #expect(lastFine < deadAt)
    }

    @Test func sigtermDrains() throws {
        // Finishing within the grace period.
        let farm = try Farm("drain")
        // Long enough (about 4 s) that no slot frees before the SIGTERM.
        let ids = try farm.submit([try farm.exportManifest("d1", slow: 4), try farm.exportManifest("d2", slow: 4)])
        let coordinator = try farm.startCoordinator(["--workers", "2", "--grace", "60"])
        #expect(try eventually(30) { try ids.allSatisfy { try farm.workerPID($0) != nil } })
        let queuedLater = try farm.submit([try farm.inspectManifest("later")])[0]
        kill(coordinator.pid, SIGTERM)
        #expect(coordinator.wait(timeout: 60) == 0, "\(coordinator.log)")
        let jobs = try farm.status()
        for id in ids { #expect(jobs[id]?["state"] as? String == "succeeded") }
        #expect(jobs[queuedLater]?["state"] as? String == "queued", "no new claims while draining")

        // Past the grace period: given back without using up an attempt.
        let slow = try Farm("drain-grace")
        let slowIDs = try slow.submit([try slow.exportManifest("g1", slow: 8), try slow.exportManifest("g2", slow: 8)])
        let impatient = try slow.startCoordinator(["--workers", "2", "--grace", "0.5"])
        #expect(try eventually(30) { try slowIDs.allSatisfy { try slow.workerPID($0) != nil } })
        kill(impatient.pid, SIGTERM)
        #expect(impatient.wait(timeout: 30) == 0, "\(impatient.log)")
        let released = try slow.status()
        for id in slowIDs {
            #expect(released[id]?["state"] as? String == "queued")
            #expect(released[id]?.int == 0 && released[id]?.errors.isEmpty == true)
        }
        #expect(slow.leftovers().isEmpty, "\(slow.leftovers())")
        #expect(!FileManager.default.fileExists(atPath: slow.out.appendingPathComponent("g1.mp4").path))
    }

    /// A cancel stops the running worker (the coordinator looks every 0.25 s) and leaves no temporary. The
    /// worker would not have ended by itself: a coordinator keeps its worker processes between jobs.
    @Test func cancelStopsTheWorkerAndLeavesNothing() throws {
        let farm = try Farm("cancel")
        let id = try farm.submit([try farm.exportManifest("c", slow: 8)])[0]
        let queuedID = try farm.submit(["--delay", "600", try farm.inspectManifest("never")])[0]
        let coordinator = try farm.startCoordinator(["--workers", "1"])
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        var pid: Int32?
        #expect(try eventually(30) {
            pid = try farm.workerPID(id)
            return pid != nil
        })
        let worker = try #require(pid)
        #expect(!TestPaths.waitForTemporary(in: farm.out, timeout: 30, holding: 16 << 10).isEmpty, "the worker wrote nothing")  // part of the movie
        let r = try farm.mediafarm(["cancel", String(id), String(queuedID)])
        #expect(r.status == 0 && r.stdout.contains("job \(id) (c) cancelled"), "\(r.stderr)")
        #expect(eventually(20) { !isAlive(worker) }, "worker \(worker) still running 20 s after the cancel was recorded")
        #expect(eventually(20) { farm.leftovers().isEmpty }, "\(farm.leftovers())")
        #expect(!FileManager.default.fileExists(atPath: farm.out.appendingPathComponent("c.mp4").path))
        #expect(try farm.state(id) == "cancelled" && farm.state(queuedID) == "cancelled")
        // Cancelling an ended job is refused; a retry queues it again.
        #expect(try farm.mediafarm(["cancel", String(id)]).status == 1)
        kill(coordinator.pid, SIGTERM)
        #expect(coordinator.wait(timeout: 30) == 0)
        // A cancel is no worker's fault: nothing is said of replacing it.
        #expect(!coordinator.log.contains("worker replaced"), "\(coordinator.log)")
        let retry = try farm.mediafarm(["retry", "--json", String(queuedID)])
        let state = try farm.state(queuedID)
        #expect(retry.status == 0 && state == "queued")
        let retried = try JSONSerialization.jsonObject(with: Data(retry.stdout.utf8)) as? [[String: Any]]
        #expect(retried?.first?["state"] as? String == "queued" && retried?.first?.int == 0)
        let cancelledOnly = try farm.mediafarm(["status", "--state", "cancelled"])
        #expect(cancelledOnly.stdout.contains("c ") && !cancelledOnly.stdout.contains("never"), "\(cancelledOnly.stdout)")
        #expect(try farm.mediafarm(["status", "--state", "lost"]).status == 2)
    }

    @Test func aJobOverItsTimeoutIsKilledAndCountedAsAFailedAttempt() async throws {
        let farm = try Farm("timeout")
        let id = try await farm.queued(["--timeout", "1", "--max-attempts", "1", try farm.exportManifest("t", slow: 8)])[0]
        let coordinator = try await farm.coordinate(["--exit-when-idle"])
        #expect(coordinator.status == 1, "\(coordinator.log)")
        let job = try #require(try await farm.jobs()[id])
        #expect(job["state"] as? String == "dead")
        #expect(job.errors == ["timed out after 1 s: worker killed"])
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    @Test func workersRunUnderResourceLimits() async throws {
        let farm = try Farm("limits")
        let id = try await farm.queued(["--max-attempts", "1", try farm.exportManifest("big")])[0]
        let coordinator = try await farm.coordinate(["--exit-when-idle", "--max-file-size", "64K"])
        // A limit the workers run under, not the coordinator.
        #expect(coordinator.status == 1, "\(coordinator.log)")
        let job = try #require(try await farm.jobs()[id])
        // Past the limit, writes fail (or SIGXFSZ ends the worker): the attempt fails with the reason.
        #expect(["failed", "dead"].contains(job["state"] as? String ?? ""))
        #expect(job.errors.first.map { $0.contains("File too large") || $0.contains("SIGXFSZ") } == true, "\(job.errors)")
        #expect(!FileManager.default.fileExists(atPath: farm.out.appendingPathComponent("big.mp4").path))
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    @Test func submitWaitFollowsItsJobsToTheEnd() throws {
        let farm = try Farm("wait")
        _ = try farm.submit(["--delay", "600", try farm.inspectManifest("unrelated")])  // creates the queue
        let coordinator = try farm.startCoordinator(["--workers", "2"])
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        let ok = try farm.mediafarm(["submit", "--wait", try farm.inspectManifest("fine")])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("queued job 2 (fine)") && ok.stdout.contains("succeeded"), "\(ok.stdout)")
        let broken = try farm.inspectManifest("broken", input: "absent.mp4")
        let refused = try farm.mediafarm(["submit", "--wait", broken])
        #expect(refused.status == 2 && refused.stderr.contains("--allow-missing-inputs"), "\(refused.stderr)")
        let bad = try farm.mediafarm(["submit", "--wait", "--allow-missing-inputs", broken])
        #expect(bad.status == 1)
        #expect(bad.stdout.contains("failed") && bad.stdout.contains("absent.mp4"), "\(bad.stdout)")
        #expect(try farm.state(1) == "queued")
    }

    /// A coordinator's memory does not grow with the jobs it has run: resident memory late in 1,500 real jobs
    /// (the last reading before it ends, after at least 1,200) within 6 MB of what it was after 300 (a task
    /// group that kept every finished job's task grew it by about 16 KB a job, 14 MB over 900). The
    /// coordinator exits when idle, so it is read while it runs, not once the count is reached (on a busy
    /// machine it had run its last jobs and gone by then). `bench/coordinator-memory.sh` runs 20,000.
    @Test func aCoordinatorsMemoryStaysFlatOverALongRun() throws {
        let farm = try Farm("long-run")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: farm.folder.appendingPathComponent("small.mp4").path)
        let manifests = try (0..<1500).map { try farm.inspectManifest("j\($0)", input: "small.mp4") }
        for start in stride(from: 0, to: manifests.count, by: 500) {
            _ = try farm.submit(Array(manifests[start..<min(start + 500, manifests.count)]))
        }
        let coordinator = try farm.startCoordinator(["--workers", "2", "--exit-when-idle"])
        func finished() -> Int { coordinator.log.components(separatedBy: #""event":"finished""#).count - 1 }
        func residentKB() -> Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(coordinator.pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
            return Int(line.split(separator: " ")[1])
        }
        #expect(eventually(300) { finished() >= 300 }, "\(coordinator.log.suffix(2000))")
        let early = try #require(residentKB())
        // Read every half second until it ends (each reading counts the log's events: not more often).
        var late: (finished: Int, kb: Int)?
        let deadline = Date().addingTimeInterval(600)
        while Date() < deadline {
            let done = finished()
            guard let kb = residentKB() else { break }  // it ended
            late = (done, kb)
            usleep(500_000)
        }
        #expect(coordinator.wait(timeout: 60) == 0, "\(coordinator.log.suffix(2000))")
        let last = try #require(late)
        #expect(last.finished >= 1200, "the last reading was after \(last.finished) jobs")
        #expect(last.kb - early < 6 * 1024, "resident memory grew from \(early) KB after 300 jobs to \(last.kb) KB after \(last.finished)")
        #expect(try farm.status().values.allSatisfy { $0["state"] as? String == "succeeded" })
    }

    @Test func aStandbyWorkerThatDiedIdleCostsNoAttempt() throws {
        let farm = try Farm("standby")
        let coordinator = try farm.startCoordinator(["--workers", "2"])
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        // The standby processes waiting for jobs: children of the coordinator running `worker --standby`.
        var standbys: [Int32] = []
        #expect(eventually(10) {
            standbys = Self.children(of: coordinator.pid).filter {
                ((try? String(contentsOfFile: "/proc/\($0)/cmdline", encoding: .utf8)) ?? "").contains("--standby")
            }
            return standbys.count == 2
        })
        for pid in standbys { kill(pid, SIGKILL) }
        let id = try farm.submit([try farm.inspectManifest("after")])[0]
        #expect(try eventually(30) { try farm.state(id) == "succeeded" })
        let job = try #require(try farm.status()[id])
        #expect(job.int == 1 && job.errors.isEmpty)
    }

    static func children(of parent: Int32) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(parent)/task")) ?? []
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(parent)/task/\(task)/children", encoding: .utf8)) ?? "")
                .split(separator: " ").compactMap { Int32($0) }
        }
    }

    @Test func concurrentSubmittersOfOneUniqueKeyMakeOneLiveJob() async throws {
        let farm = try Farm("unique")
        let manifest = try farm.inspectManifest("nightly")
        let outputs = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try farm.mediafarm(["submit", "--unique-key", "nightly-ingest"] + Array(repeating: manifest, count: 100))
                }
            }
            var all: [ProcessResult] = []
            for try await r in group { all.append(r) }
            return all
        }
        #expect(outputs.allSatisfy { $0.status == 0 }, "\(outputs.map(\.stderr))")
        let jobs = try farm.status()
        #expect(jobs.count == 1)
        let id = try #require(jobs.keys.first)
        let lines = outputs.flatMap { $0.stdout.split(separator: "\n") }
        #expect(lines.count == 800)
        #expect(lines.filter { $0.hasPrefix("queued job \(id) ") }.count == 1)
        #expect(lines.filter { $0.hasPrefix("job \(id) already holds key nightly-ingest") }.count == 799)
    }

    @Test func badInputAsANewUserWouldTryIt() throws {
        let farm = try Farm("bad")
        // Invalid manifests: every error, nothing queued (not even the valid one).
        let good = try farm.inspectManifest("good")
        let bad = try farm.manifest("bad", #"{ "version": 2, "input": "in.mp4", "export": { "mode": "fast" } }"#)
        let r = try farm.mediafarm(["submit", good, bad])
        #expect(r.status == 2)
        #expect(r.stderr.contains("bad.json") && r.stderr.contains("$.version") && r.stderr.contains("$.export.mode"), "\(r.stderr)")
        #expect(r.stderr.contains("nothing was queued"))
        #expect(!FileManager.default.fileExists(atPath: farm.queue))
        #expect(try farm.mediafarm(["submit", farm.folder.appendingPathComponent("nope.json").path]).stderr.contains("nope.json: no such manifest file"))

        // A missing input and an unwritable output folder: queued, then failed with the reason, not retried.
        let missing = try farm.inspectManifest("missing", input: "gone.mp4")
        let locked = farm.folder.appendingPathComponent("locked")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
        let unwritable = try farm.manifest("unwritable", """
            { "version": 1, "input": "in.mp4", "export": { "mode": "passthrough", "output": "locked/out.mp4" } }
            """)
        // (submit refuses an input that is not there unless told it will be: here the worker must see it gone)
        let ids = try farm.submit(["--allow-missing-inputs", missing, unwritable])
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: locked.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: locked.path) }
        // As root every folder is writable: run the workers as nobody's group-less uid where possible.
        let asRoot = getuid() == 0
        let coordinatorArgs = ["--exit-when-idle"] + (asRoot ? ["--worker-command", "setpriv --reuid=65534 --regid=65534 --clear-groups \(TestPaths.mediafarmExecutable) worker"] : [])
        if asRoot {
            // nobody must be able to read the input, the queue's folder and the binary.
            chmod(farm.folder.path, 0o755)
            var dir = farm.folder.deletingLastPathComponent()
            while dir.path != "/" { chmod(dir.path, 0o755); dir = dir.deletingLastPathComponent() }
        }
        let coordinator = try farm.startCoordinator(coordinatorArgs)
        #expect(coordinator.wait(timeout: 60) == 1, "\(coordinator.log)")
        let jobs = try farm.status()
        #expect(jobs[ids[0]]?["state"] as? String == "failed" && jobs[ids[0]]?.int == 1)
        #expect(jobs[ids[0]]?.errors.first?.contains("gone.mp4") == true, "\(jobs[ids[0]]?.errors ?? [])")
        #expect(jobs[ids[1]]?["state"] as? String == "failed", "\(jobs[ids[1]] ?? [:])")
        #expect(jobs[ids[1]]?.errors.first?.contains("not writable") == true, "\(jobs[ids[1]]?.errors ?? [])")

        // A queue file that is not a database: refused, and left as it was.
        let notes = farm.folder.appendingPathComponent("notes.txt").path
        try "not a queue\n".write(toFile: notes, atomically: true, encoding: .utf8)
        for args in [["submit", "--queue", notes, good], ["status", "--queue", notes], ["coordinator", "--queue", notes, "--exit-when-idle"]] {
            let r = try farm.mediafarm(args)
            #expect(r.status == 2 && r.stderr.contains("notes.txt: not a MediaFarm queue"), "\(args[0]): \(r.stderr)")
        }
        #expect(try String(contentsOfFile: notes, encoding: .utf8) == "not a queue\n")
        // No queue at all: status says so instead of creating one.
        let empty = try farm.mediafarm(["status", "--queue", farm.folder.appendingPathComponent("none.sqlite").path])
        #expect(empty.status == 2 && empty.stderr.contains("no queue there"))
        // A server that is not there: named, with the reason, exit 1; a URL with a parameter nobody knows: exit 2.
        let absent = try farm.mediafarm(["status", "--queue", "postgres://farm@127.0.0.1:1/farm?connect_timeout=5"])
        #expect(absent.status == 1 && absent.stderr.contains("postgres://farm@127.0.0.1:1/farm: cannot connect") && absent.stderr.contains("refused"))
        let unknown = try farm.mediafarm(["status", "--queue", "postgres://farm@db/farm?sslmod=disable"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown parameter \"sslmod\""))
    }
}
