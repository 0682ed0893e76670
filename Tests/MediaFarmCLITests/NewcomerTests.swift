import FarmTestSupport
import Foundation
import Testing

/// A newcomer's first hour, each stumble a command with its message and exit status: refusals that say
/// the way out, no silent no-ops, CI reports that never go missing, every error at once, config errors as
/// good as manifest errors, messages that do not mislead.
@Suite struct NewcomerTests {
    func mediafarm(_ args: [String], in folder: URL? = nil) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, args, currentDirectory: folder?.path)
    }

    /// A folder with a clip and a manifest named `name` holding `text`.
    func site(_ label: String, _ manifests: [String: String] = [:]) throws -> URL {
        let dir = try TestPaths.makeTemporaryFolder("newcomer-\(label)")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("clip.mp4").path)
        for (name, text) in manifests { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return dir
    }

    // MARK: - Refusals that say the way out

    @Test func anOutputOutsideTheRootsNamesTheOptionThatAllowsIt() throws {
        let dir = try site("roots", ["job.json": #"{ "version": 1, "input": "clip.mp4", "report": "../reports/r.json" }"#])
        let reports = dir.deletingLastPathComponent().appendingPathComponent(dir.lastPathComponent + "-reports")
        try #"{ "version": 1, "input": "clip.mp4", "report": "\#(reports.path)/r.json" }"#
            .write(to: dir.appendingPathComponent("job.json"), atomically: true, encoding: .utf8)
        let queue = "sqlite:" + dir.appendingPathComponent("q.sqlite").path
        for command in [["run"], ["submit", "--queue", queue], ["batch"]] {
            let r = try mediafarm(command + [dir.appendingPathComponent("job.json").path])
            #expect(r.status == 2, "\(command): \(r.stderr)")
            #expect(r.stderr.contains("outside the output roots") && r.stderr.contains("--output-root FOLDER")
                    && r.stderr.contains("MEDIAFARM_OUTPUT_ROOTS"), "\(command): \(r.stderr)")
        }
        // The way out works.
        try FileManager.default.createDirectory(at: reports, withIntermediateDirectories: true)
        let allowed = try mediafarm(["run", "--output-root", reports.path, dir.appendingPathComponent("job.json").path])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(FileManager.default.fileExists(atPath: reports.appendingPathComponent("r.json").path))
    }

    // MARK: - Every error at once

    @Test func submitRefusesAMissingInputAndSaysHowToQueueItAnyway() throws {
        let dir = try site("missing", ["job.json": #"{ "version": 1, "input": "later.mp4", "report": "out/r.json" }"#])
        let queue = "sqlite:" + dir.appendingPathComponent("q.sqlite").path
        let refused = try mediafarm(["submit", "--queue", queue, dir.appendingPathComponent("job.json").path])
        #expect(refused.status == 2 && refused.stderr.contains("$.input: \(dir.path)/later.mp4: no such file")
                && refused.stderr.contains("--allow-missing-inputs") && refused.stderr.contains("nothing was queued"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("q.sqlite").path), "a refused submission made the queue")
        let queued = try mediafarm(["submit", "--queue", queue, "--allow-missing-inputs", dir.appendingPathComponent("job.json").path])
        #expect(queued.status == 0 && queued.stdout.contains("queued job 1"), "\(queued.stderr)")
    }

    /// The second day's CLI: `status --after ID` pages on from the last job shown (the API's cursor), a
    /// paused farm is named where queued jobs wait, and `webhooks retry` of ids that are no deliveries says so.
    @Test func statusPagesNamesAPauseAndRetryNamesUnknownDeliveries() throws {
        let dir = try site("second-day", [
            "a.json": #"{ "version": 1, "name": "a", "input": "clip.mp4", "report": "out/a.json" }"#,
            "b.json": #"{ "version": 1, "name": "b", "input": "clip.mp4", "report": "out/b.json" }"#,
            "c.json": #"{ "version": 1, "name": "c", "input": "clip.mp4", "report": "out/c.json" }"#,
        ])
        let queue = "sqlite:" + dir.appendingPathComponent("q.sqlite").path
        #expect(try mediafarm(["submit", "--queue", queue, "a.json", "b.json", "c.json"], in: dir).status == 0)
        func ids(_ table: String) -> [Int] { table.split(separator: "\n").filter { !$0.contains("more job") }.compactMap { $0.split(separator: " ").first.flatMap { Int($0) } } }
        let first = try mediafarm(["status", "--queue", queue, "--limit", "2"], in: dir)
        #expect(ids(first.stdout) == [2, 3], "\(first.stdout)")
        #expect(first.stdout.contains("1 more job match (the newest 2 shown): --limit N or --all shows more (--after 2: the next page)"), "\(first.stdout)")
        let next = try mediafarm(["status", "--queue", queue, "--limit", "2", "--after", "2"], in: dir)
        #expect(next.status == 0 && ids(next.stdout) == [1], "\(next.stdout) \(next.stderr)")
        #expect(try mediafarm(["status", "--queue", queue, "--after", "0"], in: dir).status == 2)

        #expect(try mediafarm(["queue", "pause", "--queue", queue], in: dir).status == 0)
        let paused = try mediafarm(["status", "--queue", queue], in: dir)
        #expect(paused.stdout.contains("waiting for a worker; the farm is paused") && paused.stdout.contains("queue resume"), "\(paused.stdout)")
        #expect(try mediafarm(["queue", "resume", "--queue", queue], in: dir).status == 0)
        #expect(!(try mediafarm(["status", "--queue", queue], in: dir).stdout.contains("paused")))

        let retry = try mediafarm(["webhooks", "retry", "--queue", queue, "5"], in: dir)
        #expect(retry.status == 1 && retry.stderr.contains("no delivery 5") && !retry.stdout.contains("none of those deliveries failed"),
                "\(retry.stdout) \(retry.stderr)")
    }

    /// Two manifests of one submission that write one file are named, both, with the file: no job that
    /// was never made is blamed.
    @Test func aClashInsideOneSubmissionNamesBothManifests() throws {
        let dir = try site("clash", [
            "a.json": #"{ "version": 1, "name": "poster-a", "input": "clip.mp4", "poster": { "output": "out/poster.jpg" } }"#,
            "b.json": #"{ "version": 1, "name": "poster-b", "input": "clip.mp4", "poster": { "output": "out/poster.jpg" } }"#,
        ])
        let queue = "sqlite:" + dir.appendingPathComponent("q.sqlite").path
        let r = try mediafarm(["submit", "--queue", queue, "a.json", "b.json"], in: dir)
        #expect(r.status == 2, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("b.json") && r.stderr.contains("poster.jpg is written by") && r.stderr.contains("a.json too, in the same submission"),
                "\(r.stderr)")
        #expect(!r.stderr.contains("job 1") && r.stderr.contains("nothing was queued"), "\(r.stderr)")
        let status = try mediafarm(["status", "--queue", queue], in: dir)
        #expect(status.stdout == "no jobs\n" || status.status != 0, "\(status.stdout)")

        // With one unique key only one of them is ever live: no clash, the second is answered by the key.
        let keyed = try mediafarm(["submit", "--queue", queue, "--unique-key", "poster", "a.json", "b.json"], in: dir)
        #expect(keyed.status == 0, "\(keyed.stdout) \(keyed.stderr)")
        #expect(keyed.stdout.contains("queued job 1 ") && keyed.stdout.contains("job 1 already holds key poster"), "\(keyed.stdout)")
    }

    @Test func anUnknownAssetIsReportedWithTheOtherErrorsAtItsPath() throws {
        let dir = try site("asset", [
            "both.json": #"{ "version": 1, "input": "asset:00000000000000000000000000", "report": "r.json", "bogus": 1 }"#,
            "edits.json": #"{ "version": 1, "edits": [ { "source": "clip.mp4" }, { "source": "asset:00000000000000000000000000" } ] }"#,
        ])
        let queue = "sqlite:" + dir.appendingPathComponent("q.sqlite").path
        #expect(try mediafarm(["queue", "migrate", "--queue", queue]).status == 0)
        let r = try mediafarm(["submit", "--queue", queue, dir.path])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("both.json: invalid manifest (2 errors)") && r.stderr.contains(#"$.bogus: unknown key "bogus""#)
                && r.stderr.contains("$.input: no asset 00000000000000000000000000 in the library"), "\(r.stderr)")
        #expect(r.stderr.contains("$.edits[1].source: no asset 00000000000000000000000000 in the library"), "\(r.stderr)")
        #expect(r.stderr.contains("nothing was queued: 2 of 2 manifests are invalid"), "\(r.stderr)")
    }

    @Test func anAssetIDsHiddenRuleIsSaid() throws {
        let r = try mediafarm(["library", "resolve", "--queue", "sqlite:/nonexistent/q.sqlite", "0000000000000000000000000a"])
        #expect(r.status == 2 && r.stderr.contains("its last character must be one of 0 4 8 c g m r w"), "\(r.stderr)")
        let short = try mediafarm(["library", "resolve", "000"])
        #expect(short.status == 2 && short.stderr.contains("it has 3 characters"), "\(short.stderr)")
    }

    // MARK: - CI reports that never go missing

    @Test func batchChecksItsJUnitPathBeforeRunningAnything() throws {
        let dir = try site("junit-path", ["job.json": #"{ "version": 1, "input": "clip.mp4", "report": "out/r.json" }"#])
        let r = try mediafarm(["batch", "--junit", "/nonexistent/r.xml", dir.path])
        #expect(r.status == 2 && r.stderr.contains("--junit /nonexistent/r.xml: the folder /nonexistent does not exist"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out").path), "a job ran although the report could not be written")
        let folder = try mediafarm(["batch", "--junit", dir.path, dir.path])
        #expect(folder.status == 2 && folder.stderr.contains("is a folder"), "\(folder.stderr)")
    }

    @Test func invalidManifestsAreFailedTestCasesInTheJUnitReport() throws {
        let dir = try site("junit-invalid", [
            "fine.json": #"{ "version": 1, "input": "clip.mp4", "report": "out/fine.json" }"#,
            "typo.json": #"{ "version": 1, "inptu": "clip.mp4" }"#,
        ])
        let junit = dir.appendingPathComponent("report.xml").path
        let r = try mediafarm(["batch", "--junit", junit, dir.appendingPathComponent("fine.json").path, dir.appendingPathComponent("typo.json").path])
        #expect(r.status == 2 && r.stderr.contains("nothing was run"), "\(r.stderr)")
        let check = """
        import sys, xml.etree.ElementTree as ET
        suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
        print(suite.get("tests"), suite.get("failures"), suite.get("skipped"))
        for case in suite.findall("testcase"):
            failure, skipped = case.find("failure"), case.find("skipped")
            print(case.get("name"), failure.get("type") if failure is not None else "-", failure.get("message") if failure is not None else "",
                  "skipped" if skipped is not None else "")
        """
        let parsed = try ProcessRunner.run("/usr/bin/python3", ["-c", check, junit])
        let lines = parsed.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "2 1 1", "\(parsed.stdout) \(parsed.stderr)")
        #expect(lines.contains { $0.hasPrefix("typo invalid invalid manifest: $.inptu: unknown key") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("fine - ") && $0.hasSuffix("skipped") }, "\(lines)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out").path))
    }

    // MARK: - No silent no-ops (ingest)

    @Test func ingestSaysWhatItCannotReingestAndChecksTheQueueEveryPass() throws {
        let site = try IngestTests.Site("newcomer")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: site.incoming.appendingPathComponent("a.mp4").path)
        try Data("not media".utf8).write(to: site.incoming.appendingPathComponent("bad.mp4"))
        // The first dry run: nothing is moved, and it says what a pass would do.
        let dry = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--config", site.config, "--dry-run", "--queue", site.queue])
        #expect(dry.status == 0 && dry.stdout.contains("a pass would start the settle time of 2 new or changed files"), "\(dry.stdout)")
        // Two passes: a.mp4 enqueued, bad.mp4 quarantined.
        for _ in 0..<2 { #expect(try site.ingest().status == 0) }
        // Nothing due now, and the queue unreachable: a failure cron sees.
        let unreachable = try site.ingest(queue: "postgres://nobody@127.0.0.1:1/none")
        #expect(unreachable.status == 1 && unreachable.stderr.contains("the queue:") && unreachable.stderr.contains("nothing was due this pass"),
                "\(unreachable.stderr)")
        // --reingest: an unknown content, a file that is not there, a file outside the watch folders: refused, nothing done.
        let unknown = try site.ingest(["--reingest", String(repeating: "0", count: 64)])
        #expect(unknown.status == 2 && unknown.stderr.contains("no file with this content was ingested"), "\(unknown.stderr)")
        let gone = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--config", site.config, "--queue", site.queue,
                                                                        "--reingest", "incoming/nope.mp4"], currentDirectory: site.folder.path)
        #expect(gone.status == 2 && gone.stderr.contains("--reingest \(site.folder.path)/incoming/nope.mp4: no such file"), "\(gone.stderr)")
        let outside = try site.ingest(["--reingest", site.config])
        #expect(outside.status == 2 && outside.stderr.contains("not in a watch folder"), "\(outside.stderr)")
        // A relative path, from the folder it is relative to, is taken.
        let again = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--config", site.config, "--queue", site.queue, "--json",
                                                                         "--reingest", "incoming/a.mp4"], currentDirectory: site.folder.path)
        #expect(again.status == 0, "\(again.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
        #expect((report?["jobs"] as? [[String: Any]])?.count == 1, "\(again.stdout)")
    }

    // MARK: - Config errors as good as manifest errors

    @Test func configErrorsHaveLinesColumnsAndSuggestions() throws {
        let site = try IngestTests.Site("config-errors")
        try "{ \"version\": 1,\n  \"watch\": [ }".write(toFile: site.config, atomically: true, encoding: .utf8)
        let broken = try site.ingest()
        #expect(broken.status == 2 && broken.stderr.contains("invalid JSON at line 2, column 14"), "\(broken.stderr)")
        try #"{ "version": 1, "settleSecs": 3, "watch": [ { "path": "incoming", "includes": ["*.mp4"], "template": "templates/proxy.json" } ], "state": "s.sqlite", "quarantine": "q" }"#
            .write(toFile: site.config, atomically: true, encoding: .utf8)
        let typo = try site.ingest()
        #expect(typo.status == 2 && typo.stderr.contains(#"$.settleSecs: unknown key (did you mean "settleSeconds"?)"#)
                && typo.stderr.contains(#"$.watch[0].includes: unknown key (did you mean "include"?)"#), "\(typo.stderr)")
    }

    @Test func symbologiesIgnoreCaseAndTyposGetASuggestion() throws {
        let dir = try site("symbologies")
        let clip = dir.appendingPathComponent("clip.mp4").path
        let mixed = try mediafarm(["scan", "--symbologies", "QR,datamatrix", clip])
        #expect(mixed.status == 0 && mixed.stdout.contains("0 codes"), "\(mixed.stdout) \(mixed.stderr)")
        let typo = try mediafarm(["scan", "--symbologies", "qrr", clip])
        #expect(typo.status == 2 && typo.stderr.contains(#"unknown symbology "qrr" (did you mean "qr"?)"#), "\(typo.stderr)")
        try #"{ "version": 1, "input": "clip.mp4", "scan": { "symbologies": ["QR", "DataMatrix", "ean-13"] }, "report": "out/r.json" }"#
            .write(to: dir.appendingPathComponent("scan.json"), atomically: true, encoding: .utf8)
        let manifest = try mediafarm(["run", dir.appendingPathComponent("scan.json").path])
        #expect(manifest.status == 2 && manifest.stderr.contains(#"$.scan.symbologies[2]: unknown symbology "ean-13" (did you mean "ean13"?)"#)
                && !manifest.stderr.contains("symbologies[0]") && !manifest.stderr.contains("symbologies[1]"), "\(manifest.stderr)")
        let negative = try mediafarm(["scan", "--symbologies", "qr", "--interval", "-1", clip])
        #expect(negative.status == 2 && negative.stderr.contains("--interval must not be negative") && !negative.stderr.contains("Missing value"),
                "\(negative.stderr)")
    }

    // MARK: - Messages that do not mislead

    @Test func aSubcommandsUsageErrorShowsItsOwnUsage() throws {
        let r = try mediafarm(["library", "list", "--queue", "sqlite:/nonexistent/q.sqlite", "--type", "vidoe"])
        #expect(r.status == 2 && r.stderr.contains(#"--type vidoe (did you mean "video"?)"#)
                && r.stderr.contains("Usage: mediafarm library list") && r.stderr.contains("See 'mediafarm library list --help'"), "\(r.stderr)")
        let bare = try mediafarm([])
        #expect(bare.status == 2 && bare.stderr.contains("USAGE: mediafarm <subcommand>") && bare.stdout.isEmpty, "\(bare.stderr)")
    }

    @Test func theLibraryRefusesWhatInspectFailsOn() throws {
        let corpus = try #require(TestPaths.corpus)
        let broken = corpus.appendingPathComponent("vp9_invalid-bitstream.webm").path
        let dir = try site("library-broken")
        let inspect = try mediafarm(["inspect", broken])
        #expect(inspect.status == 1)
        let add = try mediafarm(["library", "add", "--queue", "sqlite:" + dir.appendingPathComponent("q.sqlite").path, broken])
        #expect(add.status == 1 && add.stdout.contains("refused") && add.stdout.contains("cannot be decoded"), "\(add.stdout) \(add.stderr)")
    }

    @Test func aFailedJobShowsNoPhaseAndCountsReadAsWords() throws {
        let dir = try site("phase", ["job.json": #"{ "version": 1, "input": "later.mp4", "report": "out/r.json" }"#])
        let queue = "sqlite:" + dir.appendingPathComponent("q.sqlite").path
        let migrated = try mediafarm(["queue", "migrate", "--queue", queue])
        #expect(migrated.status == 0 && migrated.stdout.contains("created the queue (schema version"), "\(migrated.stdout)")
        let again = try mediafarm(["queue", "migrate", "--queue", queue])
        #expect(again.status == 0 && again.stdout.contains("is current"), "\(again.stdout)")
        #expect(try mediafarm(["submit", "--queue", queue, "--allow-missing-inputs", dir.appendingPathComponent("job.json").path]).status == 0)
        let ran = try mediafarm(["coordinator", "--queue", queue, "--exit-when-idle", "--workers", "1"])
        #expect(ran.status == 1, "\(ran.stderr)")
        let status = try mediafarm(["status", "--queue", queue, "--json"])
        let jobs = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(jobs.first?["state"] as? String == "failed" && jobs.first?["phase"] == nil, "\(status.stdout)")

        // One frame is "1 frame".
        let png = dir.appendingPathComponent("still.png").path
        _ = try ProcessRunner.run("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=160x120", "-frames:v", "1", png])
        let scanned = try mediafarm(["scan", "--symbologies", "qr", png])
        #expect(scanned.status == 0 && scanned.stdout.contains("0 codes, 1 frame scanned"), "\(scanned.stdout)")
    }

    @Test func helpTextsSayEachDefaultOnce() throws {
        let commands: [[String]] = [["inspect"], ["scan"], ["run"], ["submit"], ["status"], ["cancel"], ["retry"], ["coordinator"],
                                    ["worker"], ["queue", "migrate"], ["queue", "stats"], ["queue", "prune"], ["ingest"], ["batch"],
                                    ["capture"], ["healthcheck"], ["library", "add"], ["library", "list"], ["library", "changes"]]
        for command in commands {
            let help = try mediafarm(command + ["--help"])
            #expect(help.status == 0, "\(command)")
            // Options' help, with wrapped lines joined: no "(default 0). (default: 0)".
            let prose = help.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            let twice = prose.range(of: #"\(default[^)]*\)\.?\s*\(default:"#, options: .regularExpression)
            #expect(twice == nil, "\(command): \(twice.map { String(prose[$0]) } ?? "")")
            // The overview and discussion (the text before USAGE) read as prose: no runs of spaces.
            let overview = help.stdout.components(separatedBy: "USAGE:")[0]
            let runs = overview.range(of: #"\S {2,}\S"#, options: .regularExpression)
            #expect(runs == nil, "\(command): \(runs.map { String(overview[$0]) } ?? "")")
        }
    }

    // MARK: - Live sources that are live

    @Test func aSyntheticSourceIsPacedToRealTime() throws {
        let dir = try TestPaths.makeTemporaryFolder("newcomer-pace")
        let started = Date()
        let r = try mediafarm(["capture", "--source", "lavfi:testsrc2=s=160x120:r=10", "--output-dir", dir.path, "--segment-duration", "1",
                               "--max-duration", "3", "--json"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(elapsed >= 2.7, "3 s of a synthetic source recorded in \(elapsed) s")
        let clocks = r.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["wallClock"] as? String
        }
        #expect(clocks.count == 3 && Set(clocks).count >= 2, "segments' wall clocks: \(clocks)")
    }
}
