internal import CProcessShims
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A started child process, named by identity: signals go through a pidfd taken before the child
/// could be reaped, and to its process group only while the child is not yet reaped (so the group id
/// cannot have been reused). Once `wait()` has reaped it, `signal` does nothing: a pid reused by an
/// unrelated process is never signalled.
///
/// Thread-safe: `signal` may come from any thread while one thread waits.
final class ChildProcess: Sendable {
    let pid: Int32
    private struct State {
        var pidfd: Int32
        var reaped = false
        var killed = false
    }
    private let state: Mutex<State>

    /// Takes ownership of `pid`, a child of this process not yet waited for.
    init(pid: Int32) {
        self.pid = pid
        let fd = mf_pidfd_open(pid)
        state = Mutex(State(pidfd: fd >= 0 ? fd : -1))
    }

    deinit {
        state.withLock { if $0.pidfd >= 0 { close($0.pidfd) } }
    }

    /// Sends `signal` to the child and its process group, unless it has been reaped.
    func signal(_ signal: Int32) {
        state.withLock { s in
            guard !s.reaped else { return }
            // The leader is not reaped: its group id still names its group.
            Glibc.kill(-pid, signal)
            if s.pidfd >= 0 { _ = mf_pidfd_signal(s.pidfd, signal) } else { Glibc.kill(pid, signal) }
        }
    }

    /// Kills the child and anything it started.
    func kill() {
        state.withLock { $0.killed = true }
        signal(SIGKILL)
    }

    /// Whether this process killed it (`kill`): a job cancelled or lost, not a worker that died.
    var wasKilled: Bool { state.withLock { $0.killed } }

    /// Whether the child has exited (it is not reaped by asking).
    var hasExited: Bool {
        state.withLock { s in
            if s.reaped { return true }
            return s.pidfd >= 0 ? mf_pidfd_wait_exit(s.pidfd, 0) == 1 : mf_wait_exit_nowait(pid, 0) == 1
        }
    }

    /// Waits up to `milliseconds` for the child to exit, without reaping it: whether it has.
    func waitForExit(milliseconds: Int32) -> Bool {
        let fd = state.withLock { $0.reaped ? -2 : $0.pidfd }
        if fd == -2 { return true }
        if fd >= 0 { return mf_pidfd_wait_exit(fd, milliseconds) == 1 }
        return mf_wait_exit_nowait(pid, 0) == 1
    }

    /// Waits for the child to exit and reaps it; the raw wait status. Call once.
    func wait() -> Int32 {
        let fd = state.withLock { $0.pidfd }
        // Wait for the exit without reaping, so that `signal` stays safe until the reaping below.
        if fd >= 0 { _ = mf_pidfd_wait_exit(fd, -1) } else { _ = mf_wait_exit_nowait(pid, 1) }
        return state.withLock { s in
            var status: Int32 = 0
            _ = mf_wait(pid, &status)
            s.reaped = true
            return status
        }
    }
}
