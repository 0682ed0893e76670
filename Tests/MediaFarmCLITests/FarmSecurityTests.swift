import FarmTestSupport
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The findings of the HTTP face's black-box security test that need the real coordinator process: its
/// connections (a slow head, an idle connection, a slow body, many half-open ones, an event stream that
/// must stay), a request the decoder cannot read, the farm's own files as outputs, and values that tried
/// to forge the coordinator's log. With FaceSecurityTests, WebhookDestinationTests and
/// WebhookTests.aJobsNotifyReachesOnlyAllowedPortsAndPublicAddressesAndKeepsNoAnswerBody they are the
/// security suite docs/operations.md describes.
@Suite struct FarmSecurityTests {
    static let token = "5b7e1c9d2f4a86e03d1b5c7a9e2f4d6b8a0c3e5f7b9d1a2c4e6f8b0d2a4c6e8f"

    /// A connection made by hand (what curl will not send), written and read on threads of its own.
    final class RawConnection: @unchecked Sendable {  // unchecked: the descriptor is a constant; the socket is used by one call at a time
        let fd: Int32
        /// When it was made: what the face's limits count from (not when a test began to read it).
        let opened = Date()

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard fd >= 0, connected == 0 else { throw FixtureError("cannot connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
        }

        deinit { close(fd) }

        func send(_ text: String) {
            _ = text.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }  // a closed connection: what is read says so
        }

        /// Starts watching, at once, on a thread of its own (so a test process whose task-pool threads are
        /// busy elsewhere still sees the moment the face closes it): what arrives until the face closes the
        /// connection, and how many seconds after it was made; nil seconds when it is still open `limit`
        /// seconds after this call.
        func watch(limit: Double) -> Watch { Watch(fd: fd, opened: opened, limit: limit) }
    }

    /// A watch on a connection, begun when made; `value` waits for what it saw.
    final class Watch: @unchecked Sendable {  // unchecked: `outcome` is written once, before `seen` is signalled, and read after
        private let seen = DispatchSemaphore(value: 0)
        private var outcome: (seconds: Double?, received: String) = (nil, "")

        init(fd: Int32, opened: Date, limit: Double) {
            Thread.detachNewThread { [self] in
                let start = Date()
                var received = [UInt8]()
                var buffer = [UInt8](repeating: 0, count: 4096)
                var closed: Double?
                while Date().timeIntervalSince(start) < limit {
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&p, 1, 100) > 0 else { continue }
                    let n = recv(fd, &buffer, buffer.count, 0)
                    if n <= 0 {
                        closed = Date().timeIntervalSince(opened)
                        break
                    }
                    received += buffer[..<n]
                }
                outcome = (closed, String(decoding: received, as: UTF8.self))
                seen.signal()
            }
        }

