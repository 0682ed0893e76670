import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One object, one shape: the same event or job reads the same on the command line's `--json` and
/// through the API.
@Suite struct OneShapeTests {
    /// Server-sent events as `name` and decoded data, from a stream's text.
    static func events(_ stream: String) -> [(name: String, data: [String: Any])] {
        stream.components(separatedBy: "\n\n").compactMap { frame in
            let lines = frame.split(separator: "\n")
            guard let name = lines.first(where: { $0.hasPrefix("event: ") })?.dropFirst(7),
                  let data = lines.first(where: { $0.hasPrefix("data: ") })?.dropFirst(6),
                  let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else { return nil }
            return (String(name), object)
        }
    }

    @Test func theCoordinatorsEventsAndJobsReadTheSameOnTheCommandLineAndThroughTheAPI() async throws {
        let farm = try HTTPFarm("one-shape", workers: 1, arguments: ["--json"])
        let streamLog = farm.dir.appendingPathComponent("events.txt").path
        let stream = try Background(["/usr/bin/curl", "-s", "-N", "--max-time", "60", "-H", "Authorization: Bearer \(farm.token ?? "")",
                                     farm.base + "/api/events"], log: streamLog)
        defer { stream.kill(SIGKILL); _ = stream.wait(timeout: 5) }
        let opened = Date().addingTimeInterval(60)
        while !((try? String(contentsOfFile: streamLog, encoding: .utf8)) ?? "").contains("mediafarm events"), Date() < opened { usleep(20_000) }
        #expect(((try? String(contentsOfFile: streamLog, encoding: .utf8)) ?? "").contains("mediafarm events"), "the event stream never opened")
        let id = try await farm.submit(#"{"version": 1, "input": "clip.mp4", "report": "out/one-shape.json"}"#)
        let job = try await farm.waitFor(id) { $0["state"] as? String == "succeeded" }
        #expect(job["state"] as? String == "succeeded", "\(job)")
        let ended = Date().addingTimeInterval(10)
        var sent: [(name: String, data: [String: Any])] = []
        repeat {
            sent = Self.events((try? String(contentsOfFile: streamLog, encoding: .utf8)) ?? "")
            if sent.contains(where: { $0.name == "finished" }) { break }
            usleep(50_000)
        } while Date() < ended

        // The coordinator's own lines (stdout; the log's other lines are the logger's).
        let printed = farm.log.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["event"] != nil else { return nil }
            return object
        }
        for kind in ["submitted", "started", "finished"] {
            #expect(sent.contains { $0.name == kind && ($0.data["job"] as? NSNumber)?.int64Value == id }, "no \(kind) event for job \(id): \(sent)")
        }
        var compared = 0
        // One bus: the API's own events (submitted) are printed too, and every time is ISO 8601.
        for (name, data) in sent where ["submitted", "started", "progress", "finished"].contains(name) {
            #expect(data["event"] as? String == name)
            #expect(eventTime(data) != nil, "\(data)")
            let same = printed.first { $0["event"] as? String == name && ($0["at"] as? String) == (data["at"] as? String) }
            guard let same else {
                Issue.record("\(name) at \(data["at"] ?? "?") was sent but not printed: \(printed)")
                continue
            }
            // Compared as JSON written again with sorted keys (a Bool and an NSNumber do not compare equal as objects).
            let written = { (object: [String: Any]) in try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) }
            #expect(written(same) != nil && written(same) == written(data), "printed \(same), sent \(data)")
            compared += 1
        }
        #expect(compared >= 2)

        // A job: `status --json` and GET /api/jobs/{id}.
        let status = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["status", "--json", "--queue", "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path,
                                                                         String(id)])
        let listed = try #require(try JSONSerialization.jsonObject(with: status.stdoutData) as? [[String: Any]])
        let answered = try #require(try await farm.request("GET", "/api/jobs/\(id)").json)
        #expect(listed.count == 1 && NSDictionary(dictionary: listed[0]).isEqual(to: answered), "status --json \(listed), API \(answered)")

        // The webhook settings: `webhooks list --json` and GET /api/webhooks.
        let queue = "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path
        let settings = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["webhooks", "list", "--json", "--queue", queue])
        let printedSettings = try #require(try JSONSerialization.jsonObject(with: settings.stdoutData) as? [String: Any], "\(settings.stderr)")
        let answeredSettings = try #require(try await farm.request("GET", "/api/webhooks").json)
        #expect(NSDictionary(dictionary: printedSettings).isEqual(to: answeredSettings), "webhooks list --json \(printedSettings), API \(answeredSettings)")

        // The coordinators: `queue stats --json` and GET /api/coordinators name the same fields (their ages differ by
        // the moment each was asked, and only the API's coordinator is itself).
        let stats = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["queue", "stats", "--json", "--queue", queue])
        let statsCoordinators = try #require((try JSONSerialization.jsonObject(with: stats.stdoutData) as? [String: Any])?["coordinators"] as? [[String: Any]])
        let apiCoordinators = try #require(try await farm.request("GET", "/api/coordinators").json?["coordinators"] as? [[String: Any]])
        #expect(statsCoordinators.count == 1 && apiCoordinators.count == 1)
        #expect(Set(statsCoordinators.first?.keys.map { $0 } ?? []) == Set(apiCoordinators.first?.keys.map { $0 } ?? []),
                "queue stats \(statsCoordinators), API \(apiCoordinators)")
        #expect(statsCoordinators.first?["owner"] as? String == apiCoordinators.first?["owner"] as? String)
    }
}
