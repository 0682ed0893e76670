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

/// The HTTP face's trust boundary, through HummingbirdTesting against the real router: the token on every
/// route family, the Host allowlist, session cookies and their expiry, internal errors by id.
@Suite struct MiddlewareTests {
    static let token = "0123456789abcdef0123456789abcdef"

    /// A clock the test moves.
    final class Clock: Sendable {
        let time = Mutex(Date(timeIntervalSince1970: 2_000_000_000))
        func now() -> Date { time.withLock { $0 } }
        func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
    }

    /// Tests send the Host they mean as `X-Test-Host` (the router test client always says localhost).
    struct TestHost<Context: RequestContext>: RouterMiddleware {
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            guard let host = request.headers[HTTPField.Name("X-Test-Host")!] else { return try await next(request, context) }
            var head = request.head
            head.authority = host
            return try await next(Request(head: head, body: request.body), context)
        }
    }

    struct Boom: Error, CustomStringConvertible { var description: String { "the secret detail of a failure" } }

    /// The face of a coordinator (not running) over a new SQLite queue, its router with a route that fails.
    static func application(token: String? = token, cookieSecure: Bool = false, clock: Clock = Clock(),
                            listening host: String = "127.0.0.1") throws -> some ApplicationProtocol {
        let folder = try TestPaths.makeTemporaryFolder("middleware")
        let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        var configuration = HTTPFaceConfiguration(host: host, port: 0, token: token, baseDirectory: folder.path, outputRoots: nil)
        configuration.allowedHosts = ["farm.example"]
        configuration.cookieSecure = cookieSecure
        configuration.sessionSeconds = 3600
        configuration.now = { clock.now() }
        let face = HTTPFace(configuration: configuration, coordinator: Coordinator(store: store), store: store, metrics: FarmMetrics(),
                            logger: Logger(label: "test"))
        let router = Router(context: FarmRequestContext.self)
        router.add(middleware: TestHost())
        let built = face.buildRouter(router)
        Routes(router: built, gate: face.face.gate, table: face.face.routes).get("/boom", .look) { _, _ -> Response in throw Boom() }
        return Application(router: built)
    }

    static func bearer(_ token: String, host: String? = nil) -> HTTPFields {
        var fields: HTTPFields = [.authorization: "Bearer \(token)"]
        if let host { fields[HTTPField.Name("X-Test-Host")!] = host }
        return fields
    }

    /// Every guarded route family refuses no token, a wrong one, one a character short, and a library-like
    /// one; the right token passes.
    @Test func everyRouteFamilyRefusesAWrongToken() async throws {
        let routes: [(HTTPRequest.Method, String)] = [
            (.get, "/metrics"), (.get, "/api/jobs"), (.get, "/api/jobs/1"), (.post, "/api/jobs/1/cancel"), (.post, "/api/jobs/1/retry"),
            (.get, "/api/coordinators"), (.post, "/api/jobs"), (.get, "/api/assets"), (.get, "/api/assets/00000000000000000000000000"),
            (.get, "/api/albums"), (.get, "/api/library/changes"), (.get, "/api/library/resolve?ids=00000000000000000000000000"), (.get, "/"),
            (.get, "/jobs"), (.get, "/jobs/1"), (.get, "/api/queue/pauses"), (.post, "/api/queue/pause"), (.post, "/api/queue/resume"),
        ]
        try await Self.application().test(.router) { client in
            for (method, path) in routes {
                for headers in [[:], Self.bearer("wrong"), Self.bearer(String(Self.token.dropLast())), Self.bearer("mfl_0123456789abcdef")] {
                    let body = method == .post ? ByteBuffer(string: #"{"version": 1, "input": "/etc/shadow"}"#) : nil
                    try await client.execute(uri: path, method: method, headers: headers, body: body) { response in
                        #expect(response.status == .unauthorized, "\(method) \(path) with \(headers)")
                        #expect(!String(buffer: response.body).contains("shadow"))
                    }
                }
                let body = method == .post ? ByteBuffer(string: #"{"version": 1, "input": "missing.mp4"}"#) : nil
                try await client.execute(uri: path, method: method, headers: Self.bearer(Self.token), body: body) { response in
                    #expect(response.status != .unauthorized && response.status != .forbidden, "\(method) \(path): \(response.status)")
                }
            }
            for open in ["/healthz", "/login"] {
                try await client.execute(uri: open, method: .get) { #expect($0.status == .ok, "\(open)") }
            }
        }
    }

    @Test func onlyNamesOfThisCoordinatorAreAnswered() async throws {
        let refused = ["rebind.attacker.example", "rebind.attacker.example:8080", "farm.example.attacker.example", "localhost.evil",
                       "127.0.0.1.nip.io", "a:b:c", "[::1", ""]
        let answered = ["127.0.0.1:8080", "localhost", "LocalHost:1", "[::1]:8080", "farm.example", "FARM.EXAMPLE:443", "192.168.1.20:8080", "[fe80::1]"]
        try await Self.application().test(.router) { client in
            for host in refused {
                try await client.execute(uri: "/api/jobs", method: .get, headers: Self.bearer(Self.token, host: host)) {
                    #expect($0.status == .misdirectedRequest, "Host \(host)")
                    #expect(String(buffer: $0.body).contains("--allowed-host"))
                }
            }
            for host in answered {
                try await client.execute(uri: "/api/jobs", method: .get, headers: Self.bearer(Self.token, host: host)) {
                    #expect($0.status == .ok, "Host \(host)")
                }
            }
            try await client.execute(uri: "/healthz", method: .get, headers: [HTTPField.Name("X-Test-Host")!: "rebind.attacker.example"]) {
                #expect($0.status == .ok)
            }
        }
        // A coordinator listening on a name answers to it.
        try await Self.application(listening: "render7.lan").test(.router) { client in
            try await client.execute(uri: "/api/jobs", method: .get, headers: Self.bearer(Self.token, host: "render7.lan:8080")) {
                #expect($0.status == .ok)
            }
        }
    }

    /// `/login` gives a session cookie (not the token) that expires; `?token=` does the same and redirects.
    @Test func sessionsExpireAndNeverCarryTheToken() async throws {
        let clock = Clock()
        try await Self.application(cookieSecure: true, clock: clock).test(.router) { client in
            let cookie = try await client.execute(uri: "/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                                                  body: ByteBuffer(string: "token=\(Self.token)")) { response -> String in
                #expect(response.status == .seeOther)
                let set = response.headers[.setCookie] ?? ""
                #expect(set.contains("mediafarm_session=") && !set.contains(Self.token), "\(set)")
                #expect(set.contains("Max-Age=3600") && set.contains("HttpOnly") && set.contains("Secure") && set.contains("SameSite=Strict"), "\(set)")
                return String(set.split(separator: ";")[0])
            }
            try await client.execute(uri: "/api/jobs", method: .get, headers: [.cookie: cookie]) { #expect($0.status == .ok) }
            clock.advance(3599)
            try await client.execute(uri: "/api/jobs", method: .get, headers: [.cookie: cookie]) { #expect($0.status == .ok) }
            clock.advance(2)
            try await client.execute(uri: "/api/jobs", method: .get, headers: [.cookie: cookie]) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/api/jobs", method: .get, headers: [.cookie: "mediafarm_session=forged"]) { #expect($0.status == .unauthorized) }
            // The old cookie carrying the token itself opens nothing.
            try await client.execute(uri: "/api/jobs", method: .get, headers: [.cookie: "mediafarm_token=\(Self.token)"]) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                                     body: ByteBuffer(string: "token=nope")) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/?token=\(Self.token)&view=all", method: .get) { response in
                #expect(response.status == .seeOther && response.headers[.location] == "/?view=all")
                #expect(response.headers[.setCookie]?.contains("mediafarm_session=") == true)
            }
            // The rest of the query keeps its escapes.
            try await client.execute(uri: "/jobs?name=a%26b&token=\(Self.token)", method: .get) { response in
                #expect(response.status == .seeOther && response.headers[.location] == "/jobs?name=a%26b", "\(response.headers)")
            }
        }
    }

    @Test func internalErrorsAnswerAnIdAndKeepTheDetailInTheLog() async throws {
        try await Self.application().test(.router) { client in
            try await client.execute(uri: "/boom", method: .get, headers: Self.bearer(Self.token)) { response in
                let body = String(buffer: response.body)
                #expect(response.status == .internalServerError)
                #expect(body.contains("internal error ") && !body.contains("secret detail"), "\(body)")
            }
        }
    }

    @Test func theSessionStoreStaysBounded() {
        let clock = Clock()
        let store = SessionStore(lifetime: 60, secureCookies: false, now: { clock.now() })
        for _ in 0..<(store.capacity + 50) { _ = store.start(lasting: 60) }
        #expect(store.count == store.capacity)
        clock.advance(61)
        _ = store.start(lasting: 60)
        #expect(store.count == 1)
    }
}
