@testable import FarmHTTP
import FarmLibrary
import FarmRuntime
import FarmStore
import FarmTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// Every route the router has, walked with each kind of caller: no credential, a forged bearer, the
/// coordinator's token, the read-only token, a scoped library token of another album, and browser sessions
/// of each (one without its form's CSRF token). Each answer must be the one the route's declared policy
/// gives, so a route added later is walked without anyone adding it here, and one added without a policy
/// fails the first test.
@Suite struct RoutePolicyTests {
    static let token = "0123456789abcdef0123456789abcdef"
    static let readOnlyToken = "fedcba9876543210fedcba9876543210"

    /// A caller of the walk.
    enum Who: String, CaseIterable, CustomStringConvertible {
        case nobody, forgedBearer, fullBearer, fullBearerWithCSRF, readOnlyBearer, scopedBearerOfAnotherAlbum
        case fullSessionWithoutCSRF, fullSessionWithCSRF, readOnlySession, scopedSession
        var description: String { rawValue }
    }

    /// What the rules say, stated here on their own: whether `who` may call a route of `policy`.
    static func admits(_ policy: RoutePolicy, _ who: Who) -> Bool {
        switch (policy, who) {
        case (.open, _): true
        case (_, .nobody), (_, .forgedBearer): false
        case (.look, .fullBearer), (.look, .fullBearerWithCSRF), (.look, .readOnlyBearer), (.look, .fullSessionWithoutCSRF),
             (.look, .fullSessionWithCSRF), (.look, .readOnlySession): true
        case (.look, _): false
        case (.library, .fullBearer), (.library, .fullBearerWithCSRF), (.library, .readOnlyBearer), (.library, .scopedBearerOfAnotherAlbum),
             (.library, .fullSessionWithoutCSRF), (.library, .fullSessionWithCSRF), (.library, .readOnlySession), (.library, .scopedSession): true
        case (.act, .fullBearer), (.act, .fullBearerWithCSRF): true
        case (.act, _): false
        case (.form, .fullBearerWithCSRF), (.form, .fullSessionWithCSRF): true
        case (.form, _): false
        case (.submit, .fullBearer), (.submit, .fullBearerWithCSRF), (.submit, .scopedBearerOfAnotherAlbum): true
        case (.submit, _): false
        }
    }

    struct Farm: Sendable {
        var face: HTTPFace
        var scopedToken: String
        var sessions: [Who: String]
        /// Every route the router has, as it describes them (`/jobs/{id}`).
        var routes: [(method: HTTPRequest.Method, path: String)]
    }

