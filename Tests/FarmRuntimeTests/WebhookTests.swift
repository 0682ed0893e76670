import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A receiver the test starts: `script/webhook-receiver`, which verifies every request's signature with the
/// Standard Webhooks reference library and logs it.
final class Receiver {
    let port: Int
    let log: URL
    private let process: Background

    init(in folder: URL, secretFile: String, port: Int? = nil, options: [String] = [], name: String = "receiver") throws {
        log = folder.appendingPathComponent("\(name).jsonl")
        let portFile = folder.appendingPathComponent("\(name).port").path
        try? FileManager.default.removeItem(atPath: portFile)
        let script = TestPaths.packageRoot.appendingPathComponent("script/webhook-receiver").path
        process = try Background(["/usr/bin/python3", script, "--secret-file", secretFile, "--log", log.path, "--port-file", portFile,
                                  "--port", String(port ?? 0)] + options,
                                 log: folder.appendingPathComponent("\(name).out").path)
        guard eventually(15, { FileManager.default.fileExists(atPath: portFile) }),
              let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) else {
            process.kill(SIGKILL)
            throw FixtureError("the webhook receiver did not start: \((try? String(contentsOfFile: folder.appendingPathComponent("\(name).out").path, encoding: .utf8)) ?? "")")
        }
        self.port = port
    }

    deinit { stop() }

    func stop() {
        process.kill(SIGKILL)
        _ = process.wait(timeout: 5)
    }

    /// Every request so far, in arrival order.
    var requests: [[String: Any]] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Requests answered 2xx.
    var accepted: [[String: Any]] { requests.filter { ($0["answered"] as? Int).map { (200..<300).contains($0) } ?? false } }
}

