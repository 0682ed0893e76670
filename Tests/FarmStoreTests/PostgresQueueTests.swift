import FarmModel
@testable import FarmStore
import FarmTestSupport
import Foundation
import Testing

/// What only the PostgreSQL queue has: many connections and hosts, notifications, a server that can go
/// away and come back, and a schema that other versions of MediaFarm may have written.
@Suite struct PostgresQueueTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func new(_ name: String) -> NewJob {
        NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data", maxAttempts: 3)
    }

    func open(_ url: String, migrate: Bool = false, listen: Bool = false, connections: Int = 4) async throws -> any JobStore {
        try await JobStores.open(try QueueLocation.parse(url), migrate: migrate, connections: connections, listen: listen)
    }

    /// Waits until `condition` holds, up to `seconds`.
    func eventually(_ seconds: Double, _ condition: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    @Test func aSubmissionWakesAnIdleListener() async throws {
        let url = try TestPostgres.url(freshSchema: true)
        let listener = try await open(url, migrate: true, listen: true)
        let submitter = try await open(url)
        #expect(await eventually(10) { listener.hearsOfWork })
        // (The signal sent when listening began is slept through: the waiter waits on until the act.)
        let waiting = try #require(listener as? PostgresJobStore)
        let waited = try await secondsToHear(listener, waiting: { waiting.waitingForWork }, visible: { (try? await listener.counts())?[.queued] == 1 }) {
            _ = try await submitter.enqueue([new("a")], at: t0)
        }
        // Woken by the notification, not by the end of its 30 s wait.
        #expect(waited < 10, "waited \(waited) s")
        // Without a listener the store only sleeps.
        #expect(!submitter.hearsOfWork)
    }

    @Test func manyClaimersOnManyConnectionsNeverShareAJobAndRescuersRescueOnce() async throws {
        let url = try TestPostgres.url(freshSchema: true)
        let first = try await open(url, migrate: true)
        var stores = [first]
        for _ in 0..<3 { stores.append(try await open(url)) }
        _ = try await first.enqueue((0..<300).map { new("j\($0)") }, at: t0)
        let claimed = await withTaskGroup(of: [Job].self) { group in
            for i in 0..<12 {
                let store = stores[i % stores.count]
                group.addTask {
                    var mine: [Job] = []
                    while let batch = try? await store.claim(limit: 1 + i % 3, owner: "host\(i):1:a", leaseDuration: 10, at: self.t0),
                          !batch.isEmpty {
                        mine += batch
                    }
                    return mine
                }
            }
            var all: [Job] = []
            for await jobs in group { all += jobs }
            return all
        }
        #expect(claimed.count == 300 && Set(claimed.map(\.id)).count == 300)
        let stats = try await first.stats(at: t0)
        // By host as the leases say (a claimer the others outran may have none: that depends on the scheduler).
        let byHost = Dictionary(grouping: claimed, by: { Job.host(ofOwner: $0.lease?.owner ?? "") }).mapValues(\.count)
        #expect(stats.counts["running"] == 300 && stats.runningByHost == byHost && byHost.values.reduce(0, +) == 300)
        // Every lease expires; six rescuers on four connections run at once.
        let rescued = await withTaskGroup(of: [Int64].self) { group in
            for i in 0..<6 {
                let store = stores[i % stores.count]
                group.addTask { (try? await store.rescueExpired(at: self.t0.addingTimeInterval(10)).map(\.id)) ?? [] }
            }
            var all: [Int64] = []
            for await ids in group { all += ids }
            return all
        }
        #expect(rescued.count == 300 && Set(rescued).count == 300)
        let jobs = try await first.jobs(ids: nil)
        #expect(jobs.allSatisfy { $0.state == .queued && $0.errors.count == 1 && $0.attempt == 1 })
    }

    /// A call's deadline is on the server's silence: a statement that waits on a lock another session holds
    /// ends the call once the deadline passed, naming the lock as a cause (a call's many statements that
    /// answer run as long as they need: DeadlineTests).
    @Test func aStatementWaitingOnAnotherSessionsLockEndsAtTheDeadline() async throws {
        let url = try TestPostgres.url(freshSchema: true)
        let store = try await open(url + "&connect_timeout=5", migrate: true)  // deadline: 5 + 5 s
        defer { Task { await store.close() } }
        let id = try await store.enqueue([new("held")], at: t0)[0].id
        let schema = try #require(url.components(separatedBy: "schema=").last)
        let server = try TestPostgres.url()
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        holder.arguments = [server, "-q", "-c", "BEGIN; SELECT id FROM \"\(schema)\".jobs WHERE id = \(id) FOR UPDATE; SELECT pg_sleep(25) AS \(schema)"]
        holder.standardOutput = FileHandle.nullDevice
        try holder.run()
        // psql waited for on a thread of its own, not on one of the few that run every test's tasks.
        func psql(_ sql: String) async -> String {
            await withCheckedContinuation { done in
                Thread {
                    let result = try? ProcessRunner.spawn("/usr/bin/psql", [server, "-tAq", "-c", sql])
                    done.resume(returning: result?.stdout.trimmingCharacters(in: .whitespacesAndNewlines) ?? "")
                }.start()
            }
        }
        let holding = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%AS \(schema)' AND state = 'active' AND pid <> pg_backend_pid()"
        #expect(await eventually(10) { await psql(holding) == "1" }, "psql holds the row")
        let started = ContinuousClock.now
        do {
            _ = try await store.cancel(id: id, at: t0)
            Issue.record("the cancel went through a lock another session holds")
        } catch {
            #expect("\(error)".contains("no answer within 10 s") && "\(error)".contains("another transaction holding a lock"), "\(error)")
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .seconds(9.5) && waited < .seconds(20), "\(waited)")
        _ = await psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%AS \(schema)' AND pid <> pg_backend_pid()")
        holder.terminate()
    }

    @Test func migrationsAreIdempotentAndSafeToRunAtOnce() async throws {
        let url = try TestPostgres.url(freshSchema: true)
        await #expect {
            _ = try await open(url)
        } throws: { "\($0)".contains("no MediaFarm queue there yet: run `mediafarm queue migrate`") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { await try self.open(url, migrate: true).close() } }
            try await group.waitForAll()
        }
        let store = try await open(url, migrate: true)
        _ = try await store.enqueue([new("a")], at: t0)
        #expect(try await open(url).counts() == [.queued: 1])
    }

    @Test func aNewerSchemaIsRefusedNamingBothVersions() async throws {
        let url = try TestPostgres.url(freshSchema: true)
        let schema = try #require(url.split(separator: "schema=").last.map(String.init))
        _ = try await open(url, migrate: true)
        let base = try TestPostgres.url()
        let psql = try ProcessRunner.spawn("psql", [base.replacingOccurrences(of: "postgres://", with: "postgresql://"), "-q", "-c",
                                                   "UPDATE \(schema).schema_version SET version = 99"])
        try #require(psql.status == 0, Comment(rawValue: psql.stderr))
        for migrate in [false, true] {
            await #expect {
                _ = try await open(url, migrate: migrate)
            } throws: { "\($0)".contains("version 99, newer than this program's \(PostgresJobStore.schemaVersion)") }
        }
    }

    @Test func unreachableAndRefusingServersAreNamedWithTheReason() async throws {
        let base = try TestPostgres.url()
        var parts = try #require(URLComponents(string: base))
        parts.password = "wrong"
        await #expect {
            _ = try await open(parts.string!)
        } throws: { "\($0)".contains("password authentication failed for user \"farm\"") && "\($0)".contains("127.0.0.1") }
        // A refusal comes at once; the long timeout only keeps a machine busy with other suites from
        // turning it into "no answer".
        let closed = "postgres://farm:x@127.0.0.1:1/farm?sslmode=disable&connect_timeout=60"
        await #expect {
            _ = try await open(closed)
        } throws: { "\($0)".contains("postgres://farm@127.0.0.1:1/farm: cannot connect") && "\($0)".contains("Connection refused") }
        #expect(throws: JobStoreError.self) { _ = try QueueLocation.parse(base + "&colour=blue") }
        #expect {
            _ = try QueueLocation.parse("postgres://farm:secret@db/farm?colour=blue")
        } throws: { "\($0)".contains("unknown parameter \"colour\"") && !"\($0)".contains("secret") }
    }

    /// The server stops with a job running and a coordinator's listener connected: calls fail with the
    /// server's name (no hang), and after the restart the same store carries on: the running job's lease
    /// renews and its attempt finishes, and notifications come again.
    @Test func theStoreCarriesOnAfterTheServerRestarts() async throws {
        let cluster = try TestPostgres.Cluster()
        defer { cluster.stop() }
        // A deadline of 20 s on the server's silence (connect_timeout 10 s, plus 10): a machine busy with other
        // suites and fsync on can take a migration's statement past the default 10 s.
        let url = cluster.url + "&connect_timeout=10"
        // Each step named when it fails: which one a busy machine slowed is what a failure must say.
        func step<T>(_ name: String, _ body: () async throws -> T) async throws -> T {
            do { return try await body() } catch { throw FixtureError("\(name): \(error)") }
        }
        var opened: (any JobStore)?
        for attempt in 1...5 where opened == nil {
            do {
                opened = try await step("open and migrate (attempt \(attempt))") { try await open(url, migrate: true, listen: true) }
            } catch where attempt < 5 {
                try await Task.sleep(for: .seconds(1))
            }
        }
        let store = try #require(opened)
        let ids = try await step("enqueue") { try await store.enqueue([new("a"), new("b")], at: t0).map(\.id) }
        let job = try await step("claim") { try await store.claim(limit: 1, owner: "h:1:a", leaseDuration: 600, at: t0)[0] }
        let token = try #require(job.lease?.token)
        #expect(await eventually(10) { store.hearsOfWork })

        try cluster.kill()
        let started = Date()
        await #expect {
            _ = try await store.counts()
        } throws: { "\($0)".contains("127.0.0.1:\(cluster.port)") }
        #expect(Date().timeIntervalSince(started) < 30)
        #expect(await eventually(10) { !store.hearsOfWork })

        try cluster.start()
        #expect(await eventually(30) { (try? await store.counts()) != nil })
        let renewed = try await step("renew after the restart") {
            try await store.renew([LeaseRenewal(id: job.id, token: token, progress: 0.5)], leaseDuration: 600, at: t0)
        }
        #expect(renewed == [])
        let finished = try await step("finish after the restart") { try await store.finish(id: job.id, token: token, outcome: .succeeded(result: nil), at: t0) }
        #expect(finished.state == .succeeded)
        #expect(await eventually(30) { store.hearsOfWork })
        let waiting = try #require(store as? PostgresJobStore)
        let waited = try await secondsToHear(store, waiting: { waiting.waitingForWork }, visible: { (try? await store.counts())?[.queued] == 2 }) {
            _ = try await store.enqueue([new("c")], at: t0)
        }
        #expect(waited < 10, "waited \(waited) s")
        #expect(try await store.jobs(ids: ids).map(\.state) == [.succeeded, .queued])
    }

    /// The operator's commands against a PostgreSQL queue, as processes.
    @Test func migrateStatsStatusAndPruneFromTheCommandLine() throws {
        let url = try TestPostgres.url(freshSchema: true)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-pgcli-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: folder.appendingPathComponent("a.mp4").path, contents: Data())
        for name in ["one", "two", "three"] {
            try #"{"version":1,"name":"\#(name)","input":"a.mp4"}"#.write(to: folder.appendingPathComponent(name + ".json"),
                                                                           atomically: true, encoding: .utf8)
        }
        func mediafarm(_ args: [String]) throws -> ProcessResult {
            try ProcessRunner.spawn(TestPaths.mediafarmExecutable, args + ["--queue", url])
        }
        let before = try mediafarm(["status"])
        #expect(before.status == 1 && before.stderr.contains("run `mediafarm queue migrate`"), "\(before.stderr)")
        // The first migration creates the schema and says so; the second finds it current.
        for expected in ["created the queue (schema version", "is current"] {
            let migrated = try mediafarm(["queue", "migrate"])
            #expect(migrated.status == 0 && migrated.stdout.contains(expected), "\(migrated.stdout) \(migrated.stderr)")
        }
        let submitted = try mediafarm(["submit", "--delay", "3600", folder.appendingPathComponent("one.json").path,
                                       folder.appendingPathComponent("two.json").path, folder.appendingPathComponent("three.json").path])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let stats = try mediafarm(["queue", "stats", "--json"])
        let figures = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any]
        // Submitted with a delay: queued, not due yet, so delayed.
        let counts = figures?["counts"] as? [String: Int]
        #expect(counts?["delayed"] == 3 && counts?["queued"] == 0 && figures?["total"] as? Int == 3, "\(stats.stdout)")
        let newest = try mediafarm(["status", "--json", "--state", "delayed", "--limit", "2"])
        let rows = try JSONSerialization.jsonObject(with: Data(newest.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(rows.compactMap { $0["name"] as? String } == ["two", "three"], "\(newest.stdout)")
        #expect(try mediafarm(["cancel", "1"]).status == 0)
        let pruned = try mediafarm(["queue", "prune", "--older-than", "0", "--json"])
        #expect(pruned.status == 0 && pruned.stdout.contains("\"deleted\" : 1"), "\(pruned.stdout) \(pruned.stderr)")
        let left = try JSONSerialization.jsonObject(with: Data(try mediafarm(["status", "--json"]).stdout.utf8)) as? [[String: Any]] ?? []
        #expect(left.compactMap { $0["name"] as? String }.sorted() == ["three", "two"], "\(left)")
    }
}
