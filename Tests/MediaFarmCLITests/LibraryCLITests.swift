import FarmTestSupport
import Foundation
import Testing

/// `mediafarm library` and asset-naming jobs as users run them: real files, real processes, real queues.
@Suite struct LibraryCLITests {
    enum Queue: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }

        /// A new queue URL (a PostgreSQL one migrated).
        func make(_ folder: URL) throws -> String {
            switch self {
            case .sqlite: return "sqlite:" + folder.appendingPathComponent("queue.sqlite").path
            case .postgres:
                let url = try TestPostgres.url(freshSchema: true)
                let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["queue", "migrate", "--queue", url])
                guard r.status == 0 else { throw FixtureError("queue migrate: \(r.stderr)") }
                return url
            }
        }
    }

    func mediafarm(_ args: [String], queue: String, in folder: URL? = nil) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment
        environment["MEDIAFARM_QUEUE"] = queue
        environment["MEDIAFARM_LIBRARY_TOKEN"] = nil
        return try ProcessRunner.run(TestPaths.mediafarmExecutable, args, currentDirectory: folder?.path, environment: environment)
    }

    func json(_ r: ProcessResult) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(r.stdout.utf8))
    }

    /// Makes a short H.264 + AAC movie.
    func movie(_ path: String, seconds: Int = 2, frequency: Int = 440) throws {
        let r = try ProcessRunner.run("ffmpeg", ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=128x96:rate=30:duration=\(seconds)",
                                                 "-f", "lavfi", "-i", "sine=frequency=\(frequency):duration=\(seconds)", "-c:v", "libx264", "-g", "30",
                                                 "-c:a", "aac", path])
        guard r.status == 0 else { throw FixtureError("ffmpeg: \(r.stderr)") }
    }

    /// `library add --json`: the id of each file by its name.
    func add(_ paths: [String], host: String, queue: String, album: String? = nil) throws -> [String: String] {
        let r = try mediafarm(["library", "add", "--json", "--host", host] + (album.map { ["--album", $0] } ?? []) + paths, queue: queue)
        #expect(r.status == 0, "\(r.stderr)")
        let files = try #require((try json(r) as? [String: Any])?["files"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: files.compactMap { f in
            (f["id"] as? String).map { (((f["path"] as? String ?? "") as NSString).lastPathComponent, $0) }
        })
    }

    @Test(arguments: Queue.allCases)
    func twoHostsAddingTheSameFileGetOneIDAndEachResolvesItsOwnPath(queue kind: Queue) throws {
        let folder = try TestPaths.makeTemporaryFolder("library-hosts")
        let queue = try kind.make(folder)
        for host in ["a", "b"] { try FileManager.default.createDirectory(at: folder.appendingPathComponent(host), withIntermediateDirectories: true) }
        let onA = folder.appendingPathComponent("a/take.mp4").path, onB = folder.appendingPathComponent("b/ingest/renamed.mp4").path
        try movie(onA)
        try FileManager.default.createDirectory(atPath: (onB as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: onA, toPath: onB)

        let a = try add([onA], host: "a", queue: queue)
        let b = try add([onB], host: "b", queue: queue)
        let id = try #require(a["take.mp4"])
        #expect(b["renamed.mp4"] == id)

        for (host, path) in [("a", onA), ("b", onB)] {
            let r = try mediafarm(["library", "resolve", "--json", "--host", host, id], queue: queue)
            #expect(r.status == 0, "\(r.stderr)")
            let rows = try #require(try json(r) as? [[String: Any]])
            #expect(rows.count == 1 && rows[0]["status"] as? String == "found" && rows[0]["paths"] as? [String] == [path])
        }
        let elsewhere = try mediafarm(["library", "resolve", "--host", "c", "asset:" + id], queue: queue)
        #expect(elsewhere.status == 1 && elsewhere.stdout.contains("notOnThisHost") && elsewhere.stdout.contains("on a, b"))

        // The same through the environment's host name, and `show` by path.
        var environment = ProcessInfo.processInfo.environment
        environment["MEDIAFARM_QUEUE"] = queue
        environment["MEDIAFARM_HOST"] = "b"
        let shown = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "show", "--json", onB], environment: environment)
        #expect(shown.status == 0, "\(shown.stderr)")
        let detail = try #require(try json(shown) as? [String: Any])
        let locations = try #require(detail["locations"] as? [[String: Any]])
        #expect(Set(locations.compactMap { $0["host"] as? String }) == ["a", "b"])
    }

    /// Hosts adding the same new files at the same moment: every file gets one asset, each host its own
    /// locations, and every change is numbered once.
    @Test(arguments: Queue.allCases)
    func hostsAddingAtOnceAgreeOnEveryID(queue kind: Queue) throws {
        let folder = try TestPaths.makeTemporaryFolder("library-race")
        let queue = try kind.make(folder)
        let media = folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        for i in 0..<6 { try movie(media.appendingPathComponent("clip\(i).mp4").path, seconds: 1, frequency: 300 + 50 * i) }
        var environment = ProcessInfo.processInfo.environment
        environment["MEDIAFARM_QUEUE"] = queue
        let hosts = ["h1", "h2", "h3", "h4"]
        let runs = try hosts.map { host in
            try Background([TestPaths.mediafarmExecutable, "library", "add", "--json", "--host", host, "--album", "Shared", media.path],
                           log: folder.appendingPathComponent("\(host).log").path, environment: environment)
        }
        for (host, run) in zip(hosts, runs) { #expect(run.wait(timeout: 60) == 0, "\(host): \(run.log)") }
        let listed = try #require(try json(try mediafarm(["library", "list", "--json", "--album", "Shared"], queue: queue)) as? [String: Any])
        #expect((listed["assets"] as? [[String: Any]])?.count == 6, "\(listed)")
        for host in hosts {
            let ids = try #require(try json(try mediafarm(["library", "list", "--json", "--host", host], queue: queue)) as? [String: Any])
            #expect((ids["assets"] as? [[String: Any]])?.allSatisfy { ($0["path"] as? String)?.hasPrefix(media.path) == true } == true, "\(host)")
        }
        let changes = try #require(try json(try mediafarm(["library", "changes", "--json"], queue: queue)) as? [String: Any])
        let list = try #require(changes["changes"] as? [[String: Any]])
        let kinds = list.compactMap { $0["kind"] as? String }
        #expect(kinds.filter { $0 == "assetAdded" }.count == 6 && kinds.filter { $0 == "locationAdded" }.count == 18, "\(kinds)")
        #expect(kinds.filter { $0 == "albumCreated" }.count == 1 && kinds.filter { $0 == "albumAssetAdded" }.count == 6, "\(kinds)")
        let numbers = list.compactMap { ($0["token"] as? String)?.split(separator: ".").last.flatMap { Int($0) } }
        #expect(numbers.count == list.count && zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "numbered once each, in order: \(numbers)")
    }

    /// A job whose input is a registered file, named by its path, is recorded as reading that asset. `submit`
    /// asks on the queue's own connection: for a file the library does not know, it opens the queue's file
    /// once (a second connection for the library cost it a sixth of its run).
    @Test func aSubmissionByPathRecordsTheAssetItReadsAndOpensNoSecondConnectionToAsk() throws {
        let folder = try TestPaths.makeTemporaryFolder("library-lineage")
        let queue = try Queue.sqlite.make(folder)
        try movie(folder.appendingPathComponent("take.mp4").path)
        try movie(folder.appendingPathComponent("other.mp4").path, frequency: 660)
        let added = try mediafarm(["library", "add", "--json", folder.appendingPathComponent("take.mp4").path], queue: queue)
        #expect(added.status == 0, "\(added.stderr)")
        let id = try #require(((try json(added) as? [String: Any])?["files"] as? [[String: Any]])?.first?["id"] as? String)
        var environment = ProcessInfo.processInfo.environment
        environment["MEDIAFARM_QUEUE"] = queue
        func submit(_ input: String) throws -> (job: Int, opens: Int) {
            let manifest = folder.appendingPathComponent(input + ".json")
            try #"{"version": 1, "input": "\#(input)"}"#.write(to: manifest, atomically: true, encoding: .utf8)
            let trace = folder.appendingPathComponent(input + ".opens").path
            let r = try ProcessRunner.run("/usr/bin/strace", ["-f", "-e", "trace=openat", "-o", trace, TestPaths.mediafarmExecutable,
                                                              "submit", "--json", manifest.path], currentDirectory: folder.path, environment: environment)
            #expect(r.status == 0, "\(r.stderr)")
            let opens = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
                .filter { $0.contains("/queue.sqlite\"") && $0.contains("O_RDWR") }
            return (try #require((try json(r) as? [[String: Any]])?.first?["id"] as? Int), opens.count)
        }
        let unknown = try submit("other.mp4")
        #expect(unknown.opens == 1, "the queue's file opened \(unknown.opens) times")
        let known = try submit("take.mp4")
        let detail = try #require(try json(try mediafarm(["library", "show", "--json", id], queue: queue)) as? [String: Any])
        #expect(detail["jobs"] as? [Int] == [known.job], "\(detail)")
    }

    @Test(arguments: Queue.allCases)
    func aManifestNamingAnAssetRunsOnTheHostThatHasItAndItsOutputIsARepresentation(queue kind: Queue) throws {
        let folder = try TestPaths.makeTemporaryFolder("library-jobs")
        let queue = try kind.make(folder)
        let media = folder.appendingPathComponent("render-host-media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        try movie(media.appendingPathComponent("take.mp4").path, seconds: 4)
        let id = try #require(try add([media.path], host: "render", queue: queue)["take.mp4"])

        // The manifest knows only the id; it lives elsewhere, with its outputs.
        let jobs = folder.appendingPathComponent("jobs")
        try FileManager.default.createDirectory(at: jobs, withIntermediateDirectories: true)
        try """
        { "version": 1, "name": "take-slowmo", "input": "asset:\(id)",
          "scale": [ { "start": "0", "duration": "2", "toDuration": "4" } ],
          "export": { "mode": "passthrough", "output": "out/take-slowmo.mp4" } }
        """.write(to: jobs.appendingPathComponent("slowmo.json"), atomically: true, encoding: .utf8)
        let submitted = try mediafarm(["submit", "--json", "slowmo.json"], queue: queue, in: jobs)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let jobID = try #require((try json(submitted) as? [[String: Any]])?.first?["id"] as? Int)

        let coordinator = try mediafarm(["coordinator", "--host", "render", "--workers", "1", "--exit-when-idle"], queue: queue)
        #expect(coordinator.status == 0, "\(coordinator.stdout)\(coordinator.stderr)")
        let output = jobs.appendingPathComponent("out/take-slowmo.mp4").path
        #expect(FileManager.default.fileExists(atPath: output))
        let duration = try #require(FFprobeReport.double(try FFprobeReport(path: output).format, "duration"))
        #expect(abs(duration - 6) < 0.1, "2 s slowed to 4 s, then 2 s more: \(duration)")

        let shown = try mediafarm(["library", "show", "--json", "--host", "render", id], queue: queue)
        let detail = try #require(try json(shown) as? [String: Any])
        let representations = try #require(detail["representations"] as? [[String: Any]])
        #expect(representations.count == 1)
        #expect(representations.first?["jobID"] as? Int == jobID && representations.first?["jobName"] as? String == "take-slowmo")
        #expect(representations.first?["path"] as? String == output && representations.first?["host"] as? String == "render")
        #expect((representations.first?["parameters"] as? String)?.contains("toDuration") == true)
        #expect((representations.first?["parameters"] as? String)?.contains("asset:\(id)") == true, "the manifest as submitted")
        #expect(detail["jobs"] as? [Int] == [jobID])
        let outputID = try #require(representations.first?["output"] as? String)
        let made = try #require(try json(try mediafarm(["library", "show", "--json", "--host", "render", outputID], queue: queue)) as? [String: Any])
        #expect((made["derivedFrom"] as? [[String: Any]])?.first?["source"] as? String == id)

        // A host without the asset does not claim the job: it waits for a host that has it (a coordinator with
        // --exit-when-idle that can run nothing of what is queued exits). There it runs, and fails in words.
        try """
        { "version": 1, "name": "elsewhere", "edits": [{ "source": "asset:\(id)", "start": "100" }],
          "export": { "mode": "passthrough", "output": "out/elsewhere.mp4" } }
        """.write(to: jobs.appendingPathComponent("elsewhere.json"), atomically: true, encoding: .utf8)
        #expect(try mediafarm(["submit", "--max-attempts", "1", "elsewhere.json"], queue: queue, in: jobs).status == 0)
        let other = try mediafarm(["coordinator", "--host", "laptop", "--workers", "1", "--exit-when-idle"], queue: queue)
        #expect(other.status == 0, "\(other.stdout)\(other.stderr)")
        func elsewhere() throws -> [String: Any] {
            try #require((try json(try mediafarm(["status", "--json"], queue: queue)) as? [[String: Any]])?.first { $0["name"] as? String == "elsewhere" })
        }
        #expect(try elsewhere()["state"] as? String == "queued" && (try elsewhere()["attempt"] as? Int) == 0)
        let render = try mediafarm(["coordinator", "--host", "render", "--workers", "1", "--exit-when-idle"], queue: queue)
        #expect(render.status == 1, "the job failed there: \(render.stdout)\(render.stderr)")
        let failed = try elsewhere()
        #expect(failed["state"] as? String == "failed" && (failed["worker"] == nil))
        #expect("\(failed["errors"] ?? "")".contains("100"), "\(failed)")
        let failedInputs = try mediafarm(["library", "list", "--json", "--album", "Failed Jobs' Inputs"], queue: queue)
        #expect(((try json(failedInputs) as? [String: Any])?["assets"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])

        // An id the library does not know is refused at submission.
        try #"{ "version": 1, "input": "asset:0000000000000000000000000g" }"#.write(to: jobs.appendingPathComponent("unknown.json"), atomically: true, encoding: .utf8)
        let unknown = try mediafarm(["submit", "unknown.json"], queue: queue, in: jobs)
        #expect(unknown.status == 2 && unknown.stderr.contains("$.input: no asset 0000000000000000000000000g in the library") && unknown.stderr.contains("nothing was queued"), "\(unknown.stderr)")
    }

    /// The codes a scan job finds are added to its source asset's facts: With Codes and --has-codes find it.
    @Test func codesAScanFindsBecomeTheAssetsFacts() throws {
        let folder = try TestPaths.makeTemporaryFolder("library-codes")
        let queue = try Queue.sqlite.make(folder)
        let qr = CodeFixtures.qrAndLinearCodes[0]
        let image = try CodeFixtures.draw(qr, in: folder)
        let clip = folder.appendingPathComponent("label.mp4").path
        try CodeFixtures.movie([.init(image: image, x: 200, y: 80, start: 0.5, end: 1.5)], seconds: 2, to: clip)
        let id = try #require(try add([clip], host: "h", queue: queue)["label.mp4"])
        #expect(try mediafarm(["library", "list", "--json", "--has-codes"], queue: queue).stdout.contains(id) == false)
        try #"{ "version": 1, "name": "find-labels", "input": "asset:\#(id)", "scan": { "symbologies": ["qr"] }, "report": "out/labels.json" }"#
            .write(to: folder.appendingPathComponent("scan.json"), atomically: true, encoding: .utf8)
        #expect(try mediafarm(["submit", "scan.json"], queue: queue, in: folder).status == 0)
        let ran = try mediafarm(["coordinator", "--host", "h", "--exit-when-idle"], queue: queue)
        #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
        let found = try #require(try json(try mediafarm(["library", "list", "--json", "--has-codes"], queue: queue)) as? [String: Any])
        let assets = try #require(found["assets"] as? [[String: Any]])
        #expect(assets.compactMap { $0["id"] as? String } == [id])
        #expect((assets.first?["codes"] as? [[String: Any]])?.map { "\($0["symbology"] ?? ""):\($0["payload"] ?? "")" } == ["qr:\(qr.payload)"])
        let smart = try mediafarm(["library", "list", "--album", "With Codes"], queue: queue)
        #expect(smart.stdout.contains(id), "\(smart.stdout)")
    }

    /// `run` resolves assets through the queue's library on this host; of two identical copies, the first by path.
    @Test func runResolvesAssetsOnThisHost() throws {
        let folder = try TestPaths.makeTemporaryFolder("library-run")
        let queue = try Queue.sqlite.make(folder)
        try movie(folder.appendingPathComponent("b-copy.mp4").path, seconds: 2)
        try FileManager.default.copyItem(atPath: folder.appendingPathComponent("b-copy.mp4").path, toPath: folder.appendingPathComponent("a-copy.mp4").path)
        let ids = try add([folder.path], host: "studio", queue: queue)
        let id = try #require(ids["a-copy.mp4"])
        #expect(ids["b-copy.mp4"] == id)
        try #"{ "version": 1, "name": "r", "input": "asset:\#(id)", "report": "out/r.json" }"#
            .write(to: folder.appendingPathComponent("r.json"), atomically: true, encoding: .utf8)
        let ran = try mediafarm(["run", "--host", "studio", "r.json"], queue: queue, in: folder)
        #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
        let report = try String(contentsOf: folder.appendingPathComponent("out/r.json"), encoding: .utf8)
        #expect(report.contains(folder.appendingPathComponent("a-copy.mp4").path), "the first copy by path")
        try FileManager.default.removeItem(at: folder.appendingPathComponent("out/r.json"))
        let elsewhere = try mediafarm(["run", "--host", "laptop", "r.json"], queue: queue, in: folder)
        #expect(elsewhere.status == 2 && elsewhere.stderr.contains("asset \(id) is not on laptop (it is on studio)"), "\(elsewhere.stderr)")
    }

    @Test func albumSubmissionsAndScopedTokens() throws {
        let folder = try TestPaths.makeTemporaryFolder("library-albums")
        let queue = try Queue.sqlite.make(folder)
        let media = folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        for (i, name) in ["one", "two", "three", "other"].enumerated() { try movie(media.appendingPathComponent("\(name).mp4").path, seconds: 1, frequency: 300 + 100 * i) }
        let picks = try add(["one", "two", "three"].map { media.appendingPathComponent("\($0).mp4").path }, host: "h", queue: queue, album: "Picks")
        let others = try add([media.appendingPathComponent("other.mp4").path], host: "h", queue: queue, album: "Other")
        #expect(picks.count == 3 && others.count == 1)

        try """
        { "version": 1, "name": "proxy-{stem}", "input": "{input}", "export": { "mode": "passthrough", "output": "out/{stem}-{id}.mp4" } }
        """.write(to: folder.appendingPathComponent("proxy.json"), atomically: true, encoding: .utf8)
        let submitted = try mediafarm(["submit", "--json", "--album", "Picks", "proxy.json"], queue: queue, in: folder)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let jobs = try #require(try json(submitted) as? [[String: Any]])
        #expect(Set(jobs.compactMap { $0["name"] as? String }) == ["proxy-one", "proxy-two", "proxy-three"])
        // The same album again, to other files (the first jobs, still queued, write theirs: a second writer is refused).
        try """
        { "version": 1, "name": "proxy-{stem}", "input": "{input}", "export": { "mode": "passthrough", "output": "out/h/{stem}-{id}.mp4" } }
        """.write(to: folder.appendingPathComponent("proxy-h.json"), atomically: true, encoding: .utf8)
        let again = try mediafarm(["submit", "--json", "--album", "Picks", "proxy.json"], queue: queue, in: folder)
        #expect(again.status == 2 && again.stderr.contains("is written by job"), "\(again.stderr)")
        let stems = try #require(try json(try mediafarm(["submit", "--json", "--album", "Picks", "--host", "h", "proxy-h.json"], queue: queue, in: folder))
                                 as? [[String: Any]])
        #expect(Set(stems.compactMap { $0["name"] as? String }) == ["proxy-one", "proxy-two", "proxy-three"], "{stem}: the file's name on this host")

        // A token for Picks sees and submits only Picks.
        let token = try mediafarm(["library", "token", "create", "--album", "Picks", "client"], queue: queue)
        #expect(token.status == 0, "\(token.stderr)")
        let tokenFile = folder.appendingPathComponent("client.token").path
        try token.stdout.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let listed = try mediafarm(["library", "list", "--json", "--token-file", tokenFile], queue: queue)
        let visible = ((try json(listed) as? [String: Any])?["assets"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
        #expect(Set(visible) == Set(picks.values))
        let outside = try mediafarm(["library", "resolve", "--token-file", tokenFile, others["other.mp4"]!], queue: queue)
        #expect(outside.status == 1 && outside.stdout.contains("unknown"))

        try """
        { "version": 1, "input": "asset:\(others["other.mp4"]!)", "export": { "mode": "passthrough", "output": "out/x.mp4" } }
        """.write(to: folder.appendingPathComponent("outside.json"), atomically: true, encoding: .utf8)
        let refused = try mediafarm(["submit", "--token-file", tokenFile, "outside.json"], queue: queue, in: folder)
        #expect(refused.status == 2 && refused.stderr.contains("no asset \(others["other.mp4"]!) in the library"), "\(refused.stderr)")
        try #"{ "version": 1, "input": "media/one.mp4" }"#.write(to: folder.appendingPathComponent("bypath.json"), atomically: true, encoding: .utf8)
        let byPath = try mediafarm(["submit", "--token-file", tokenFile, "bypath.json"], queue: queue, in: folder)
        #expect(byPath.status == 2 && byPath.stderr.contains("submits only assets of its albums"))
        let album = try mediafarm(["submit", "--token-file", tokenFile, "--album", "Other", "proxy.json"], queue: queue, in: folder)
        #expect(album.status == 1 && album.stderr.contains("no access to the album \"Other\""), "\(album.stderr)")
        #expect(try #require(try json(try mediafarm(["status", "--json"], queue: queue)) as? [[String: Any]]).count == 6, "nothing more was queued")
        try """
        { "version": 1, "name": "proxy-{stem}", "input": "{input}", "export": { "mode": "passthrough", "output": "out/client/{stem}-{id}.mp4" } }
        """.write(to: folder.appendingPathComponent("proxy-client.json"), atomically: true, encoding: .utf8)
        let allowed = try mediafarm(["submit", "--token-file", tokenFile, "--album", "Picks", "--json", "proxy-client.json"], queue: queue, in: folder)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(try #require(try json(try mediafarm(["status", "--json"], queue: queue)) as? [[String: Any]]).count == 9)
    }

    @Test func badInputGetsClearErrorsAndExitStatuses() throws {
        let folder = try TestPaths.makeTemporaryFolder("library-errors")
        let queue = try Queue.sqlite.make(folder)
        try movie(folder.appendingPathComponent("good.mp4").path, seconds: 1)
        try Data("garbage bytes".utf8).write(to: folder.appendingPathComponent("junk.mp4"))
        let added = try mediafarm(["library", "add", folder.appendingPathComponent("good.mp4").path, folder.appendingPathComponent("junk.mp4").path,
                                   folder.appendingPathComponent("absent.mp4").path], queue: queue)
        #expect(added.status == 1)
        #expect(added.stdout.contains("added") && added.stdout.contains("junk.mp4: not media the farm can read"))
        #expect(added.stdout.contains("absent.mp4: No such file or directory"))
        #expect(added.stderr.contains("1 added, 2 refused"))

        let cases: [([String], Int32, String)] = [
            (["library", "resolve", "not-an-id"], 2, "\"not-an-id\" is not an asset id"),
            (["library", "resolve", "0000000000000000000000000g"], 1, "unknown"),
            (["library", "show", "0000000000000000000000000g"], 1, "no asset 0000000000000000000000000g in the library"),
            (["library", "show", folder.appendingPathComponent("junk.mp4").path], 1, "not in the library on this host"),
            (["library", "list", "--album", "Nope"], 1, "no album \"Nope\""),
            (["library", "list", "--type", "movie"], 2, "--type movie"),
            (["library", "list", "--after", "zzz"], 2, "is not a cursor"),
            (["library", "album", "create", "Slo-mo"], 2, "is a smart album"),
            (["library", "album", "delete", "Nope"], 1, "no album \"Nope\""),
            (["library", "changes", "--since", "garbage"], 2, "is not a change token"),
            (["library", "remove", "0000000000000000000000000g"], 1, "no asset"),
            (["library", "list", "--token-file", "/nonexistent/token"], 2, "/nonexistent/token: cannot be read"),
        ]
        for (args, status, message) in cases {
            let r = try mediafarm(args, queue: queue)
            #expect(r.status == status && (r.stderr + r.stdout).contains(message), "\(args): \(r.status) \(r.stderr)\(r.stdout)")
        }
        let missingQueue = try mediafarm(["library", "list"], queue: "sqlite:" + folder.appendingPathComponent("none.sqlite").path)
        #expect(missingQueue.status == 2 && missingQueue.stderr.contains("no queue there"))
    }

    @Test func changesSinceATokenListWhatHappenedAfterIt() throws {
        let folder = try TestPaths.makeTemporaryFolder("library-changes")
        let queue = try Queue.sqlite.make(folder)
        try movie(folder.appendingPathComponent("a.mp4").path, seconds: 1)
        try movie(folder.appendingPathComponent("b.mp4").path, seconds: 1, frequency: 880)
        _ = try add([folder.appendingPathComponent("a.mp4").path], host: "h", queue: queue)
        let before = try #require((try json(try mediafarm(["library", "changes", "--json"], queue: queue)) as? [String: Any])?["token"] as? String)
        let b = try #require(try add([folder.appendingPathComponent("b.mp4").path], host: "h", queue: queue, album: "New")["b.mp4"])
        let after = try mediafarm(["library", "changes", "--json", "--since", before], queue: queue)
        let list = try #require(try json(after) as? [String: Any])
        let kinds = (list["changes"] as? [[String: Any]])?.compactMap { $0["kind"] as? String }
        #expect(kinds == ["assetAdded", "albumCreated", "albumAssetAdded"])
        #expect((list["changes"] as? [[String: Any]])?.first?["assetID"] as? String == b)
        let text = try mediafarm(["library", "changes", "--since", list["token"] as! String], queue: queue)
        #expect(text.status == 0 && text.stdout.hasPrefix("token: "))
    }

    /// Over HTTP, a scoped library token as the bearer reaches the library and job submission only, and
    /// sees and submits only its albums' assets; the API's token sees everything.
    @Test func theHTTPAPIInheritsTheScopedTokensLimits() async throws {
        let apiToken = "096e8b5e18ca96e84a7d1933f27d60fbc263d7ebbe0c313f06bd9e0283ca8c35"
        let farm = try HTTPFarm("library", workers: 1, token: apiToken, arguments: ["--host", "web"])
        let queue = "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path
        let clip = try #require(try add([farm.dir.appendingPathComponent("clip.mp4").path], host: "web", queue: queue, album: "Public")["clip.mp4"])
        let tone = try #require(try add([farm.dir.appendingPathComponent("tone.mp4").path], host: "web", queue: queue, album: "Private")["tone.mp4"])
        let created = try mediafarm(["library", "token", "create", "--album", "Public", "partner"], queue: queue)
        let scoped = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(created.status == 0 && scoped.hasPrefix("mfl_"), "\(created.stderr)")
        let bearer = ["-H", "Authorization: Bearer \(scoped)"]

        let all = try await farm.request("GET", "/api/assets")
        #expect(all.status == 200 && (all.json?["assets"] as? [[String: Any]])?.count == 2, "\(all.body)")
        let mine = try await farm.request("GET", "/api/assets", auth: false, bearer)
        #expect((mine.json?["assets"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [clip], "\(mine.status) \(mine.body)")
        #expect((mine.json?["assets"] as? [[String: Any]])?.first?["path"] as? String == farm.dir.appendingPathComponent("clip.mp4").path)
        #expect(try await farm.request("GET", "/api/assets/\(tone)", auth: false, bearer).status == 404)
        #expect(try await farm.request("GET", "/api/assets?album=Private", auth: false, bearer).status == 403)
        #expect(try await farm.request("GET", "/api/albums", auth: false, bearer).body.contains("Private") == false)
        let resolved = try await farm.request("GET", "/api/library/resolve?ids=\(clip),\(tone)", auth: false, bearer)
        #expect(resolved.body.contains("\"found\"") && resolved.body.contains("\"unknown\""), "\(resolved.body)")
        for path in ["/api/jobs", "/metrics", "/"] { #expect(try await farm.request("GET", path, auth: false, bearer).status == 401, "\(path)") }
        #expect(try await farm.request("GET", "/api/assets", auth: false, ["-H", "Authorization: Bearer mfl_not_a_token"]).status == 401)

        let outside = try await farm.request("POST", "/api/jobs", body: #"{"version": 1, "input": "asset:\#(tone)"}"#, auth: false, bearer)
        #expect(outside.status == 422 && outside.body.contains("no asset \(tone)"), "\(outside.body)")
        let byPath = try await farm.request("POST", "/api/jobs", body: #"{"version": 1, "input": "tone.mp4"}"#, auth: false, bearer)
        #expect(byPath.status == 403 && byPath.body.contains("only assets of its albums"), "\(byPath.body)")
        let ok = try await farm.request("POST", "/api/jobs", body: #"{"version": 1, "name": "partner-job", "input": "asset:\#(clip)", "report": "out/p.json"}"#,
                                  auth: false, bearer)
        #expect(ok.status == 201, "\(ok.body)")
        let id = try #require(ok.json?["id"] as? Int)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, try await farm.job(Int64(id))["state"] as? String != "succeeded" { usleep(100_000) }
        #expect(try await farm.job(Int64(id))["state"] as? String == "succeeded", "\(farm.log)")
        let detail = try await farm.request("GET", "/api/assets/\(clip)", auth: false, bearer)
        #expect((detail.json?["jobs"] as? [Int]) == [id], "\(detail.body)")
    }

    /// An asset's pictures over HTTP: a picture job of the asset registers its poster and storyboard as
    /// representations, and the HTTP face serves them with the content id as ETag (304 on a match, immutable
    /// with ?v=ID), the storyboard's cues pointing at its sheets there, and a scoped token sees only its albums'.
    /// A coordinator on host "web" whose library holds talk.mp4 (album Public) with its poster and a storyboard
    /// of 12 tiles on two sheets made by a job, and clip.mp4 (album `clipAlbum`): the farm, its queue, the ids.
    func picturedTalk(_ label: String, clipAlbum: String, posterWidth: Int) async throws -> (HTTPFarm, String, String, String) {
        let farm = try HTTPFarm(label, workers: 1, token: "096e8b5e18ca96e84a7d1933f27d60fbc263d7ebbe0c313f06bd9e0283ca8c35", arguments: ["--host", "web"])
        let queue = "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path
        let movie = farm.dir.appendingPathComponent("talk.mp4").path
        try FileManager.default.copyItem(atPath: MediaFixture.posterMP4.path, toPath: movie)
        let talk = try #require(try add([movie], host: "web", queue: queue, album: "Public")["talk.mp4"])
        let clip = try #require(try add([farm.dir.appendingPathComponent("clip.mp4").path], host: "web", queue: queue, album: clipAlbum)["clip.mp4"])
        let id = try await farm.submit("""
            { "version": 1, "name": "talk-pictures", "input": "asset:\(talk)", "poster": { "maxWidth": \(posterWidth), "output": "out/talk/poster.jpg" },
              "storyboard": { "tiles": 12, "columns": 4, "rows": 2, "output": "out/talk/board/talk.vtt" } }
            """)
        let job = try await farm.waitFor(id) { ["succeeded", "failed", "dead"].contains($0["state"] as? String ?? "") }
        #expect(job["state"] as? String == "succeeded", "\(job) \(farm.log)")
        return (farm, queue, talk, clip)
    }

    @Test func theHTTPFaceServesAnAssetsPictures() async throws {
        let (farm, queue, talk, clip) = try await picturedTalk("pictures", clipAlbum: "Public", posterWidth: 160)
        let detail = try await farm.request("GET", "/api/assets/\(talk)").json ?? [:]
        let kinds = (detail["representations"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }.sorted()
        #expect(kinds == ["poster", "storyboard"], "\(detail)")

        func fetch(_ path: String, auth: Bool = true, _ extra: [String] = []) async throws -> (FarmAnswer, Data) {
            let file = farm.dir.appendingPathComponent("fetched-\(UUID().uuidString.prefix(6))").path
            defer { unlink(file) }
            let answer = try await farm.request("GET", path, auth: auth, ["-o", file] + extra)
            return (answer, FileManager.default.contents(atPath: file) ?? Data())
        }
        func header(_ answer: FarmAnswer, _ name: String) -> String? {
            answer.headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
                .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
        }
        let published = try Data(contentsOf: farm.dir.appendingPathComponent("out/talk/poster.jpg"))
        let (poster, bytes) = try await fetch("/api/assets/\(talk)/poster")
        #expect(poster.status == 200 && bytes == published, "\(poster.status) \(poster.headers)")
        #expect(header(poster, "Content-Type") == "image/jpeg" && header(poster, "Cache-Control") == "private, no-cache")
        let etag = try #require(header(poster, "ETag"), "\(poster.headers)")
        let posterID = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        #expect(posterID.count == 26 && posterID != talk)
        // The job's page shows the asset it read, with its poster, and the pictures it made.
        let listed = try await farm.request("GET", "/api/jobs?name=talk-pictures").json?["jobs"] as? [[String: Any]] ?? []
        let jobID = try #require(listed.first?["id"] as? Int, "\(listed)")
        let page = try await farm.request("GET", "/jobs/\(jobID)").body
        let inputs = try #require(page.firstMatch(of: /<div class="grid assets" id="inputs">(.*?)<\/div>/), "no inputs in \(page)").1
        #expect(inputs.contains("data-asset=\"\(talk)\"") && inputs.contains("<img src=\"/api/assets/\(talk)/poster\""), "\(inputs)")
        let outputs = try #require(page.firstMatch(of: /<div class="grid assets" id="outputs">(.*?)<\/div>/), "no outputs in \(page)").1
        #expect(outputs.contains("data-asset=\"\(posterID)\""), "\(outputs)")
        #expect(page.contains("<tr><th>ran on</th><td>"), "the host that ran it")
        // The jobs list by album (the job read an asset of "Public") and by the host that ran it.
        #expect(try await farm.request("GET", "/jobs?album=Public").body.contains("data-job=\"\(jobID)\""))
        #expect(!(try await farm.request("GET", "/jobs?album=Nowhere").body.contains("data-job=\"\(jobID)\"")))
        let host = try #require(listed.first?["host"] as? String, "the job's host: \(listed)")
        #expect(try await farm.request("GET", "/jobs?host=\(host)").body.contains("data-job=\"\(jobID)\""))
        #expect(!(try await farm.request("GET", "/jobs?host=\(host)x").body.contains("data-job=\"\(jobID)\"")))
        #expect(try await fetch("/api/assets/\(talk)/poster", ["-H", "If-None-Match: \(etag)"]).0.status == 304)
        let pinned = try await fetch("/api/assets/\(talk)/poster?v=\(posterID)")
        #expect(pinned.0.status == 200 && header(pinned.0, "Cache-Control") == "private, max-age=31536000, immutable", "\(pinned.0.headers)")
        #expect(try await fetch("/api/assets/\(talk)/poster?v=0000000000000000000000000g").0.status == 404)

        let vtt = try await fetch("/api/assets/\(talk)/storyboard.vtt")
        let text = String(decoding: vtt.1, as: UTF8.self)
        #expect(vtt.0.status == 200 && header(vtt.0, "Content-Type") == "text/vtt; charset=utf-8", "\(vtt.0.headers)")
        let vttID = (header(vtt.0, "ETag") ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        let cues = text.split(separator: "\n").filter { $0.contains("#xywh=") }
        #expect(cues.count == 12 && cues.allSatisfy { $0.hasPrefix("storyboard/talk-") && $0.contains(".jpg?v=\(vttID)#xywh=") }, "\(text)")
        // Each cue's address, resolved against the WebVTT file's, is a sheet.
        let sheet = String(cues[11].split(separator: "#")[0])
        let (sheetAnswer, sheetBytes) = try await fetch("/api/assets/\(talk)/\(sheet)")
        #expect(sheetAnswer.status == 200 && header(sheetAnswer, "Cache-Control") == "private, max-age=31536000, immutable", "\(sheet): \(sheetAnswer.headers)")
        #expect(sheetBytes == (try Data(contentsOf: farm.dir.appendingPathComponent("out/talk/board/talk-2.jpg"))))
        let index = try await fetch("/api/assets/\(talk)/storyboard.json")
        let sheets = (try JSONSerialization.jsonObject(with: index.1) as? [String: Any])?["sheets"] as? [String]
        #expect(index.0.status == 200 && sheets == ["talk-1.jpg", "talk-2.jpg"])
        // Nothing else beside the sheets, however it is spelt.
        for other in ["talk.vtt", "talk-3.jpg", "..%2Fposter.jpg", "talk-1.jpg%2F..%2F..%2Fposter.jpg", "talk-01.jpg"] {
            #expect(try await fetch("/api/assets/\(talk)/storyboard/\(other)").0.status == 404, "\(other)")
        }
        let none = try await farm.request("GET", "/api/assets/\(clip)/poster")
        #expect(none.status == 404 && none.body.contains("has no poster"), "\(none.body)")

        // Scoped tokens: the album's own sees the pictures, another album's does not.
        let publicToken = try mediafarm(["library", "token", "create", "--album", "Public", "site"], queue: queue).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try mediafarm(["library", "album", "create", "Other"], queue: queue)
        let otherToken = try mediafarm(["library", "token", "create", "--album", "Other", "elsewhere"], queue: queue).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await fetch("/api/assets/\(talk)/poster", auth: false, ["-H", "Authorization: Bearer \(publicToken)"]).0.status == 200)
        #expect(try await fetch("/api/assets/\(talk)/poster", auth: false, ["-H", "Authorization: Bearer \(otherToken)"]).0.status == 404)
        #expect(try await fetch("/api/assets/\(talk)/storyboard.vtt", auth: false).0.status == 401)
    }

    /// A package a job made from an asset is an asset of its own (by its master playlist), with the renditions
    /// its job measured, its poster and its storyboard; its page plays it from its folder, and the job's page
    /// shows its storyboard under the player. The same package asked again elsewhere is reused, and is the
    /// same asset in a second place.
    @Test func aPackageIsAStreamingAssetWithItsRenditionsAndPictures() async throws {
        let farm = try HTTPFarm("library-package", workers: 1, token: "6c1f0a8e2b9d4c7f1e3a5b7d9f0c2e4a6b8d0f1a3c5e7092b4d6f8a0c2e4f6a8", arguments: ["--host", "web"])
        let queue = "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path
        let tone = try #require(try add([farm.dir.appendingPathComponent("tone.mp4").path], host: "web", queue: queue, album: "Public")["tone.mp4"])
        func submit(_ output: String) async throws -> [String: Any] {
            let id = try await farm.submit("""
                { "version": 1, "name": "tone-package", "input": "asset:\(tone)",
                  "stream": { "output": "\(output)", "segmentSeconds": 2,
                              "video": { "rungs": [{ "height": 240, "bitrate": 400000 }, { "height": 120, "bitrate": 150000 }], "preset": "ultrafast" } },
                  "poster": { "output": "\(output)-poster.jpg" }, "storyboard": { "tiles": 8, "columns": 4, "rows": 2, "output": "\(output)-board/tone.vtt" } }
                """)
            let job = try await farm.waitFor(id, timeout: 120) { ["succeeded", "failed", "dead"].contains($0["state"] as? String ?? "") }
            #expect(job["state"] as? String == "succeeded", "\(job) \(farm.log)")
            return job
        }
        let first = try await submit("out/pkg")
        let jobID = try #require(first["id"] as? Int)
        let detail = try await farm.request("GET", "/api/assets/\(tone)").json ?? [:]
        let made = try #require((detail["representations"] as? [[String: Any]])?.first { $0["kind"] as? String == "package" }, "\(detail)")
        let package = try #require(made["output"] as? String)
        #expect((made["path"] as? String)?.hasSuffix("/out/pkg/master.m3u8") == true, "\(made)")

        // Its facts: a video in HLS, streamed, its largest rung's picture, and every rendition with its measured rates.
        let asset = try #require(try await farm.request("GET", "/api/assets/\(package)").json?["asset"] as? [String: Any])
        let facts = try #require(asset["facts"] as? [String: Any])
        #expect(facts["mediaType"] as? String == "video" && facts["container"] as? String == "hls" && facts["width"] as? Int == 320
                && facts["height"] as? Int == 240 && facts["hasAudio"] as? Bool == true && (facts["codec"] as? String)?.hasPrefix("avc1.") == true, "\(facts)")
        #expect((asset["subtypes"] as? [String])?.contains("videoStreamed") == true, "\(asset)")
        // Listed as the library's exports are (its pictures are not).
        let listed = (try await farm.request("GET", "/api/assets").json?["assets"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(listed.contains(package) && listed.contains(tone) && listed.count == 2, "\(listed)")
        let summary = try #require(facts["package"] as? [String: Any])
        let renditions = summary["renditions"] as? [[String: Any]] ?? []
        #expect(renditions.map { $0["folder"] as? String ?? "" } == ["video-1", "video-2", "audio"], "\(summary)")
        #expect(renditions.allSatisfy { ($0["peakBitRate"] as? Int ?? 0) >= ($0["averageBitRate"] as? Int ?? 1) && ($0["bytes"] as? Int ?? 0) > 0 }, "\(renditions)")
        #expect(summary["entryPoints"] as? [String] == ["master.m3u8", "manifest.mpd"], "\(summary)")
        let seconds = (facts["duration"] as? [String: Any])?["seconds"] as? Double ?? 0
        #expect(abs(seconds - 10) < 0.05, "\(facts)")
        // The master's BANDWIDTH is the rung's peak with the audio's: what the job measured is what the package says.
        let master = try String(contentsOf: farm.dir.appendingPathComponent("out/pkg/master.m3u8"), encoding: .utf8)
        let peaks = renditions.map { $0["peakBitRate"] as? Int ?? 0 }
        #expect(master.contains("BANDWIDTH=\(peaks[0] + peaks[2]),"), "\(peaks) in \(master)")

        // Its poster and storyboard are its own too.
        #expect(try await farm.request("GET", "/api/assets/\(package)/poster").status == 200)
        #expect(try await farm.request("GET", "/api/assets/\(package)/storyboard.json").status == 200)

        // Its files, from its folder, and nothing else.
        let served = try await farm.request("GET", "/api/assets/\(package)/package/master.m3u8")
        #expect(served.status == 200 && served.body == master && served.headers.lowercased().contains("content-type: application/vnd.apple.mpegurl"))
        let one = try await farm.request("GET", "/api/assets/\(package)/package/master.m3u8?rung=video-2")
        #expect(one.status == 200 && !one.body.contains("video-1/") && one.body.contains("video-2/index.m3u8"), "\(one.body)")
        let segment = try await farm.request("GET", "/api/assets/\(package)/package/video-1/1.m4s", ["-H", "Range: bytes=0-99"])
        #expect(segment.status == 206, "\(segment.status) \(segment.headers)")
        for path in ["/package/.mediafarm-package.json", "/package/%2e%2e/tone.mp4", "/package/video-1/%2e%2e/%2e%2e/tone.mp4", "/package/a/b/c.m4s",
                     "/package/master.m3u8?rung=video-9"] {
            let answer = try await farm.request("GET", "/api/assets/\(package)" + path)
            #expect(answer.status == 404, "\(path): \(answer.status) \(answer.body.prefix(200))")
        }
        let notPackage = try await farm.request("GET", "/api/assets/\(tone)/package/master.m3u8")
        #expect(notPackage.status == 404 && notPackage.body.contains("not a streaming package"), "\(notPackage.body)")
        #expect(try await farm.request("GET", "/api/assets/\(package)/package/master.m3u8", auth: false).status == 401)
        // A token scoped to the source's album sees the source, not the package (in no album).
        let scoped = try mediafarm(["library", "token", "create", "--album", "Public", "site"], queue: queue).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await farm.request("GET", "/api/assets/\(tone)", auth: false, ["-H", "Authorization: Bearer \(scoped)"]).status == 200)
        #expect(try await farm.request("GET", "/api/assets/\(package)/package/master.m3u8", auth: false, ["-H", "Authorization: Bearer \(scoped)"]).status == 404)

        // The asset's page plays it with a switcher of its rungs and scrubs its storyboard; the job's page shows the storyboard too.
        let page = try await farm.request("GET", "/library/assets/\(package)").body
        #expect(page.contains("<video class=\"output\" id=\"package-player\" controls preload=\"metadata\" src=\"/api/assets/\(package)/package/master.m3u8\">"), "\(page)")
        #expect(page.contains("?rung=video-2\">video-2: 160x120 ") && page.contains("data-index=\"/api/assets/\(package)/storyboard.json\""), "\(page)")
        let jobPage = try await farm.request("GET", "/jobs/\(jobID)").body
        #expect(jobPage.contains("src=\"/jobs/\(jobID)/package/master.m3u8\"") && jobPage.contains("data-index=\"/api/assets/\(package)/storyboard.json\""), "\(jobPage)")
        var arguments = [TestPaths.packageRoot.appendingPathComponent("Tests/Readers/chromium-play.py").path, "--console", farm.base + "/library/assets/\(package)",
                         "package-player", "--choose", "/api/assets/\(package)/package/master.m3u8?rung=video-2", "--rate", "2"]
        if let token = farm.token { arguments += ["--header", "Authorization: Bearer \(token)"] }
        let played = try await ProcessRunner.spawned("/usr/bin/python3", arguments)
        let json = try JSONSerialization.jsonObject(with: Data(played.stdout.utf8)) as? [String: Any] ?? [:]
        let last = (json["times"] as? [Double])?.max() ?? 0
        #expect(json["error"] == nil && (json["src"] as? String)?.hasSuffix("?rung=video-2") == true && abs(last - 599.0 / 60) < 0.001,
                "\(played.stdout) \(played.stderr)")

        // Asked again elsewhere: reused, the same package (the same master) in a second place.
        let second = try await submit("out/again")
        let result = try #require(second["result"] as? [String: Any], "\(second)")
        #expect(result["reused"] != nil && (result["package"] as? [String: Any])?["renditions"] != nil, "\(result)")
        let again = try #require(try await farm.request("GET", "/api/assets/\(package)").json)
        let places = (again["locations"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        #expect(places.contains { $0.hasSuffix("/out/again/master.m3u8") } && places.contains { $0.hasSuffix("/out/pkg/master.m3u8") }, "\(places)")
        // Named by its folder on its page.
        #expect(try await farm.request("GET", "/library/assets/\(package)").body.contains("<h1>again</h1>"))
        // A folder whose package changed since (another package made there, which the library did not see) is not served as this one.
        let entryPoint = ((again["asset"] as? [String: Any])?["path"] as? String) ?? ""
        #expect(entryPoint.hasSuffix("/out/again/master.m3u8"), "\(again)")
        try Data("#EXT-X-ANOTHER-PACKAGE\n".utf8).write(to: URL(fileURLWithPath: entryPoint))
        let changed = try await farm.request("GET", "/api/assets/\(package)/package/video-1/1.m4s")
        #expect(changed.status == 404 && changed.body.contains("no longer holds the package the library registered"), "\(changed.status) \(changed.body)")
    }

    /// The console's library in Chromium: albums as posters, an album's grid with its poster and duration
    /// badge, an asset's page with its poster and a storyboard scrubbed with the arrow keys; a browser signed
    /// in with a scoped library token sees its album only, and no jobs.
    @Test func theLibraryPagesShowPostersAndAScopedSessionSeesItsAlbumOnly() async throws {
        let (farm, queue, talk, clip) = try await picturedTalk("library-pages", clipAlbum: "Private", posterWidth: 320)
        let movie = farm.dir.appendingPathComponent("talk.mp4").path
        let loaded = "img.complete && img.naturalWidth > 0"
        let full = try await ConsoleTests.drive("chromium", [
            ["go": farm.base + "/library?token=" + (farm.token ?? "")],
            ["eval": "Array.from(document.querySelectorAll('.tile.album')).map(function (t) { return t.dataset.album; })"],
            ["wait": "(function (img) { return img && \(loaded); })(document.querySelector('.tile[data-album=Public] img'))"],
            ["go": farm.base + "/library?album=Public"],
            ["eval": "Array.from(document.querySelectorAll('.tile[data-asset]')).map(function (t) { return t.dataset.asset; })"],
            ["eval": "document.querySelector('.tile[data-asset] .badge').textContent"],
            ["go": farm.base + "/library/assets/\(talk)"],
            ["wait": "(function (img) { return img && \(loaded); })(document.querySelector('img.poster'))"],
            ["wait": "document.querySelector('.scrub .frame').style.backgroundImage.indexOf('storyboard/talk-1.jpg') >= 0"],
            ["eval": "var s = document.querySelector('.scrub'); s.focus(); for (var i = 0; i < 9; i++) s.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true})); document.querySelector('.scrub .frame').style.backgroundImage"],
            ["eval": "document.getElementById('locations').textContent"],
        ])
        let r = full.results
        #expect(Set(r[0] as? [String] ?? []).isSuperset(of: ["Private", "Public", "Videos"]), "\(r[0])")
        #expect(r[1] as? [String] == [talk], "\(r[1])")
        #expect((r[2] as? String)?.hasPrefix("0:") == true, "\(r[2])")
        #expect((r[3] as? String)?.contains("storyboard/talk-2.jpg") == true, "the ninth tile is on the second sheet: \(r[3])")
        #expect((r[4] as? String)?.contains(movie) == true, "\(r[4])")

        let publicToken = try mediafarm(["library", "token", "create", "--album", "Public", "site"], queue: queue).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // The scoped sign-in in Firefox (the full one above in Chromium).
        let scoped = try await ConsoleTests.drive("firefox", [
            ["go": farm.base + "/login"],
            ["eval": "document.querySelector('input[name=token]').value = \(HTTPFarm.quoted(publicToken)); document.querySelector('form button').click(); true"],
            ["wait": "location.pathname === '/library' && document.readyState === 'complete'"],
            ["eval": "Array.from(document.querySelectorAll('.tile[data-asset]')).map(function (t) { return t.dataset.asset; })"],
            ["eval": "Array.from(document.querySelectorAll('.tile.album')).map(function (t) { return t.dataset.album; })"],
            ["go": farm.base + "/library/assets/\(clip)"], ["eval": "document.querySelector('h1').textContent"],
            ["go": farm.base + "/jobs"], ["eval": "document.querySelector('h1').textContent"],
        ])
        #expect(scoped.results[1] as? [String] == [talk], "\(scoped.results)")
        // Its album, and the smart albums (of its assets only); never another album.
        #expect((scoped.results[2] as? [String])?.contains("Public") == true && (scoped.results[2] as? [String])?.contains("Private") == false, "\(scoped.results)")
        #expect((scoped.results[3] as? String)?.contains("404") == true, "another album's asset: \(scoped.results)")
        #expect((scoped.results[4] as? String)?.contains("403") == true, "the jobs: \(scoped.results)")
    }

    /// The farm's pictures are representations of the asset they show, not assets of their own: the grid,
    /// the API's listing and the smart albums hold the sources (and exports) only. An asset without a poster
    /// gets one on request, from its page's button (through the CSRF-checked form) or the API.
    @Test func picturesAreRepresentationsAndAPosterIsMadeOnRequest() async throws {
        let (farm, _, talk, clip) = try await picturedTalk("representations", clipAlbum: "Public", posterWidth: 160)
        func listed() async throws -> [String] {
            (try await farm.request("GET", "/api/assets").json?["assets"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }.sorted()
        }
        #expect(try await listed() == [talk, clip].sorted(), "the poster and the storyboard's sheet are no assets of their own")
        let albums = try JSONSerialization.jsonObject(with: Data(try await farm.request("GET", "/api/albums").body.utf8)) as? [[String: Any]] ?? []
        let recent = albums.first { $0["name"] as? String == "Recently Added" }
        #expect(recent?["count"] as? Int == 2, "\(albums)")
        let grid = try await farm.request("GET", "/library").body
        #expect(grid.components(separatedBy: "class=\"tile\" href=\"/library/assets/").count == 3, "\(grid)")
        // The talk's page shows its poster; the clip's offers to make one.
        #expect(!(try await farm.request("GET", "/library/assets/\(talk)").body.contains("id=\"make-poster\"")))
        let drive = try await ConsoleTests.drive("chromium", [
            ["go": farm.base + "/library/assets/\(clip)?token=" + (farm.token ?? "")],
            ["click": "#make-poster"],
            ["wait": "!!document.getElementById('poster-requested')"],
            ["eval": "document.querySelector('#poster-requested a').getAttribute('href')"],
        ])
        let link = try #require(drive.results.last as? String, "\(drive.results)")
        let job = try #require(Int64(link.replacingOccurrences(of: "/jobs/", with: "")), "\(link)")
        let done = try await farm.waitFor(job) { ["succeeded", "failed", "dead"].contains($0["state"] as? String ?? "") }
        #expect(done["state"] as? String == "succeeded", "\(done)")
        let poster = try await farm.request("GET", "/api/assets/\(clip)/poster")
        #expect(poster.status == 200, "\(poster.status) \(poster.body)")
        #expect(FileManager.default.fileExists(atPath: farm.dir.appendingPathComponent("posters/\(clip).jpg").path))
        #expect(try await listed() == [talk, clip].sorted(), "the new poster is no asset of its own either")
        // Asked again: it has one. Through the API, for an asset that has none: the job, once.
        let again = try await farm.request("POST", "/api/assets/\(clip)/poster")
        #expect(again.status == 409 && again.body.contains("has a poster"), "\(again.status) \(again.body)")
        #expect(try await farm.request("POST", "/api/assets/00000000000000000000000000/poster").status == 404)
        #expect(farm.log.contains("console: a poster of asset:\(clip) requested by"), "the action is not logged")
    }

    /// Screenshots of the console's main pages, in headless Chromium at 1280x900 (kept in
    /// .build/test-artifacts/console-*.png; docs/ shows copies): each is a real PNG of the page.
    @Test func theConsolesPagesAreScreenshotted() async throws {
        let (farm, _, talk, _) = try await picturedTalk("screenshots", clipAlbum: "Public", posterWidth: 480)
        for i in 0..<3 { _ = try await farm.submit(#"{ "version": 1, "name": "inspect-\#(i)", "input": "clip.mp4", "report": "out/i\#(i).json" }"#) }
        let failed = try await farm.submit(ConsoleTests.failing("interview-proxy"), query: "?allowMissingInputs=true&maxAttempts=1")
        try await farm.waitFor(failed) { $0["state"] as? String == "failed" }
        let long = try await farm.submit(farm.longManifest(name: "tone-slowmo", output: "out/long.mp4"))
        try await farm.waitFor(long) { $0["state"] as? String == "running" && ($0["progress"] as? Double ?? 0) >= 0.05 }
        let artifacts = TestPaths.packageRoot.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let pages = [("overview", "/"), ("jobs", "/jobs"), ("job", "/jobs/\(failed)"), ("library", "/library"),
                     ("asset", "/library/assets/\(talk)"), ("charts", "/charts")]
        for (name, path) in pages {
            let png = artifacts.appendingPathComponent("console-\(name).png").path
            unlink(png)
            let separator = path.contains("?") ? "&" : "?"
            let shot = try ProcessRunner.run("/usr/bin/env", ["timeout", "60", "chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                                                              "--hide-scrollbars", "--window-size=1280,900",
                                                              "--screenshot=\(png)", farm.base + path + separator + "token=" + (farm.token ?? "")])
            #expect(shot.status == 0, "\(name): \(shot.stderr)")
            let bytes = try #require(FileManager.default.contents(atPath: png), "\(name): no screenshot")
            #expect(bytes.count > 10_000 && bytes.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]), "\(name): \(bytes.count) bytes")
        }
        _ = try await farm.request("POST", "/api/jobs/\(long)/cancel")
    }
}