/// Webhooks through the commands and real coordinators: signed bodies reach a real receiver, a receiver
/// that is down gets every event once it is up, a killed coordinator's events are sent by the next, and
/// a job cannot make the farm call a host it does not allow.
@Suite(.serialized) struct WebhookTests {
    func secret(_ farm: Farm) throws -> String {
        let made = try farm.mediafarm(["webhooks", "new-secret"])
        #expect(made.status == 0 && made.stdout.hasPrefix("whsec_"))
        let path = farm.folder.appendingPathComponent("webhook.secret").path
        try made.stdout.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func deliveries(_ farm: Farm, _ args: [String] = []) throws -> [[String: Any]] {
        let r = try farm.mediafarm(["webhooks", "deliveries", "--json", "--limit", "1000"] + args)
        guard r.status == 0 else { throw FixtureError("webhooks deliveries: \(r.stderr)") }
        return try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]] ?? []
    }

    /// Jobs end while the receiver answers 503 to its first 4 requests: each event still arrives, verified
    /// by the reference algorithm, once per webhook-id at least, a job's events in their order; the job's
    /// own `notify` URL gets its event; a `notify` host the farm does not allow is refused at submission.
    /// `--exit-when-idle` (CI) waits for the outbox, retries included: a receiver that fails at first still
    /// gets its event before the coordinator exits 0. One that refuses the signature (401) is said, with the
    /// key the coordinator signed with, and the coordinator exits 1 once `--webhook-drain-seconds` pass.
    @Test func anIdleExitWaitsForTheOutboxAndSaysWhatIsLeft() throws {
        let farm = try Farm("webhooks-idle-exit")
        let secretFile = try secret(farm)
        let receiver = try Receiver(in: farm.folder, secretFile: secretFile, options: ["--fail-first", "2"])
        _ = try farm.submit([try farm.inspectManifest("ci")])
        let options = ["--exit-when-idle", "--workers", "1", "--webhook-secret-file", secretFile, "--webhook-backoff", "0.3"]
        let delivered = try farm.startCoordinator(options + ["--webhook", "http://127.0.0.1:\(receiver.port)/ci"], log: "delivered.log")
        #expect(delivered.wait(timeout: 60) == 0, "\(delivered.log)")
        #expect(receiver.accepted.count == 1 && receiver.requests.count == 3, "\(receiver.requests)")

        // A receiver with another secret answers 401 to every request.
        let otherSecret = farm.folder.appendingPathComponent("other.secret").path
        try farm.mediafarm(["webhooks", "new-secret"]).stdout.write(toFile: otherSecret, atomically: true, encoding: .utf8)
        let refusing = try Receiver(in: farm.folder, secretFile: otherSecret, name: "refusing")
        let removed = try farm.mediafarm(["webhooks", "remove", "http://127.0.0.1:\(receiver.port)/ci"])
        #expect(removed.status == 0, "\(removed.stderr)")
        _ = try farm.submit([try farm.inspectManifest("ci-2")])
        let started = Date()
        let left = try farm.startCoordinator(options + ["--webhook", "http://127.0.0.1:\(refusing.port)/ci", "--webhook-drain-seconds", "2"], log: "left.log")
        #expect(left.wait(timeout: 60) == 1, "\(left.log)")
        #expect(Date().timeIntervalSince(started) >= 2, "it did not wait for the outbox")
        let key = try #require(left.log.firstMatch(of: /signed with key ([0-9a-f]+)/)?.1, "\(left.log)")
        #expect(left.log.contains("webhooks: 1 deliveries still pending, after waiting up to 2 s (--webhook-drain-seconds); the last error: HTTP 401"), "\(left.log)")
        #expect(left.log.contains("compare its secret with the one of key \(key)"), "\(left.log)")
    }

    /// A job's `notify` goes where the farm allows, checked where the connection goes: a name allowed with a
    /// port allows that port only; a name that resolves to loopback (`localhost`) is refused at delivery,
    /// the receiver never asked; an address the operator wrote out is taken as it is. A failed answer is
    /// kept as its status line and content type, never its body.
    @Test func aJobsNotifyReachesOnlyAllowedPortsAndPublicAddressesAndKeepsNoAnswerBody() throws {
        let farm = try Farm("webhooks-destinations")
        let secretFile = try secret(farm)
        let receiver = try Receiver(in: farm.folder, secretFile: secretFile, options: ["--fail-first", "1000", "--fail-body", "internal-secret-42"])
        let port = receiver.port
        let options = ["--exit-when-idle", "--workers", "1", "--webhook-secret-file", secretFile, "--webhook-backoff", "0.1",
                       "--webhook-retry-hours", "0.0001", "--webhook-drain-seconds", "1",
                       "--webhook-allow-host", "localhost:\(port)", "--webhook-allow-host", "127.0.0.1:\(port)"]
        // The allowances enter the queue with a coordinator (one with nothing to do exits at once).
        let first = try farm.startCoordinator(options, log: "allow.log")
        #expect(first.wait(timeout: 60) == 0, "\(first.log)")
        func notifying(_ name: String, _ url: String) throws -> String {
            try farm.manifest(name, #"{ "version": 1, "name": "\#(name)", "input": "in.mp4", "notify": ["\#(url)"] }"#)
        }
        // Another port of an allowed host is refused at submission, naming the one allowance that would do.
        let otherPort = try farm.mediafarm(["submit", try notifying("other-port", "http://127.0.0.1:\(port + 1)/x")])
        #expect(otherPort.status == 2 && otherPort.stderr.contains("--webhook-allow-host 127.0.0.1:\(port + 1)"), "\(otherPort.stderr)")
        let byName = try farm.submit([try notifying("by-name", "http://localhost:\(port)/name")])[0]
        let byAddress = try farm.submit([try notifying("by-address", "http://127.0.0.1:\(port)/address")])[0]
        let second = try farm.startCoordinator(options, log: "deliver.log")
        _ = second.wait(timeout: 120)
        let rows = try deliveries(farm)
        let named = rows.first { ($0["jobID"] as? NSNumber)?.int64Value == byName }
        #expect(named?["state"] as? String == "refused", "\(rows)")
        let reason = named?["lastError"] as? String ?? ""
        #expect(reason.contains("localhost resolves to") && reason.contains("a loopback address") && reason.contains("public addresses only"), "\(reason)")
        #expect(!receiver.requests.contains { $0["path"] as? String == "/name" }, "\(receiver.requests)")
        let literal = rows.first { ($0["jobID"] as? NSNumber)?.int64Value == byAddress }
        #expect(receiver.requests.contains { $0["path"] as? String == "/address" }, "\(receiver.requests)")
        let kept = literal?["lastError"] as? String ?? ""
        #expect(kept.hasPrefix("HTTP 503 Service Unavailable (text/plain") && !kept.contains("internal-secret"), "\(literal ?? [:])")
    }

    /// A delivery given up while its receiver was down is sent again with `webhooks retry --failed` once the
    /// receiver is back (same webhook-id); an id that did not fail is said not to be sent again.
    @Test func failedDeliveriesAreSentAgainOnRequest() throws {
        let farm = try Farm("webhooks-resend")
        let secretFile = try secret(farm)
        let first = try Receiver(in: farm.folder, secretFile: secretFile, name: "first")
        let port = first.port
        first.stop()
        _ = try farm.submit([try farm.inspectManifest("resend")])
        let options = ["--exit-when-idle", "--workers", "1", "--webhook-secret-file", secretFile, "--webhook-backoff", "0.2"]
        let down = try farm.startCoordinator(options + ["--webhook", "http://127.0.0.1:\(port)/hook", "--webhook-retry-hours", "0.0001"], log: "down.log")
        #expect(down.wait(timeout: 60) == 0, "\(down.log)")
        let failed = try deliveries(farm, ["--state", "failed"])
        #expect(failed.count == 1, "\(down.log)")

        let receiver = try Receiver(in: farm.folder, secretFile: secretFile, port: port, name: "back")
        let resent = try farm.mediafarm(["webhooks", "retry", "--failed"])
        #expect(resent.status == 0 && resent.stdout.contains("http://127.0.0.1:\(port)/hook  sent again (after 1 attempt)"), "\(resent.stdout) \(resent.stderr)")
        let up = try farm.startCoordinator(options, log: "up.log")
        #expect(up.wait(timeout: 60) == 0, "\(up.log)")
        #expect(receiver.accepted.count == 1 && receiver.accepted.first?["id"] as? String == "msg_\(failed.first?["id"] as? Int ?? 0)", "\(receiver.requests)")
        let none = try farm.mediafarm(["webhooks", "retry", String(failed.first?["id"] as? Int ?? 0), "999"])
        // The delivered one did not fail (it is not sent again); 999 is no delivery at all: each said as it is.
        #expect(none.status == 1 && none.stderr.contains("not sent again: \(failed.first?["id"] as? Int ?? 0) (it did not fail")
                && none.stderr.contains("no delivery 999 in"), "\(none.stdout) \(none.stderr)")
        #expect(try farm.mediafarm(["webhooks", "retry"]).status == 2)
    }

    @Test func eventsReachAReceiverThatFailsAtFirstSignedAndInOrder() throws {
        let farm = try Farm("webhooks")
        let secretFile = try secret(farm)
        let receiver = try Receiver(in: farm.folder, secretFile: secretFile, options: ["--fail-first", "4"])
        let hook = "http://127.0.0.1:\(receiver.port)"
        var ids: [Int64] = []
        for i in 0..<5 { ids += try farm.submit([try farm.inspectManifest("ok\(i)")]) }
        let missing = try farm.submit(["--allow-missing-inputs", try farm.inspectManifest("missing", input: "nowhere.mp4")])[0]
        // Before any coordinator allowed the host, a job naming it is refused, nothing queued.
        let notifying = try farm.manifest("notifying", """
            { "version": 1, "name": "notifying", "input": "in.mp4", "notify": ["\(hook)/mine"] }
            """)
        let refused = try farm.mediafarm(["submit", notifying])
        #expect(refused.status == 2 && refused.stderr.contains("127.0.0.1:\(receiver.port)")
                && refused.stderr.contains("--webhook-allow-host 127.0.0.1:\(receiver.port)"), "\(refused.stderr)")
        let coordinator = try farm.startCoordinator(["--workers", "2", "--webhook", "\(hook)/farm", "--webhook", "job.failed=\(hook)/failures",
                                                     "--webhook-allow-host", "127.0.0.1:\(receiver.port)", "--webhook-secret-file", secretFile,
                                                     "--webhook-backoff", "0.2"])
        defer { _ = coordinator.wait(timeout: 0) }
        #expect(eventually(20) { (try? farm.status().values.filter { $0["state"] as? String == "queued" }.isEmpty) == true
                                 && (try? farm.mediafarm(["webhooks", "list"]).stdout.contains("127.0.0.1")) == true })
        let notified = try farm.submit([notifying])[0]
        // Another host stays refused.
        let elsewhere = try farm.manifest("elsewhere", #"{ "version": 1, "input": "in.mp4", "notify": ["http://169.254.169.254/latest"] }"#)
        let refusedAgain = try farm.mediafarm(["submit", elsewhere])
        #expect(refusedAgain.status == 2 && refusedAgain.stderr.contains("169.254.169.254:80"), "\(refusedAgain.stderr)")

        // 6 events to /farm, 1 to /failures, 1 more to /farm and 1 to /mine for the notifying job.
        let everything = eventually(60) { receiver.accepted.count >= 9 }
        kill(coordinator.pid, SIGTERM)
        #expect(coordinator.wait(timeout: 30) == 0, "\(coordinator.log)")
        #expect(everything, "\(receiver.requests)")
        let requests = receiver.requests
        #expect(requests.allSatisfy { $0["verified"] as? Bool == true }, "a signature did not verify: \(requests)")
        #expect(requests.prefix(4).allSatisfy { $0["answered"] as? Int == 503 })
        func got(_ path: String) -> [Int64: [String]] {
            var byJob: [Int64: [String]] = [:]
            for r in receiver.accepted where r["path"] as? String == path {
                byJob[(r["job"] as? NSNumber)?.int64Value ?? -1, default: []].append(r["type"] as? String ?? "?")
            }
            return byJob
        }
        let farmEvents = got("/farm")
        for id in ids + [notified] { #expect(Set(farmEvents[id] ?? []) == ["job.succeeded"], "job \(id): \(farmEvents[id] ?? [])") }
        #expect(Set(farmEvents[missing] ?? []) == ["job.failed"])
        #expect(got("/failures").keys.sorted() == [missing])
        #expect(got("/mine") == [notified: ["job.succeeded"]])
        // Each webhook-id was answered 2xx at least once; the ones refused with 503 were sent again with the same id.
        let rejectedIDs = Set(requests.prefix(4).compactMap { $0["id"] as? String })
        let acceptedIDs = Set(receiver.accepted.compactMap { $0["id"] as? String })
        #expect(rejectedIDs.isSubset(of: acceptedIDs))
        // The body's data is the job as the API shows it.
        let body = try #require(receiver.accepted.first { ($0["job"] as? NSNumber)?.int64Value == missing })
        #expect(body["state"] as? String == "failed" && body["name"] as? String == "missing")

        // The queue's account: all delivered, the rejected ones after more than one attempt, their last status kept.
        let rows = try deliveries(farm)
        #expect(rows.count == 9 && rows.allSatisfy { $0["state"] as? String == "delivered" }, "\(rows)")
        #expect(rows.filter { ($0["attempts"] as? Int ?? 0) > 1 }.count >= 1)
        let list = try farm.mediafarm(["webhooks", "list"])
        #expect(list.stdout.contains("\(hook)/farm  all events") && list.stdout.contains("job.failed") && list.stdout.contains("9 delivered"), "\(list.stdout)")
    }

    /// The receiver is not there at all (connection refused) while jobs end: the deliveries wait, with the
    /// reason; when it starts on that port, every event arrives, each job's in order.
    @Test func aReceiverThatIsDownGetsEveryEventWhenItComesUp() throws {
        let farm = try Farm("webhooks-down")
        let secretFile = try secret(farm)
        let port = TestPaths.freeLoopbackPort()
        let hook = "http://127.0.0.1:\(port)/farm"
        // A job that fails, is retried and then succeeds: two events, in that order.
        let flaky = try farm.submit(["--allow-missing-inputs", try farm.inspectManifest("flaky", input: "later.mp4")])[0]
        let ok = try farm.submit([try farm.inspectManifest("ok")])[0]
        let coordinator = try farm.startCoordinator(["--webhook", hook, "--webhook-secret-file", secretFile, "--webhook-backoff", "0.2"])
        defer { _ = coordinator.wait(timeout: 0) }
        #expect(eventually(30) { (try? farm.state(flaky)) == "failed" && (try? farm.state(ok)) == "succeeded" })
        try FileManager.default.copyItem(at: farm.folder.appendingPathComponent("in.mp4"), to: farm.folder.appendingPathComponent("later.mp4"))
        #expect(try farm.mediafarm(["retry", String(flaky)]).status == 0)
        #expect(eventually(30) { (try? farm.state(flaky)) == "succeeded" })
        // Attempts fail with the reason, and are kept pending.
        #expect(eventually(30) { ((try? deliveries(farm)) ?? []).contains { ($0["attempts"] as? Int ?? 0) >= 2 } })
        let pending = try deliveries(farm)
        #expect(pending.count == 3 && pending.allSatisfy { $0["state"] as? String == "pending" }, "\(pending)")
        #expect(pending.contains { ($0["lastError"] as? String)?.contains("refused") == true }, "\(pending)")
        // Only the first of flaky's events is tried while it is pending.
        let flakyRows = pending.filter { ($0["jobID"] as? NSNumber)?.int64Value == flaky }
        #expect(flakyRows.first { $0["type"] as? String == "job.succeeded" }?["attempts"] as? Int == 0, "\(flakyRows)")

        let receiver = try Receiver(in: farm.folder, secretFile: secretFile, port: port)
        #expect(eventually(30) { receiver.accepted.count >= 3 }, "\(receiver.requests)")
        kill(coordinator.pid, SIGTERM)
        #expect(coordinator.wait(timeout: 30) == 0, "\(coordinator.log)")
        let flakyTypes = receiver.accepted.filter { ($0["job"] as? NSNumber)?.int64Value == flaky }.map { $0["type"] as? String ?? "" }
        #expect(flakyTypes == ["job.failed", "job.succeeded"])
        #expect(try deliveries(farm).allSatisfy { $0["state"] as? String == "delivered" })
    }

    /// A coordinator that records events but cannot send them (no secret) is killed after its job's
    /// commit; another is killed while its request is still unanswered: a third sends both.
    @Test func aKilledCoordinatorsEventsAreSentByTheNext() throws {
        let farm = try Farm("webhooks-kill")
        let secretFile = try secret(farm)
        let receiver = try Receiver(in: farm.folder, secretFile: secretFile, options: ["--hold-first", "60"])
        let hook = "http://127.0.0.1:\(receiver.port)/farm"
        let first = try farm.submit([try farm.inspectManifest("first")])[0]
        let quiet = try farm.startCoordinator(["--webhook", hook], log: "quiet.log")
        #expect(eventually(30) { (try? farm.state(first)) == "succeeded" })
        kill(quiet.pid, SIGKILL)
        _ = quiet.wait(timeout: 10)
        #expect(try deliveries(farm).map { $0["state"] as? String } == ["pending"])

        // The next one sends that event, and its request is held; it is killed meanwhile.
        let sender = try farm.startCoordinator(["--webhook-secret-file", secretFile, "--webhook-timeout", "2"], log: "sender.log")
        #expect(eventually(30) { receiver.requests.contains { $0["holding"] as? Bool == true } }, "\(sender.log)")
        kill(sender.pid, SIGKILL)
        _ = sender.wait(timeout: 10)
        let second = try farm.submit([try farm.inspectManifest("second")])[0]
        #expect(try deliveries(farm).allSatisfy { $0["state"] as? String == "pending" })

        // The third runs the second job and sends both events, the first once its lease ran out.
        let third = try farm.startCoordinator(["--webhook-secret-file", secretFile, "--webhook-timeout", "2"], log: "third.log")
        defer { _ = third.wait(timeout: 0) }
        #expect(eventually(60) { Set(receiver.accepted.compactMap { ($0["job"] as? NSNumber)?.int64Value }) == [first, second] },
                "\(receiver.requests)\n\(third.log)")
        kill(third.pid, SIGTERM)
        #expect(third.wait(timeout: 30) == 0)
        let rows = try deliveries(farm)
        #expect(rows.count == 2 && rows.allSatisfy { $0["state"] as? String == "delivered" }, "\(rows)")
        #expect(rows.first { ($0["jobID"] as? NSNumber)?.int64Value == first }?["attempts"] as? Int == 2)
    }
}
