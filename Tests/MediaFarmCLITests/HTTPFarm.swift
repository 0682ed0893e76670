import FarmApplication
import FarmRuntime
import FarmTestSupport
import Foundation
@testable import MediaFarmCLI
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A coordinator with its HTTP face on a free loopback port, over a SQLite queue in a temporary folder
/// holding two inputs: clip.mp4 (2 s) and tone.mp4 (10 s). Requests go through curl, waited for off the
/// cooperative pool (a coordinator built in the test's process needs its threads).
protocol FarmOverHTTP: Sendable {
    var dir: URL { get }
    /// `http://127.0.0.1:PORT`.
    var base: String { get }
    /// The bearer token: the one given, or the one made for the run; nil with --no-auth.
    var token: String? { get }
    /// What the coordinator printed.
    var log: String { get }
}

/// One answer of the farm.
struct FarmAnswer {
    var status: Int
    var headers: String
    var body: String
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }  // not JSON: nil
}

extension FarmOverHTTP {
    /// One request; the token is sent unless `auth` is false. `arguments` are curl's (headers, data).
    func request(_ method: String, _ path: String, body: String? = nil, auth: Bool = true, _ arguments: [String] = []) async throws -> FarmAnswer {
        let headers = dir.appendingPathComponent("headers-\(UUID().uuidString.prefix(6))").path
        defer { unlink(headers) }
        var args = ["-s", "-S", "-X", method, "-D", headers, "-w", "\n%{http_code}", "--max-time", "30"]
        if auth, let token { args += ["-H", "Authorization: Bearer \(token)"] }
        if let body { args += ["--data-binary", body] }
        let r = try await ProcessRunner.spawned("/usr/bin/curl", args + arguments + [base + path])
        guard r.status == 0, let cut = r.stdout.lastIndex(of: "\n"), let status = Int(r.stdout[r.stdout.index(after: cut)...]) else {
            throw FixtureError("curl \(method) \(path): \(r.stderr)")
        }
        return FarmAnswer(status: status, headers: (try? String(contentsOfFile: headers, encoding: .utf8)) ?? "",  // none written: no headers
                          body: String(r.stdout[..<cut]))
    }

    /// Queues `manifest` through the API; its id.
    func submit(_ manifest: String, query: String = "") async throws -> Int64 {
        let answer = try await request("POST", "/api/jobs" + query, body: manifest)
        guard answer.status == 201, let id = answer.json?["id"] as? Int else { throw FixtureError("submit: \(answer.status) \(answer.body)") }
        return Int64(id)
    }

    func job(_ id: Int64) async throws -> [String: Any] {
        try await request("GET", "/api/jobs/\(id)").json ?? [:]
    }

    /// Polls the job until `condition` holds (or `timeout` passes); the job as last seen.
    @discardableResult
    func waitFor(_ id: Int64, timeout: Double = 60, _ condition: ([String: Any]) -> Bool) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        var job = try await self.job(id)
        while !condition(job) && Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            job = try await self.job(id)
        }
        return job
    }

    /// The value of one sample of /metrics (`name{labels}` as written there), nil when absent.
    func metric(_ sample: String) async throws -> Double? {
        let text = try await request("GET", "/metrics").body
        for line in text.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1))
        }
        return nil
    }

    /// A job that runs for several seconds: 10 s of tone retimed to 40 s at 60 fps with spectral audio.
    func longManifest(name: String, output: String) -> String {
        """
        { "version": 1, "name": \(HTTPFarm.quoted(name)), "input": "tone.mp4",
          "scale": [ { "start": "0", "duration": "10", "rate": "1/4" } ], "audio": { "timePitch": "spectral" },
          "export": { "mode": "constantFrameRate", "frameRate": 60, "output": "\(output)", "video": { "preset": "medium" } } }
        """
    }

    /// The coordinator's options for a farm in `dir`: its queue, its face, and the token's file.
    static func options(_ dir: URL, workers: Int, token: String?) throws -> [String] {
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("clip.mp4").path)
        try FileManager.default.copyItem(atPath: MediaFixture.tone60MP4.path, toPath: dir.appendingPathComponent("tone.mp4").path)
        var options = ["--queue", "sqlite:" + dir.appendingPathComponent("queue.sqlite").path, "--workers", String(workers),
                       "--http", "127.0.0.1:0", "--api-base-dir", dir.path]
        if let token {
            let file = dir.appendingPathComponent("token").path
            try token.write(toFile: file, atomically: true, encoding: .utf8)
            options += ["--token-file", file]
        }
        return options
    }
}

