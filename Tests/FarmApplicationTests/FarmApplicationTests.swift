import AsyncHTTPClient
import FarmApplication
import FarmHTTP
import FarmModel
import FarmRuntime
import FarmStore
import FarmTestSupport
import Foundation
import Synchronization
import Testing

/// The coordinator's process built in-process as the command line builds it: the service group serves
/// the HTTP face beside the coordinator and stops when asked, with no binary spawned.
@Suite struct FarmApplicationTests {
    /// What the application said, and the HTTP face's address once it listens (waited for without a clock:
    /// on a busy machine the server may take minutes to get a thread, and that is no failure).
    final class Notices: Sendable {
        private let state = Mutex<(lines: [String], closed: Bool, waiting: [CheckedContinuation<String?, Never>])>(([], false, []))

        var lines: [String] { state.withLock { $0.lines } }

        func add(_ line: String) {
            let (waiting, address) = state.withLock { s -> ([CheckedContinuation<String?, Never>], String?) in
                s.lines.append(line)
                guard let address = Self.address(in: s.lines) else { return ([], nil) }
                defer { s.waiting = [] }
                return (s.waiting, address)
            }
            for waiter in waiting { waiter.resume(returning: address) }
        }

        /// No more will be said (the group ended).
        func close() {
            let waiting = state.withLock { s in
                s.closed = true
                defer { s.waiting = [] }
                return s.waiting
            }
            for waiter in waiting { waiter.resume(returning: nil) }
        }

        /// The address the face listens on, once it says so; nil when the group ended first.
        func address() async -> String? {
            await withCheckedContinuation { waiter in
                let now = state.withLock { s -> String?? in
                    if let address = Self.address(in: s.lines) { return .some(address) }
                    if s.closed { return .some(nil) }
                    s.waiting.append(waiter)
                    return nil
                }
                if let now { waiter.resume(returning: now) }
            }
        }

        static func address(in lines: [String]) -> String? {
            lines.lazy.compactMap { line -> String? in
                guard let range = line.range(of: "http: listening on ") else { return nil }
                return line[range.upperBound...].split(separator: " ").first.map(String.init)
            }.first
        }
    }

    static func configuration() -> CoordinatorConfiguration {
        var configuration = CoordinatorConfiguration()
        configuration.workers = 1
        configuration.standbyWorkers = false
        return configuration
    }

    @Test(.timeLimit(.minutes(30))) func theCoordinatorsGroupServesItsFaceAndStopsWhenAsked() async throws {
        let folder = try TestPaths.makeTemporaryFolder("application")
        let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        var faces = FarmApplication.Faces()
        let token = String(repeating: "a1", count: 16)
        faces.http = HTTPFaceConfiguration(host: "127.0.0.1", port: 0, token: token, baseDirectory: folder.path, outputRoots: nil)
        let notices = Notices()
        let application = try await FarmApplication.coordinator(store: store, configuration: Self.configuration(), faces: faces,
                                                                events: { _ in }, notice: { notices.add($0) })
        #expect(application.face != nil)
        let running = Task {
            defer { notices.close() }
            try await application.group.run()
        }
        let address = try #require(await notices.address(), "the group ended before the face listened: \(notices.lines)")

        let client = HTTPClient.shared
        let health = try await client.execute(HTTPClientRequest(url: "http://\(address)/healthz"), timeout: .minutes(10))
        #expect(health.status == .ok)
        let anonymous = try await client.execute(HTTPClientRequest(url: "http://\(address)/api/jobs"), timeout: .minutes(10))
        #expect(anonymous.status == .unauthorized)
        var signed = HTTPClientRequest(url: "http://\(address)/api/jobs")
        signed.headers.add(name: "Authorization", value: "Bearer \(token)")
        let jobs = try await client.execute(signed, timeout: .minutes(10))
        #expect(jobs.status == .ok)

        await application.group.triggerGracefulShutdown()
        try await running.value
        #expect(application.coordinator.failedJobs.isEmpty)
    }

    /// Two applications in one process: one stopped leaves the other serving. (Each group's watcher of stop
    /// signals waits on the process's one `StopSignals`; a cancelled wait ended every group's.)
    @Test(.timeLimit(.minutes(30))) func oneApplicationStoppedLeavesAnotherInTheSameProcessRunning() async throws {
        func start(_ label: String) async throws -> (FarmApplication, Task<Void, any Error>, Notices, String) {
            let folder = try TestPaths.makeTemporaryFolder(label)
            let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
            var faces = FarmApplication.Faces()
            faces.http = HTTPFaceConfiguration(host: "127.0.0.1", port: 0, token: nil, baseDirectory: folder.path, outputRoots: nil)
            let notices = Notices()
            let application = try await FarmApplication.coordinator(store: store, configuration: Self.configuration(), faces: faces,
                                                                    events: { _ in }, notice: { notices.add($0) })
            let running = Task {
                defer { notices.close() }
                try await application.group.run()
            }
            let address = try #require(await notices.address(), "the group ended before the face listened: \(notices.lines)")
            return (application, running, notices, address)
        }
        let (first, firstRunning, _, _) = try await start("application-first")
        let (second, secondRunning, _, address) = try await start("application-second")
        await first.group.triggerGracefulShutdown()
        try await firstRunning.value
        try await Task.sleep(for: .milliseconds(500))
        let ready = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://\(address)/readyz"), timeout: .minutes(10))
        #expect(ready.status == .ok, "the second application drains with the first")
        await second.group.triggerGracefulShutdown()
        try await secondRunning.value
    }

    /// Webhook endpoints a coordinator without the secret adds are left to one with it, and it says so.
    @Test func endpointsWithoutTheSecretAreAddedAndLeftToAnother() async throws {
        let folder = try TestPaths.makeTemporaryFolder("application-webhooks")
        let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        var faces = FarmApplication.Faces()
        faces.webhookEndpoints = [try WebhookEndpoint.parse("http://127.0.0.1:9/hook").get()]
        let notices = Notices()
        var configuration = Self.configuration()
        configuration.exitWhenIdle = true
        let application = try await FarmApplication.coordinator(store: store, configuration: configuration, faces: faces,
                                                                events: { _ in }, notice: { notices.add($0) })
        #expect(application.face == nil)
        #expect(notices.lines.contains { $0.contains("this coordinator does not send them") })
        try await application.group.run()   // idle at once: it stops by itself
        #expect(try await store.webhookSettings(at: Date()).endpoints.map(\.url) == ["http://127.0.0.1:9/hook"])
    }

    /// A batch's group runs the coordinator alone until its queue is idle.
    @Test func aBatchOnAnEmptyQueueEndsByItself() async throws {
        let folder = try TestPaths.makeTemporaryFolder("application-batch")
        let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        var configuration = Self.configuration()
        configuration.exitWhenIdle = true
        let application = FarmApplication.batch(store: store, configuration: configuration, events: { _ in })
        try await application.group.run()
        #expect(application.coordinator.succeededCount == 0 && application.face == nil)
    }
}
