import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm coordinator --http`: built in the test's process from the command's options (`ServedFarm`),
/// or the real process where the process is what is tested (its exit, signals, logs, several
/// coordinators); its workers; curl, Python's JSON Schema validator and headless Chromium as the clients.
@Suite(.serialized) struct HTTPFaceTests {
    static let token = "3e3df22342fc3be40409f9e16407464a7739ed658ac32b969d9022c147b2fe5f"

    /// Every operation of docs/openapi.json answers with a declared status and a body that validates
    /// against the declared schema, with a bearer token required.
    @Test func theServerAnswersAsItsOpenAPIDocumentSays() async throws {
        let farm = try await ServedFarm("openapi", token: Self.token)
        let manifest = farm.dir.appendingPathComponent("probe.json").path
        // No host provides "openapi-check": the job is never claimed, so a retry that makes it due cannot race the
        // cancel after it (a busy machine's worker had run it to success first).
        try #"{ "version": 1, "name": "probe", "input": "clip.mp4", "report": "out/probe.json", "requires": ["openapi-check"] }"#
            .write(toFile: manifest, atomically: true, encoding: .utf8)
        let spec = TestPaths.packageRoot.appendingPathComponent("docs/openapi.json").path
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/HTTP/openapi-check.py").path
        let r = try await ProcessRunner.spawned("/usr/bin/python3", [script, spec, farm.base, manifest, Self.token])
        #expect(r.status == 0 && r.stdout.contains("36 operations exercised, 0 failures"), "\(r.stdout)\n\(r.stderr)\n\(farm.log)")
    }

    /// A client generated from docs/openapi.json by openapi-python-client (as a user of the API would make
    /// one) submits, finds, lists and cancels a job, and names each operation by its operationId; the
    /// document holds the manifest's schema as jobs/schema.json is now (script/openapi --check).
    @Test func aGeneratedClientSubmitsListsAndCancels() async throws {
        let check = try await ProcessRunner.spawned(TestPaths.packageRoot.appendingPathComponent("script/openapi").path, ["--check"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let generator = TestPaths.packageRoot.appendingPathComponent(".build/openapi-client")
        try #require(FileManager.default.fileExists(atPath: generator.appendingPathComponent("openapi_python_client").path),
                     "openapi-python-client is missing: script/bootstrap installs it under .build/openapi-client")
        let farm = try await ServedFarm("client", token: Self.token)
        let manifest = farm.dir.appendingPathComponent("probe.json").path
        // No host provides "openapi-check": the job is never claimed, so a retry that makes it due cannot race the
        // cancel after it (a busy machine's worker had run it to success first).
        try #"{ "version": 1, "name": "probe", "input": "clip.mp4", "report": "out/probe.json", "requires": ["openapi-check"] }"#
            .write(toFile: manifest, atomically: true, encoding: .utf8)
        let spec = TestPaths.packageRoot.appendingPathComponent("docs/openapi.json").path
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/HTTP/generated-client.py").path
        let r = try await ProcessRunner.spawned("/usr/bin/python3", [script, spec, farm.base, manifest, Self.token], environment: ["PYTHONPATH": generator.path])
        #expect(r.status == 0 && r.stdout.contains("through the generated client; 0 failures"), "\(r.stdout)\n\(r.stderr)\n\(farm.log)")
    }

    @Test func listeningBeyondLoopbackNeedsATokenFile() async throws {
        let r = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["coordinator", "--queue", "sqlite:/nonexistent/q.sqlite", "--http", "0.0.0.0:0"])
        #expect(r.status == 2 && r.stderr.contains("--token-file"), "\(r.stderr)")
        let bad = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["coordinator", "--http", "localhost"])
        #expect(bad.status == 2 && bad.stderr.contains("HOST:PORT"), "\(bad.stderr)")
        let dir = try TestPaths.makeTemporaryFolder("http-token")
        let file = dir.appendingPathComponent("token").path
        try "short".write(toFile: file, atomically: true, encoding: .utf8)
        let weak = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["coordinator", "--queue", "sqlite:" + dir.path + "/q.sqlite",
                                                                         "--http", "0.0.0.0:0", "--token-file", file])
        #expect(weak.status == 2 && weak.stderr.contains("at least 16 characters"), "\(weak.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/q.sqlite"), "a refused start must not create the queue")
        let beyond = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["coordinator", "--queue", "sqlite:" + dir.path + "/q2.sqlite",
                                                                           "--http", "0.0.0.0:0", "--no-auth"])
        #expect(beyond.status == 2 && beyond.stderr.contains("--no-auth is for loopback only"), "\(beyond.stderr)")
    }

    @Test func aPortInUseIsNamedAndTheCoordinatorExits() async throws {
        let farm = try HTTPFarm("busy")
        let port = String(farm.base.split(separator: ":").last ?? "")
        let r = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["coordinator", "--queue", "sqlite:" + farm.dir.path + "/other.sqlite",
                                                                      "--http", "127.0.0.1:\(port)"])
        #expect(r.status == 1 && r.stderr.contains("--http 127.0.0.1:\(port): cannot listen") && r.stderr.contains("in use"), "\(r.stderr)")
    }

    @Test func theTokenGuardsEverythingButTheHealthChecks() async throws {
        // More wrong tokens than an address may try before it waits (FaceSecurityTests has that wait).
        let farm = try await ServedFarm("auth", token: Self.token, arguments: ["--http-auth-failures-allowed", "100"])
        #expect(try await farm.request("GET", "/healthz", auth: false).status == 200)
        #expect(try await farm.request("GET", "/readyz", auth: false).status == 200)
        for path in ["/metrics", "/api/jobs", "/api/jobs/1", "/api/events"] {
            let none = try await farm.request("GET", path, auth: false)
            #expect(none.status == 401 && none.headers.lowercased().contains("www-authenticate: bearer"), "\(path): \(none.status)")
            #expect(try await farm.request("GET", path, auth: false, ["-H", "Authorization: Bearer \(Self.token)x"]).status == 401, "\(path)")
            #expect(try await farm.request("GET", path, auth: false, ["-H", "Authorization: Bearer \(Self.token.dropLast())"]).status == 401, "\(path)")
        }
        #expect(try await farm.request("POST", "/api/jobs", body: "{}", auth: false).status == 401)
        // A page on another site cannot make a signed-in browser change jobs.
        let crossSite = try await farm.request("POST", "/api/jobs/1/cancel", ["-H", "Origin: http://evil.example"])
        #expect(crossSite.status == 403 && crossSite.body.contains("cross-origin"), "\(crossSite.body)")
        let sameSite = try await farm.request("POST", "/api/jobs/1/cancel", ["-H", "Origin: \(farm.base)"])
        #expect(sameSite.status == 404, "\(sameSite.body)")
        // A browser without the token is sent to sign in; signing in sets a cookie that opens the page.
        let page = try await farm.request("GET", "/", auth: false, ["-H", "Accept: text/html"])
        #expect(page.status == 303 && page.headers.contains("/login"), "\(page.headers)")
        let jar = farm.dir.appendingPathComponent("cookies").path
        let wrong = try await farm.request("POST", "/login", body: "token=nope", auth: false, ["-c", jar])
        #expect(wrong.status == 401)
        let login = try await farm.request("POST", "/login", body: "token=\(Self.token)", auth: false, ["-c", jar])
        #expect(login.status == 303 && login.headers.lowercased().contains("httponly"), "\(login.headers)")
        let signedIn = try await farm.request("GET", "/", auth: false, ["-b", jar])
        #expect(signedIn.status == 200 && signedIn.body.contains("<h1>MediaFarm</h1>"))
    }

    /// DNS rebinding: a page on another site whose name now points at 127.0.0.1 sends its own name as Host.
    /// Only IP addresses, localhost, the listen address and --allowed-host names are answered.
    @Test func aForeignHostIsRefusedOnEveryPathButHealthz() async throws {
        let farm = try await ServedFarm("rebind", token: Self.token, arguments: ["--allowed-host", "farm.example"])
        let port = String(farm.base.split(separator: ":").last ?? "")
        for path in ["/", "/readyz", "/metrics", "/api/jobs", "/api/jobs/1", "/api/events", "/api/assets", "/login", "/nothing"] {
            for host in ["rebind.attacker.example", "rebind.attacker.example:\(port)", "localhost.attacker.example", "127.0.0.1.nip.io:\(port)"] {
                let answer = try await farm.request("GET", path, ["-H", "Host: \(host)"])
                #expect(answer.status == 421 && answer.body.contains("--allowed-host"), "\(path) Host \(host): \(answer.status) \(answer.body)")
            }
        }
        let post = try await farm.request("POST", "/api/jobs", body: #"{"version": 1, "input": "clip.mp4"}"#, ["-H", "Host: rebind.attacker.example"])
        #expect(post.status == 421)
        #expect(try await farm.request("GET", "/healthz", auth: false, ["-H", "Host: rebind.attacker.example"]).status == 200)
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "[::1]:\(port)", "farm.example:\(port)", "10.1.2.3"] {
            #expect(try await farm.request("GET", "/api/jobs", ["-H", "Host: \(host)"]).status == 200, "Host \(host)")
        }
        #expect(try await farm.request("GET", "/api/jobs", ["-H", "Host: a:b:c"]).status == 421)
    }

    /// Nothing of the file system answers a caller without a valid token: the manifest is not read.
    @Test func healthChecksAnsweredOnTheEventLoopLeaveTheOtherRequestsOfAConnectionAlone() async throws {
        let farm = try await ServedFarm("health", token: Self.token)
        // One connection (curl reuses it for every URL): health checks between API requests, in order.
        let paths = ["/healthz", "/api/jobs", "/healthz", "/readyz", "/healthz?verbose=1", "/api/jobs/999", "/healthz"]
        let r = try await ProcessRunner.spawned("/usr/bin/curl", ["-s", "-H", "Authorization: Bearer \(Self.token)", "-w", "\n%{http_code} %{num_connects}\n"]
                                      + paths.map { farm.base + $0 })
        let lines: [[Substring]] = r.stdout.split(separator: "\n").map { $0.split(separator: " ") }
        let codes: [Substring] = lines.filter { $0.count == 2 && $0[0].allSatisfy(\.isNumber) }.map { $0[0] }
        let connects: [Substring] = lines.filter { $0.count == 2 && $0[0].allSatisfy(\.isNumber) }.map { $0[1] }
        #expect(codes == ["200", "200", "200", "200", "200", "404", "200"], "\(r.stdout)")
        #expect(connects.filter { $0 == "1" }.count == 1, "one connection for all: \(r.stdout)")
        let first = try #require(r.stdout.split(separator: "\n").first)
        let health = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any]
        #expect(health?["status"] as? String == "ok" && health?["loopAgeSeconds"] is [String: Any], "\(first)")
        // A check that closes its connection goes through the router: the same answer.
        let closing = try await farm.request("GET", "/healthz", auth: false, ["-H", "Connection: close"])
        #expect(closing.status == 200 && closing.body.contains("\"status\":\"ok\""), "\(closing.body)")
        let head = try await ProcessRunner.spawned("/usr/bin/curl", ["-si", farm.base + "/healthz"])
        #expect(head.stdout.lowercased().contains("content-type: application/json") && head.stdout.lowercased().contains("server: mediafarm"),
                "\(head.stdout)")
    }

    @Test func theTokenIsCheckedBeforeTheManifestIsRead() async throws {
        let farm = try await ServedFarm("token-first", token: Self.token)
        let probe = #"{"version": 1, "input": "/etc/shadow", "report": "/etc/passwd"}"#
        for bearer in [[], ["-H", "Authorization: Bearer wrong-token-of-some-length"], ["-H", "Authorization: Bearer mfl_not_a_library_token"]] {
            let answer = try await farm.request("POST", "/api/jobs", body: probe, auth: false, bearer)
            #expect(answer.status == 401, "\(bearer): \(answer.status) \(answer.body)")
            #expect(!answer.body.contains("shadow") && !answer.body.contains("passwd") && !answer.body.contains("resolves")
                    && !answer.body.contains("outside"), "\(answer.body)")
        }
        // With the token, the manifest is checked.
        let valid = try await farm.request("POST", "/api/jobs", body: probe)
        #expect(valid.status == 422, "\(valid.body)")
        // Too large: the limit is named.
        let big = farm.dir.appendingPathComponent("big.json")
        try Data(repeating: 0x20, count: (1 << 20) + 10).write(to: big)
        let tooLarge = try await farm.request("POST", "/api/jobs", ["--data-binary", "@" + big.path])
        #expect(tooLarge.status == 413 && tooLarge.body.contains("at most 1 MiB"), "\(tooLarge.body)")
    }

    /// Loopback without --token-file: a token is made for the run and printed with a sign-in URL; the URL
    /// gives the browser a session cookie that is not the token. --no-auth opens the API on purpose.
    @Test func loopbackWithoutATokenFileMakesOneAndSignsBrowsersInWithASession() async throws {
        let farm = try await ServedFarm("made-token")
        let token = try #require(farm.token)
        #expect(token.count == 64)
        #expect(farm.log.contains("this run's token is \(token);"), "\(farm.log)")
        #expect(farm.log.contains("open http://127.0.0.1:"), "\(farm.log)")
        #expect(try await farm.request("GET", "/api/jobs", auth: false).status == 401)
        #expect(try await farm.request("GET", "/api/jobs").status == 200)
        let jar = farm.dir.appendingPathComponent("jar").path
        let signIn = try await farm.request("GET", "/?token=\(token)", auth: false, ["-c", jar])
        #expect(signIn.status == 303 && signIn.headers.lowercased().contains("location: /\r"), "\(signIn.headers)")
        let cookies = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(cookies.contains("mediafarm_session") && !cookies.contains(token), "the cookie holds a session, not the token: \(cookies)")
        #expect(signIn.headers.lowercased().contains("max-age=") && signIn.headers.lowercased().contains("httponly"), "\(signIn.headers)")
        #expect(try await farm.request("GET", "/api/jobs", auth: false, ["-b", jar]).status == 200)
        #expect(try await farm.request("GET", "/?token=\(token)x", auth: false).status == 401)

        let open = try await ServedFarm("no-auth", arguments: ["--no-auth"])
        #expect(open.token == nil)
        #expect(try await open.request("GET", "/api/jobs", auth: false).status == 200)
        #expect(open.log.contains("no authentication"))
    }

    /// Through the API, "overwrite": true needs --api-allow-overwrite; and even then no output may be the
    /// queue's database or its companions.
    @Test func theAPIReplacesNoFileUnlessAllowedAndNeverTheFarmsOwn() async throws {
        let farm = try await ServedFarm("overwrite", token: Self.token)
        try Data("old".utf8).write(to: farm.dir.appendingPathComponent("old.json"))
        let overwrite = try await farm.request("POST", "/api/jobs", body: #"{"version": 1, "input": "clip.mp4", "report": "old.json", "overwrite": true}"#)
        #expect(overwrite.status == 422 && overwrite.body.contains("--api-allow-overwrite"), "\(overwrite.body)")

        let allowed = try await ServedFarm("overwrite-allowed", token: Self.token, arguments: ["--api-allow-overwrite"])
        try Data("old".utf8).write(to: allowed.dir.appendingPathComponent("old.json"))
        let replaced = try await allowed.submit(#"{"version": 1, "input": "clip.mp4", "report": "old.json", "overwrite": true}"#)
        let done = try await allowed.waitFor(replaced) { ["succeeded", "failed", "dead"].contains($0["state"] as? String ?? "") }
        #expect(done["state"] as? String == "succeeded", "\(done)")
        for target in ["queue.sqlite", "queue.sqlite-wal", "queue.sqlite-shm", "./sub/../queue.sqlite", "token"] {
            let answer = try await allowed.request("POST", "/api/jobs", body: #"{"version": 1, "input": "clip.mp4", "report": "\#(target)", "overwrite": true}"#)
            #expect(answer.status == 422 && answer.body.contains("the farm's own files"), "\(target): \(answer.body)")
        }
        #expect(try await allowed.request("GET", "/readyz").status == 200, "the queue still answers")
    }

    /// A job submitted through the API may wait for others ("after": ids or keys): an unknown one is refused
    /// with 422 and nothing queued; a waiting job shows what it waits for in the API and on the status page,
    /// and runs once they succeeded.
    @Test func jobsSubmittedThroughTheAPIWaitForOthers() async throws {
        let farm = try await ServedFarm("after", token: Self.token)
        let unknown = try await farm.request("POST", "/api/jobs", body: #"{"version": 1, "input": "clip.mp4", "after": ["no-such-key", 77]}"#)
        #expect(unknown.status == 422 && unknown.body.contains("not in the queue"), "\(unknown.body)")
        let bad = try await farm.request("POST", "/api/jobs", body: #"{"version": 1, "input": "clip.mp4", "after": [true]}"#)
        #expect(bad.status == 422 && bad.body.contains("$.after[0]"), "\(bad.body)")
        #expect((try await farm.request("GET", "/api/jobs").json?["jobs"] as? [Any])?.isEmpty == true, "nothing was queued")
        // The first job waits an hour (delayed): the second waits for it, by key.
        let first = try await farm.submit(#"{"version": 1, "name": "first", "input": "clip.mp4"}"#, query: "?key=first-1&delay=3600")
        let second = try await farm.submit(#"{"version": 1, "name": "second", "input": "clip.mp4", "after": ["first-1"]}"#)
        let waiting = try await farm.job(second)
        #expect(waiting["state"] as? String == "waiting" && (waiting["after"] as? [Int]) == [Int(first)] && waiting["waitingFor"] as? Int == 1
                && waiting["afterPolicy"] as? String == "success", "\(waiting)")
        let page = try await farm.request("GET", "/").body
        #expect(page.contains("Waiting for other jobs (1)") && page.contains("<td class=\"name\">second</td>"), "\(page)")
        // Cancelling the first fails the second, naming it; retrying the first brings it back.
        #expect(try await farm.request("POST", "/api/jobs/\(first)/cancel").status == 200)
        let failed = try await farm.job(second)
        #expect(failed["state"] as? String == "failed" && failed["blockedBy"] as? Int == Int(first), "\(failed)")
        let refused = try await farm.request("POST", "/api/jobs/\(second)/retry")
        #expect(refused.status == 409 && refused.body.contains("retry job \(first)"), "\(refused.body)")
        #expect(try await farm.request("POST", "/api/jobs/\(first)/retry").status == 200)
        let done = try await farm.waitFor(second) { $0["state"] as? String == "succeeded" }
        #expect(done["state"] as? String == "succeeded", "\(done)")
    }

    /// Logs are JSON lines on stderr when it is not a terminal (here: a file).
    @Test func logsAreJSONLinesOffATerminal() async throws {
        let farm = try HTTPFarm("logs", environment: ["MEDIAFARM_LOG_LEVEL": "info"])
        #expect(try await farm.request("GET", "/healthz").status == 200)
        farm.process.kill(SIGTERM)
        #expect(farm.process.wait(timeout: 30) == 0)
        let records = farm.log.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let server = records.first { $0["label"] as? String == "mediafarm.http" }
        #expect(server?["level"] as? String == "info" && server?["at"] is String && server?["message"] is String, "\(farm.log)")
        #expect(records.allSatisfy { $0["label"] is String && $0["message"] is String })
    }

    /// The counters and gauges of /metrics follow the jobs: claims, outcomes, durations, bytes, states, slots.
    @Test func metricsMoveAsJobsRun() async throws {
        let farm = try await ServedFarm("metrics")
        #expect(try await farm.metric(#"mediafarm_attempts_total{outcome="succeeded"}"#) == 0)
        #expect(try await farm.metric(#"mediafarm_worker_slots{state="free"}"#) == 2)
        let a = try await farm.submit(#"{ "version": 1, "name": "a", "input": "clip.mp4", "report": "out/a.json" }"#)
        let b = try await farm.submit(#"""
            { "version": 1, "name": "b", "input": "clip.mp4", "scale": [ { "start": 0, "duration": 2, "rate": 0.5 } ],
              "export": { "mode": "passthrough", "output": "out/b.mp4" } }
            """#)
        let c = try await farm.submit(#"{ "version": 1, "name": "c", "input": "missing.mp4", "report": "out/c.json" }"#, query: "?allowMissingInputs=true")
        for id in [a, b, c] {
            let job = try await farm.waitFor(id) { ["succeeded", "failed", "dead"].contains($0["state"] as? String) }
            #expect(job["state"] as? String == (id == c ? "failed" : "succeeded"), "\(job)")
        }
        let failed = try await farm.job(c)
        #expect((failed["errors"] as? [[String: Any]])?.last?["message"] as? String ?? "" != "", "\(failed)")
        #expect(try await farm.metric(#"mediafarm_attempts_total{outcome="succeeded"}"#) == 2)
        #expect(try await farm.metric(#"mediafarm_attempts_total{outcome="failed"}"#) == 1)
        #expect(try await farm.metric("mediafarm_claims_total") == 3)
        #expect(try await farm.metric("mediafarm_job_duration_seconds_count") == 3)
        #expect(try await farm.metric(#"mediafarm_jobs{state="succeeded"}"#) == 2)
        #expect(try await farm.metric(#"mediafarm_jobs{state="failed"}"#) == 1)
        #expect(try await farm.metric("mediafarm_queue_depth") == 0)
        let written = try #require(try await farm.metric("mediafarm_output_bytes_total"))
        let sizes = try ["out/a.json", "out/b.mp4"].map { try FileManager.default.attributesOfItem(atPath: farm.dir.appendingPathComponent($0).path)[.size] as! Int }
        #expect(written == Double(sizes.reduce(0, +)), "bytes written \(written), files \(sizes)")
        #expect(try await farm.metric("mediafarm_lease_renewals_total") ?? 0 > 0)
    }

    /// A running job cancelled through the API: the worker is stopped, nothing is published.
    @Test func cancellingARunningJobThroughTheAPI() async throws {
        let farm = try await ServedFarm("cancel")
        let id = try await farm.submit(farm.longManifest(name: "long", output: "out/long.mp4"))
        let running = try await farm.waitFor(id) { $0["state"] as? String == "running" && ($0["progress"] as? Double ?? 0) > 0 }
        #expect(running["state"] as? String == "running" && running["host"] != nil && running["workerPID"] != nil, "\(running)")
        let cancelled = try await farm.request("POST", "/api/jobs/\(id)/cancel")
        #expect(cancelled.status == 200 && cancelled.json?["state"] as? String == "cancelled", "\(cancelled.body)")
        let deadline = Date().addingTimeInterval(20)
        while try await farm.metric(#"mediafarm_attempts_total{outcome="cancelled"}"#) != 1 && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(try await farm.metric(#"mediafarm_attempts_total{outcome="cancelled"}"#) == 1, "\(farm.log)")
        #expect(!FileManager.default.fileExists(atPath: farm.dir.appendingPathComponent("out/long.mp4").path))
        #expect(try await farm.metric(#"mediafarm_worker_slots{state="busy"}"#) == 0)
    }

    /// SIGTERM: /readyz says 503 while the coordinator drains; /healthz stays 200; the job is finished
    /// or given back, and the process exits 0.
    @Test func drainingIsNotReady() async throws {
        // A grace long enough for the checks below to be made while it drains, however busy the machine.
        let farm = try HTTPFarm("drain", arguments: ["--grace", "15"])
        // Eight times the usual long job, encoded at x264's slowest preset (several minutes): still running when
        // the 15 s grace ends, however long a busy machine takes between the job's start and the signal; it
        // is given back at the grace's end, so its length costs the test nothing.
        let id = try await farm.submit(farm.longManifest(name: "long", output: "out/long.mp4").replacingOccurrences(of: "\"1/4\"", with: "\"1/32\"")
            .replacingOccurrences(of: "\"medium\"", with: "\"veryslow\""))
        try await farm.waitFor(id) { $0["state"] as? String == "running" }
        // `mediafarm healthcheck`, the image's HEALTHCHECK, asks the same endpoints.
        let healthy = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["healthcheck", "--url", farm.base + "/healthz"])
        #expect(healthy.status == 0, "\(healthy.stderr)")
        farm.process.kill(SIGTERM)
        var ready = try await farm.request("GET", "/readyz")
        let deadline = Date().addingTimeInterval(30)
        while ready.status != 503 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            ready = try await farm.request("GET", "/readyz")
        }
        #expect(ready.status == 503 && ready.json?["status"] as? String == "draining", "\(ready.body)")
        let notReady = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["healthcheck", "--url", farm.base + "/readyz"])
        #expect(notReady.status == 1 && notReady.stderr.contains("answered 503"), "\(notReady.stderr)")
        let health = try await farm.request("GET", "/healthz")
        #expect(health.status == 200 && health.json?["draining"] as? Bool == true, "\(health.body)")
        #expect(farm.process.wait(timeout: 60) == 0, "\(farm.log)")
        #expect(farm.log.contains("released without using up the attempt"), "\(farm.log)")
    }

    /// Every coordinator on the queue reports its slots: the API, the page and `queue stats` of one show
    /// the other; one that stops leaves the list, one that dies is shown as silent.
    @Test func everyCoordinatorOfTheQueueIsShownWithItsSlots() async throws {
        let farm = try HTTPFarm("coordinators")
        let queue = "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path
        func listed() async throws -> [[String: Any]] {
            try await farm.request("GET", "/api/coordinators").json?["coordinators"] as? [[String: Any]] ?? []
        }
        func waitUntil(_ what: String, seconds: Double = 20, _ condition: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
            let deadline = Date().addingTimeInterval(seconds)
            var list = try await listed()
            while !condition(list) && Date() < deadline {
                try await Task.sleep(for: .milliseconds(100))
                list = try await listed()
            }
            #expect(condition(list), "\(what): \(list)")
            return list
        }
        let other = try Background([TestPaths.mediafarmExecutable, "coordinator", "--queue", queue, "--workers", "3", "--host", "render7"],
                                   log: farm.dir.appendingPathComponent("other.log").path)
        let two = try await waitUntil("the second coordinator reports") { $0.count == 2 }
        let mine = two.first { $0["thisCoordinator"] as? Bool == true }
        let theirs = two.first { $0["host"] as? String == "render7" }
        #expect(mine?["slots"] as? Int == 2 && mine?["free"] as? Int == 2, "\(two)")
        #expect(theirs?["slots"] as? Int == 3 && theirs?["busy"] as? Int == 0 && theirs?["silent"] as? Bool == false, "\(two)")
        let owner = theirs?["owner"] as? String ?? "?"
        #expect(owner.hasPrefix("render7:"), "\(owner)")
        let page = try await farm.request("GET", "/")
        #expect(page.body.contains("data-owner=\"\(owner)\"") && page.body.contains("0 busy, 3 free"), "\(page.body)")
        let stats = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["queue", "stats", "--json", "--queue", queue])
        let coordinators = (try? JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])?["coordinators"] as? [[String: Any]]
        #expect(coordinators?.compactMap { $0["host"] as? String }.sorted() == ["render7", mine?["host"] as? String ?? "?"].sorted(),
                "\(stats.stdout)")
        // Stopped, it leaves the list.
        other.kill(SIGTERM)
        #expect(other.wait(timeout: 30) == 0, "\(other.log)")
        _ = try await waitUntil("the stopped coordinator leaves") { $0.count == 1 }
        // Killed, it stays, and is called silent after three reports' time (15 s).
        let dying = try Background([TestPaths.mediafarmExecutable, "coordinator", "--queue", queue, "--workers", "1", "--host", "render8"],
                                   log: farm.dir.appendingPathComponent("dying.log").path)
        _ = try await waitUntil("the third coordinator reports") { $0.count == 2 }
        dying.kill(SIGKILL)
        _ = dying.wait(timeout: 10)
        let silent = try await waitUntil("the killed coordinator is silent", seconds: 40) { list in
            list.contains { $0["host"] as? String == "render8" && $0["silent"] as? Bool == true }
        }
        #expect(silent.count == 2)
        #expect(try await farm.request("GET", "/").body.contains("silent"))
    }

    /// The status page in a real browser while a job runs: the DOM shows the running job with its
    /// progress bar and phase; a job named like markup shows as text. A screenshot is kept in
    /// .build/test-artifacts/status-page.png to look at.
    @Test func theStatusPageInChromiumShowsTheRunningJob() async throws {
        let farm = try await ServedFarm("page")
        let name = #"<script>document.title="owned"</script> & <b>co</b>"#
        let id = try await farm.submit(farm.longManifest(name: name, output: "out/long.mp4"))
        let failed = try await farm.submit(#"{ "version": 1, "name": "<img src=x onerror=alert(1)>", "input": "missing.mp4", "report": "out/m.json" }"#, query: "?allowMissingInputs=true")
        try await farm.waitFor(failed) { $0["state"] as? String == "failed" }
        let running = try await farm.waitFor(id) { $0["state"] as? String == "running" && ($0["progress"] as? Double ?? 0) >= 0.05 }
        #expect(running["state"] as? String == "running", "\(running)")
        // The job is held where it is (its worker stopped) so that a slow machine's browser still
        // finds it running; it goes on when the page has been read.
        let workers = (running["workerPID"] as? Int).map { [pid_t($0)] } ?? []
        #expect(!workers.isEmpty, "the running job names no worker: \(running)")
        for worker in workers { kill(worker, SIGSTOP) }
        defer { for worker in workers { kill(worker, SIGCONT) } }

        let chromium = ["timeout", "60", "chromium", "--headless=new", "--no-sandbox", "--disable-gpu"]
        // The URL the coordinator printed signs the browser in (a session cookie) and redirects to the page.
        let signIn = farm.base + "/?token=" + (farm.token ?? "")
        let dom = try await ProcessRunner.spawned("/usr/bin/env", chromium + ["--dump-dom", signIn])
        #expect(dom.status == 0, "\(dom.stderr)")
        let html = dom.stdout
        let row = try #require(html.firstMatch(of: /<tr class="job" data-job="(\d+)">(.*?)<\/tr>/), "no running job row in:\n\(html)")
        #expect(row.1 == "\(id)")
        #expect(row.2.contains("&lt;script&gt;document.title=\"owned\"&lt;/script&gt; &amp; &lt;b&gt;co&lt;/b&gt;"), "\(row.2)")
        let progress = try #require(row.2.firstMatch(of: /<progress max="100" value="(\d+)"><\/progress>/), "\(row.2)")
        #expect((Int(progress.1) ?? 0) >= 5, "\(row.2)")
        #expect(row.2.contains("class=\"phase\">") && !row.2.contains("class=\"phase\">starting<"), "\(row.2)")
        #expect(html.contains("<title>MediaFarm</title>"), "the job's name ran as a script")
        #expect(html.contains("&lt;img src=x onerror=alert(1)&gt;") && !html.contains("<img"), "the failure's name became markup")
        #expect(html.contains("missing.mp4"), "the failure's reason is not shown")

        let artifacts = TestPaths.packageRoot.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let png = artifacts.appendingPathComponent("status-page.png").path
        unlink(png)
        let shot = try await ProcessRunner.spawned("/usr/bin/env", chromium + ["--window-size=1280,800", "--screenshot=\(png)", signIn])
        #expect(shot.status == 0, "\(shot.stderr)")
        let bytes = try #require(FileManager.default.contents(atPath: png))
        #expect(bytes.count > 5000 && bytes.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]), "screenshot: \(bytes.count) bytes")
    }
}
