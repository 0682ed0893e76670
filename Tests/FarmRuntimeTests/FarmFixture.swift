import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A folder with a queue, a 10 s input movie and manifests, and the `mediafarm` commands run on it as a
/// user runs them (real processes, a real SQLite file).
final class Farm: @unchecked Sendable {
    let folder: URL
    /// The queue's URL: a SQLite file in the folder unless a test gives another (PostgreSQL).
    var queueURL: String?
    var queue: String { queueURL ?? folder.appendingPathComponent("queue.sqlite").path }
    var out: URL { folder.appendingPathComponent("out") }

    init(_ label: String) throws {
        folder = try TestPaths.makeTemporaryFolder("farm-\(label)")
        try FileManager.default.copyItem(atPath: MediaFixture.longMP4.path, toPath: folder.appendingPathComponent("in.mp4").path)
    }

    /// A CFR export of the 10 s input (under a second), or slowed down `slow` times (seconds of work).
    /// Work every time: never answered from an earlier job's result (`"reuse": false`).
    @discardableResult
    func exportManifest(_ name: String, slow: Int = 1) throws -> String {
        let scale = slow > 1 ? #", "scale": [{"start": "0", "duration": "10", "rate": "1/\#(slow)"}]"# : ""
        return try manifest(name, """
            { "version": 1, "name": "\(name)", "input": "in.mp4"\(scale), "reuse": false,
              "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "out/\(name).mp4" }, "report": "out/\(name).json" }
            """)
    }

    @discardableResult
    func inspectManifest(_ name: String, input: String = "in.mp4") throws -> String {
        try manifest(name, #"{ "version": 1, "name": "\#(name)", "input": "\#(input)", "report": "out/\#(name).json" }"#)
    }

    @discardableResult
    func manifest(_ name: String, _ text: String) throws -> String {
        let path = folder.appendingPathComponent("\(name).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @discardableResult
    func mediafarm(_ args: [String]) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, args, currentDirectory: folder.path,
                              environment: ProcessInfo.processInfo.environment.merging(["MEDIAFARM_QUEUE": queue]) { $1 })
    }

    /// `submit` that must succeed; the ids it queued.
    func submit(_ args: [String]) throws -> [Int64] {
        let r = try mediafarm(["submit", "--json"] + args)
        guard r.status == 0 else { throw FixtureError("submit failed (\(r.status)): \(r.stderr)") }
        let rows = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]] ?? []
        return rows.compactMap { ($0["id"] as? NSNumber)?.int64Value }
    }

    /// `status --json`, by id.
    func status() throws -> [Int64: [String: Any]] {
        let r = try mediafarm(["status", "--json", "--all", "--chunks"])
        guard r.status == 0 else { throw FixtureError("status failed: \(r.stderr)") }
        let rows = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: rows.map { (($0["id"] as? NSNumber)?.int64Value ?? -1, $0) })
    }

    func state(_ id: Int64) throws -> String? { try status()[id]?["state"] as? String }

    /// The worker pid of a running job, once the coordinator has recorded it.
    func workerPID(_ id: Int64) throws -> Int32? {
        let job = try status()[id]
        guard job?["state"] as? String == "running", let worker = job?["worker"] as? [String: Any] else { return nil }
        return (worker["pid"] as? NSNumber)?.int32Value
    }

    /// Starts `mediafarm coordinator --json ARGS` in the background; its output goes to a log file.
    func startCoordinator(_ args: [String], log: String = "coordinator.log", environment: [String: String] = [:]) throws -> Coordinator {
        let process = Process()
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.executableURL = URL(fileURLWithPath: TestPaths.mediafarmExecutable)
        process.arguments = ["coordinator", "--json", "--queue", queue] + args
        process.currentDirectoryURL = folder
        let logPath = folder.appendingPathComponent(log).path
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return Coordinator(process: process, logPath: logPath)
    }

    /// Files in out/ that are not finished outputs: temporaries and staged files.
    func leftovers() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).filter { $0.hasPrefix(".") }
    }

    struct Coordinator {
        let process: Process
        let logPath: String

        var pid: Int32 { process.processIdentifier }

        /// Waits for the coordinator to exit; its status, or nil on timeout (it is then killed).
        func wait(timeout: Double) -> Int32? {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning {
                process.terminate()
                kill(pid, SIGKILL)
                process.waitUntilExit()
                return nil
            }
            return process.terminationStatus
        }

        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    }
}

/// Polls `condition` every 20 ms for up to `timeout` seconds.
@discardableResult
func eventually(_ timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

/// Whether `pid` is a live process (not gone, not a zombie).
func isAlive(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(close, offsetBy: 2)]
    return state != "Z" && state != "X"
}

extension Dictionary where Key == String, Value == Any {
    var int: Int? { (self["attempt"] as? NSNumber)?.intValue }
    var errors: [String] { (self["errors"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String } }
}
