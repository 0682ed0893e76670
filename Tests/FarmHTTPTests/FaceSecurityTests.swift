@testable import FarmHTTP
import FarmRuntime
import FarmStore
import FarmTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

/// The findings of the HTTP face's black-box security test, each as the request that showed it, through
/// the real router (and a real listening server where a client's address matters): the sign-in stays on
/// the farm, guessing is slowed and seen, sign-out ends a session, sessions end when idle, every HTML
/// answer carries the security headers, CSRF tokens are the face's and bound to a session, and the
/// small ones (two Hosts, a cross-site Referer, what /readyz tells a stranger). docs/operations.md lists
/// what each proves.
@Suite struct FaceSecurityTests {
    static let token = MiddlewareTests.token
    static let readOnly = "fedcba9876543210fedcba9876543210"

    /// What a face said (its actions, the bursts of guesses).
    final class Said: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    /// A face (coordinator not running) over a new SQLite queue, what it said, and its router.
    static func face(clock: MiddlewareTests.Clock = .init(), idle: Double = 7200) throws -> (face: HTTPFace, said: Said, router: Router<FarmRequestContext>) {
        let folder = try TestPaths.makeTemporaryFolder("face-security")
        let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        var configuration = HTTPFaceConfiguration(host: "127.0.0.1", port: 0, token: token, baseDirectory: folder.path, outputRoots: nil)
        configuration.readOnlyToken = readOnly
        configuration.sessionIdleSeconds = idle
        configuration.now = { clock.now() }
        let said = Said()
        let face = HTTPFace(configuration: configuration, coordinator: Coordinator(store: store), store: store, metrics: FarmMetrics(),
                            logger: Logger(label: "test"), onAction: { line in said.lines.withLock { $0.append(line) } })
        face.hub.close()
        return (face, said, face.buildRouter())
    }

    /// `//evil.example/phish?token=` and `/\evil.example/?token=` signed a browser in and sent it to
    /// another site: now the session goes to `/`. A link on another page (a browser says so) signs no one in.
    @Test func theSignInStaysOnTheFarm() async throws {
        let (_, _, router) = try Self.face()
        try await Application(router: router).test(.router) { client in
            // Paths that are no route answer 404 and sign no one in; one that reaches a route through a
            // doubled slash is sent on to `/`. Never a Location a browser reads as another site.
            for path in ["//evil.example/phish", "/\\evil.example/", "//jobs", "/\\jobs", "//", "/%5Cevil.example"] {
                try await client.execute(uri: "\(path)?token=\(Self.readOnly)", method: .get) { response in
                    let location = response.headers[.location] ?? ""
                    let said = "\(path): \(response.status) \(location) \(String(buffer: response.body))"
                    #expect(!location.hasPrefix("//") && !location.contains("\\"), "\(said)")
                    if response.status == .seeOther { #expect(location == "/" || location == path, "\(said)") }
                    else { #expect(response.status == .notFound && response.headers[.setCookie] == nil, "\(said)") }
                }
            }
            try await client.execute(uri: "/jobs?state=failed&token=\(Self.token)", method: .get) { response in
                #expect(response.headers[.location] == "/jobs?state=failed")
            }
            for (name, value) in [("Sec-Fetch-Site", "cross-site"), ("Referer", "https://evil.example/page")] {
                try await client.execute(uri: "/?token=\(Self.token)", method: .get, headers: [HTTPField.Name(name)!: value]) { response in
                    #expect(response.headers[.setCookie] == nil && response.status == .unauthorized, "\(name): \(response.status)")
                }
            }
        }
        #expect(Gate.onThisFace("/jobs/1") == "/jobs/1" && Gate.onThisFace("//x") == "/" && Gate.onThisFace("/\\x") == "/"
                && Gate.onThisFace("x") == "/" && Gate.onThisFace("/a\\b") == "/" && Gate.onThisFace("/") == "/")
    }

    /// Every HTML answer, the error pages included, says what the browser may run and whether it may be
    /// framed, from one middleware.
    @Test func everyHTMLAnswerCarriesTheSecurityHeaders() async throws {
        let (_, _, router) = try Self.face()
        try await Application(router: router).test(.router) { client in
            let html: HTTPFields = [.authorization: "Bearer \(Self.token)", .accept: "text/html"]
            for path in ["/jobs?state=x", "/charts?span=x", "/jobs/abc", "/library/assets/bad", "/jobs", "/login"] {
                try await client.execute(uri: path, method: .get, headers: html) { response in
                    #expect(response.headers[.contentType]?.hasPrefix("text/html") == true, "\(path): \(response.headers)")
                    #expect(response.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true, "\(path): \(response.headers)")
                    #expect(response.headers[.xContentTypeOptions] == "nosniff" && response.headers[HTTPField.Name("Referrer-Policy")!] == "same-origin",
                            "\(path): \(response.headers)")
                }
            }
        }
    }

