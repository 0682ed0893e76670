@testable import FarmIngest
import FarmStore
import FarmSubmit
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

    /// A day's settle time (the most a config may give): a pass that slept through it would run into the
    /// test's time limit (a generous one: on a busy machine the passes may wait minutes for a thread, and
    /// that is no failure).
    @Test(.timeLimit(.minutes(30))) func aSettleTimeIsCountedBetweenPassesNotSleptThrough() async throws {
        let settle = 86400.0
        let (config, queue) = try Self.site(settle: settle)
        let clock = Clock()
        let pass = IngestPass(config: config, openQueue: { try SQLiteJobStore(path: queue) }, now: { clock.now() })
        #expect(try await pass.run().settling == 1)
        clock.advance(settle - 0.1)
        #expect(try await pass.run().settling == 1)   // unchanged, but not for the whole settle time yet
        clock.advance(0.2)
        let settled = try await pass.run()
        #expect(settled.enqueued == 1 && settled.jobs.map { ($0.path as NSString).lastPathComponent } == ["a.mp4"], "\(settled)")
        #expect(try await pass.run().enqueued == 0)
        let jobs = try await SQLiteJobStore(path: queue).jobs(matching: JobQuery(limit: 10))
        #expect(jobs.count == 1 && jobs.first?.uniqueKey?.hasPrefix("ingest:") == true)
    }

    /// A lock another open description holds for a moment (a forked child that has not exec'd yet holds
    /// every lock its parent's descriptions carry) is waited for; one held throughout makes the pass busy,
    /// and it leaves everything as it was.
    @Test(.timeLimit(.minutes(10))) func aLockHeldForAMomentIsWaitedForAndOneHeldLongerMakesThePassBusy() async throws {
        let (config, queue) = try Self.site(settle: 86400)
        let pass = IngestPass(config: config, openQueue: { try SQLiteJobStore(path: queue) })
        try FileManager.default.createDirectory(atPath: (config.state as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let holder = open(config.state + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(holder >= 0 && flock(holder, LOCK_EX | LOCK_NB) == 0)
        // Released from a thread of its own, scheduled here and now: on a busy machine the tasks' threads may all
        // be held by other tests for longer than the pass's patience, and a task (even one that would only
        // schedule the release) may start too late.
        let (released, done) = AsyncStream<Void>.makeStream()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(500)) {
            close(holder)
            done.finish()
        }
        let first = try await pass.run()
        for await _ in released {}
        #expect(!first.busy && first.settling == 1, "\(first)")

        let other = open(config.state + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        defer { close(other) }
        // Waited for, not tried: a process another test forks between our open and its exec holds a copy of the
        // lock (flock's are the open file's) until it execs, which on a busy machine is not at once.
        #expect(other >= 0 && flock(other, LOCK_EX) == 0)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try await PassLock.take(config.state, dryRun: false, patience: .milliseconds(300)) == nil)
        #expect(clock.now - start >= .milliseconds(300))
        let busy = try await pass.run()
        #expect(busy.busy && busy.settling == 0 && busy.enqueued == 0, "\(busy)")
        #expect(try await SQLiteJobStore(path: queue).jobs(matching: JobQuery(limit: 10)).isEmpty)
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

    // MARK: - The stages alone

    /// A watch of `/w` with a template of its own (the stages below never read either).
    static let watch: IngestConfig.Watch = {
        let folder = try! TestPaths.makeTemporaryFolder("ingest-stage")   // a test's temporary folder: no reason to fail
        let file = folder.appendingPathComponent("t.json").path
        try! #"{ "version": 1, "input": "{input}" }"#.write(toFile: file, atomically: true, encoding: .utf8)
        return IngestConfig.Watch(path: "/w", include: [], exclude: [], template: try! IngestTemplate.load(file))
    }()

    static func sighting(_ path: String, size: Int64 = 10) -> IngestPass.Sighting {
        IngestPass.Sighting(path: path, identity: .init(size: size, mtimeNanoseconds: 1, inode: 1, device: 1), modified: Date(), watch: watch)
    }

    static func row(_ status: IngestState.Status, seenAt: Double, size: Int64 = 10, hash: String? = nil, goneSince: Double? = nil) -> IngestState.Row {
        IngestState.Row(identity: .init(size: size, mtimeNanoseconds: 1, inode: 1, device: 1), seenAt: seenAt, status: status, hash: hash,
                        goneSince: goneSince)
    }

    /// Settling is decided from the rows and the pass's time alone: new and changed files start, files not
    /// kept still for the settle time go on, settled ones become candidates, and what was taken before is
    /// left unless `--reingest` names its path or its content.
    @Test func settleDecidesFromTheRowsAndThePassTime() {
        let hash = String(repeating: "ab", count: 32)
        let known: [String: IngestState.Row] = [
            "/w/settling": Self.row(.settling, seenAt: 1000),
            "/w/settled": Self.row(.settling, seenAt: 900),
            "/w/changed": Self.row(.settling, seenAt: 900, size: 99),
            "/w/taken": Self.row(.ingested, seenAt: 500, hash: hash),
            "/w/forced": Self.row(.ingested, seenAt: 500),
            "/w/back": Self.row(.settling, seenAt: 800, goneSince: 950),
        ]
        let sightings = ["/w/new", "/w/settling", "/w/settled", "/w/changed", "/w/taken", "/w/forced", "/w/back"].map { Self.sighting($0) }
        let settled = IngestPass.settle(sightings, known: known, at: 1030, settleSeconds: 60, forced: ["/w/forced"])
        #expect(settled.candidates.map(\.path) == ["/w/settled", "/w/forced", "/w/back"])
        #expect(settled.settling == 3 && settled.firstSeen == 2)
        let seen = settled.changes.compactMap { if case .seen(let path, _, let at) = $0 { "\(path)@\(Int(at))" } else { nil } }
        #expect(seen == ["/w/new@1030", "/w/changed@1030"])
        #expect(settled.changes.contains { if case .back("/w/back") = $0 { true } else { false } })
        // The taken file's content named again: it is a candidate too.
        let again = IngestPass.settle(sightings, known: known, at: 1030, settleSeconds: 60, forced: [hash])
        #expect(again.candidates.map(\.path) == ["/w/settled", "/w/taken", "/w/back"])
        // A clock that went back (a pass at a time before the row's) never settles a file.
        #expect(IngestPass.settle(sightings, known: known, at: 10, settleSeconds: 0, forced: []).candidates.map(\.path) == [])
    }

    /// A row whose file the pass missed is marked, then forgotten after the grace period; a folder that
    /// could not be read leaves its rows alone.
    @Test func goneMarksThenForgetsButNotUnderAnUnreadFolder() {
        let known: [String: IngestState.Row] = [
            "/w/here": Self.row(.ingested, seenAt: 0),
            "/w/missed": Self.row(.ingested, seenAt: 0),
            "/w/long-gone": Self.row(.ingested, seenAt: 0, goneSince: 100),
            "/w/lately-gone": Self.row(.ingested, seenAt: 0, goneSince: 900),
            "/w/card/clip": Self.row(.ingested, seenAt: 0),
        ]
        let gone = IngestPass.gone(known, walked: ["/w/here"], unread: ["/w/card"], at: 1000, grace: 500)
        #expect(gone.forgotten == 1)
        let described = gone.changes.map { change -> String in
            switch change {
            case .gone(let path, let at): "gone \(path)@\(Int(at))"
            case .forget(let path): "forget \(path)"
            default: "other"
            }
        }.sorted()
        #expect(described == ["forget /w/long-gone", "gone /w/missed@1000"])
    }

    /// The `--reingest` names are compared as the pass compares them: a hash in capitals is the same content.
    @Test func aReingestedHashIsComparedInLowerCase() {
        let upper = String(repeating: "AB", count: 32)
        #expect(IngestPass.forced([upper, "/w/a.mp4"]) == [upper.lowercased(), "/w/a.mp4"])
    }
}