    /// A face with both tokens over a new SQLite queue whose library has two albums and a scoped token of
    /// one of them ("Theirs"), sessions of each kind begun, and its event hub closed (so that `/api/events`
    /// answers and ends).
    static func farm() async throws -> (Farm, Router<FarmRequestContext>) {
        let folder = try TestPaths.makeTemporaryFolder("route-policy")
        let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        let library = try AssetLibrary(store: store, host: "h", inspector: .none)
        try await library.createAlbum("Ours")
        try await library.createAlbum("Theirs")
        let scoped = try await library.createToken(name: "theirs", albums: ["Theirs"])
        var configuration = HTTPFaceConfiguration(host: "127.0.0.1", port: 0, token: token, baseDirectory: folder.path, outputRoots: nil)
        configuration.readOnlyToken = readOnlyToken
        configuration.libraryHost = "h"
        let face = HTTPFace(configuration: configuration, coordinator: Coordinator(store: store), store: store, metrics: FarmMetrics(),
                            logger: Logger(label: "test"))
        face.hub.close()
        // Job 1 is there: a walk's success paths run too (its cancel, retry, page, deliveries).
        let job = NewJob(name: "walked", manifest: #"{"version":1,"input":"a.mp4"}"#, baseDirectory: folder.path)
        #expect(try await store.enqueue([job], at: Date()).map(\.id) == [1])
        let sessions: [Who: String] = [
            .fullSessionWithoutCSRF: face.sessions.start(lasting: 3600, .full), .fullSessionWithCSRF: face.sessions.start(lasting: 3600, .full),
            .readOnlySession: face.sessions.start(lasting: 3600, .readOnly), .scopedSession: face.sessions.start(lasting: 3600, .scoped(token: scoped)),
        ]
        let router = face.buildRouter()
        return (Farm(face: face, scopedToken: scoped, sessions: sessions, routes: router.routes.map { ($0.method, $0.path.description) }), router)
    }

    /// A path of the router (`/jobs/{id}`) with its parameters filled in.
    static func concrete(_ path: String) -> String {
        let parts = RouteTable.key(path).split(separator: "/").map { part -> String in
            switch part {
            case "{id}": path.contains("assets") ? "00000000000000000000000000" : "1"
            case "{action}": path.hasPrefix("/queue") ? "pause" : "cancel"
            case "{name}": "output"
            case "{sheet}": "sheet-1.jpg"
            default: String(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    static let csrf = String(repeating: "ab", count: 16)

    /// The request `who` sends: its headers and body.
    static func request(_ who: Who, _ method: HTTPRequest.Method, farm: Farm) -> (HTTPFields, ByteBuffer?) {
        var fields: HTTPFields = [:]
        var cookies: [String] = []
        switch who {
        case .nobody: break
        case .forgedBearer: fields[.authorization] = "Bearer mfl_forged0123456789abcdef"
        case .fullBearer, .fullBearerWithCSRF: fields[.authorization] = "Bearer \(token)"
        case .readOnlyBearer: fields[.authorization] = "Bearer \(readOnlyToken)"
        case .scopedBearerOfAnotherAlbum: fields[.authorization] = "Bearer \(farm.scopedToken)"
        case .fullSessionWithoutCSRF, .fullSessionWithCSRF, .readOnlySession, .scopedSession:
            cookies.append("\(SessionStore.cookieName)=\(farm.sessions[who] ?? "")")
            // A browser's form says where it comes from: this face (the test framework's Host).
            if method == .post { fields[.origin] = "http://localhost" }
        }
        let withCSRF = who == .fullBearerWithCSRF || who == .fullSessionWithCSRF
        // The face's token for this caller: bound to its session, or to its browser's cookie.
        let binding = who == .fullSessionWithCSRF ? "session:\(farm.sessions[who] ?? "")" : "browser:\(csrf)"
        if who == .fullBearerWithCSRF { cookies.append("\(ConsoleCSRF.cookieName)=\(csrf)") }
        if !cookies.isEmpty { fields[.cookie] = cookies.joined(separator: "; ") }
        guard method == .post else { return (fields, nil) }
        fields[.contentType] = "application/x-www-form-urlencoded"
        let token = ConsoleCSRF.mac(binding, farm.face.sessions)
        return (fields, ByteBuffer(string: withCSRF ? "csrf=\(token)&x=1" : "x=1"))
    }

    /// Whether the answer is a refusal by a route's policy (not a handler's own answer): 401 with the
    /// bearer challenge, the sign-in form, or 403 naming the request or the form's CSRF token.
    static func refusedByPolicy(_ response: TestResponse, method: HTTPRequest.Method, path: String) -> Bool {
        let body = String(buffer: response.body)
        switch response.status {
        case .unauthorized: return response.headers[.wwwAuthenticate] != nil
        case .forbidden: return body.contains("(\(method) \(path))") || body.contains("CSRF")
        case .seeOther, .found: return response.headers[.location] == "/login"
        default: return false
        }
    }

    @Test func everyRouteDeclaresItsPolicyWhereItIsRegistered() async throws {
        let (farm, _) = try await Self.farm()
        let routed = Set(farm.routes.map { "\($0.method) \(RouteTable.key($0.path))" })
        let declared = Set(farm.face.face.routes.all.map { "\($0.method) \($0.path)" })
        #expect(routed == declared, "routes without a declared policy: \(routed.subtracting(declared).sorted()); declared but not routed: \(declared.subtracting(routed).sorted())")
        #expect(routed.count >= 40, "\(routed.count) routes")
        // Each policy is in use, and no POST route is declared open but signing in and out.
        let table = farm.face.face.routes.all
        #expect(Set(table.map(\.policy)) == Set(RoutePolicy.allCases))
        #expect(table.filter { $0.method == .post && $0.policy == .open }.map(\.path).sorted() == ["login", "logout"])
    }

    @Test func everyRouteAnswersEachCallerAsItsPolicySays() async throws {
        let (farm, router) = try await Self.farm()
        try await Application(router: router).test(.router) { client in
            // Signing out ends the walk's sessions: it goes last.
            for route in farm.routes.sorted(by: { ($0.path.hasSuffix("logout") ? 1 : 0) < ($1.path.hasSuffix("logout") ? 1 : 0) }) {
                let method = route.method
                let policy = try #require(farm.face.face.routes.policy(method, route.path), "\(method) \(route.path)")
                let path = Self.concrete(route.path)
                for who in Who.allCases {
                    let (headers, body) = Self.request(who, method, farm: farm)
                    try await client.execute(uri: path, method: method, headers: headers, body: body) { response in
                        let refused = Self.refusedByPolicy(response, method: method, path: path)
                        let admitted = Self.admits(policy, who)
                        let said = "\(method) \(path) (\(policy)) by \(who): \(response.status) \(String(buffer: response.body).prefix(200))"
                        #expect(refused != admitted, "\(said)")
                        // An admitted caller is never answered as if it had not signed in, nor with the face's own fault.
                        if admitted {
                            #expect(response.status != .internalServerError, "\(said)")
                            #expect(policy == .open || response.status != .unauthorized, "\(said)")
                        }
                    }
                }
            }
        }
        #expect(farm.face.face.routes.all.count == farm.routes.count)
    }

    /// A route added beside `Routes` has no policy, and is refused; a path that is no route is 404 to anyone.
    @Test func aRouteWithoutADeclaredPolicyIsRefused() async throws {
        let (_, router) = try await Self.farm()
        router.get("/undeclared") { _, _ in "open by omission" }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/undeclared", method: .get) { response in
                #expect(response.status == .forbidden && String(buffer: response.body).contains("no declared policy"))
            }
            try await client.execute(uri: "/undeclared", method: .get, headers: [.authorization: "Bearer \(Self.token)"]) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/no/such/path", method: .get) { #expect($0.status == .notFound) }
        }
    }

    /// Without a token (`--no-auth`, loopback only) anyone may call, a bearer or not; a bearer that is no
    /// scoped token is still refused where the library would limit it by one.
    @Test func aFaceWithoutATokenIgnoresBearersButTheLibrarys() async throws {
        let folder = try TestPaths.makeTemporaryFolder("route-policy-open")
        let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        let face = HTTPFace(configuration: HTTPFaceConfiguration(host: "127.0.0.1", port: 0, token: nil, baseDirectory: folder.path, outputRoots: nil),
                            coordinator: Coordinator(store: store), store: store, metrics: FarmMetrics(), logger: Logger(label: "test"))
        try await Application(router: face.buildRouter()).test(.router) { client in
            for headers: HTTPFields in [[:], [.authorization: "Bearer anything"]] {
                try await client.execute(uri: "/api/jobs", method: .get, headers: headers) { #expect($0.status == .ok, "\(headers)") }
            }
            try await client.execute(uri: "/api/albums", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/albums", method: .get, headers: [.authorization: "Bearer mfl_unknown"]) { #expect($0.status == .unauthorized) }
        }
    }

    /// A scoped token revoked since its session began: the session opens nothing more.
    @Test func aScopedSessionEndsWithItsToken() async throws {
        let (farm, router) = try await Self.farm()
        let library = try AssetLibrary(store: farm.face.face.store, host: "h", inspector: .none)
        try await Application(router: router).test(.router) { client in
            let (headers, _) = Self.request(.scopedSession, .get, farm: farm)
            try await client.execute(uri: "/api/albums", method: .get, headers: headers) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("Theirs") && !String(buffer: response.body).contains("Ours"))
            }
            try await library.revokeToken(name: "theirs")
            try await client.execute(uri: "/api/albums", method: .get, headers: headers) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/api/albums", method: .get, headers: Self.request(.scopedBearerOfAnotherAlbum, .get, farm: farm).0) {
                #expect($0.status == .unauthorized)
            }
        }
    }
}
