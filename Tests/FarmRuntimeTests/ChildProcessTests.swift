import Foundation
import Testing
@testable import FarmRuntime
#if canImport(Glibc)
import Glibc
#endif

/// Child processes are signalled by identity: never through a pid after it was reaped.
@Suite(.serialized) struct ChildProcessTests {
    static let folders = WorkerFolders(queue: "child-process-tests", owner: "test:1:1", environment: ProcessInfo.processInfo.environment)

    func spawn(_ script: String) throws -> WorkerProcess.Spawned {
        let spawned = try WorkerProcess.spawn(command: ["/bin/sh", "-c", script], limits: WorkerLimits(), folders: Self.folders)
        for fd in [spawned.stdin, spawned.stdout, spawned.stderr] { close(fd) }
        return spawned
    }

    @Test func killReachesALiveChildAndItsGroup() throws {
        let spawned = try spawn("sleep 30 & wait")
        #expect(!spawned.child.hasExited)
        spawned.child.kill()
        let status = spawned.child.wait()
        #expect(status & 0x7f == SIGKILL)
        #expect(spawned.child.hasExited)
    }

    /// The pid of a reaped worker is handed to a new, unrelated process (forced through ns_last_pid):
    /// killing the old worker must not touch it.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isWritableFile(atPath: "/proc/sys/kernel/ns_last_pid"),
                   "forcing a pid needs root and /proc/sys/kernel/ns_last_pid"))
    func aReapedChildsReusedPidIsNeverSignalled() throws {
        let old = try spawn("exit 0")
        _ = old.child.wait()
        var stranger: WorkerProcess.Spawned?
        for _ in 0..<200 {
            try "\(old.pid - 1)".write(toFile: "/proc/sys/kernel/ns_last_pid", atomically: false, encoding: .utf8)
            let p = try spawn("exec sleep 30")
            if p.pid == old.pid { stranger = p; break }
            p.child.kill()
            _ = p.child.wait()
        }
        let reused = try #require(stranger, "could not make a new process take pid \(old.pid)")
        old.child.kill()
        old.child.signal(SIGTERM)
        // Seen without waiting any length of time: the stranger is then ended with a signal of this test's
        // own, SIGPROF. A fatal signal decides the process's end when it is sent (the kernel marks the whole
        // group exiting with that signal, and a later one is thrown away): a SIGKILL or SIGTERM (its default
        // action, which the spawn leaves in place) sent by the old child's handle would already have done so.
        // So it dies of SIGPROF only if neither of the old child's signals reached it.
        reused.child.signal(SIGPROF)
        let status = reused.child.wait()
        #expect(status & 0x7f == SIGPROF, "the process that reused the pid was signalled: it ended by signal \(status & 0x7f), not SIGPROF")
    }
}