/// The real `mediafarm coordinator` process: for what the process itself does (signals, exit statuses,
/// its printing and logs, several coordinators on one queue).
final class HTTPFarm: FarmOverHTTP, @unchecked Sendable {  // unchecked: every stored property is a constant
    let dir: URL
    let process: Background
    let base: String
    let token: String?
    var log: String { process.log }

    init(_ label: String, workers: Int = 2, token: String? = nil, arguments: [String] = [], environment: [String: String] = [:]) throws {
        dir = try TestPaths.makeTemporaryFolder("http-\(label)")
        let command = [TestPaths.mediafarmExecutable, "coordinator"] + (try Self.options(dir, workers: workers, token: token))
        process = try Background(command + arguments, log: dir.appendingPathComponent("coordinator.log").path,
                                 environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        let deadline = Date().addingTimeInterval(20)
        var port: String?
        let madeToken = token == nil && !arguments.contains("--no-auth")
        var printedToken: String?
        while (port == nil || (madeToken && printedToken == nil)) && Date() < deadline {
            if let match = process.log.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/) { port = String(match.1) }
            if let match = process.log.firstMatch(of: /this run's token is ([0-9a-f]+);/) { printedToken = String(match.1) }
            if port == nil || (madeToken && printedToken == nil) { usleep(50_000) }
        }
        guard let port, !madeToken || printedToken != nil else {
            process.kill(SIGKILL)
            _ = process.wait(timeout: 5)
            throw FixtureError("the coordinator did not start its HTTP face: \(process.log)")
        }
        self.token = madeToken ? printedToken : token
        base = "http://127.0.0.1:\(port)"
    }

    deinit {
        process.kill(SIGKILL)
        _ = process.wait(timeout: 5)
    }

    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed]), as: UTF8.self)
    }
}

/// `mediafarm coordinator` built in the test's process from the command's own options, as the command
/// builds it (`CoordinatorCommand.application`): the same service group, face and coordinator, with no
/// binary spawned but its workers. What it prints is kept in `log`. Stopped (drained) when released.
final class ServedFarm: FarmOverHTTP {
    let dir: URL
    let base: String
    let token: String?
    let application: FarmApplication
    private let printed: Printed
    private let running: Task<Void, any Error>

    /// What the printer wrote, kept.
    private final class Printed: Sendable {
        let text = Mutex("")
    }

    var log: String { printed.text.withLock { $0 } }

    /// A farm of `workers` with `arguments` added to `mediafarm coordinator`'s options. Its workers are the
    /// `mediafarm` binary's; a grace of 3 s unless `arguments` give one (a test that ends leaves no job
    /// running for long).
    init(_ label: String, workers: Int = 2, token: String? = nil, arguments: [String] = []) async throws {
        let dir = try TestPaths.makeTemporaryFolder("served-\(label)")
        var options = try Self.options(dir, workers: workers, token: token) + ["--worker-command", TestPaths.mediafarmExecutable + " worker"]
        if !arguments.contains("--grace") { options += ["--grace", "3"] }
        let command = try CoordinatorCommand.parse(options + arguments)
        let printed = Printed()
        let printer = CoordinatorPrinter(json: command.json, write: { text in printed.text.withLock { $0 += text } })
        let application = try await command.application(printer: printer, stopSignals: false).application
        let running = Task { try await application.group.run() }
        let deadline = Date().addingTimeInterval(60)
        var address: String?
        while address == nil && Date() < deadline {
            address = printed.text.withLock { $0 }.firstMatch(of: /http: listening on (127\.0\.0\.1:\d+)/).map { String($0.1) }
            if address == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        guard let address else {
            await application.group.triggerGracefulShutdown()
            let ended = await running.result
            throw FixtureError("the coordinator did not start its HTTP face (\(ended)): \(printed.text.withLock { $0 })")
        }
        (self.dir, self.printed, self.application, self.running) = (dir, printed, application, running)
        self.base = "http://" + address
        self.token = application.face?.configuration.token
    }

    /// Drains it as SIGTERM would, and waits until it stopped.
    func stop() async throws {
        await application.group.triggerGracefulShutdown()
        try await running.value
    }

    deinit {
        let group = application.group
        Task { await group.triggerGracefulShutdown() }
    }
}
