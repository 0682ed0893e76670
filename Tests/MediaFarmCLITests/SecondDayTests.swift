import FarmModel
import FarmTestSupport
import Foundation
@testable import MediaFarmCLI
@testable import QueueCLI
import Testing

/// What an engineer evaluating pipelines, object storage, chunks and webhooks tripped on in a second
/// day: each a command or a request that went wrong before, with the way out the message now names.
@Suite struct SecondDayTests {
    func mediafarm(_ args: [String]) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, args)
    }

    func site(_ label: String, _ manifests: [String: String]) throws -> URL {
        let dir = try TestPaths.makeTemporaryFolder("second-day-\(label)")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("clip.mp4").path)
        for (name, text) in manifests { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return dir
    }

    /// Two manifests writing one file were both queued; one failed after all its work (or, allowed to
    /// replace, silently lost the other's). Now the second is refused at submission, naming the job that
    /// writes the file and the ways out; waiting for it (`--after`) is allowed.
    @Test func aSecondLiveJobWritingTheSameFileIsRefused() throws {
        let export = #"{ "version": 1, "input": "clip.mp4", "export": { "mode": "passthrough", "output": "out/cut.mp4" }, "report": "out/REPORT.json" }"#
        let dir = try site("one-writer", ["a.json": export.replacingOccurrences(of: "REPORT", with: "a"),
                                          "b.json": export.replacingOccurrences(of: "REPORT", with: "b"),
                                          "c.json": #"{ "version": 1, "input": "clip.mp4", "report": "out/c.json" }"#,
                                          "d.json": #"{ "version": 1, "input": "clip.mp4", "report": "out/c.json", "overwrite": true }"#])
        let queue = ["--queue", "sqlite:" + dir.appendingPathComponent("q.sqlite").path]
        let first = try mediafarm(["submit", "--json"] + queue + [dir.appendingPathComponent("a.json").path])
        #expect(first.status == 0, "\(first.stderr)")
        let refused = try mediafarm(["submit"] + queue + [dir.appendingPathComponent("b.json").path])
        #expect(refused.status == 2, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains("\(dir.path)/out/cut.mp4 is written by job 1 (a), which is queued"), "\(refused.stderr)")
        #expect(refused.stderr.contains("submit --after 1") && refused.stderr.contains("nothing was queued"), "\(refused.stderr)")
        let after = try mediafarm(["submit", "--after", "1"] + queue + [dir.appendingPathComponent("b.json").path])
        #expect(after.status == 0, "waiting for the writer: \(after.stderr)")
        // A delayed job holds its file as well, and "overwrite" does not get past it.
        #expect(try mediafarm(["submit", "--delay", "3600"] + queue + [dir.appendingPathComponent("c.json").path]).status == 0)
        let overwriting = try mediafarm(["submit"] + queue + [dir.appendingPathComponent("d.json").path])
        #expect(overwriting.status == 2 && overwriting.stderr.contains("out/c.json is written by job 3 (c)"), "\(overwriting.stderr)")
        let status = try mediafarm(["status", "--json"] + queue)
        #expect(status.stdout.components(separatedBy: "\"name\" : ").count - 1 == 3, "three jobs queued: \(status.stdout)")
    }

    /// The same through the API: 422 naming the job, nothing queued.
    @Test func theAPIRefusesASecondWriterToo() async throws {
        let farm = try await ServedFarm("second-day-api", workers: 1)
        let manifest = #"{ "version": 1, "name": "NAME", "input": "clip.mp4", "report": "out/shared.json" }"#
        let first = try await farm.submit(manifest.replacingOccurrences(of: "NAME", with: "first"), query: "?delay=3600")
        let second = try await farm.request("POST", "/api/jobs", body: manifest.replacingOccurrences(of: "NAME", with: "second"))
        #expect(second.status == 422, "\(second.status) \(second.body)")
        #expect(second.body.contains("is written by job \(first) (first)") && second.body.contains("\\\"after\\\": [\(first)]"), "\(second.body)")
        let waiting = try await farm.request("POST", "/api/jobs", body: manifest.replacingOccurrences(of: "NAME", with: "third")
            .replacingOccurrences(of: "\"version\": 1,", with: "\"version\": 1, \"after\": [\(first)],"))
        #expect(waiting.status == 201, "\(waiting.status) \(waiting.body)")
    }

    /// `… already exists; set "overwrite": true` led to `"overwrite"` inside `export`, which was refused as
    /// an unknown key; the export's list of keys showed the coordinator's own (`frames`, `join`).
    @Test func overwriteIsPlacedWhereTheMessageSays() throws {
        let dir = try site("overwrite", ["in-export.json": #"{ "version": 1, "input": "clip.mp4", "export": { "mode": "passthrough", "output": "out.mp4", "overwrite": true, "fram": 1 } }"#,
                                         "exists.json": #"{ "version": 1, "input": "clip.mp4", "export": { "mode": "passthrough", "output": "old.mp4" } }"#])
        try Data("an earlier cut".utf8).write(to: dir.appendingPathComponent("old.mp4"))
        let misplaced = try mediafarm(["run", dir.appendingPathComponent("in-export.json").path])
        #expect(misplaced.status == 2)
        #expect(misplaced.stderr.contains(#"$.export.overwrite: "overwrite" belongs at the manifest's top level, beside "version""#), "\(misplaced.stderr)")
        let keys = try #require(misplaced.stderr.firstMatch(of: /\$\.export\.fram: [^\n]*allowed here: ([^\n]*)/), "\(misplaced.stderr)").1
        #expect(!keys.contains("frames") && !keys.contains("join") && keys.contains("chunkSeconds"), "\(keys)")
        let exists = try mediafarm(["run", dir.appendingPathComponent("exists.json").path])
        #expect(exists.status == 2 && exists.stderr.contains(#"already exists; set "overwrite": true at the manifest's top level to replace it"#), "\(exists.stderr)")
    }

    /// A job that failed because the job it waited for failed never showed in the coordinator's output, and
    /// `retry` did not say that the jobs waiting for it went back to waiting; `retry` of a job that
    /// succeeded said "cannot retry a job that is succeeded".
    @Test func whatHappensToDependentsIsSaid() throws {
        let dir = try site("dependents", ["a.json": #"{ "version": 1, "name": "a", "input": "gone.mp4", "report": "out/a.json" }"#,
                                          "b.json": #"{ "version": 1, "name": "b", "after": [1], "input": "clip.mp4", "report": "out/b.json" }"#,
                                          "c.json": #"{ "version": 1, "name": "c", "input": "clip.mp4", "report": "out/c.json" }"#])
        let queue = ["--queue", "sqlite:" + dir.appendingPathComponent("q.sqlite").path]
        #expect(try mediafarm(["submit", "--allow-missing-inputs", "--max-attempts", "1"] + queue + ["a.json", "b.json", "c.json"].map { dir.appendingPathComponent($0).path }).status == 0)
        let coordinator = try mediafarm(["coordinator", "--exit-when-idle", "--workers", "1"] + queue)
        let output = coordinator.stdout + coordinator.stderr
        #expect(output.contains("job 2 (b) failed: it needed job 1 (a) to succeed, which ended failed"), "\(output)")
        let retried = try mediafarm(["retry", "1"] + queue)
        #expect(retried.status == 0 && retried.stdout == "job 1 (a) queued again\n  job 2 (b) waits for it again\n", "\(retried.stdout) \(retried.stderr)")
        // Each failed attempt's row says who retried it: this command, and job 2 with job 1.
        let listed = try JSONSerialization.jsonObject(with: Data(try mediafarm(["status", "--json"] + queue).stdout.utf8)) as? [[String: Any]] ?? []
        let retriedBy = Dictionary(uniqueKeysWithValues: listed.map { (($0["id"] as? Int) ?? 0, ((($0["errors"] as? [[String: Any]])?.first)?["retriedBy"] as? String) ?? "") })
        #expect(retriedBy[1]?.hasPrefix("mediafarm retry, ") == true && retriedBy[1]?.contains(" on ") == true && retriedBy[2] == "with job 1", "\(retriedBy)")
        let cancelled = try mediafarm(["cancel", "1"] + queue)
        #expect(cancelled.stdout == "job 1 (a) cancelled\n  job 2 (b) failed: it needed job 1 to succeed\n", "\(cancelled.stdout) \(cancelled.stderr)")
        let succeeded = try mediafarm(["retry", "3"] + queue)
        #expect(succeeded.status == 1 && succeeded.stderr.contains("job 3 succeeded: there is nothing to retry; to run it again, submit its manifest again"),
                "\(succeeded.stderr)")
        #expect(try mediafarm(["cancel", "3"] + queue).stderr.contains("job 3 already ended (succeeded): there is nothing to cancel"))
    }

    /// The coordinator said "succeeded after 0.2 s" of a job `status` said took 0.1 s: both now say the
    /// attempt as the queue recorded it, claimed to ended.
    @Test func theLogAndStatusSayOneAttemptTime() throws {
        let dir = try site("one-time", ["a.json": #"{ "version": 1, "name": "a", "input": "clip.mp4", "report": "out/a.json" }"#])
        let queue = ["--queue", "sqlite:" + dir.appendingPathComponent("q.sqlite").path]
        #expect(try mediafarm(["submit"] + queue + [dir.appendingPathComponent("a.json").path]).status == 0)
        let coordinator = try mediafarm(["coordinator", "--exit-when-idle", "--workers", "1"] + queue)
        let output = coordinator.stdout + coordinator.stderr
        let logged = try #require(output.firstMatch(of: /job 1 \(a\) succeeded after (\d+\.\d) s/), "\(output)").1
        let status = try mediafarm(["status", "--all"] + queue).stdout
        let row = try #require(status.split(separator: "\n").first { $0.hasPrefix("1 ") || $0.hasPrefix("   1 ") || $0.contains(" a ") }, "\(status)")
        #expect(row.contains("\(logged) s"), "the log says \(logged) s; status: \(row)")
    }

    /// A job claimed ahead of a free slot showed as `running 0% waiting for a worker`; names longer than
    /// the column ran into the state.
    @Test func statusShowsClaimedAheadJobsAndKeepsItsColumns() {
        var ahead = Job(id: 1_234_567, name: "an-interview-with-a-very-long-name-indeed", manifest: "{}", baseDirectory: "/", createdAt: Date())
        ahead.state = .running
        ahead.phase = Job.claimedAheadPhase
        ahead.lease = Job.Lease(owner: "render7:12:ab", token: "t", expiresAt: Date())
        let table = StatusCommand.table([ahead])
        let row = table.split(separator: "\n")[1]
        #expect(row.hasPrefix("1234567  an-interview-with-a-very-lo…  running"), "\(table)")
        #expect(row.hasSuffix("claimed, waiting for a slot on render7") && !row.contains("[--"), "\(table)")
    }

    /// `status` printed every job ever (20,001 lines at 20,000 jobs; --json 158 MB): now the newest 100 with
    /// a line saying how many more match and how to see them; `--all` shows them, `--json --all` streams.
    @Test func statusShowsTheNewestHundredAndSaysHowManyMore() throws {
        var manifests: [String: String] = [:]
        for i in 0..<150 { manifests["j\(i).json"] = #"{ "version": 1, "name": "j\#(i)", "input": "clip.mp4", "report": "out/j\#(i).json" }"# }
        let dir = try site("status-many", manifests)
        let queue = ["--queue", "sqlite:" + dir.appendingPathComponent("q.sqlite").path]
        #expect(try mediafarm(["submit", "--delay", "3600"] + queue + [dir.path]).status == 0)
        let table = try mediafarm(["status"] + queue).stdout.split(separator: "\n")
        #expect(table.count == 102 && table.last == "50 more jobs match (the newest 100 shown): --limit N or --all shows more (--after 51: the next page)", "\(table.suffix(2))")
        #expect(table[1].hasPrefix("51 "), "the newest 100, oldest first: \(table[1])")
        #expect(try mediafarm(["status", "--all"] + queue).stdout.split(separator: "\n").count == 151)
        let json = try mediafarm(["status", "--json"] + queue)
        #expect((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [Any])?.count == 100)
        #expect(json.stderr.contains("50 more jobs match"), "\(json.stderr)")
        let all = try mediafarm(["status", "--json", "--all"] + queue)
        let ids = (try JSONSerialization.jsonObject(with: Data(all.stdout.utf8)) as? [[String: Any]])?.compactMap { $0["id"] as? Int }
        #expect(ids == Array(1...150), "every job, oldest first")
        #expect(try mediafarm(["status", "--all", "--limit", "5"] + queue).status == 2)
    }

    /// Help and messages: a mistyped command gets the nearest name (and `help nosuch` exits 2, not 0 with
    /// the top-level help), a mistyped preset too, a missing manifest file is said to be missing, and the
    /// coordinator's help no longer says a process runs one job.
    @Test func mistypedNamesGetTheNearestAndMissingFilesSaySo() throws {
        let typo = try mediafarm(["inpsect", "x.mp4"])
        #expect(typo.status == 2 && typo.stderr.contains(#"mediafarm has no command "inpsect" (did you mean "inspect"?)"#), "\(typo.stderr)")
        let help = try mediafarm(["help", "nosuch"])
        #expect(help.status == 2 && help.stderr.contains(#"no command "nosuch""#), "\(help.status) \(help.stderr)")
        let nested = try mediafarm(["library", "lst"])
        #expect(nested.status == 2 && nested.stderr.contains(#"mediafarm library has no command "lst" (did you mean "list"?)"#), "\(nested.stderr)")
        #expect(try mediafarm(["help", "status"]).status == 0)
        let dir = try site("typos", ["preset.json": #"{ "version": 1, "input": "clip.mp4", "export": { "mode": "constantFrameRate", "output": "o.mp4", "video": { "preset": "ultrafsat" } } }"#])
        let preset = try mediafarm(["run", dir.appendingPathComponent("preset.json").path])
        #expect(preset.status == 2 && preset.stderr.contains(#"(did you mean "ultrafast"?)"#), "\(preset.stderr)")
        let missing = try mediafarm(["run", dir.appendingPathComponent("no-such.json").path])
        #expect(missing.status == 2 && missing.stderr.contains("no-such.json: no such manifest file") && !missing.stderr.contains("invalid manifest"), "\(missing.stderr)")
        let coordinator = try mediafarm(["coordinator", "--help"])
        #expect(!coordinator.stdout.contains("one process per job"), "\(coordinator.stdout.prefix(300))")
    }
}

