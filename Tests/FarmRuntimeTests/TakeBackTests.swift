import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A coordinator that starts where another of its queue died takes that one's jobs back at once; on
/// another host (another TMPDIR and spool), and for another queue, nothing is taken and nothing is swept.
@Suite(.serialized) struct TakeBackTests {
    @Test func aCoordinatorOnTheSameHostTakesBackTheJobsOfOneThatDied() throws {
        let farm = try Farm("take-back")
        let hostA = farm.folder.appendingPathComponent("host-a-tmp").path
        let hostB = farm.folder.appendingPathComponent("host-b-tmp").path
        for host in [hostA, hostB] { try FileManager.default.createDirectory(atPath: host, withIntermediateDirectories: true) }
        // A host's folders: its TMPDIR and its spool (the spool is host-wide: one host shares it).
        func on(_ host: String) -> [String: String] { ["TMPDIR": host, "MEDIAFARM_SPOOL": host + "-spool"] }
        let id = try farm.submit([try farm.exportManifest("slow", slow: 8)])[0]

        let first = try farm.startCoordinator(["--workers", "1", "--lease", "60", "--host", "a"], log: "first.log", environment: on(hostA))
        #expect(eventually(60) { (try? farm.workerPID(id)) != nil }, "\(first.log)")
        kill(first.pid, SIGKILL)
        _ = first.wait(timeout: 10)
        let killedAt = Date()
        let left = try FileManager.default.contentsOfDirectory(atPath: hostA)
        #expect(left.count == 1 && left[0].hasPrefix("mediafarm-queue-"), "\(left)")
        let queueFolder = hostA + "/" + (left.first ?? "")
        #expect(try FileManager.default.contentsOfDirectory(atPath: queueFolder).contains { $0.hasPrefix("mediafarm-worker-") })

        // Another queue's coordinator on the same host: not its folder, nothing said about it.
        let other = try Farm("take-back-other")
        let stranger = try other.startCoordinator(["--workers", "1", "--exit-when-idle"], log: "other.log", environment: on(hostA))
        #expect(stranger.wait(timeout: 60) == 0, "\(stranger.log)")
        #expect(!stranger.log.contains("folder(s)") && !stranger.log.contains("died on this host"), "\(stranger.log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: queueFolder).contains { $0.hasPrefix("mediafarm-worker-") })

        // The same queue on another host: the dead one's lease still rules there.
        let elsewhere = try farm.startCoordinator(["--workers", "1", "--lease", "60", "--host", "b"], log: "elsewhere.log", environment: on(hostB))
        // Its start is over once it reports in to the queue's list of coordinators: it looks for the
        // coordinators of this queue that died on its host first, and would have taken the job back then.
        func reportedIn(_ host: String) -> Bool {
            guard let r = try? farm.mediafarm(["queue", "stats", "--json"]), r.status == 0,
                  let stats = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
                  let coordinators = stats["coordinators"] as? [[String: Any]] else { return false }
            return coordinators.contains { $0["host"] as? String == host }
        }
        #expect(eventually(60) { reportedIn("b") }, "\(elsewhere.log)")
        #expect(try farm.state(id) == "running", "\(elsewhere.log)")
        #expect(!elsewhere.log.contains("died on this host"), "\(elsewhere.log)")
        kill(elsewhere.pid, SIGTERM)
        #expect(elsewhere.wait(timeout: 60) == 0, "\(elsewhere.log)")

        // The same queue on the same host: the job is back at once, long before the 60 s lease ends, and done.
        let again = try farm.startCoordinator(["--workers", "1", "--lease", "60", "--host", "a", "--exit-when-idle"], log: "again.log",
                                              environment: on(hostA))
        #expect(eventually(30) { again.log.contains("died on this host: taking back its 1 running job(s) now") }, "\(again.log)")
        let tookBack = Date().timeIntervalSince(killedAt)
        #expect(tookBack < 45, "taken back \(tookBack) s after the kill")
        #expect(again.log.contains("removed") && again.log.contains("folder(s) that the workers of a coordinator that is gone left"), "\(again.log)")
        #expect(again.wait(timeout: 180) == 0, "\(again.log)")
        let job = try farm.status()[id]
        #expect(job?["state"] as? String == "succeeded" && job?["attempt"] as? Int == 2, "\(String(describing: job))")
        // The last coordinator of the queue took its folder with it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: hostA).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: hostA + "-spool").isEmpty)
    }
}
