import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Pausing claims, kept in the queue: two coordinators on one queue obey a pause of the farm set from the
/// console in Chromium, and a pause of one coordinator set from the command line; a resume lets them claim.
@Suite(.serialized) struct QueuePauseTests {
    static let quick = #"{ "version": 1, "name": "NAME", "input": "clip.mp4", "report": "out/NAME.json" }"#

    /// A second coordinator on `farm`'s queue; its owner name, read from its first line.
    static func second(_ farm: HTTPFarm) throws -> (Background, String) {
        let process = try Background([TestPaths.mediafarmExecutable, "coordinator", "--queue", "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path,
                                      "--workers", "1"], log: farm.dir.appendingPathComponent("second.log").path)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.log.firstMatch(of: #/coordinator (\S+): /#) == nil { usleep(50_000) }
        guard let owner = process.log.firstMatch(of: #/coordinator (\S+): /#)?.1 else { throw FixtureError("the second coordinator did not start: \(process.log)") }
        return (process, String(owner))
    }

    /// The farm's times, as its JSON gives them.
    static let milliseconds = Date.ISO8601FormatStyle.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)

    static func owner(_ farm: HTTPFarm) throws -> String {
        guard let owner = farm.log.firstMatch(of: #/coordinator (\S+): /#)?.1 else { throw FixtureError("no owner in \(farm.log)") }
        return String(owner)
    }

    @Test func aPauseOfTheFarmFromTheConsoleStopsBothCoordinatorsUntilResumed() async throws {
        let farm = try HTTPFarm("pause-console", workers: 1)
        let (second, _) = try Self.second(farm)
        defer { second.kill(SIGKILL); _ = second.wait(timeout: 5) }
        let paused = try await ConsoleTests.drive("chromium", [
            ["go": farm.base + "/?token=" + (farm.token ?? "")],
            ["click": "#pause-farm"],
            ["wait": "!!document.querySelector('div.paused[data-scope=farm]')"],
            ["eval": "document.querySelector('div.paused').textContent"],
        ])
        #expect((paused.results[0] as? String)?.contains("Claiming is paused for the farm") == true, "\(paused.results)")
        var ids: [Int64] = []
        for n in 0..<4 { ids.append(try await farm.submit(Self.quick.replacingOccurrences(of: "NAME", with: "q\(n)"))) }
        // Both coordinators hear of the work (the doorbell), try to claim, and say they are paused.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !(farm.log.contains("claiming paused") && second.log.contains("claiming paused")) { usleep(50_000) }
        #expect(farm.log.contains("claiming paused (the farm)"), "\(farm.log)")
        #expect(second.log.contains("claiming paused (the farm)"), "\(second.log)")
        for id in ids { #expect(try await farm.job(id)["state"] as? String == "queued", "job \(id) ran while the farm was paused") }
        #expect(try await farm.metric("mediafarm_claiming_paused") == 1)
        // What an autoscaler reads counts no queued job while the farm is paused (nothing runs either).
        #expect(try await farm.metric("mediafarm_scaling_jobs") == 0)
        // Nothing starts while paused, however long the pause lasts: each job's one attempt starts after the
        // resume was clicked (below, the page's clock just before the click), which no wait of a fixed length
        // could show.
        // Resumed from Firefox (paused from Chromium): the forms work in both.
        let resumed = try await ConsoleTests.drive("firefox", [
            ["go": farm.base + "/?token=" + (farm.token ?? "")],
            ["eval": "Date.now()"],
            ["click": "div.paused button.resume"],
            ["wait": "!document.querySelector('div.paused') && !!document.getElementById('pause-farm')"],
            ["eval": "true"],
        ])
        #expect(resumed.results.count == 2 && resumed.results[1] as? Bool == true, "\(resumed.results)")
        let resumeAsked = Date(timeIntervalSince1970: ((resumed.results.first as? Double) ?? .infinity) / 1000)
        for id in ids { try await farm.waitFor(id) { $0["state"] as? String == "succeeded" } }
        for id in ids {
            let job = try await farm.job(id)
            #expect(job["state"] as? String == "succeeded", "job \(id) did not run after the resume")
            let started = try (job["startedAt"] as? String).map { try Date($0, strategy: Self.milliseconds) }
            // (Times are given to the millisecond.)
            #expect(job["attempt"] as? Int == 1 && started.map { $0 >= resumeAsked.addingTimeInterval(-0.001) } == true,
                    "job \(id) was claimed while the farm was paused: attempt \(job["attempt"] ?? "?") started \(job["startedAt"] ?? "?"), the resume was asked for at \(resumeAsked)")
        }
        #expect(farm.log.contains("claiming paused for farm by the console"), "the action is not printed: \(farm.log)")
        #expect(farm.log.contains("claiming resumed"))
    }

    @Test func aPauseOfOneCoordinatorLeavesTheOtherClaiming() async throws {
        let farm = try HTTPFarm("pause-one", workers: 1)
        let (second, secondOwner) = try Self.second(farm)
        defer { second.kill(SIGKILL); _ = second.wait(timeout: 5) }
        let queue = ["--queue", "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path]
        let first = try Self.owner(farm)
        let paused = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["queue", "pause", "--coordinator", first, "--json"] + queue)
        #expect(paused.status == 0, "\(paused.stderr)")
        #expect(paused.stdout.contains("\"scope\" : \"coordinator:\(first)\""), "\(paused.stdout)")
        var ids: [Int64] = []
        for n in 0..<6 { ids.append(try await farm.submit(Self.quick.replacingOccurrences(of: "NAME", with: "one\(n)"))) }
        for id in ids { try await farm.waitFor(id) { $0["state"] as? String == "succeeded" } }
        for (n, id) in ids.enumerated() {
            #expect(try await farm.job(id)["state"] as? String == "succeeded")
            // The paused coordinator prints the submissions its API took ("job 1 (one0) submitted"), not a start.
            let started = "job \(id) (one\(n)) started"
            #expect(farm.log.contains("job \(id) (one\(n)) submitted"), "\(farm.log)")
            #expect(!farm.log.contains(started), "the paused coordinator ran job \(id): \(farm.log)")
            #expect(second.log.contains(started), "the other coordinator did not run job \(id): \(second.log)")
        }
        let stats = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["queue", "stats"] + queue)
        #expect(stats.stdout.contains("claiming paused for coordinator \(first)"), "\(stats.stdout)")
        #expect(!secondOwner.isEmpty)
        let resumed = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["queue", "resume", "--coordinator", first] + queue)
        #expect(resumed.status == 0 && resumed.stdout.contains("claiming resumed for coordinator \(first)"), "\(resumed.stdout) \(resumed.stderr)")
        let again = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["queue", "resume", "--coordinator", first] + queue)
        #expect(again.status == 1 && again.stderr.contains("was not paused"), "\(again.status) \(again.stderr)")
        let both = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["queue", "pause", "--host", "a", "--coordinator", "b:1:c"] + queue)
        #expect(both.status == 2, "\(both.stderr)")
    }
}
