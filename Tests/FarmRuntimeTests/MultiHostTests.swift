import FarmTestSupport
import Foundation
import NIOCore
import S3Client
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Several hosts on one PostgreSQL queue, as separate processes: each coordinator in a network
/// namespace of its own reaching the server over a veth pair (a real network hop), killed and restarted
/// at random while jobs run; then the server itself restarted in the middle of a run.
@Suite(.serialized) struct MultiHostTests {
    /// A folder of manifests over a 2 s clip: inspections and retimed passthrough exports.
    struct Work {
        let folder: URL
        let names: [String]
        let exports: Set<String>
        /// Job (by name) -> the ids of the jobs it waits for ("after"); the queue gives ids 1, 2, ... in
        /// name order to a fresh queue's one submission.
        var dependencies: [String: [Int]] = [:]
        var out: URL { folder.appendingPathComponent("out") }

        /// With `graph`, each job after the first 10 waits for 0 to 3 of the 30 jobs before it (seeded).
        init(_ label: String, inspections: Int, exports: Int, graph: Bool = false) throws {
            folder = try TestPaths.makeTemporaryFolder(label)
            try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: folder.appendingPathComponent("in.mp4").path)
            let manifests = folder.appendingPathComponent("jobs")
            try FileManager.default.createDirectory(at: manifests, withIntermediateDirectories: true)
            var names: [String] = []
            var random = SeededRandom(state: 27)
            for i in 0..<(inspections + exports) {
                let name = String(format: "job%03d", i)
                var after = ""
                if graph && i >= 10 {
                    let ids = Set((0..<Int(random.next() % 4)).map { _ in i - Int(random.next() % UInt64(min(i, 30))) }).sorted()
                    dependencies[name] = ids
                    after = #", "after": \#(ids)"#
                }
                let text = i < inspections
                    ? #"{ "version": 1, "name": "\#(name)", "input": "../in.mp4", "report": "../out/\#(name).json"\#(after) }"#
                    : """
                      { "version": 1, "name": "\(name)", "input": "../in.mp4",
                        "scale": [{ "start": "0", "duration": "2", "rate": "1/2" }],
                        "export": { "mode": "passthrough", "output": "../out/\(name).mp4" }, "report": "../out/\(name).json"\(after) }
                      """
                try text.write(to: manifests.appendingPathComponent(name + ".json"), atomically: true, encoding: .utf8)
                names.append(name)
            }
            self.names = names
            self.exports = Set(names.suffix(exports))
        }

        func mediafarm(_ args: [String], queue: String) throws -> ProcessResult {
            try ProcessRunner.spawn(TestPaths.mediafarmExecutable, args,
                                    environment: ProcessInfo.processInfo.environment.merging(["MEDIAFARM_QUEUE": queue]) { $1 })
        }

