import FarmIngest
import FarmStore
import FarmTestSupport
import Foundation
import Synchronization
import Testing

/// Ingest passes in-process, with a clock the test moves: a real watch folder, template, state file and
/// SQLite queue; no sleeping through a settle time.
@Suite struct IngestPassTests {
    final class Clock: Sendable {
        let time = Mutex(Date(timeIntervalSince1970: 2_000_000_000))
        func now() -> Date { time.withLock { $0 } }
        func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
    }

    /// A watch folder with one movie, a template, a config settling files for `settle` seconds.
    static func site(settle: Double) throws -> (config: IngestConfig, queue: String) {
        let folder = try TestPaths.makeTemporaryFolder("ingest-pass")
        for name in ["incoming", "templates"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        try #"{ "version": 1, "name": "proxy-{stem}", "input": "{input}", "report": "../out/{stem}-{hash}.json" }"#
            .write(to: folder.appendingPathComponent("templates/proxy.json"), atomically: true, encoding: .utf8)
        let config = folder.appendingPathComponent("ingest.json").path
        try """
        { "version": 1, "watch": [ { "path": "incoming", "template": "templates/proxy.json" } ],
          "settleSeconds": \(settle), "state": "state/ingest.sqlite", "outputRoots": ["out"] }
        """.write(toFile: config, atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: folder.appendingPathComponent("incoming/a.mp4").path)
        return (try IngestConfig.load(config), folder.appendingPathComponent("queue.sqlite").path)
    }

    @Test func aSettleTimeIsCountedBetweenPassesNotSleptThrough() async throws {
        // Two minutes' settle time: a pass that slept through it would not end within the test's minute, and
        // the test would still end.
        let (config, queue) = try Self.site(settle: 120)
        let clock = Clock()
        let pass = IngestPass(config: config, openQueue: { try SQLiteJobStore(path: queue) }, now: { clock.now() })
        let started = Date()
        #expect(try await pass.run().settling == 1)
        clock.advance(119.9)
        #expect(try await pass.run().settling == 1)   // unchanged, but not for two minutes yet
        #expect(Date().timeIntervalSince(started) < 60, "a pass waited for the settle time")
        clock.advance(0.2)
        let settled = try await pass.run()
        #expect(settled.enqueued == 1 && settled.jobs.map { ($0.path as NSString).lastPathComponent } == ["a.mp4"], "\(settled)")
        #expect(try await pass.run().enqueued == 0)
        let jobs = try await SQLiteJobStore(path: queue).jobs(matching: JobQuery(limit: 10))
        #expect(jobs.count == 1 && jobs.first?.uniqueKey?.hasPrefix("ingest:") == true)
    }

    /// The config's numbers are held to the same ranges as the command line's and the API's.
    @Test func theConfigsNumbersHaveTheOptionsRanges() throws {
        let folder = try TestPaths.makeTemporaryFolder("ingest-config")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("incoming"), withIntermediateDirectories: true)
        try #"{ "version": 1, "input": "{input}" }"#.write(to: folder.appendingPathComponent("t.json"), atomically: true, encoding: .utf8)
        let config = folder.appendingPathComponent("ingest.json").path
        try """
        { "version": 1, "watch": [ { "path": "incoming", "template": "t.json" } ], "maxAttempts": 1e30, "priority": 1.5 }
        """.write(toFile: config, atomically: true, encoding: .utf8)
        do {
            _ = try IngestConfig.load(config)
            Issue.record("a config with hostile numbers was taken")
        } catch {
            #expect(error.description.contains("$.maxAttempts: a whole number from 1 to 1000"), "\(error)")
            #expect(error.description.contains("$.priority: a whole number from -1000000000 to 1000000000"), "\(error)")
        }
    }
}
