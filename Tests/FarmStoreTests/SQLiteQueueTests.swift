import FarmModel
@testable import FarmStore
import FarmTestSupport
import Foundation
import Testing

/// The SQLite queue's own ways: its doorbell, which wakes listening coordinators when another process
/// commits work.
@Suite struct SQLiteQueueTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func new(_ name: String) -> NewJob {
        NewJob(name: name, manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/data")
    }

    func freshQueue() throws -> String {
        let folder = try TestPaths.makeTemporaryFolder("sqlite-doorbell")
        return folder.appendingPathComponent("queue.sqlite").path
    }

    /// Seconds from `act`'s start until `listener`, seen waiting before it, is woken once job `id` is queued
    /// (`secondsToHear`).
    func woken(_ listener: SQLiteJobStore, queued id: Int64, by act: @escaping @Sendable () async throws -> Void) async throws -> Double {
        try await secondsToHear(listener, waiting: { listener.waitingForWork }, visible: { (try? await listener.job(id: id))?.state == .queued },
                                by: act)
    }

    /// Many processes opening one new queue at once: each migration is applied once, and every process
    /// opens the queue (one that lost the race for a migration looks again instead of failing with "table
    /// ... already exists"). Before that, 4 of 360 such processes failed (15 rounds of 24); the full suite
    /// met it once, in eight submitters of one unique key.
    @Test func processesCreatingOneQueueAtOnceAllOpenIt() async throws {
        for round in 0..<10 {
            let queue = "sqlite:" + (try TestPaths.makeTemporaryFolder("sqlite-race")).appendingPathComponent("queue-\(round).sqlite").path
            let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
                for _ in 0..<24 {
                    group.addTask { try ProcessRunner.run(TestPaths.mediafarmExecutable, ["queue", "migrate", "--queue", queue]) }
                }
                var all: [ProcessResult] = []
                for try await r in group { all.append(r) }
                return all
            }
            let failed = results.filter { $0.status != 0 }
            #expect(failed.isEmpty, "round \(round): \(failed.map(\.stderr))")
        }
    }

    @Test func anotherProcessesSubmissionWakesAListener() async throws {
        let path = try freshQueue()
        let listener = try SQLiteJobStore(path: path, listen: true)
        #expect(listener.hearsOfWork)
        let manifest = (path as NSString).deletingLastPathComponent + "/job.json"
        try #"{"version": 1, "input": "a.mp4"}"#.write(toFile: manifest, atomically: true, encoding: .utf8)
        let waited = try await woken(listener, queued: 1) {
            let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["submit", "--queue", path, "--allow-missing-inputs", manifest])
            #expect(r.status == 0, "\(r.stderr)")
        }
        // Woken by the doorbell, not by the end of its 30 s wait.
        #expect(waited < 10, "waited \(waited) s")
        // A store opened without listening only sleeps.
        #expect(!(try SQLiteJobStore(path: path, create: false)).hearsOfWork)
    }

    @Test func aReleasedOrRetriedJobRingsToo() async throws {
        let path = try freshQueue()
        let listener = try SQLiteJobStore(path: path, listen: true)
        let other = try SQLiteJobStore(path: path, create: false)
        let id = try await other.enqueue([new("a")], at: t0)[0].id
        let claimed = try #require(try await other.claim(limit: 1, owner: "o", leaseDuration: 30, at: t0).first)
        var waited = try await woken(listener, queued: id) {
            _ = try await other.finish(id: id, token: claimed.lease!.token, outcome: .released, at: t0)
        }
        #expect(waited < 10, "a release: waited \(waited) s")
        _ = try await other.cancel(id: id, at: t0)
        waited = try await woken(listener, queued: id) { _ = try await other.retry(id: id, at: t0, by: "a test") }
        #expect(waited < 10, "a retry: waited \(waited) s")
    }

    @Test func aDoorbellRemovedIsMadeAgainAndStillHeard() async throws {
        let path = try freshQueue()
        let listener = try SQLiteJobStore(path: path, listen: true)
        #expect(FileManager.default.fileExists(atPath: path + "-wake"))
        try FileManager.default.removeItem(atPath: path + "-wake")
        let other = try SQLiteJobStore(path: path, create: false)
        let waited = try await woken(listener, queued: 1) { _ = try await other.enqueue([self.new("b")], at: self.t0) }
        #expect(waited < 10, "waited \(waited) s")
        #expect(FileManager.default.fileExists(atPath: path + "-wake"))
    }

    /// The write-ahead log is kept, empty, when the last process leaves the queue: the next opening has
    /// nothing to read back (each command's writes were appended to a kept log and read back in full by
    /// the next one to open the queue) and need not make a log either. The queue file alone is whole.
    @Test func theWriteAheadLogIsLeftEmptyByEachCommand() async throws {
        let path = try freshQueue()
        let manifest = (path as NSString).deletingLastPathComponent + "/job.json"
        try #"{"version": 1, "input": "a.mp4"}"#.write(toFile: manifest, atomically: true, encoding: .utf8)
        for round in 0..<12 {
            let command = round % 3 == 2 ? ["status", "--queue", path] : ["submit", "--queue", path, "--allow-missing-inputs", manifest]
            let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, command)
            #expect(r.status == 0, "\(r.stderr)")
            let log = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int
            #expect(log == 0, "after command \(round) (\(command[0])), the log holds \(log ?? -1) bytes")
        }
        let store = try SQLiteJobStore(path: path, create: false)
        #expect(try await store.jobs(matching: JobQuery()).count == 8)
    }

    /// The syncs of the queue's write-ahead log a process makes, seen with strace.
    func logSyncs(_ arguments: [String], queue path: String) throws -> Int {
        let trace = (path as NSString).deletingLastPathComponent + "/trace-\(UUID().uuidString).txt"
        let r = try ProcessRunner.run("/usr/bin/strace", ["-f", "-y", "-e", "trace=fdatasync,fsync", "-o", trace, TestPaths.mediafarmExecutable]
                                          + arguments + ["--queue", path])
        #expect(r.status == 0, "\(r.stderr)")
        return try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
            .filter { $0.contains("sync(") && $0.contains(path + "-wal>") }.count
    }

    /// A submission's commit is synced (synchronous=FULL); a cancellation's is not (NORMAL): the two
    /// commands' syncs of the log differ by that one (both also sync the log's new header and checkpoint
    /// it as they leave).
    @Test func aSubmissionIsSyncedAndOtherCommitsAreNot() async throws {
        let path = try freshQueue()
        let manifest = (path as NSString).deletingLastPathComponent + "/job.json"
        try #"{"version": 1, "input": "a.mp4"}"#.write(toFile: manifest, atomically: true, encoding: .utf8)
        _ = try logSyncs(["submit", "--allow-missing-inputs", manifest], queue: path)  // makes the queue
        let submission = try logSyncs(["submit", "--allow-missing-inputs", manifest], queue: path)
        let cancellation = try logSyncs(["cancel", "2"], queue: path)
        #expect(submission == cancellation + 1, "a submission synced the log \(submission) times, a cancellation \(cancellation)")
        let store = try SQLiteJobStore(path: path, create: false)
        #expect(try await store.jobs(matching: JobQuery()).map(\.state) == [.queued, .cancelled])
    }
}
