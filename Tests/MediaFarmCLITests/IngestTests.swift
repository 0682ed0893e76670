import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm ingest` as cron runs it: real files, real processes, a real SQLite queue.
@Suite struct IngestTests {
    /// A watch folder, a template, a config (settleSeconds 0: a file settles at its second sighting) and a
    /// queue, in a temporary folder.
    struct Site {
        let folder: URL
        var incoming: URL { folder.appendingPathComponent("incoming") }
        var queue: String { folder.appendingPathComponent("queue.sqlite").path }
        var config: String { folder.appendingPathComponent("ingest.json").path }

        init(_ label: String, settle: Double = 0, afterEnqueue: String = "leave", extra: String = "") throws {
            folder = try TestPaths.makeTemporaryFolder("ingest-\(label)")
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("incoming"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("templates"), withIntermediateDirectories: true)
            try """
            { "version": 1, "name": "proxy-{stem}", "input": "{input}",
              "export": { "mode": "passthrough", "output": "../out/{stem}-{hash}.{ext}" }, "report": "../out/{stem}-{hash}.json" }
            """.write(to: folder.appendingPathComponent("templates/proxy.json"), atomically: true, encoding: .utf8)
            try """
            { "version": 1,
              "watch": [ { "path": "incoming", "include": ["*.mp4", "*.mov", "*.part"], "template": "templates/proxy.json" } ],
              "settleSeconds": \(settle), "quarantine": "quarantine", "state": "state/ingest.sqlite",
              "afterEnqueue": "\(afterEnqueue)", "outputRoots": ["out"]\(extra) }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        }

        func ingest(_ args: [String] = [], queue: String? = nil) throws -> ProcessResult {
            try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--config", config, "--json", "--queue", queue ?? self.queue] + args)
        }

        /// The pass's JSON report.
        func pass(_ args: [String] = []) throws -> [String: Any] {
            let r = try ingest(args)
            guard r.status == 0, let report = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any] else {
                throw FixtureError("ingest exited \(r.status): \(r.stderr)")
            }
            return report
        }

        func add(_ fixture: MediaFixture, as name: String) throws {
            try FileManager.default.copyItem(atPath: fixture.path, toPath: incoming.appendingPathComponent(name).path)
        }

        /// Every queued job's manifest, read from the queue's file with sqlite3.
        func manifests() throws -> [String] {
            let r = try ProcessRunner.run("/usr/bin/sqlite3", [queue, "SELECT replace(manifest, char(10), ' ') FROM jobs ORDER BY id"])
            guard r.status == 0 else { throw FixtureError("sqlite3: \(r.stderr)") }
            return r.stdout.split(separator: "\n").map(String.init)
        }

        /// The jobs in the queue: name -> manifest text.
        func jobs() throws -> [String: String] {
            let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["status", "--json", "--all", "--chunks", "--queue", queue])
            guard r.status == 0 else { return [:] }
            let rows = try JSONSerialization.jsonObject(with: r.stdoutData) as? [[String: Any]] ?? []
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["name"] as? String ?? "", "\($0)") })
        }
    }

    static func names(_ report: [String: Any], _ key: String) -> [String] {
        ((report[key] as? [[String: Any]]) ?? []).compactMap { ($0["path"] as? String).map { ($0 as NSString).lastPathComponent } }.sorted()
    }

    @Test func aFileStillBeingWrittenIsNotTakenUntilItSettles() throws {
        let site = try Site("growing")
        let path = site.incoming.appendingPathComponent("growing.mp4").path
        let movie = try Data(contentsOf: URL(fileURLWithPath: MediaFixture.cfr30MP4.path))
        let third = movie.count / 3
        // Three passes, the file longer at each: never enqueued.
        for part in 1...3 {
            let handle = FileManager.default.fileExists(atPath: path) ? try FileHandle(forWritingTo: URL(fileURLWithPath: path)) : nil
            if let handle {
                try handle.seekToEnd()
                try handle.write(contentsOf: movie[(part - 1) * third..<(part == 3 ? movie.count : part * third)])
                try handle.close()
            } else {
                #expect(FileManager.default.createFile(atPath: path, contents: movie[0..<third]))
            }
            let report = try site.pass()
            #expect(report["enqueued"] as? Int == 0 && report["settling"] as? Int == 1, "pass \(part): \(report)")
        }
        // It stops growing: the next pass sees it unchanged and takes it (whole).
        let settled = try site.pass()
        #expect(settled["enqueued"] as? Int == 1 && Self.names(settled, "jobs") == ["growing.mp4"], "\(settled)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == movie)
        #expect(try site.pass()["enqueued"] as? Int == 0)
    }

    // The settle time, counted between passes with a clock the test moves: FarmIngestTests' IngestPassTests.

    @Test func renamedAndCopiedFilesAreDuplicatesAndBadFilesGoToQuarantine() throws {
        let site = try Site("duplicates")
        try site.add(.cfr30MP4, as: "take1.mp4")
        try site.add(.movH264, as: "take2.mov")
        try site.add(.cfr30MP4, as: "copy-of-take1.mp4")
        let movie = try Data(contentsOf: URL(fileURLWithPath: MediaFixture.longMP4.path))
        #expect(FileManager.default.createFile(atPath: site.incoming.appendingPathComponent("truncated.mp4").path, contents: movie.prefix(movie.count / 2)))
        var garbage = SeededRandom(state: 3)
        #expect(FileManager.default.createFile(atPath: site.incoming.appendingPathComponent("garbage.mov").path,
                                               contents: Data((0..<20_000).map { _ in UInt8(truncatingIfNeeded: garbage.next()) })))
        #expect(FileManager.default.createFile(atPath: site.incoming.appendingPathComponent("empty.mp4").path, contents: Data()))
        #expect(FileManager.default.createFile(atPath: site.incoming.appendingPathComponent("upload.mp4.part").path, contents: Data("x".utf8)))
        let outside = site.folder.appendingPathComponent("outside.mp4").path
        try FileManager.default.copyItem(atPath: MediaFixture.movH264.path, toPath: outside)
        try FileManager.default.createSymbolicLink(atPath: site.incoming.appendingPathComponent("link.mp4").path, withDestinationPath: outside)

        _ = try site.pass()
        let report = try site.pass()
        // Files are taken in path order: the copy comes first, so the original is its duplicate.
        #expect(Self.names(report, "jobs") == ["copy-of-take1.mp4", "take2.mov"], "\(report)")
        #expect(Self.names(report, "duplicateFiles") == ["take1.mp4"])
        #expect(Self.names(report, "quarantine") == ["empty.mp4", "garbage.mov", "truncated.mp4"], "\(report)")
        let skipped = (report["skipped"] as? [[String: Any]]) ?? []
        #expect(skipped.contains { ($0["path"] as? String)?.hasSuffix("link.mp4") == true && ($0["reason"] as? String)?.contains("outside") == true })
        #expect(skipped.contains { ($0["path"] as? String)?.hasSuffix("upload.mp4.part") == true })
        // Quarantined files moved, each with its reason; the others stay where they were.
        let quarantine = site.folder.appendingPathComponent("quarantine")
        for name in ["empty.mp4", "garbage.mov", "truncated.mp4"] {
            #expect(!FileManager.default.fileExists(atPath: site.incoming.appendingPathComponent(name).path))
            let reason = try JSONSerialization.jsonObject(with: Data(contentsOf: quarantine.appendingPathComponent(name + ".reason.json"))) as? [String: Any]
            #expect((reason?["hash"] as? String)?.count == 64 && (reason?["reason"] as? String)?.isEmpty == false, "\(String(describing: reason))")
        }
        #expect(try String(contentsOf: quarantine.appendingPathComponent("empty.mp4.reason.json"), encoding: .utf8).contains("empty"))

        // Renamed after ingest (the library learns its new name), and a copy in the folder next month (a
        // duplicate): nothing enqueued.
        try FileManager.default.moveItem(at: site.incoming.appendingPathComponent("take2.mov"), to: site.incoming.appendingPathComponent("renamed.mov"))
        try site.add(.cfr30MP4, as: "again.mp4")
        _ = try site.pass()
        let later = try site.pass()
        #expect(later["enqueued"] as? Int == 0 && Self.names(later, "duplicateFiles") == ["again.mp4"], "\(later)")
        #expect(Self.names(later, "renamed") == ["renamed.mov"], "\(later)")
        #expect(try site.jobs().count == 2)
        // Unless asked to ingest it again.
        let again = try site.pass(["--reingest", site.incoming.appendingPathComponent("again.mp4").path])
        #expect(Self.names(again, "jobs") == ["again.mp4"], "\(again)")
    }

    /// With `afterEnqueue: leave`, a file renamed after its job was queued and before it ran: the next pass
    /// sees its content at the new name (not a duplicate, no second job) and the library learns the path;
    /// the job then reads the file where it is. The old name's row is forgotten after the grace period;
    /// the content's hash is not.
    @Test func aFileRenamedBeforeItsJobRanIsStillProcessed() throws {
        let site = try Site("renamed", extra: #", "forgetGoneAfterDays": 0"#)
        try site.add(.cfr30MP4, as: "clip2.mp4")
        _ = try site.pass()
        let first = try site.pass()
        #expect(first["enqueued"] as? Int == 1, "\(first)")
        func rows() throws -> [String] {
            let r = try ProcessRunner.run("/usr/bin/sqlite3", [site.folder.appendingPathComponent("state/ingest.sqlite").path,
                                                               "SELECT path || ' ' || (gone_since IS NOT NULL) FROM files ORDER BY path"])
            return r.stdout.split(separator: "\n").map { ($0 as NSString).lastPathComponent }
        }
        try FileManager.default.moveItem(at: site.incoming.appendingPathComponent("clip2.mp4"), to: site.incoming.appendingPathComponent("clip2-renamed.mp4"))
        let missed = try site.pass()
        // The pass that misses the old name marks it gone; the next one forgets it (grace 0).
        #expect(missed["forgotten"] as? Int == 0, "\(missed)")
        #expect(try rows() == ["clip2-renamed.mp4 0", "clip2.mp4 1"])
        let seen = try site.pass()
        #expect(seen["enqueued"] as? Int == 0 && Self.names(seen, "duplicateFiles").isEmpty, "\(seen)")
        #expect(seen["forgotten"] as? Int == 1, "\(seen)")
        #expect(try rows() == ["clip2-renamed.mp4 0"])
        let renamed = (seen["renamed"] as? [[String: Any]]) ?? []
        #expect(renamed.count == 1 && (renamed[0]["path"] as? String)?.hasSuffix("/clip2-renamed.mp4") == true
                && (renamed[0]["from"] as? String)?.hasSuffix("/clip2.mp4") == true, "\(seen)")

        let coordinator = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--exit-when-idle", "--queue", site.queue])
        #expect(coordinator.status == 0, "\(coordinator.stdout)\(coordinator.stderr)")
        #expect((coordinator.stdout + coordinator.stderr).contains("clip2-renamed.mp4: the job reads it there"), "\(coordinator.stdout)\(coordinator.stderr)")
        let out = try FileManager.default.contentsOfDirectory(atPath: site.folder.appendingPathComponent("out").path).sorted()
        #expect(out.count == 2 && out.allSatisfy { $0.hasPrefix("clip2-") }, "\(out)")
        let movie = try #require(out.first { $0.hasSuffix(".mp4") })
        #expect(try MediaProbe.packets(site.folder.appendingPathComponent("out/" + movie).path, stream: "v").count == 60)

        // The content is still known after its first name was forgotten: a copy is a duplicate.
        try site.add(.cfr30MP4, as: "clip2-copy.mp4")
        _ = try site.pass()
        let copy = try site.pass()
        #expect(Self.names(copy, "duplicateFiles") == ["clip2-copy.mp4"] && copy["enqueued"] as? Int == 0, "\(copy)")
    }

    /// The path each job reads (its manifest's input) -> the bytes there now.
    static func inputsOfJobs(_ report: [String: Any]) -> [String: Data] {
        var inputs: [String: Data] = [:]
        for job in (report["jobs"] as? [[String: Any]]) ?? [] {
            if let path = job["path"] as? String { inputs[path] = FileManager.default.contents(atPath: path) }
        }
        return inputs
    }

    /// Camera cards copied into one watch tree hold files of the same name: with `afterEnqueue: move` each
    /// keeps its place under processing/, in one pass and across passes, and no file is ever replaced.
    @Test func sameNamedFilesFromTwoCardsAreBothKeptAndEachJobReadsItsOwn() throws {
        let site = try Site("cards", afterEnqueue: "move")
        let cards: [(String, MediaFixture)] = [("cardA", .cfr30MP4), ("cardB", .tone60ShortMP4)]
        for (card, fixture) in cards {
            try FileManager.default.createDirectory(at: site.incoming.appendingPathComponent(card), withIntermediateDirectories: true)
            try site.add(fixture, as: "\(card)/C0001.MP4")
        }
        _ = try site.pass()
        let report = try site.pass()
        #expect(report["enqueued"] as? Int == 2, "\(report)")
        let processing = site.folder.appendingPathComponent("processing").path
        let inputs = Self.inputsOfJobs(report)
        #expect(Set(inputs.keys) == [processing + "/cardA/C0001.MP4", processing + "/cardB/C0001.MP4"], "\(report)")
        for (card, fixture) in cards {
            #expect(inputs[processing + "/\(card)/C0001.MP4"] == FileManager.default.contents(atPath: fixture.path), "\(card) is byte-identical")
        }
        // Each job's manifest names its own file.
        let manifests = try site.manifests()
        #expect(manifests.count == 2 && manifests[0] != manifests[1], "\(manifests)")
        #expect(manifests.contains { $0.contains("/processing/cardA/C0001.MP4\"") }, "\(manifests)")
        #expect(manifests.contains { $0.contains("/processing/cardB/C0001.MP4\"") }, "\(manifests)")

        // A second pass: the next card's C0001.MP4 lands in cardA again before the first job ran.
        try site.add(.movH264, as: "cardA/C0001.MP4")
        _ = try site.pass()
        let later = try site.pass()
        let laterInputs = Self.inputsOfJobs(later)
        #expect(laterInputs.count == 1 && laterInputs.keys.first.map { ($0 as NSString).lastPathComponent.hasPrefix("C0001-") } == true,
                "\(later)")
        #expect(laterInputs.values.first == FileManager.default.contents(atPath: MediaFixture.movH264.path))
        #expect(FileManager.default.contents(atPath: processing + "/cardA/C0001.MP4") == FileManager.default.contents(atPath: MediaFixture.cfr30MP4.path),
                "the first card's file is still there")
        #expect(try site.manifests().count == 3)
    }

    /// Two watch folders beside each other share processing/: their same-named files both survive.
    @Test func sameNamedFilesFromTwoWatchFoldersAreBothKept() throws {
        let site = try Site("two-watches", afterEnqueue: "move")
        let config = try String(contentsOfFile: site.config, encoding: .utf8)
        try config.replacingOccurrences(of: #""watch": [ { "path": "incoming", "#,
                                        with: #""watch": [ { "path": "incoming2", "include": ["*.mp4"], "template": "templates/proxy.json" }, { "path": "incoming", "#)
            .write(toFile: site.config, atomically: true, encoding: .utf8)
        let second = site.folder.appendingPathComponent("incoming2")
        try FileManager.default.createDirectory(at: second, withIntermediateDirectories: true)
        try site.add(.cfr30MP4, as: "C0001.mp4")
        try FileManager.default.copyItem(atPath: MediaFixture.tone60ShortMP4.path, toPath: second.appendingPathComponent("C0001.mp4").path)
        _ = try site.pass()
        let report = try site.pass()
        let inputs = Self.inputsOfJobs(report)
        #expect(inputs.count == 2, "\(report)")
        let originals = [MediaFixture.cfr30MP4, .tone60ShortMP4].compactMap { FileManager.default.contents(atPath: $0.path) }
        #expect(Set(inputs.values) == Set(originals), "both files, byte-identical")
        #expect(inputs.keys.allSatisfy { $0.hasPrefix(site.folder.appendingPathComponent("processing").path + "/C0001") })
        // And the asset library records each under its own content.
        for path in inputs.keys {
            let shown = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "show", "--json", "--queue", site.queue, path])
            let detail = try JSONSerialization.jsonObject(with: shown.stdoutData) as? [String: Any] ?? [:]
            let hash = (report["jobs"] as? [[String: Any]])?.first { $0["path"] as? String == path }?["hash"] as? String
            #expect((detail["asset"] as? [String: Any])?["sha256"] as? String == hash, "\(shown.stdout)\(shown.stderr)")
        }
    }

    @Test func aBadFileThatCannotBeMovedIsReportedOnceAndLeftInPlace() throws {
        let site = try Site("unmovable")
        // The quarantine path is taken by a file: nothing can be moved there.
        #expect(FileManager.default.createFile(atPath: site.folder.appendingPathComponent("quarantine").path, contents: Data("x".utf8)))
        #expect(FileManager.default.createFile(atPath: site.incoming.appendingPathComponent("bad.mp4").path, contents: Data("not a movie".utf8)))
        _ = try site.pass()
        let report = try site.pass()
        let entry = (report["quarantine"] as? [[String: Any]])?.first
        #expect(report["quarantined"] as? Int == 1 && entry?["movedTo"] == nil, "\(report)")
        #expect(FileManager.default.fileExists(atPath: site.incoming.appendingPathComponent("bad.mp4").path))
        // Remembered: not inspected again while it stays as it is.
        let next = try site.pass()
        #expect(next["quarantined"] as? Int == 0 && next["settling"] as? Int == 0, "\(next)")
    }

    @Test func twoPassesAtOnceEnqueueEachFileOnce() throws {
        let site = try Site("overlap")
        let movie = try Data(contentsOf: URL(fileURLWithPath: MediaFixture.cfr30MP4.path))
        for i in 0..<200 {
            // 200 different files: the same movie with a different tail (still a readable MP4).
            var bytes = movie
            bytes.append(contentsOf: Array("\(i)".utf8))
            #expect(FileManager.default.createFile(atPath: site.incoming.appendingPathComponent(String(format: "clip%03d.mp4", i)).path,
                                                   contents: bytes))
        }
        _ = try site.pass()
        let results = try [0, 1].map { _ in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: TestPaths.mediafarmExecutable)
            p.arguments = ["ingest", "--config", site.config, "--json", "--queue", site.queue]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            try p.run()
            return (p, out)
        }.map { p, out in
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
        }
        #expect(results.allSatisfy { $0.0 == 0 })
        let enqueued = results.map { $0.1["enqueued"] as? Int ?? 0 }.reduce(0, +)
        #expect(enqueued == 200, "\(results.map { $0.1["enqueued"] ?? "?" }) busy: \(results.map { $0.1["busy"] ?? "?" })")
        #expect(try site.jobs().count == 200)
        #expect(try site.pass()["enqueued"] as? Int == 0)
    }

    @Test func aQueueThatCannotBeOpenedFailsThePassAndTheNextOneCatchesUp() throws {
        let site = try Site("queue-down", afterEnqueue: "move")
        try site.add(.cfr30MP4, as: "a.mp4")
        _ = try site.pass()
        let failed = try site.ingest([], queue: "postgres://farm@127.0.0.1:1/farm?connect_timeout=2")
        #expect(failed.status == 1 && failed.stderr.contains("nothing was enqueued"), "\(failed.stderr)")
        // Nothing moved, nothing marked.
        #expect(FileManager.default.fileExists(atPath: site.incoming.appendingPathComponent("a.mp4").path))
        let next = try site.pass()
        #expect(next["enqueued"] as? Int == 1, "\(next)")
        let moved = site.folder.appendingPathComponent("processing/a.mp4").path
        #expect(FileManager.default.fileExists(atPath: moved) && !FileManager.default.fileExists(atPath: site.incoming.appendingPathComponent("a.mp4").path))
        // The job reads the file where it now is.
        #expect(((next["jobs"] as? [[String: Any]])?.first?["path"] as? String) == moved)
        #expect(try site.jobs().keys.sorted() == ["proxy-a"])
    }

    /// `--metrics-file`: each pass leaves its figures for node_exporter's textfile collector; a failed pass
    /// says so (success 0) without losing the file.
    @Test func eachPassWritesItsMetricsFile() throws {
        let site = try Site("metrics")
        let file = site.folder.appendingPathComponent("ingest.prom").path
        try site.add(.cfr30MP4, as: "a.mp4")
        try site.add(.cfr30MP4, as: "copy.mp4")
        let text = { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }
        func value(_ name: String) -> Double? {
            text().split(separator: "\n").first { $0.hasPrefix("mediafarm_ingest_\(name) ") }.flatMap { Double($0.split(separator: " ")[1]) }
        }
        _ = try site.pass(["--metrics-file", file])
        #expect(value("last_pass_files_seen") == 2 && value("last_pass_files_settling") == 2 && value("last_pass_success") == 1, "\(text())")
        try site.add(.tone60MP4, as: "b.mp4")  // first seen now: settled (and needing the queue) at the third pass
        _ = try site.pass(["--metrics-file", file])
        #expect(value("last_pass_jobs_enqueued") == 1 && value("last_pass_duplicates") == 1, "\(text())")
        #expect((value("last_pass_timestamp_seconds") ?? 0) > Date().timeIntervalSince1970 - 60)
        let failed = try site.ingest(["--metrics-file", file], queue: "postgres://farm@127.0.0.1:1/farm?connect_timeout=2")
        #expect(failed.status == 1)
        #expect(value("last_pass_success") == 0 && value("last_pass_files_seen") == nil, "\(text())")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: site.folder.path).filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func badConfigsAreRefusedWithEveryProblem() throws {
        let site = try Site("config")
        try #"{ "version": 1, "input": "{input}", "report": "../out/{basename}.json" }"#
            .write(to: site.folder.appendingPathComponent("templates/bad.json"), atomically: true, encoding: .utf8)
        try #"""
        { "version": 2, "watch": [ { "path": "nowhere", "template": "templates/bad.json", "colour": "blue" } ],
          "settleSeconds": -1, "afterEnqueue": "delete", "sparkle": true }
        """#.write(toFile: site.config, atomically: true, encoding: .utf8)
        let r = try site.ingest()
        #expect(r.status == 2)
        for expected in ["$.version: must be 1", "$.watch[0].path:", "nowhere", "$.watch[0].colour: unknown key", "unknown placeholder {basename}",
                         "$.settleSeconds", "$.afterEnqueue: one of leave, move", "$.sparkle: unknown key"] {
            #expect(r.stderr.contains(expected), "\(expected) not in: \(r.stderr)")
        }
    }

    @Test func ingestedFilesRunThroughTheFarmToTheTemplatesOutputs() throws {
        let site = try Site("end-to-end", extra: #", "libraryAlbum": "Ingested""#)
        try site.add(.cfr30MP4, as: "scene one.mp4")
        try site.add(.movH264, as: "scene2.mov")
        // A name that must be escaped in the manifest's JSON.
        let odd = #"take "3" \ é.mp4"#
        try site.add(.tone60ShortMP4, as: odd)
        _ = try site.pass()
        let report = try site.pass()
        #expect(report["enqueued"] as? Int == 3, "\(report)")
        let hashes = Dictionary(uniqueKeysWithValues: ((report["jobs"] as? [[String: Any]]) ?? []).map {
            (($0["path"] as? String).map { ($0 as NSString).lastPathComponent } ?? "", String(($0["hash"] as? String ?? "").prefix(16)))
        })
        let coordinator = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--exit-when-idle", "--queue", site.queue])
        #expect(coordinator.status == 0, "\(coordinator.stderr)")
        let out = site.folder.appendingPathComponent("out")
        let files = Set((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? [])
        let one = try #require(hashes["scene one.mp4"]), two = try #require(hashes["scene2.mov"]), three = try #require(hashes[odd])
        #expect(files == ["scene one-\(one).mp4", "scene one-\(one).json", "scene2-\(two).mov", "scene2-\(two).json",
                          #"take "3" \ é-"# + three + ".mp4", #"take "3" \ é-"# + three + ".json"], "\(files)")
        #expect(try MediaProbe.packets(out.appendingPathComponent("scene one-\(one).mp4").path, stream: "v").count == 60)

        // The asset library registered each ingested file in the album, with its job, and each output as
        // a representation of it.
        #expect(report["registered"] as? Int == 3, "\(report)")
        let album = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "list", "--json", "--album", "Ingested", "--queue", site.queue])
        let assets = (try JSONSerialization.jsonObject(with: album.stdoutData) as? [String: Any])?["assets"] as? [[String: Any]] ?? []
        #expect(assets.count == 3, "\(album.stdout)\(album.stderr)")
        let shown = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "show", "--json", "--queue", site.queue,
                                                                           site.incoming.appendingPathComponent("scene one.mp4").path])
        let detail = try JSONSerialization.jsonObject(with: shown.stdoutData) as? [String: Any] ?? [:]
        #expect((detail["asset"] as? [String: Any])?["sha256"] as? String == (report["jobs"] as? [[String: Any]])?
            .first { ($0["path"] as? String)?.hasSuffix("scene one.mp4") == true }?["hash"] as? String, "\(shown.stdout)\(shown.stderr)")
        let made = (detail["representations"] as? [[String: Any]])?.compactMap { ($0["path"] as? String).map { ($0 as NSString).lastPathComponent } }
        #expect(made == ["scene one-\(one).mp4"], "\(shown.stdout)")
        #expect((detail["jobs"] as? [Int])?.count == 1)
        // Ingest measured the loudness of what has audio (BS.1770), and the library keeps it.
        let tone = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "show", "--json", "--queue", site.queue,
                                                                          site.incoming.appendingPathComponent(odd).path])
        let facts = ((try JSONSerialization.jsonObject(with: tone.stdoutData) as? [String: Any])?["asset"] as? [String: Any])?["facts"] as? [String: Any]
        let loudness = (facts?["loudness"] as? NSNumber)?.doubleValue, peak = (facts?["truePeak"] as? NSNumber)?.doubleValue
        #expect(loudness.map { $0 < -3 && $0 > -60 } == true && peak.map { $0 <= 0 } == true, "\(tone.stdout)\(tone.stderr)")
    }

    /// A template with a "stream" section: each ingested file (MP4 and Matroska alike) becomes a package in a
    /// folder named by its template, registered in the library as the file's package; `mediafarm batch` makes a
    /// package from a manifest too.
    @Test func ingestedFilesBecomeStreamingPackagesInTheLibrary() throws {
        let site = try Site("packages")
        try """
            { "version": 1, "name": "package-{stem}", "input": "{input}",
              "stream": { "output": "../out/{stem}-{hash}", "segmentSeconds": 2,
                          "video": { "rungs": [{ "height": 120, "bitrate": 150000 }], "preset": "ultrafast" } } }
            """.write(to: site.folder.appendingPathComponent("templates/proxy.json"), atomically: true, encoding: .utf8)
        let config = try String(contentsOfFile: site.config, encoding: .utf8)
        try config.replacingOccurrences(of: #""*.mov", "*.part""#, with: #""*.mkv""#).write(toFile: site.config, atomically: true, encoding: .utf8)
        try site.add(.tone60MP4, as: "tone.mp4")
        try site.add(.cfr60MKV, as: "scene.mkv")
        _ = try site.pass()
        let report = try site.pass()
        #expect(report["enqueued"] as? Int == 2, "\(report)")
        let coordinator = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--exit-when-idle", "--queue", site.queue])
        #expect(coordinator.status == 0, "\(coordinator.stderr)")
        let out = site.folder.appendingPathComponent("out")
        for name in ["tone.mp4", "scene.mkv"] {
            let hash = try #require(((report["jobs"] as? [[String: Any]]) ?? []).first { ($0["path"] as? String)?.hasSuffix("/" + name) == true }?["hash"] as? String)
            let folder = out.appendingPathComponent((name as NSString).deletingPathExtension + "-" + hash.prefix(16))
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("master.m3u8").path), "\(name): no package at \(folder.path)")
            let shown = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "show", "--json", "--queue", site.queue,
                                                                               site.incoming.appendingPathComponent(name).path])
            let detail = try JSONSerialization.jsonObject(with: shown.stdoutData) as? [String: Any] ?? [:]
            let made = (detail["representations"] as? [[String: Any]] ?? []).map { ($0["kind"] as? String ?? "", $0["path"] as? String ?? "") }
            #expect(made.count == 1 && made[0].0 == "package" && made[0].1 == folder.appendingPathComponent("master.m3u8").path, "\(name): \(made)")
        }

        // A package by `mediafarm batch`.
        let batch = site.folder.appendingPathComponent("batch")
        try FileManager.default.createDirectory(at: batch, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: MediaFixture.tone60MP4.path, toPath: batch.appendingPathComponent("tone.mp4").path)
        try """
            { "version": 1, "name": "batch-package", "input": "tone.mp4",
              "stream": { "output": "out/tone", "segmentSeconds": 2, "video": { "rungs": [{ "height": 120, "bitrate": 150000 }], "preset": "ultrafast" } } }
            """.write(to: batch.appendingPathComponent("package.json"), atomically: true, encoding: .utf8)
        let ran = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["batch", "--workers", "1", batch.appendingPathComponent("package.json").path])
        #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: batch.appendingPathComponent("out/tone").path).sorted()
        #expect(files == [".mediafarm-package.json", "audio", "manifest.mpd", "master.m3u8", "video-1"], "\(files)")
    }

    /// A template that is a chain of two jobs: a cut of the file, then an inspection of the cut
    /// (`job:cut#output`). Each file's chain is enqueued in one go, the second waiting for the first; a
    /// chain with one invalid job enqueues none of it; a chain that names a later job is refused.
    @Test func aChainTemplateEnqueuesItsJobsTogetherOrNotAtAll() throws {
        let site = try Site("chain")
        let chain = site.folder.appendingPathComponent("templates/chain.json")
        try """
        { "jobs": [
            { "key": "cut", "version": 1, "name": "cut-{stem}", "input": "{input}",
              "export": { "mode": "passthrough", "output": "../out/{stem}-cut.mp4" } },
            { "key": "check", "version": 1, "name": "check-{stem}", "input": "job:cut#output", "after": ["cut"],
              "report": "../out/{stem}-check.json" } ] }
        """.write(to: chain, atomically: true, encoding: .utf8)
        var config = try String(contentsOfFile: site.config, encoding: .utf8)
        config = config.replacingOccurrences(of: "templates/proxy.json", with: "templates/chain.json")
        try config.write(toFile: site.config, atomically: true, encoding: .utf8)
        try site.add(.cfr30MP4, as: "take1.mp4")
        _ = try site.pass()
        let report = try site.pass()
        #expect(report["enqueued"] as? Int == 1, "\(report)")
        let hash = try #require(((report["jobs"] as? [[String: Any]])?.first?["hash"] as? String))
        let status = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["status", "--json", "--queue", site.queue])
        let jobs = try JSONSerialization.jsonObject(with: status.stdoutData) as? [[String: Any]] ?? []
        #expect(jobs.map { $0["name"] as? String } == ["cut-take1", "check-take1"], "\(status.stdout)")
        #expect(jobs.map { $0["uniqueKey"] as? String } == ["ingest:\(hash)", "ingest:\(hash):check"])
        let first = try #require((jobs.first?["id"] as? NSNumber)?.int64Value)
        #expect(jobs.last?["state"] as? String == "waiting" && (jobs.last?["after"] as? [NSNumber])?.map(\.int64Value) == [first])
        let manifests = try site.manifests()
        #expect(manifests.last?.contains(#""input":"job:ingest:\#(hash)#output""#) == true, "\(manifests)")

        let coordinator = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--exit-when-idle", "--queue", site.queue])
        #expect(coordinator.status == 0, "\(coordinator.stderr)")
        let check = site.folder.appendingPathComponent("out/take1-check.json")
        let inspected = try JSONSerialization.jsonObject(with: Data(contentsOf: check)) as? [String: Any]
        let path = ((inspected?["inspection"] as? [[String: Any]])?.first?["path"] as? String) ?? ""
        #expect(path.hasSuffix("out/take1-cut.mp4"), "\(path)")

        // The second job cannot be written where it says: the file's chain is rejected whole.
        try """
        { "jobs": [
            { "key": "cut", "version": 1, "input": "{input}", "export": { "mode": "passthrough", "output": "../out/{stem}-cut.mp4" } },
            { "version": 1, "input": "job:cut#output", "after": ["cut"], "report": "/elsewhere/{stem}.json" } ] }
        """.write(to: chain, atomically: true, encoding: .utf8)
        try site.add(.movH264, as: "take2.mov")
        _ = try site.pass()
        let rejected = try site.pass()
        #expect(rejected["enqueued"] as? Int == 0, "\(rejected)")
        let reason = ((rejected["skipped"] as? [[String: Any]])?.first?["reason"] as? String) ?? ""
        #expect(reason.contains("its chain's job \"step2\"") && reason.contains("/elsewhere"), "\(rejected)")
        #expect(try site.manifests().count == 2)

        // A job that names one after it (or one that is not in the chain) is refused when the config loads.
        try """
        { "jobs": [ { "version": 1, "input": "{input}", "after": ["later"] }, { "key": "later", "version": 1, "input": "{input}" } ] }
        """.write(to: chain, atomically: true, encoding: .utf8)
        let refused = try site.ingest()
        #expect(refused.status == 2 && refused.stderr.contains("jobs[0].after names \"later\", which is not an earlier job of the chain"),
                "\(refused.stderr)")
    }

    /// jobs/ingest.schema.json and the loader agree: the example config matches the schema and loads;
    /// typos are refused by both; every key the schema names is one the loader knows.
    @Test func theExampleConfigMatchesTheSchemaAndLoads() throws {
        let schema = TestPaths.packageRoot.appendingPathComponent("jobs/ingest.schema.json").path
        let example = TestPaths.packageRoot.appendingPathComponent("jobs/ingest")
        let script = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(json.load(open(sys.argv[2])), schema, cls=jsonschema.Draft202012Validator)
        for bad in ({"version": 1, "watch": [{"path": "a", "templat": "t.json"}]}, {"version": 1, "watch": [], "settle": 5},
                    {"version": 1, "watch": [{"path": "a", "template": "t", "include": ["a/*.mp4"]}]}):
            try:
                jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)
                sys.exit("the schema accepted " + json.dumps(bad))
            except jsonschema.ValidationError:
                pass
        print(" ".join(sorted(schema["properties"])), "|", " ".join(sorted(schema["properties"]["watch"]["items"]["properties"])))
        """
        let r = try ProcessRunner.run("/usr/bin/python3", ["-c", script, schema, example.appendingPathComponent("ingest.json").path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == "afterEnqueue forgetGoneAfterDays libraryAlbum maxAttempts outputRoots priority quarantine settleSeconds state version watch | exclude include path template")
        // A scratch copy of the example, with a movie dropped in: a dry run would enqueue it after settling.
        let site = try TestPaths.makeTemporaryFolder("ingest-example")
        // The config and its template only (script/demo leaves its passes' files beside them).
        try FileManager.default.createDirectory(at: site.appendingPathComponent("ingest/incoming/cam-a"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: example.appendingPathComponent("ingest.json"), to: site.appendingPathComponent("ingest/ingest.json"))
        try FileManager.default.copyItem(at: example.appendingPathComponent("templates"), to: site.appendingPathComponent("ingest/templates"))
        let config = site.appendingPathComponent("ingest/ingest.json").path
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: site.appendingPathComponent("ingest/incoming/cam-a/a.mp4").path)
        let dry = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["ingest", "--config", config, "--dry-run",
                                                                        "--queue", site.appendingPathComponent("q.sqlite").path])
        #expect(dry.status == 0 && dry.stdout.contains("1 file seen; a pass would start the settle time of 1 new or changed file"), "\(dry.stdout) \(dry.stderr)")
        #expect(!FileManager.default.fileExists(atPath: site.appendingPathComponent("ingest/state").path), "a dry run wrote its state")
        #expect(!FileManager.default.fileExists(atPath: site.appendingPathComponent("q.sqlite").path), "a dry run made a queue")
    }
}

extension IngestTests {
    /// A watch folder's template can check what it takes: the file that fails its checks is not published, and
    /// both jobs' results carry their verdicts.
    @Test func aTemplatesChecksHoldBackTheFileThatFailsThem() throws {
        let site = try Site("checks")
        try """
        { "version": 1, "name": "proxy-{stem}", "input": "{input}",
          "export": { "mode": "passthrough", "output": "../out/{stem}-{hash}.{ext}" }, "checks": { "freeze": true } }
        """.write(to: site.folder.appendingPathComponent("templates/proxy.json"), atomically: true, encoding: .utf8)
        let config = try String(contentsOfFile: site.config, encoding: .utf8)
        try config.replacingOccurrences(of: #""*.mov", "*.part""#, with: #""*.mkv""#).write(toFile: site.config, atomically: true, encoding: .utf8)
        try site.add(.faultsMKV, as: "frozen.mkv")
        try site.add(.cfr30MP4, as: "clean.mp4")
        _ = try site.pass()
        let second = try site.pass()
        #expect(second["enqueued"] as? Int == 2, "\(second)")
        let farm = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["coordinator", "--exit-when-idle", "--queue", site.queue])
        #expect(farm.status == 1, "one job fails its checks: \(farm.stderr)")
        let rows = try JSONSerialization.jsonObject(with: try ProcessRunner.run(TestPaths.mediafarmExecutable, ["status", "--json", "--all", "--queue", site.queue]).stdoutData)
            as? [[String: Any]] ?? []
        let byName = Dictionary(uniqueKeysWithValues: rows.map { ($0["name"] as? String ?? "", $0) })
        #expect(byName["proxy-frozen"]?["state"] as? String == "failed" && byName["proxy-frozen"]?["verdict"] as? String == "failed", "\(rows)")
        #expect(byName["proxy-clean"]?["state"] as? String == "succeeded" && byName["proxy-clean"]?["verdict"] as? String == "passed", "\(rows)")
        let out = (try? FileManager.default.contentsOfDirectory(atPath: site.folder.appendingPathComponent("out").path)) ?? []
        #expect(out.count == 1 && out.first?.hasPrefix("clean-") == true, "\(out)")
    }
}
