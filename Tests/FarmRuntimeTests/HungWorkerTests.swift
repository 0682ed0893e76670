import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A worker that truly hangs (stopped with SIGSTOP: it cannot even notice its own stall) is ended by
/// the job's timeout, which the coordinator enforces, and the job is retried.
@Suite(.serialized) struct HungWorkerTests {
    @Test func aStoppedWorkerIsTimedOutAndTheJobRetried() throws {
        let farm = try Farm("hung")
        let manifest = try farm.exportManifest("hung", slow: 2)
        // A limit the retry's 20 s of frames keeps well inside on a busy machine too.
        let ids = try farm.submit(["--timeout", "20", manifest])
        let coordinator = try farm.startCoordinator(["--workers", "1", "--exit-when-idle"])
        defer { kill(coordinator.pid, SIGKILL); _ = coordinator.wait(timeout: 5) }
        var pid: Int32?
        #expect(try eventually(30) { pid = try farm.workerPID(ids[0]); return pid != nil })
        let stopped = try #require(pid)
        #expect(kill(stopped, SIGSTOP) == 0)
        #expect(coordinator.wait(timeout: 150) == 0, "\(coordinator.log.suffix(2000))")
        let job = try #require(try farm.status()[ids[0]])
        #expect(job["state"] as? String == "succeeded", "\(job)")
        #expect(job.int == 2)
        #expect(job.errors.count == 1 && job.errors[0].contains("timed out after 20 s"), "\(job.errors)")
        #expect(!isAlive(stopped))
        #expect(try MediaProbe.packets(farm.out.appendingPathComponent("hung.mp4").path, stream: "v").count == 600)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }
}
