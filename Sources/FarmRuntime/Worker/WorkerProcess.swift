internal import CProcessShims
import Foundation
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// Resource limits applied to every worker process (0: inherited).
public struct WorkerLimits: Sendable, Hashable {
    public var addressSpaceBytes: UInt64
    public var cpuSeconds: UInt64
    public var fileSizeBytes: UInt64

    public static let `default` = WorkerLimits(addressSpaceBytes: 8 << 30, cpuSeconds: 0, fileSizeBytes: 0)

    public init(addressSpaceBytes: UInt64 = 0, cpuSeconds: UInt64 = 0, fileSizeBytes: UInt64 = 0) {
        self.addressSpaceBytes = addressSpaceBytes
        self.cpuSeconds = cpuSeconds
        self.fileSizeBytes = fileSizeBytes
    }
}

/// How a worker process ended.
public struct WorkerExit: Sendable, Hashable {
    /// Exit status, when it exited.
    public var status: Int32?
    /// The signal that ended it, when one did.
    public var signal: Int32?
    /// The last lines it wrote to stderr (at most 4 KiB).
    public var stderrTail: String

    public var description: String {
        if let signal { return "killed by signal \(WorkerExit.signalName(signal))" }
        return "exited with status \(status ?? -1)"
    }

    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV", SIGABRT: "SIGABRT", SIGTERM: "SIGTERM", SIGBUS: "SIGBUS",
                                      SIGILL: "SIGILL", SIGTRAP: "SIGTRAP", SIGFPE: "SIGFPE", SIGXCPU: "SIGXCPU (CPU time limit)",
                                      SIGXFSZ: "SIGXFSZ (file size limit)", SIGINT: "SIGINT", SIGPIPE: "SIGPIPE"]
        return names[signal] ?? "\(signal)"
    }
}

/// Runs one worker process on a thread of its own: starts it (own process group, resource limits, killed
/// if that thread ends), writes `input` to its stdin, hands each stdout line to `onLine`, keeps the tail of
/// its stderr, and reaps it. Blocking calls stay on that thread, off Swift's cooperative pool.
enum WorkerProcess {
    struct StartError: Error, CustomStringConvertible {
        var description: String
    }

    /// A started process and our ends of its pipes.
    struct Spawned {
        var child: ChildProcess
        var stdin: Int32
        var stdout: Int32
        var stderr: Int32
        /// The worker's TMPDIR and spool, made for it and removed when it has been reaped, however it ended
        /// (`WorkerFolders`).
        var folders: [String] = []
        var pid: Int32 { child.pid }
    }

    /// Removes a reaped worker's folders and whatever it left there.
    static func removeTemporaries(_ process: Spawned) {
        WorkerFolders.remove(process.folders)
    }

    static func run(command: [String], input: Data, limits: WorkerLimits, folders: WorkerFolders,
                    onStart: @escaping @Sendable (ChildProcess) -> Void,
                    onLine: @escaping @Sendable (Substring) -> Void) async throws -> WorkerExit {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<WorkerExit, any Error>) in
            let thread = Thread {
                do {
                    let process = try spawn(command: command, limits: limits, folders: folders)
                    onStart(process.child)
                    continuation.resume(returning: drive(process, input: input, onLine: onLine))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "mediafarm-worker-supervisor"
            thread.start()
        }
    }

    /// Starts `command` with pipes on its stdin, stdout and stderr. Call it on the thread that will
    /// supervise the process: the process is killed when that thread ends.
    static func spawn(command: [String], limits: WorkerLimits, folders: WorkerFolders) throws -> Spawned {
        guard let name = command.first else { throw StartError(description: "no worker command") }
        guard let executable = resolve(name) else { throw StartError(description: "\(name): worker command not found") }
        var stdinPipe: [Int32] = [0, 0], stdoutPipe: [Int32] = [0, 0], stderrPipe: [Int32] = [0, 0]
        guard mf_pipe(&stdinPipe) == 0 else { throw StartError(description: "cannot make a pipe: \(String(cString: strerror(errno)))") }
        guard mf_pipe(&stdoutPipe) == 0 else {
            close(stdinPipe[0]); close(stdinPipe[1])
            throw StartError(description: "cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        guard mf_pipe(&stderrPipe) == 0 else {
            for fd in stdinPipe + stdoutPipe { close(fd) }
            throw StartError(description: "cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        let argv = command.map { strdup($0) } + [nil]
        // The worker refuses outputs that are this process's own files too.
        var environment = ProcessInfo.processInfo.environment
        environment[ProtectedFiles.environmentKey] = ProtectedFiles.shared.environmentValue
        let made = folders.make(&environment)
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        let pid = mf_spawn(executable, argv, envp, stdinPipe[0], stdoutPipe[1], stderrPipe[1],
                           limits.addressSpaceBytes, limits.cpuSeconds, limits.fileSizeBytes)
        close(stdinPipe[0]); close(stdoutPipe[1]); close(stderrPipe[1])
        guard pid > 0 else {
            for fd in [stdinPipe[1], stdoutPipe[0], stderrPipe[0]] { close(fd) }
            WorkerFolders.remove(made)
            throw StartError(description: "\(executable): cannot start the worker: \(String(cString: strerror(-pid)))")
        }
        return Spawned(child: ChildProcess(pid: pid), stdin: stdinPipe[1], stdout: stdoutPipe[0], stderr: stderrPipe[0],
                       folders: made)
    }

    /// Whether a started process is still there (not exited). It is not reaped by asking.
    static func isRunning(_ process: Spawned) -> Bool { !process.child.hasExited }

    /// Writes `input` to the process, reads its output to the end, and reaps it.
    static func drive(_ process: Spawned, input: Data, onLine: @Sendable (Substring) -> Void) -> WorkerExit {
        // The manifest, then end of input. A worker that dies first makes this fail with EPIPE: its exit says why.
        write(input, to: process.stdin)
        close(process.stdin)
        let ended = read(process, untilEndLine: false, onLine: onLine)
        close(process.stdout)
        close(process.stderr)
        return ended.exit
    }

    /// How one job on a kept worker ended: its exit (the status the worker reported, or how the process
    /// ended when it died during the job) and the worker's "ended" line (nil when it died: it is reaped).
    struct JobEnded {
        var exit: WorkerExit
        var end: WorkerJobEnd?
    }

    /// Gives a kept worker one job (a line on its stdin) and reads its output up to the job's "ended"
    /// line, or to the end when the process dies (then it is reaped).
    static func driveOne(_ process: Spawned, input: Data, onLine: @Sendable (Substring) -> Void) -> JobEnded {
        write(input, to: process.stdin)  // EPIPE: it died; its exit says why
        return read(process, untilEndLine: true, onLine: onLine)
    }

    private static func write(_ input: Data, to fd: Int32) {
        input.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; break }
                offset += n
            }
        }
    }