        var value: (seconds: Double?, received: String) {
            get async {
                await withCheckedContinuation { continuation in
                    Thread.detachNewThread { [self] in
                        seen.wait()
                        seen.signal()
                        continuation.resume(returning: outcome)
                    }
                }
            }
        }
    }

    /// A head sent slowly is cut at the header timeout, an idle connection at the idle timeout (later), a
    /// body that trickles at the rate floor; more half-open connections than the cap are closed at once;
    /// an event stream outlives them all; an unknown transfer coding is 400, not the server's error.
    @Test(.timeLimit(.minutes(10))) func connectionsAreHeldToTheirLimits() async throws {
        let farm = try HTTPFarm("connections", token: Self.token, arguments: [
            "--http-header-timeout", "1", "--http-idle-timeout", "3", "--http-min-body-rate", "100000", "--http-max-pending-connections", "8",
        ])
        let port = try #require(Int(farm.base.split(separator: ":").last ?? ""))
        // Started first, checked last: a trickling body and an event stream.
        let body = try RawConnection(port: port)
        body.send("POST /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Self.token)\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        let trickling = Atomic<Bool>(true)
        Thread.detachNewThread { [body] in
            for _ in 0..<30 where trickling.load(ordering: .relaxed) { body.send(" "); usleep(500_000) }
        }
        let stream = try RawConnection(port: port)
        stream.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Self.token)\r\nAccept: text/event-stream\r\n\r\n")
        let slowBody = body.watch(limit: 40)
        // Refused before its body was read (a wrong token), then silent: the body it promised is still owed.
        let owed = try RawConnection(port: port)
        owed.send("POST /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong-\(Self.token)\r\nContent-Length: 100000\r\n\r\n{")
        let owedBody = owed.watch(limit: 40)
        let events = stream.watch(limit: 8)

        let head = try RawConnection(port: port)
        head.send("GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        let idle = try RawConnection(port: port)
        let headClosed = head.watch(limit: 20), idleClosed = idle.watch(limit: 20)
        let (h, i) = (await headClosed.value, await idleClosed.value)
        #expect((h.seconds ?? 99) < 2.9, "a slow head: \(h)")
        #expect((i.seconds ?? 99) >= 2.5 && (i.seconds ?? 99) < 10, "an idle connection: \(i)")

        // Eight half-open connections fill the cap (the five above are no longer half-open: closed, or their
        // heads read); of nine, one is closed at once (which one: whichever the face counted last).
        var held = try (0..<9).map { _ in try RawConnection(port: port) }
        let watches = held.map { $0.watch(limit: 2) }
        var ends: [(seconds: Double?, received: String)] = []
        for watch in watches { ends.append(await watch.value) }
        let refused = ends.filter { $0.seconds != nil }
        #expect(refused.count == 1 && refused.allSatisfy { $0.received.isEmpty }, "\(ends)")
        // Closed by their clients, they make way: a request is answered again (asked until the face has
        // counted them out).
        held.removeAll()
        var answer: (seconds: Double?, received: String) = (nil, "")
        for _ in 0..<40 where answer.received.isEmpty {
            let coding = try RawConnection(port: port)
            coding.send("POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: xchunked\r\n\r\n")
            answer = await coding.watch(limit: 10).value
        }
        #expect(answer.received.hasPrefix("HTTP/1.1 400"), "\(answer)")

        let stayed = await events.value
        #expect(stayed.seconds == nil && stayed.received.hasPrefix("HTTP/1.1 200"), "the event stream was closed: \(stayed)")
        let cut = await slowBody.value
        trickling.store(false, ordering: .relaxed)
        let unpaid = await owedBody.value
        #expect(unpaid.received.hasPrefix("HTTP/1.1 401") && unpaid.seconds != nil, "a refused request's owed body: \(unpaid)")
        #expect(cut.seconds != nil && (cut.seconds ?? 0) >= 9, "a trickling body: \(cut)")
        #expect(!farm.log.contains("error"), "\(farm.log)")
        // The face still answers.
        #expect(try await farm.request("GET", "/api/jobs").status == 200)
    }

    /// The queue's wake file and the coordinator's own log (its output, a file it holds open) are refused
    /// as outputs, with `--api-allow-overwrite` and `"overwrite": true`; neither is touched.
    @Test func theFarmsOwnFilesAreNeverOutputs() async throws {
        let farm = try HTTPFarm("own-files", token: Self.token, arguments: ["--api-allow-overwrite"])
        let logBefore = farm.log
        for (file, role) in [("queue.sqlite-wake", "the queue's wake file"), ("coordinator.log", "holds open for writing")] {
            let answer = try await farm.request("POST", "/api/jobs", body: """
                { "version": 1, "input": "clip.mp4", "report": "\(file)", "overwrite": true }
                """)
            #expect(answer.status == 422 && answer.body.contains(role) && answer.body.contains("never replaces the farm's own files"),
                    "\(file): \(answer.status) \(answer.body)")
        }
        #expect(farm.log.hasPrefix(logBefore), "the coordinator's log was replaced")
    }

    /// A job's name that carries terminal escapes and a line of its own reaches the coordinator's log and
    /// `status` escaped: one line each, no escape byte, no forged audit line.
    @Test func valuesCannotForgeTheLogOrActOnATerminal() async throws {
        let farm = try HTTPFarm("forged-lines", workers: 1, token: Self.token)
        let name = "x\u{1B}[2K\r\u{1B}]0;pwned\u{07}job 1 (nightly) succeeded\nhttp: console: cancel of job 3 (qr) by session 1f3a9c0e"
        let id = try await farm.submit("""
            { "version": 1, "name": \(HTTPFarm.quoted(name)), "input": "clip.mp4", "report": "out/forged.json" }
            """)
        try await farm.waitFor(id, timeout: 120) { ($0["state"] as? String).map { ["succeeded", "failed", "dead"].contains($0) } ?? false }
        let log = farm.log
        #expect(!log.contains("\u{1B}") && !log.contains("\u{07}"), "an escape reached the log")
        #expect(!log.split(separator: "\n").contains { $0.hasPrefix("http: console: cancel of job 3") }, "\(log)")
        #expect(log.contains(#"x\u{1B}[2K\r\u{1B}]0;pwned\u{7}job 1 (nightly) succeeded\nhttp: console: cancel"#), "\(log)")
        let status = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, ["status", "--queue", "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path])
        #expect(status.status == 0 && !status.stdout.contains("\u{1B}") && status.stdout.split(separator: "\n").count == 2, "\(status.stdout)")
    }

    /// A token file that is easy to guess is refused, saying how to make one.
    @Test func aWeakTokenFileIsRefused() async throws {
        let folder = try TestPaths.makeTemporaryFolder("weak-token")
        let file = folder.appendingPathComponent("token").path
        try "aaaaaaaaaaaaaaaa".write(toFile: file, atomically: true, encoding: .utf8)
        let run = try await ProcessRunner.spawned(TestPaths.mediafarmExecutable, [
            "coordinator", "--queue", "sqlite:" + folder.appendingPathComponent("q.sqlite").path, "--http", "127.0.0.1:0", "--token-file", file,
        ])
        #expect(run.status == 2 && run.stderr.contains("too easy to guess") && run.stderr.contains("openssl rand -hex 32"), "\(run.stderr)")
    }
}
