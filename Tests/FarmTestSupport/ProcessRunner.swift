import Foundation

/// Runs a program to completion and captures its output. For fixtures, oracles and black-box CLI tests.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stderr: String
    public var stdoutData: Data
    /// The output as text, decoded when asked (never for binary output: repairing megabytes of
    /// invalid UTF-8 is slow where swift-testing records each error the decoder throws inside).
    public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }

    public init(status: Int32, stdout: Data, stderr: String) {
        self.status = status
        self.stderr = stderr
        self.stdoutData = stdout
    }
}

public enum ProcessRunner {
    /// Runs `executable` (a path, or a name looked up on PATH) with `arguments`.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], currentDirectory: String? = nil,
                           environment: [String: String]? = nil) throws -> ProcessResult {
        let process = Process()
        if executable.contains("/") {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [executable] + arguments
        }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes concurrently so neither fills up and blocks the child.
        let errBox = DataBox()
        let errReader = Thread { errBox.data = err.fileHandleForReading.readDataToEndOfFile() }
        errReader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errBox.done { usleep(1000) }
        return ProcessResult(status: process.terminationStatus, stdout: outData, stderr: String(decoding: errBox.data, as: UTF8.self))
    }

    /// Runs and throws when the program fails, with its stderr in the message.
    @discardableResult
    public static func check(_ executable: String, _ arguments: [String]) throws -> ProcessResult {
        let r = try run(executable, arguments)
        guard r.status == 0 else {
            throw FixtureError("\(executable) \(arguments.joined(separator: " ")) exited \(r.status): \(r.stderr)")
        }
        return r
    }
}

private final class DataBox: @unchecked Sendable {
    private let lock = NSLock()
    private var _data = Data()
    private var _done = false
    var data: Data {
        get { lock.withLock { _data } }
        set { lock.withLock { _data = newValue; _done = true } }
    }
    var done: Bool { lock.withLock { _done } }
}

public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension ProcessRunner {
    /// Runs a program with posix_spawn and waits with waitpid, its output through temporary files. For
    /// test processes that also run SwiftNIO: there, Foundation's `Process` can miss its child's exit
    /// (seen: the child a zombie, `waitUntilExit` waiting for ever).
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> ProcessResult {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-spawn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outPath = folder.appendingPathComponent("out").path, errPath = folder.appendingPathComponent("err").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { env.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = executable.contains("/") ? posix_spawn(&pid, executable, &actions, nil, argv, env)
                                               : posix_spawnp(&pid, executable, &actions, nil, argv, env)
        guard spawned == 0 else { throw FixtureError("cannot start \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let out = FileManager.default.contents(atPath: outPath) ?? Data()
        let err = FileManager.default.contents(atPath: errPath) ?? Data()
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return ProcessResult(status: code, stdout: out, stderr: String(decoding: err, as: UTF8.self))
    }
}

extension ProcessRunner {
    /// `spawn`, waited for on one of Dispatch's threads: an async test that waits holds none of the
    /// cooperative pool's threads, which a coordinator built in the same process needs.
    public static func spawned(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { waiter in
            DispatchQueue.global().async {
                waiter.resume(with: Result { try spawn(executable, arguments, environment: environment) })
            }
        }
    }
}