    /// Reads the process's stdout a line at a time (each to `onLine`) and keeps the tail of its stderr,
    /// until its "ended" line when `untilEndLine`, else until both end; at their end the process is
    /// reaped. The descriptors stay open.
    private static func read(_ process: Spawned, untilEndLine: Bool, onLine: @Sendable (Substring) -> Void) -> JobEnded {
        var stdoutBuffer: [UInt8] = []
        var stderrTail: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var fds = [pollfd(fd: process.stdout, events: Int16(POLLIN), revents: 0), pollfd(fd: process.stderr, events: Int16(POLLIN), revents: 0)]
        var open = 2
        func keepTail(_ n: Int) {
            stderrTail += chunk[0..<n]
            if stderrTail.count > 4096 { stderrTail.removeFirst(stderrTail.count - 4096) }
        }
        func tail() -> String { String(decoding: stderrTail, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
        while open > 0 {
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 { if errno == EINTR { continue }; break }
            for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(fds[i].fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    fds[i].fd = -1
                    open -= 1
                    continue
                }
                if i == 1 {
                    keepTail(n)
                    continue
                }
                stdoutBuffer += chunk[0..<n]
                while let newline = stdoutBuffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: stdoutBuffer[..<newline], as: UTF8.self)
                    stdoutBuffer.removeSubrange(...newline)
                    if untilEndLine, line.hasPrefix(WorkerJobEnd.marker),
                       // a marker line that is no job end is the job's own output, passed on as a line
                       let end = try? JSONDecoder().decode(WorkerJobEnd.self, from: Data(line.utf8)) {
                        // What it wrote to stderr before this line is in the pipe: it belongs to this job.
                        var quick = pollfd(fd: process.stderr, events: Int16(POLLIN), revents: 0)
                        while fds[1].fd >= 0, poll(&quick, 1, 0) > 0, quick.revents & Int16(POLLIN) != 0 {
                            let n = chunk.withUnsafeMutableBytes { Glibc.read(process.stderr, $0.baseAddress, $0.count) }
                            if n <= 0 { break }
                            keepTail(n)
                        }
                        return JobEnded(exit: WorkerExit(status: end.status, signal: nil, stderrTail: tail()), end: end)
                    }
                    onLine(Substring(line))
                }
                if stdoutBuffer.count > 1 << 20 { stdoutBuffer.removeAll() }  // a runaway line is dropped
            }
        }
        if !stdoutBuffer.isEmpty { onLine(Substring(String(decoding: stdoutBuffer, as: UTF8.self))) }
        let status = process.child.wait()
        removeTemporaries(process)
        if mf_signaled(status) != 0 { return JobEnded(exit: WorkerExit(status: nil, signal: mf_term_signal(status), stderrTail: tail()), end: nil) }
        return JobEnded(exit: WorkerExit(status: mf_exit_status(status), signal: nil, stderrTail: tail()), end: nil)
    }

    /// Ends a kept worker's process: closes its pipes (a waiting worker sees the end of its input and
    /// exits), kills it unless it has been reaped, and reaps it.
    static func release(_ process: Spawned, reaped: Bool) {
        for fd in [process.stdin, process.stdout, process.stderr] { close(fd) }
        guard !reaped else { return }
        if !process.child.waitForExit(milliseconds: 100) { process.child.kill() }
        _ = process.child.wait()
        removeTemporaries(process)
    }


    /// `name` as an executable path: as given when it has a slash, else searched in PATH.
    static func resolve(_ name: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = "\(folder)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// This program's own executable, to start `mediafarm worker` with.
    static var currentExecutable: String { OwnExecutable.path ?? CommandLine.arguments[0] }
}
