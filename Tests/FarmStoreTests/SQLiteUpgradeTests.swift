@testable import FarmStore
import FarmModel
import Foundation
import GRDB
import Testing

/// A queue made by an earlier MediaFarm is upgraded in place when opened, its jobs kept.
@Suite struct SQLiteUpgradeTests {
    /// The counts by state that the overview reads come from indexes, never from reading every row, and say
    /// what counting every row says: on a version-16 queue once upgraded, and after inserts, changes of
    /// state (to a state no row had, to the same state) and deletes from anywhere.
    @Test func theCountsByStateComeFromIndexesAndAreRight() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-counts-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/queue.sqlite"
        @Sendable func insert(_ db: Database, _ id: Int, _ state: String) throws {
            try db.execute(sql: """
                INSERT INTO jobs (id, name, manifest, base_directory, state, max_attempts, run_at, created_at, updated_at)
                VALUES (?, ?, '{}', '/data', ?, 3, 0, 0, 0)
                """, arguments: [id, "j\(id)", state])
        }
        do {
            let pool = try DatabasePool(path: path)
            try SQLiteJobStore.migrator.migrate(pool, upTo: "v16 webhook events keep their job in its row")
            try await pool.write { db in
                for id in 1...30 { try insert(db, id, ["succeeded", "queued", "failed"][id % 3]) }
            }
            try pool.close()
        }
        let store = try SQLiteJobStore(path: path, create: false)
        #expect(try await store.counts() == [.succeeded: 10, .queued: 10, .failed: 10])
        let pool = try DatabasePool(path: path)
        defer { try? pool.close() }
        func recount() throws -> [JobState: Int] {
            try pool.read { db in
                var counts: [JobState: Int] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM jobs GROUP BY state") {
                    counts[JobState(rawValue: row["state"])!] = row["n"]
                }
                return counts
            }
        }
        var random = SystemRandomNumberGenerator()
        let states = ["waiting", "queued", "running", "succeeded", "failed", "cancelled", "dead"]
        for round in 0..<20 {
            let inserted = (0..<10).map { _ in states.randomElement(using: &random)! }
            let changedTo = states.randomElement(using: &random)!
            try await pool.write { db in
                for (id, state) in inserted.enumerated() { try insert(db, 100 + round * 10 + id, state) }
                try db.execute(sql: "UPDATE jobs SET state = ? WHERE id % 7 = ?", arguments: [changedTo, round % 7])
                try db.execute(sql: "UPDATE jobs SET state = state, updated_at = 1 WHERE id % 5 = 0")
                try db.execute(sql: "DELETE FROM jobs WHERE id % 11 = ?", arguments: [round % 11])
            }
            let kept = try await store.counts()
            let counted = try recount()
            #expect(kept == counted, "round \(round): kept \(kept), counted \(counted)")
        }
        #expect(try await store.stats(at: Date()).total == (try recount()).values.reduce(0, +))
        // Each count reads an index: every job's (small, covering), or its state's partial one.
        let plans = try await pool.read { db in
            try ([JobCounts.read] + JobCounts.indexed.map { "SELECT COUNT(*) FROM jobs WHERE state = '\($0.rawValue)'" }).map { sql in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String }.joined(separator: "; ")
            }
        }
        for plan in plans {
            #expect(!plan.contains("SCAN jobs;") && !plan.hasSuffix("SCAN jobs") && plan.contains("INDEX"), "\(plan)")
        }
    }

    @Test func aVersion4QueueGainsDependenciesAndKeepsItsJobsAndIds() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-upgrade-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/queue.sqlite"
        do {
            let pool = try DatabasePool(path: path)
            try SQLiteJobStore.migrator.migrate(pool, upTo: "v4 coordinators")
            try await pool.write { db in
                for (id, state) in [(1, "succeeded"), (2, "queued"), (7, "failed")] {
                    try db.execute(sql: """
                        INSERT INTO jobs (id, name, manifest, base_directory, state, max_attempts, run_at, created_at, updated_at, unique_key)
                        VALUES (?, ?, '{}', '/data', ?, 3, 0, 0, 0, ?)
                        """, arguments: [id, "old\(id)", state, id == 2 ? "live-key" : nil])
                }
                // A pruned job had the highest id: it is never given again.
                try db.execute(sql: "INSERT INTO jobs (id, name, manifest, base_directory, state, max_attempts, run_at, created_at, updated_at) VALUES (9, 'gone', '{}', '/', 'dead', 1, 0, 0, 0)")
                try db.execute(sql: "DELETE FROM jobs WHERE id = 9")
            }
            try pool.close()
        }
        let store = try SQLiteJobStore(path: path, create: false)
        #expect(store.schemaChange == SchemaChange(from: 4, to: SQLiteJobStore.migrator.migrations.count))
        #expect(try await store.jobs(ids: nil).map { "\($0.id) \($0.name) \($0.state.rawValue)" } == ["1 old1 succeeded", "2 old2 queued", "7 old7 failed"])
        let now = Date()
        let added = try await store.enqueue([NewJob(name: "new", manifest: "{}", baseDirectory: "/data", after: [.id(2)]),
                                             NewJob(name: "dup", manifest: "{}", baseDirectory: "/data", uniqueKey: "live-key")], at: now)
        #expect(added == [Enqueued(id: 10, inserted: true), Enqueued(id: 2, inserted: false)])
        #expect(try await store.job(id: 10)?.state == .waiting)
        let claimed = try await store.claim(limit: 5, owner: "h:1:a", leaseDuration: 30, at: now)
        #expect(claimed.map(\.id) == [2])
        _ = try await store.finish(id: 2, token: claimed[0].lease!.token, outcome: .succeeded(result: nil), at: now)
        #expect(try await store.job(id: 10)?.state == .queued)
    }
}
