import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A long-running process (posix_spawn), its output appended to a log file.
public final class Background: @unchecked Sendable {
    public let pid: pid_t
    public let logPath: String
    private var status: Int32?

    public init(_ command: [String], log: String, environment: [String: String]? = nil) throws {
        logPath = log
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process: a pipe another test's `ProcessRunner` has open at this moment must not
        // stay open in a long-lived child (that test would wait for its end of file as long as the child lives).
        // (glibc's posix_spawn_file_actions_addclosefrom_np is not visible to Swift: every descriptor open now
        // is marked close-on-exec instead.)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let fd = Int32(name), fd > 2 { _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) }
        }
        // Signals at their defaults and unblocked, whatever the test process ignores or blocks (an ignored
        // SIGTERM would be inherited, and `kill(SIGTERM)` would not stop the child).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), empty = sigset_t()
        sigfillset(&defaults)
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { env.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, &attributes, argv, env)
        guard result == 0 else { throw FixtureError("cannot start \(command[0]): \(String(cString: strerror(result)))") }
        self.pid = pid
    }

    public func kill(_ signal: Int32) {
        if status == nil { Glibc.kill(pid, signal) }
    }

    /// The exit status (128 + signal when killed), or nil if still running after `timeout` seconds.
    public func wait(timeout: Double) -> Int32? {
        if let status { return status }
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid {
                status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
                return status
            }
            usleep(20_000)
        } while Date() < deadline
        return nil
    }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}