    /// Sign-out ends the session on the face: its cookie, replayed, opens nothing. A session unused for
    /// the idle time ends too; one in use stays.
    @Test func signOutAndIdleTimeEndSessions() async throws {
        let clock = MiddlewareTests.Clock()
        let (face, said, router) = try Self.face(clock: clock, idle: 600)
        let session = face.sessions.start(lasting: 3600)
        let cookie: HTTPFields = [.cookie: "\(SessionStore.cookieName)=\(session)"]
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/api/jobs", method: .get, headers: cookie) { #expect($0.status == .ok) }
            try await client.execute(uri: "/logout", method: .post, headers: cookie) { response in
                #expect(response.status == .seeOther && response.headers[.location] == "/login?signed-out=1")
                #expect(response.headers[.setCookie]?.contains("Max-Age=0") == true, "\(response.headers)")
            }
            try await client.execute(uri: "/api/jobs", method: .get, headers: cookie) { #expect($0.status == .unauthorized) }
            // The pages' bar offers it (not the sign-in form's).
            try await client.execute(uri: "/jobs", method: .get, headers: [.authorization: "Bearer \(Self.token)"]) {
                #expect(String(buffer: $0.body).contains("action=\"/logout\""))
            }
            try await client.execute(uri: "/login", method: .get) { #expect(!String(buffer: $0.body).contains("action=\"/logout\"")) }
        }
        #expect(said.all.contains { $0.contains("session \(session.prefix(8))… signed out") })
        let kept = face.sessions.start(lasting: 3600), idle = face.sessions.start(lasting: 3600)
        clock.advance(599)
        #expect(face.sessions.access(kept) != nil)
        clock.advance(599)
        #expect(face.sessions.access(kept) != nil, "a session in use ended")
        #expect(face.sessions.access(idle) == nil, "a session idle for 1198 s of 600 lived on")
    }

    /// A form's token is the face's HMAC of the session: another session's token, or a pair the client
    /// chose, is refused; a session's form must say where it comes from, and a page of another site (by
    /// its Referer) is refused even with the right token.
    @Test func formTokensAreTheFacesAndBoundToTheSession() async throws {
        let (face, _, router) = try Self.face()
        let id = try await face.face.store.enqueue([NewJob(name: "later", manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: "/tmp")],
                                                   at: Date().addingTimeInterval(3600)).map(\.id)[0]
        let mine = face.sessions.start(lasting: 3600), theirs = face.sessions.start(lasting: 3600)
        @Sendable func form(_ session: String, token: String, _ extra: HTTPFields = [.origin: "http://localhost"]) -> (HTTPFields, ByteBuffer) {
            var fields: HTTPFields = [.cookie: "\(SessionStore.cookieName)=\(session)", .contentType: "application/x-www-form-urlencoded"]
            fields.append(contentsOf: extra)
            return (fields, ByteBuffer(string: "csrf=\(token)"))
        }
        let theirToken = ConsoleCSRF.mac("session:\(theirs)", face.sessions)
        let myToken = ConsoleCSRF.mac("session:\(mine)", face.sessions)
        try await Application(router: router).test(.router) { client in
            for (what, (fields, body)) in [
                ("another session's token", form(mine, token: theirToken)),
                ("a token without an Origin or Referer", form(mine, token: myToken, [:])),
                ("a cross-site Referer", form(mine, token: myToken, [.referer: "https://evil.example/x"])),
            ] {
                try await client.execute(uri: "/jobs/\(id)/cancel", method: .post, headers: fields, body: body) { response in
                    #expect(response.status == .forbidden, "\(what): \(response.status) \(String(buffer: response.body))")
                }
            }
            #expect(try await face.face.store.job(id: id)?.state == .queued)
            let (fields, body) = form(mine, token: myToken, [.referer: "http://localhost/jobs/\(id)"])
            try await client.execute(uri: "/jobs/\(id)/cancel", method: .post, headers: fields, body: body) { response in
                #expect(response.status == .seeOther, "\(response.status) \(String(buffer: response.body))")
            }
        }
        #expect(try await face.face.store.job(id: id)?.state == .cancelled)
    }

    /// Two Host headers are refused (which one a proxy used is unknown); a stranger's /readyz says ready
    /// and nothing of the queue, a caller's names it.
    @Test func twoHostsAreRefusedAndReadyzTellsStrangersNothing() async throws {
        let (face, _, router) = try Self.face()
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/api/jobs", method: .get, headers: [.authorization: "Bearer \(Self.token)", HTTPField.Name("Host")!: "evil.example"]) {
                #expect($0.status == .badRequest && String(buffer: $0.body).contains("more than one Host"))
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                let body = String(buffer: response.body)
                #expect(response.status == .ok && body.contains("\"ready\"") && !body.contains("queue"), "\(body)")
            }
            try await client.execute(uri: "/readyz", method: .get, headers: [.authorization: "Bearer \(Self.readOnly)"]) { response in
                #expect(String(buffer: response.body).contains(face.face.store.location), "\(String(buffer: response.body))")
            }
        }
    }

    /// Wrong bearers and sign-ins from one address: six are answered 401 (five free, the sixth starts the
    /// backoff); then each next try waits a
    /// backoff that doubles, answered 429 with Retry-After, the right token included; the burst is said
    /// once (without the guesses) and every failure counted. Another address is not held back.
    @Test func guessingIsSlowedAndSeen() async throws {
        let clock = MiddlewareTests.Clock()
        let (face, said, router) = try Self.face(clock: clock)
        let session = face.sessions.start(lasting: 3600)
        try await Application(router: router).test(.live) { client in
            var answers: [HTTPResponse.Status] = []
            for i in 0..<8 {
                let headers: HTTPFields = [.authorization: "Bearer guess-\(i)-0123456789abcdef"]
                answers.append(try await client.execute(uri: "/api/jobs", method: .get, headers: headers) { $0.status })
            }
            #expect(answers == Array(repeating: .unauthorized, count: 6) + [.tooManyRequests, .tooManyRequests], "\(answers)")
            try await client.execute(uri: "/api/jobs", method: .get, headers: [.authorization: "Bearer \(Self.token)"]) { response in
                #expect(response.status == .tooManyRequests && Int(response.headers[.retryAfter] ?? "") ?? 0 >= 1, "\(response.headers)")
            }
            try await client.execute(uri: "/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                                     body: ByteBuffer(string: "token=\(Self.token)")) { #expect($0.status == .tooManyRequests) }
            // A session, which cannot be guessed, is still admitted from the waiting address.
            try await client.execute(uri: "/api/jobs", method: .get, headers: [.cookie: "\(SessionStore.cookieName)=\(session)"]) {
                #expect($0.status == .ok)
            }
            // An open route tells a waiting address nothing more for a right token: no oracle there either.
            try await client.execute(uri: "/readyz", method: .get, headers: [.authorization: "Bearer \(Self.token)"]) {
                #expect(!String(buffer: $0.body).contains("queue"), "\(String(buffer: $0.body))")
            }
        }
        let lines = said.all
        #expect(lines.count == 1 && lines[0].contains("6 failed sign-ins or bearer checks from 127.0.0.1") && !lines[0].contains("guess-"), "\(lines)")
        let metrics = String(decoding: face.face.metrics.scrape(stats: nil, snapshot: face.face.coordinator.snapshot, now: Date()), as: UTF8.self)
        #expect(metrics.contains(#"mediafarm_http_auth_failures_total{kind="bearer"} 6"#), "\(metrics.split(separator: "\n").filter { $0.contains("auth") })")
        // The wait doubles past a minute and does not start afresh when it ends; a quiet minute after it does.
        let guesses = face.face.guesses
        for _ in 0..<6 { guesses.failed("10.0.0.9", .bearer) }  // 6 failures: 2 s
        for expected in [4.0, 8, 16, 32, 64, 128, 256, 300, 300] {
            clock.advance(guesses.wait("10.0.0.9") ?? 0)
            guesses.failed("10.0.0.9", .bearer)
            #expect(abs((guesses.wait("10.0.0.9") ?? 0) - expected) < 0.001, "expected \(expected) s")
        }
        clock.advance(300 + 60)
        #expect(guesses.wait("10.0.0.9") == nil)
        guesses.failed("10.0.0.9", .bearer)
        #expect(guesses.wait("10.0.0.9") == nil, "a quiet minute after the wait did not start afresh")
        // A client is an address, an IPv6 one by its /64.
        #expect(GuessLimiter.client(of: "2001:db8:0:1::5") == GuessLimiter.client(of: "2001:db8:0:1:ffff::9"))
        #expect(GuessLimiter.client(of: "2001:db8:0:1::5") != GuessLimiter.client(of: "2001:db8:0:2::5"))
        #expect(GuessLimiter.client(of: "::ffff:10.0.0.9") == "10.0.0.9" && GuessLimiter.client(of: "10.0.0.9") == "10.0.0.9")
    }

    @Test func tokensThatAreEasyToGuessAreMeasuredSo() {
        #expect(TokenStrength.estimatedBits("aaaaaaaaaaaaaaaa") == 0)
        #expect(TokenStrength.estimatedBits("abababababababababababab") < 128)
        #expect(TokenStrength.estimatedBits("test-token-0123456789abcdef") < 128)
        #expect(TokenStrength.estimatedBits("3e3df22342fc3be40409f9e16407464a7739ed658ac32b969d9022c147b2fe5f") > 200)
        #expect(TokenStrength.estimatedBits(Self.token) >= TokenStrength.minimumBits)
    }
}