        /// Every job as `status --json` reports it.
        func jobs(queue: String) throws -> [[String: Any]] {
            let r = try mediafarm(["status", "--json", "--all", "--chunks"], queue: queue)
            guard r.status == 0 else { throw FixtureError("status: \(r.stderr)") }
            return try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]] ?? []
        }

        /// What every run must leave: each job succeeded once, with attempts = failures + 1; each output
        /// complete; nothing else in the output folder; at most one success event per job in all logs.
        func checkEverythingDoneOnce(queue: String, logs: [String], server: String? = nil) throws {
            let jobs = try self.jobs(queue: queue)
            #expect(jobs.count == names.count)
            for job in jobs {
                let errors = (job["errors"] as? [[String: Any]]) ?? []
                #expect(job["state"] as? String == "succeeded", "\(job)")
                #expect((job["attempt"] as? Int) == errors.count + 1, "\(job)")
            }
            var expected = Set(names.map { $0 + ".json" })
            expected.formUnion(exports.map { $0 + ".mp4" })
            let present = Set((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? [])
            #expect(present == expected, "missing \(expected.subtracting(present).sorted()), extra \(present.subtracting(expected).sorted())")
            for name in names {
                let report = try Data(contentsOf: out.appendingPathComponent(name + ".json"))
                #expect((try? JSONSerialization.jsonObject(with: report)) != nil, "\(name).json is not a whole report")
                if exports.contains(name) {
                    // The 2 s clip slowed to 4 s: its 60 frames, the last ending at 4 s.
                    let video = try MediaProbe.packets(out.appendingPathComponent(name + ".mp4").path, stream: "v")
                    let end = video.map { $0.pts + $0.duration }.max() ?? 0
                    #expect(video.count == 60 && abs(end - 4) < 0.01, "\(name).mp4: \(video.count) frames ending at \(end) s")
                }
            }
            let successes = MultiHostTests.successes(in: logs)
            #expect(successes.values.allSatisfy { $0 == 1 }, "\(successes.filter { $0.value > 1 })")
            if !dependencies.isEmpty { try checkNothingStartedBeforeItsDependencies(jobs: jobs, logs: logs, server: server) }
        }

        /// Every attempt of every job (each "started" event in every log) came after each of its
        /// dependencies succeeded (the dependency's finished_at, the time its success committed with).
        func checkNothingStartedBeforeItsDependencies(jobs: [[String: Any]], logs: [String], server: String?) throws {
            let ids = Dictionary(uniqueKeysWithValues: jobs.compactMap { job in (job["name"] as? String).map { ($0, job["id"] as? Int ?? 0) } })
            for (i, name) in names.enumerated() { #expect(ids[name] == i + 1, "\(name) has id \(ids[name] ?? 0), not \(i + 1)") }
            let server = try #require(server)
            let rows = try ProcessRunner.run("/usr/bin/psql", [server, "-At", "-F", " ", "-c", "SELECT id, finished_at FROM mediafarm.jobs"])
            try #require(rows.status == 0, Comment(rawValue: rows.stderr))
            var finished: [Int: Double] = [:]
            for line in rows.stdout.split(separator: "\n") {
                let parts = line.split(separator: " ")
                if parts.count == 2, let id = Int(parts[0]), let t = Double(parts[1]) { finished[id] = t }
            }
            var starts = 0
            for log in logs {
                for line in ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n") {
                    guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                          event["event"] as? String == "started", let id = event["job"] as? Int, let at = eventTime(event) else { continue }
                    starts += 1
                    for dependency in dependencies[names[id - 1]] ?? [] {
                        let done = try #require(finished[dependency])
                        // An event's time is to the millisecond; the queue's to the microsecond.
                        #expect(at + 0.001 > done, "job \(id) started at \(at), before its dependency \(dependency) succeeded at \(done)")
                    }
                }
            }
            #expect(starts >= names.count)
        }
    }

    /// One turn of chaos, taking turns: a random coordinator killed with SIGKILL (and restarted at once by
    /// `restart`), then a running job's worker (of `workerPIDs`; tried again next turn when none runs).
    static func killOne(_ coordinators: inout [Background], _ kills: inout (coordinators: Int, workers: Int), _ random: inout SeededRandom,
                        workerPIDs: () throws -> [Int], restart: (Int) throws -> Background) rethrows {
        if kills.coordinators <= kills.workers {
            let i = Int(random.next() % UInt64(coordinators.count))
            coordinators[i].kill(SIGKILL)
            _ = coordinators[i].wait(timeout: 10)
            coordinators[i] = try restart(i)
            kills.coordinators += 1
        } else if let pid = try workerPIDs().first {
            kill(Int32(pid), SIGKILL)
            kills.workers += 1
        }
    }

    /// How many times each job's success was logged, over every coordinator's log.
    static func successes(in logs: [String]) -> [Int: Int] {
        var successes: [Int: Int] = [:]
        for log in logs {
            for line in ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n") {
                guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
                if event["event"] as? String == "finished", event["state"] as? String == "succeeded", let id = event["job"] as? Int {
                    successes[id, default: 0] += 1
                }
            }
        }
        return successes
    }

    @Test func threeHostsWithCoordinatorsAndWorkersKilledAtRandomDoEveryJobOnce() throws {
        // Kept workers run the 300 jobs in well under a minute: chaos every 0.5 to 1 s. The jobs are a graph:
        // most wait for some of the jobs before them, and none may start before those succeeded.
        try chaos(try Work("multihost", inspections: 200, exports: 100, graph: true), seed: 11, every: 0.5)
    }

    /// Small jobs through kept workers, each process running job after job: a kill ends only the job it
    /// hit, a killed coordinator's jobs are rescued, and every job still succeeds once.
    @Test func twoThousandSmallJobsOnThreeHostsWithKeptWorkersKilledAtRandom() throws {
        try chaos(try Work("multihost-small", inspections: 2000, exports: 0), seed: 25, every: 0.2)
    }

    /// Three coordinators (each in a network namespace when they can be made) on one PostgreSQL queue run
    /// `work`, while every `every` to `2 × every` seconds a random coordinator (restarted at once) or a
    /// running job's worker is killed with SIGKILL; then every job must be done once.
    func chaos(_ work: Work, seed: UInt64, every: Double) throws {
        var random = SeededRandom(state: seed)
        let cluster: TestPostgres.Cluster
        let network = try? HostNetwork(hosts: 3)
        if let network {
            cluster = try TestPostgres.Cluster(listen: (["127.0.0.1"] + network.serverAddresses).joined(separator: ","))
        } else {
            // Where network namespaces cannot be made, the coordinators still reach the server over TCP.
            Issue.record("network namespaces unavailable here: the coordinators use loopback TCP")
            cluster = try TestPostgres.Cluster()
        }
        defer { cluster.stop() }
        let hostQueue = cluster.url
        #expect(try work.mediafarm(["queue", "migrate"], queue: hostQueue).status == 0)
        let submitted = try work.mediafarm(["submit", "--max-attempts", "20", "--output-root", work.out.path,
                                            work.folder.appendingPathComponent("jobs").path], queue: hostQueue)
        try #require(submitted.status == 0, Comment(rawValue: submitted.stderr))

        var coordinators: [Background] = []
        var logs: [String] = []
        func start(_ i: Int) throws -> Background {
            let queue = network.map { cluster.url.replacingOccurrences(of: "127.0.0.1", with: $0.serverAddresses[i]) } ?? hostQueue
            let log = work.folder.appendingPathComponent("host\(i)-\(logs.count).log").path
            logs.append(log)
            var command = [TestPaths.mediafarmExecutable, "coordinator", "--queue", queue, "--workers", "2", "--lease", "3",
                           "--host", "host\(i)", "--json"]
            if let network { command = ["/usr/sbin/ip", "netns", "exec", network.namespaces[i]] + command }
            return try Background(command, log: log)
        }
        for i in 0..<3 { coordinators.append(try start(i)) }
        defer { for c in coordinators { c.kill(SIGKILL); _ = c.wait(timeout: 10) } }

        var kills = (coordinators: 0, workers: 0)
        var sawThreeHosts = false
        let deadline = Date().addingTimeInterval(600)
        while Date() < deadline {
            Thread.sleep(forTimeInterval: every * (1 + Double(random.next() % 1000) / 1000))
            let stats = try work.mediafarm(["queue", "stats", "--json"], queue: hostQueue)
            let figures = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any] ?? [:]
            let counts = figures["counts"] as? [String: Int] ?? [:]
            if (figures["runningByHost"] as? [String: Int])?.count == 3 { sawThreeHosts = true }
            if counts["succeeded"] == work.names.count { break }
            #expect(counts["dead"] == 0 && counts["failed"] == 0, "\(figures)")
            // Chaos while most of the work remains, taking turns: a random coordinator (restarted at
            // once), then a running job's worker (tried again next round when none runs at that moment).
            guard (counts["succeeded"] ?? 0) < work.names.count * 3 / 4 else { continue }
            try Self.killOne(&coordinators, &kills, &random, workerPIDs: {
                try work.jobs(queue: hostQueue).compactMap { ($0["worker"] as? [String: Any])?["pid"] as? Int }
            }, restart: start)
        }
        #expect(kills.coordinators >= 2 && kills.workers >= 1, "\(kills)")
        #expect(sawThreeHosts)
        for c in coordinators { c.kill(SIGTERM) }
        for c in coordinators { #expect(c.wait(timeout: 60) != nil) }
        try work.checkEverythingDoneOnce(queue: hostQueue, logs: logs, server: cluster.url)
    }

    /// Three hosts that share the queue and an S3 endpoint and no folder: every input, output and report
    /// is an object (half the jobs name the input as a library asset, resolved to the object on every
    /// host); each coordinator has a spool and a TMPDIR of its own. Coordinators and workers are
    /// killed at random; every job is done once, every object is whole, and no upload is left open.
    @Test func threeHostsWithNoSharedFolderPublishEveryObjectOnce() async throws {
        var random = SeededRandom(state: 41)
        let network = try HostNetwork(hosts: 3)
        let cluster = try TestPostgres.Cluster(listen: (["127.0.0.1"] + network.serverAddresses).joined(separator: ","))
        defer { cluster.stop() }
        let server = try TestS3.Server(listen: "0.0.0.0")
        defer { server.stop() }
        let local = server.endpoint.url.replacingOccurrences(of: "0.0.0.0", with: "127.0.0.1")
        let s3 = S3(configuration: S3Configuration(endpoint: local, region: "us-east-1", pathStyle: true,
                                                   credentials: SigV4Credentials(accessKeyID: server.endpoint.accessKey, secretAccessKey: server.endpoint.secret)))
        defer { Task { await s3.shutdown() } }
        let bucket = TestS3.bucketName("hosts")
        try await s3.createBucket(bucket)
        try await s3.put(S3Location(bucket: bucket, key: "in/clip.mp4"), body: ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: MediaFixture.cfr30MP4.path))))

        // The clip in the library: half the jobs name it as asset:ID, which each host resolves to the object.
        let work = try Work("multihost-s3-queue", inspections: 0, exports: 0)
        #expect(try work.mediafarm(["queue", "migrate"], queue: cluster.url).status == 0)
        var testHost = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") }
        testHost.merge(server.endpoint.environment) { $1 }
        testHost["MEDIAFARM_S3_ENDPOINT"] = local
        testHost["MEDIAFARM_QUEUE"] = cluster.url
        let added = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "add", "--json", "s3://\(bucket)/in/clip.mp4"], environment: testHost)
        let asset = try #require(((try JSONSerialization.jsonObject(with: added.stdoutData) as? [String: Any])?["files"] as? [[String: Any]])?
            .first?["id"] as? String, "\(added.stdout) \(added.stderr)")

        // 30 inspections and 30 retimed passthrough exports, each with a report: objects only.
        let folder = try TestPaths.makeTemporaryFolder("multihost-s3")
        let manifests = folder.appendingPathComponent("jobs")
        try FileManager.default.createDirectory(at: manifests, withIntermediateDirectories: true)
        var names: [String] = [], exports: Set<String> = []
        for i in 0..<60 {
            let name = String(format: "job%03d", i)
            let input = i % 2 == 0 ? "asset:\(asset)" : "s3://\(bucket)/in/clip.mp4"
            var text = #"{ "version": 1, "name": "\#(name)", "input": "\#(input)", "report": "s3://\#(bucket)/out/\#(name).json""#
            if i >= 30 {
                text += #", "scale": [{ "start": "0", "duration": "2", "rate": "1/2" }], "export": { "mode": "passthrough", "output": "s3://\#(bucket)/out/\#(name).mp4" }"#
                exports.insert(name)
            }
            try (text + " }").write(to: manifests.appendingPathComponent(name + ".json"), atomically: true, encoding: .utf8)
            names.append(name)
        }
        let submitted = try work.mediafarm(["submit", "--max-attempts", "20", "--output-root", "s3://\(bucket)/out", manifests.path], queue: cluster.url)
        try #require(submitted.status == 0, Comment(rawValue: submitted.stderr))

        var coordinators: [Background] = []
        var logs: [String] = []
        func start(_ i: Int) throws -> Background {
            let host = folder.appendingPathComponent("host\(i)")
            try FileManager.default.createDirectory(at: host.appendingPathComponent("tmp"), withIntermediateDirectories: true)
            let log = folder.appendingPathComponent("host\(i)-\(logs.count).log").path
            logs.append(log)
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") && !$0.key.hasPrefix("MEDIAFARM_") }
            environment.merge(server.endpoint.environment) { $1 }
            environment["MEDIAFARM_S3_ENDPOINT"] = server.endpoint.url.replacingOccurrences(of: "0.0.0.0", with: network.serverAddresses[i])
            environment["MEDIAFARM_SPOOL"] = host.appendingPathComponent("spool").path
            environment["TMPDIR"] = host.appendingPathComponent("tmp").path
            let queue = cluster.url.replacingOccurrences(of: "127.0.0.1", with: network.serverAddresses[i])
            return try Background(["/usr/sbin/ip", "netns", "exec", network.namespaces[i], TestPaths.mediafarmExecutable, "coordinator",
                                   "--queue", queue, "--workers", "2", "--lease", "3", "--host", "host\(i)", "--json"],
                                  log: log, environment: environment)
        }
        for i in 0..<3 { coordinators.append(try start(i)) }
        defer { for c in coordinators { c.kill(SIGKILL); _ = c.wait(timeout: 10) } }

        var kills = (coordinators: 0, workers: 0)
        let deadline = Date().addingTimeInterval(600)
        // Each turn kills first, by what the last look at the queue saw (the first turn: a coordinator at
        // once), so that a slow look (a machine busy with other tests) cannot let the jobs end unharmed.
        var jobs: [[String: Any]] = []
        while Date() < deadline {
            try await Task.sleep(for: .seconds(0.3 * (1 + Double(random.next() % 1000) / 1000)))
            // While most of the work remains, and until the least chaos asked for has happened.
            if jobs.filter({ $0["state"] as? String == "succeeded" }).count < names.count * 3 / 4 || kills.coordinators < 2 || kills.workers < 1 {
                try Self.killOne(&coordinators, &kills, &random, workerPIDs: {
                    jobs.compactMap { ($0["worker"] as? [String: Any])?["pid"] as? Int }
                }, restart: start)
            }
            jobs = try work.jobs(queue: cluster.url)
            if jobs.filter({ $0["state"] as? String == "succeeded" }).count == names.count { break }
            #expect(!jobs.contains { ["dead", "failed"].contains($0["state"] as? String) }, "\(jobs.filter { $0["state"] as? String != "succeeded" })")
        }
        #expect(kills.coordinators >= 2 && kills.workers >= 1, "\(kills)")
        for c in coordinators { c.kill(SIGTERM) }
        for c in coordinators { #expect(c.wait(timeout: 60) != nil) }
        // Each host's TMPDIR and spool are empty: what killed workers left went with them, and what killed
        // coordinators' workers left was removed when the host's next coordinator started.
        for i in 0..<3 {
            for place in ["tmp", "spool"] {
                let path = folder.appendingPathComponent("host\(i)/\(place)").path
                let left = (try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []
                #expect(left.isEmpty, "\(path): \(left)")
            }
        }

        for job in try work.jobs(queue: cluster.url) {
            let errors = (job["errors"] as? [[String: Any]]) ?? []
            #expect(job["state"] as? String == "succeeded" && (job["attempt"] as? Int) == errors.count + 1, "\(job)")
        }
        // Every object whole, nothing else in the bucket's out/, and no multipart upload left open.
        let listed = Set(try await s3.list(S3Location(bucket: bucket, key: "out")).map(\.location.key))
        let expected = Set(names.map { "out/\($0).json" } + exports.map { "out/\($0).mp4" })
        #expect(listed == expected, "missing \(expected.subtracting(listed).sorted()), extra \(listed.subtracting(expected).sorted())")
        for name in names {
            let report = Data(Array(buffer: try await s3.get(S3Location(bucket: bucket, key: "out/\(name).json")).bytes))
            #expect((try? JSONSerialization.jsonObject(with: report)) != nil, "\(name).json is not a whole report")
            guard exports.contains(name) else { continue }
            let movie = folder.appendingPathComponent("\(name).mp4")
            try Data(Array(buffer: try await s3.get(S3Location(bucket: bucket, key: "out/\(name).mp4")).bytes)).write(to: movie)
            let video = try MediaProbe.packets(movie.path, stream: "v")
            let end = video.map { $0.pts + $0.duration }.max() ?? 0
            #expect(video.count == 60 && abs(end - 4) < 0.01, "\(name).mp4: \(video.count) frames ending at \(end) s")
        }
        let open = try await s3.listMultipartUploads(S3Location(bucket: bucket, key: ""))
        #expect(open.isEmpty, "\(open.map { "\($0.key) \($0.uploadID)" }) in \(folder.path)")
        let successes = Self.successes(in: logs)
        #expect(successes.values.allSatisfy { $0 == 1 } && successes.count <= names.count, "\(successes.filter { $0.value > 1 })")
    }

    @Test func coordinatorsCarryOnThroughAServerRestart() throws {
        let cluster = try TestPostgres.Cluster()
        defer { cluster.stop() }
        let work = try Work("restart", inspections: 60, exports: 30)
        let queue = cluster.url + "&connect_timeout=3"
        #expect(try work.mediafarm(["queue", "migrate"], queue: queue).status == 0)
        let submitted = try work.mediafarm(["submit", "--output-root", work.out.path, work.folder.appendingPathComponent("jobs").path], queue: queue)
        try #require(submitted.status == 0, Comment(rawValue: submitted.stderr))
        let logs = (0..<2).map { work.folder.appendingPathComponent("coordinator\($0).log").path }
        let coordinators = try logs.enumerated().map { i, log in
            try Background([TestPaths.mediafarmExecutable, "coordinator", "--queue", queue, "--workers", "2", "--lease", "20",
                            "--host", "host\(i)", "--json", "--exit-when-idle"], log: log)
        }
        defer { for c in coordinators { c.kill(SIGKILL); _ = c.wait(timeout: 10) } }
        // Twice, once work is under way: the server stops at once (connections drop), and comes back 2 s later.
        for round in 1...2 {
            let started = Date()
            while Date().timeIntervalSince(started) < 60 {
                let done = logs.map { ((try? String(contentsOfFile: $0, encoding: .utf8)) ?? "").components(separatedBy: "\"succeeded\"").count - 1 }
                if done.reduce(0, +) >= round * 20 { break }
                Thread.sleep(forTimeInterval: 0.2)
            }
            try cluster.kill()
            Thread.sleep(forTimeInterval: 2)
            try cluster.start()
        }
        for c in coordinators { #expect(c.wait(timeout: 300) == 0, "\(c.log)") }
        try work.checkEverythingDoneOnce(queue: queue, logs: logs)
        let notices = logs.map { (try? String(contentsOfFile: $0, encoding: .utf8)) ?? "" }.joined()
        #expect(notices.contains("127.0.0.1:\(cluster.port)"), "the outage was never noticed")
    }
}

/// Network namespaces joined to this one by veth pairs: namespace i reaches the server at
/// `serverAddresses[i]`. Removed when released.
final class HostNetwork: @unchecked Sendable {
    let namespaces: [String]
    let serverAddresses: [String]
    private let links: [String]

    init(hosts: Int) throws {
        let tag = String(UInt32.random(in: 0...0xFFFFF), radix: 16)
        // A 172.N subnet no interface has: namespaces left by a run that was killed keep theirs, and two
        // routes to one subnet would send this run's packets into the old veth.
        let inUse = (try? ProcessRunner.spawn("/usr/sbin/ip", ["-o", "addr", "show"]))?.stdout ?? ""  // unreadable: every subnet looks free
        guard let subnet = (16...31).filter({ !inUse.contains(" 172.\($0).") }).randomElement() else {
            throw FixtureError("every 172.16-31 subnet is on an interface here: remove leftover namespaces (ip netns list)")
        }
        var namespaces: [String] = [], addresses: [String] = [], links: [String] = []
        func ip(_ args: [String]) throws {
            let r = try ProcessRunner.spawn("/usr/sbin/ip", args)
            guard r.status == 0 else { throw FixtureError("ip \(args.joined(separator: " ")): \(r.stderr)") }
        }
        do {
            for i in 0..<hosts {
                let ns = "mf\(tag)n\(i)", outside = "mf\(tag)h\(i)", inside = "mf\(tag)c\(i)"
                let net = "172.\(subnet).\(10 + i)"
                try ip(["netns", "add", ns])
                namespaces.append(ns)
                try ip(["link", "add", outside, "type", "veth", "peer", "name", inside])
                links.append(outside)
                try ip(["link", "set", inside, "netns", ns])
                try ip(["addr", "add", "\(net).1/24", "dev", outside])
                try ip(["link", "set", outside, "up"])
                try ip(["netns", "exec", ns, "ip", "addr", "add", "\(net).2/24", "dev", inside])
                try ip(["netns", "exec", ns, "ip", "link", "set", inside, "up"])
                try ip(["netns", "exec", ns, "ip", "link", "set", "lo", "up"])
                addresses.append("\(net).1")
            }
        } catch {
            Self.remove(namespaces: namespaces, links: links)
            throw error
        }
        self.namespaces = namespaces
        self.serverAddresses = addresses
        self.links = links
    }

    deinit { Self.remove(namespaces: namespaces, links: links) }

    static func remove(namespaces: [String], links: [String]) {
        for link in links { _ = try? ProcessRunner.spawn("/usr/sbin/ip", ["link", "del", link]) }
        for ns in namespaces { _ = try? ProcessRunner.spawn("/usr/sbin/ip", ["netns", "del", ns]) }
    }
}
