@testable import FarmStore
import FarmModel
import Foundation
import GRDB
import Testing

/// A queue made by an earlier MediaFarm is upgraded in place when opened, its jobs kept.
@Suite struct SQLiteUpgradeTests {
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
