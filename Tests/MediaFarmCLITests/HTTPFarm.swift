import FarmTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real coordinator process with its HTTP face on a free loopback port, over a SQLite queue in a
/// temporary folder holding two inputs: clip.mp4 (2 s) and tone.mp4 (10 s). Requests go through curl.
final class HTTPFarm: @unchecked Sendable {
    let dir: URL
    let process: Background
    let base: String
    let token: String?

    init(_ label: String, workers: Int = 2, token: String? = nil, arguments: [String] = [], environment: [String: String] = [:]) throws {
        dir = try TestPaths.makeTemporaryFolder("http-\(label)")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("clip.mp4").path)
        try FileManager.default.copyItem(atPath: MediaFixture.tone60MP4.path, toPath: dir.appendingPathComponent("tone.mp4").path)
        var command = [TestPaths.mediafarmExecutable, "coordinator", "--queue", "sqlite:" + dir.appendingPathComponent("queue.sqlite").path,
                       "--workers", String(workers), "--http", "127.0.0.1:0", "--api-base-dir", dir.path]
        if let token {
            let file = dir.appendingPathComponent("token").path
            try token.write(toFile: file, atomically: true, encoding: .utf8)
            command += ["--token-file", file]
        }
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

    struct Answer {
        var status: Int
        var headers: String
        var body: String
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }
    }

    /// One request; the token is sent unless `auth` is false. `arguments` are curl's (headers, data).
    func request(_ method: String, _ path: String, body: String? = nil, auth: Bool = true, _ arguments: [String] = []) throws -> Answer {
        let headers = dir.appendingPathComponent("headers-\(UUID().uuidString.prefix(6))").path
        defer { unlink(headers) }
        var args = ["-s", "-S", "-X", method, "-D", headers, "-w", "\n%{http_code}", "--max-time", "30"]
        if auth, let token { args += ["-H", "Authorization: Bearer \(token)"] }
        if let body { args += ["--data-binary", body] }
        let r = try ProcessRunner.run("/usr/bin/curl", args + arguments + [base + path])
        guard r.status == 0, let cut = r.stdout.lastIndex(of: "\n"), let status = Int(r.stdout[r.stdout.index(after: cut)...]) else {
            throw FixtureError("curl \(method) \(path): \(r.stderr)")
        }
        return Answer(status: status, headers: (try? String(contentsOfFile: headers, encoding: .utf8)) ?? "",
                      body: String(r.stdout[..<cut]))
    }

    /// Queues `manifest` through the API; its id.
    func submit(_ manifest: String, query: String = "") throws -> Int64 {
        let answer = try request("POST", "/api/jobs" + query, body: manifest)
        guard answer.status == 201, let id = answer.json?["id"] as? Int else { throw FixtureError("submit: \(answer.status) \(answer.body)") }
        return Int64(id)
    }

    func job(_ id: Int64) throws -> [String: Any] {
        try request("GET", "/api/jobs/\(id)").json ?? [:]
    }

    /// Polls the job until `condition` holds (or `timeout` passes); the job as last seen.
    @discardableResult
    func waitFor(_ id: Int64, timeout: Double = 60, _ condition: ([String: Any]) -> Bool) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        var job = try self.job(id)
        while !condition(job) && Date() < deadline {
            usleep(100_000)
            job = try self.job(id)
        }
        return job
    }

    /// The value of one sample of /metrics (`name{labels}` as written there), nil when absent.
    func metric(_ sample: String) throws -> Double? {
        let text = try request("GET", "/metrics").body
        for line in text.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1))
        }
        return nil
    }

    /// A job that runs for several seconds: 10 s of tone retimed to 40 s at 60 fps with spectral audio.
    func longManifest(name: String, output: String) -> String {
        """
        { "version": 1, "name": \(Self.quoted(name)), "input": "tone.mp4",
          "scale": [ { "start": "0", "duration": "10", "rate": "1/4" } ], "audio": { "timePitch": "spectral" },
          "export": { "mode": "constantFrameRate", "frameRate": 60, "output": "\(output)", "video": { "preset": "medium" } } }
        """
    }

    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed]), as: UTF8.self)
    }
}
