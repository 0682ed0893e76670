import FarmLibrary
import FarmModel
import FarmStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import NIOCore
import Synchronization

/// What a signed-in caller may do: everything; only look (`--read-only-token-file`: GET and HEAD); or look
/// at the albums of a scoped library token and submit their assets.
enum Access: Sendable, Equatable { case full, readOnly, scoped(token: String) }

/// Who a request is, settled once by its route's policy (`PolicyMiddleware`) and carried in the request
/// context: what it may do, how it said so, and for a scoped library token the albums it sees.
struct Caller: Sendable, Equatable {
    /// How the caller signed in.
    enum Credential: Sendable, Equatable {
        /// `Authorization: Bearer`.
        case bearer
        /// A browser session's cookie, by its id's first characters (for the log).
        case session(String)
        /// Nothing: the face has no token (`--no-auth`, loopback only).
        case none
    }

    var access: Access
    var credential: Credential
    /// What the caller sees of the asset library: everything, or a scoped token's albums as the library read
    /// them for this request (nothing, where the route does not admit a scoped token).
    var library: LibraryAccess = .full

    /// Who acted, for the log and the job's history.
    var who: String {
        switch credential {
        case .bearer:
            if case .limited(let name, _) = library { "a bearer of the scoped library token \"\(name)\"" } else { "a bearer of the token" }
        case .session(let prefix): "session \(prefix)…"
        case .none: "an unauthenticated loopback browser"
        }
    }

    /// The coordinator's token's caller: the console shows it the forms that act.
    var canAct: Bool { access == .full }
}

/// The face's request context: Hummingbird's, with the caller its route's policy admitted (hummingbird-auth's
/// identity) and, on a console form's route, the form's fields once its CSRF token was checked.
struct FarmRequestContext: AuthRequestContext, RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    var identity: Caller?
    /// A `.form` route's fields, its CSRF token checked.
    var form: [String: [String]] = [:]
    /// Where the connection comes from (nil for a request made without one, as in router tests).
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
        remoteAddress = source.channel.remoteAddress
    }

    /// The client, as failed guesses are counted by (its address; an IPv6 one by its /64): nil without a
    /// connection.
    var client: String? { remoteAddress?.ipAddress.map(GuessLimiter.client(of:)) }

    /// The caller the route's policy admitted. Every route but an open one has one; an open route's
    /// handler never asks (one that did is the face's fault: 500, not a sign-in's).
    var caller: Caller {
        get throws {
            guard let identity else {
                throw APIError(status: .internalServerError, message: "internal error: the route's policy settled no caller")
            }
            return identity
        }
    }
}

/// Who may call a route: declared where the route is registered (`Routes.get`, `Routes.post`) and decided by
/// one middleware before the handler runs; no handler asks again.
enum RoutePolicy: String, Sendable, CaseIterable {
    /// Anyone, signed in or not: health, readiness, the sign-in form, the console's style and script, the
    /// OpenAPI document.
    case open
    /// The coordinator's token or the read-only one (a bearer or a session).
    case look
    /// The library's reads: also a scoped library token (a bearer or a session), which sees its albums only.
    case library
    /// An action of the API: the coordinator's token as a bearer (a browser session acts through the
    /// console's forms).
    case act
    /// A console form: the coordinator's token (a bearer or a session) and the form's CSRF token.
    case form
    /// A submission: the coordinator's token as a bearer, or a scoped library token's (its albums' assets).
    case submit

    /// A GET route's policies.
    enum Reading: Sendable { case open, look, library }
    /// A POST route's policies.
    enum Acting: Sendable { case open, act, form, submit }

    init(_ reading: Reading) {
        self = switch reading {
        case .open: .open
        case .look: .look
        case .library: .library
        }
    }

    init(_ acting: Acting) {
        self = switch acting {
        case .open: .open
        case .act: .act
        case .form: .form
        case .submit: .submit
        }
    }

    /// A scoped library token counts on such a route (and is looked up in the library); elsewhere it is not
    /// a credential at all.
    var admitsScoped: Bool { self == .library || self == .submit }

    /// Why `caller` may not call a route of this policy, as the 403's message; nil when it may.
    func refusal(of caller: Caller, _ request: Request) -> String? {
        let what = "\(request.method) \(request.uri.path)"
        let bySession = if case .session = caller.credential { true } else { false }
        switch caller.access {
        case .full:
            guard self == .act || self == .submit, bySession else { return nil }
            return "a browser session acts through the console's forms (\(what)); the API's actions take the token as a bearer"
        case .readOnly:
            switch self {
            case .open, .look, .library: return nil
            case .act, .form, .submit: return "read-only: this sign-in may look but not act (\(what)); sign in with the coordinator's token to act"
            }
        case .scoped:
            switch self {
            case .open, .library: return nil
            case .submit where !bySession: return nil
            case .submit: return "a scoped library sign-in sees its albums only (\(what)); submit with the token as a bearer"
            case .look, .act, .form: return "a scoped library sign-in sees its albums only (\(what))"
            }
        }
    }
}

/// Decides who a request is: the coordinator's token (everything), the read-only token, a scoped library
/// token (looked up in the library on each request, so a revoked token stops at once), or a browser
/// session begun with one of them (at `/login`, or by opening a URL with `?token=`). Tokens are compared in
/// constant time; a session's cookie never holds a token.
struct Gate: Sendable {
    let token: String?
    let readOnlyToken: String?
    let sessions: SessionStore
    let store: any JobStore
    let libraryHost: String
    let guesses: GuessLimiter

    /// The caller, or nil when the request shows no credential this face knows. `scoped`: whether the route
    /// admits a scoped library token; where it does not, a bearer that is not a token of the face's is no
    /// credential (on a face without a token, it is ignored: anyone may call), and a scoped session sees no
    /// album.
    func caller(of request: Request, scoped: Bool) async throws -> Caller? {
        if let bearer = Self.presented(request) {
            if let token, Self.constantTimeEqual(bearer, token) { return Caller(access: .full, credential: .bearer) }
            if let readOnlyToken, Self.constantTimeEqual(bearer, readOnlyToken) { return Caller(access: .readOnly, credential: .bearer) }
            guard scoped else { return token == nil ? Caller(access: .full, credential: .none) : nil }
            guard let albums = try await albums(of: bearer) else { return nil }
            return Caller(access: .scoped(token: bearer), credential: .bearer, library: albums)
        }
        if let id = request.cookies[SessionStore.cookieName]?.value, let access = sessions.access(id) {
            var caller = Caller(access: access, credential: .session(String(id.prefix(8))))
            if case .scoped(let token) = access {
                caller.library = .limited(name: "", albums: [])
                if scoped {
                    // The token the session began with, revoked since: the session ends with it.
                    guard let albums = try await albums(of: token) else { return nil }
                    caller.library = albums
                }
            }
            return caller
        }
        return token == nil ? Caller(access: .full, credential: .none) : nil
    }

    /// What scoped library token `token` sees; nil when the library knows no such token.
    func albums(of token: String) async throws -> LibraryAccess? {
        do {
            return try await AssetLibrary.open(store, host: libraryHost, token: token, inspector: .none).access
        } catch {
            if case .notPermitted = error { return nil }
            throw APIError(status: .serviceUnavailable, message: "the asset library cannot check the token now: \(error)")
        }
    }

    /// The answer to a request the gate found no caller in, and the failed guess it was (a wrong bearer or a
    /// wrong `?token=`), counted against `client`.
    func refuse(_ request: Request, client: String?) -> Response {
        let (response, guess) = unauthenticated(request)
        if let guess, let client { guesses.failed(client, guess) }
        return response
    }

    /// Whether the request carries a session the face knows (and uses it).
    func hasSession(_ request: Request) -> Bool {
        request.cookies[SessionStore.cookieName].map { sessions.access($0.value) != nil } ?? false
    }

    /// The 429 of a client that must wait before its next try; nil when it need not.
    func backoff(_ client: String?) -> Response? {
        guard let client, let seconds = guesses.wait(client) else { return nil }
        var response = APIError(status: .tooManyRequests,
                                message: "too many failed sign-ins or bearer checks from \(client): try again in \(Int(seconds.rounded(.up))) s").response
        response.headers[.retryAfter] = String(Int(seconds.rounded(.up)))
        return response
    }

    /// The answer to a request without a credential: the URL printed at start (`?token=`) becomes a session
    /// and the same URL without the token; a browser's page goes to the sign-in form; anything else is 401.
    /// With it, the failed guess the request was: a bearer that is no token, a `?token=` that is none.
    func unauthenticated(_ request: Request) -> (Response, GuessLimiter.Kind?) {
        if let token, Self.presented(request) == nil, request.method == .get, let given = request.uri.queryParameters.get("token"),
           !Self.fromAnotherSite(request) {
            let readOnly = readOnlyToken.map { Self.constantTimeEqual(given, $0) } ?? false
            if Self.constantTimeEqual(given, token) || readOnly {
                // The rest of the query as it was written (a query that is not well formed is dropped), on a
                // path of this face only.
                var rest = URLComponents(string: "?" + (request.uri.query ?? ""))
                let kept = rest?.percentEncodedQueryItems?.filter { $0.name != "token" }
                rest?.percentEncodedQueryItems = kept
                let query = rest?.percentEncodedQuery ?? ""
                let path = Self.onThisFace(request.uri.path)
                var response = Response.redirect(to: path + (path == request.uri.path && !query.isEmpty ? "?" + query : ""), type: .normal)
                response.setCookie(sessions.newCookie(readOnly ? .readOnly : .full))
                return (response, nil)
            }
        }
        let guess: GuessLimiter.Kind? = Self.presented(request) != nil ? .bearer
            : (token != nil && request.uri.queryParameters.get("token") != nil && !Self.fromAnotherSite(request) ? .signIn : nil)
        if request.method == .get, request.headers[.accept]?.contains("text/html") == true {
            return (.redirect(to: "/login", type: .normal), guess)
        }
        var response = APIError(status: .unauthorized, message: "missing or wrong bearer token").response
        response.headers[.wwwAuthenticate] = "Bearer realm=\"mediafarm\""
        return (response, guess)
    }

    /// `path` when a browser reads it as a path of this face (one leading `/`, then not `/` or `\`, and no
    /// `\` or control character anywhere: `//elsewhere.example/` and `/\elsewhere.example/` name another
    /// site); `/` otherwise. Where a sign-in may send the browser next.
    static func onThisFace(_ path: String) -> String {
        let scalars = Array(path.unicodeScalars)
        guard scalars.first == "/", scalars.count < 2 || (scalars[1] != "/" && scalars[1] != "\\"),
              !scalars.contains(where: { $0 == "\\" || UserText.needsEscape($0) }) else { return "/" }
        return path
    }

    /// Whether a browser says the request came from a page of another site (`Sec-Fetch-Site`, or a `Referer`
    /// or `Origin` naming another host): a link elsewhere cannot sign anyone in. A URL opened by hand, from a
    /// terminal or a bookmark, says `none` or nothing.
    static func fromAnotherSite(_ request: Request) -> Bool {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "none", site != "same-origin" { return true }
        for name in [HTTPField.Name.origin, .referer] {
            if let value = request.headers[name], !SameOriginMiddleware<FarmRequestContext>.sameOrigin(value, request) { return true }
        }
        return false
    }

    /// The bearer token of the `Authorization` header.
    static func presented(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else { return nil }
        return String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }

    /// Equal strings, in a time that depends on the lengths only.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt(x.count ^ y.count)
        for i in 0..<max(x.count, y.count) {
            difference |= UInt((i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0))
        }
        return difference == 0
    }
}

/// A route's policy at work: the caller settled by the gate and put in the context, refused (401, the
/// sign-in form, or 403 naming why) before anything reads the body or the file system; a form's CSRF token
/// checked and its fields put in the context.
struct PolicyMiddleware: RouterMiddleware {
    typealias Context = FarmRequestContext
    let policy: RoutePolicy
    let gate: Gate
    /// The largest form body read.
    static let formLimit = 1 << 20

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard policy != .open else {
            // Anyone may call; a caller who shows a credential is known to the route (readyz says more to
            // them), so a bearer is held to the same count of failures here: an open route is no oracle.
            var context = context
            if gate.backoff(context.client) == nil || gate.hasSession(request) {
                context.identity = try? await gate.caller(of: request, scoped: false)  // an open route's answer never depends on a failed lookup
                if context.identity == nil, Gate.presented(request) != nil, let client = context.client { gate.guesses.failed(client, .bearer) }
            }
            return try await next(request, context)
        }
        // A browser's session cannot be guessed: it is admitted while its address waits (a neighbour behind
        // the same proxy guessing does not sign it out).
        if let wait = gate.backoff(context.client), !gate.hasSession(request) { return wait }
        guard let caller = try await gate.caller(of: request, scoped: policy.admitsScoped) else { return gate.refuse(request, client: context.client) }
        if let refusal = policy.refusal(of: caller, request) { throw APIError(status: .forbidden, message: refusal) }
        var context = context
        context.identity = caller
        guard policy == .form else { return try await next(request, context) }
        // A browser's form (signed in by its cookie) says where it comes from; the middleware before held
        // that to this face.
        if case .session = caller.credential, request.headers[.origin] == nil, request.headers[.referer] == nil {
            throw APIError(status: .forbidden, message: "a console form must come with an Origin or Referer header of this face (\(request.method) \(request.uri.path))")
        }
        var request = request
        let body = try await request.collectBody(upTo: Self.formLimit)
        let form = FormFields.parse(String(buffer: body))
        try ConsoleCSRF.check(form, request, sessions: gate.sessions)
        context.form = form
        return try await next(request, context)
    }
}

/// Refuses a route of the router that no policy was declared for (one added beside `Routes`): no route is
/// open by omission. Unknown paths are not routes: they answer 404.
struct DeclaredRoutesOnly: RouterMiddleware {
    typealias Context = FarmRequestContext
    let table: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let path = context.endpointPath, table.policy(request.method == .head ? .get : request.method, path) == nil {
            throw APIError(status: .forbidden, message: "\(request.method) \(path) has no declared policy: refused")
        }
        return try await next(request, context)
    }
}

/// Each route's policy as it was registered: what the route-walking test holds every route of the router to.
final class RouteTable: Sendable {
    struct Entry: Sendable, Hashable {
        var method: HTTPRequest.Method
        var path: String
        var policy: RoutePolicy
    }

    private let entries = Mutex<[Entry]>([])

    func record(_ method: HTTPRequest.Method, _ path: RouterPath, _ policy: RoutePolicy) {
        let entry = Entry(method: method, path: Self.key(path.description), policy: policy)
        entries.withLock { if !$0.contains(entry) { $0.append(entry) } }
    }

    var all: [Entry] { entries.withLock { $0 } }

    /// The policy of the route `method path` (a router's path, parameters as `:name`).
    func policy(_ method: HTTPRequest.Method, _ path: String) -> RoutePolicy? {
        let key = Self.key(path)
        return entries.withLock { list in list.first { $0.method == method && $0.path == key }?.policy }
    }

    /// A path as one spelling: without slashes at either end.
    static func key(_ path: String) -> String { path.trimmingCharacters(in: CharacterSet(charactersIn: "/")) }
}

/// The router as the controllers see it: a route is added with its policy or not at all. GET routes take a
/// reading policy and POST routes an acting one, so a route that changes something cannot be declared
/// open to a look-only sign-in.
struct Routes {
    let router: Router<FarmRequestContext>
    let gate: Gate
    let table: RouteTable

    typealias Handler = @Sendable (Request, FarmRequestContext) async throws -> Response

    func get(_ path: RouterPath, _ policy: RoutePolicy.Reading, use handler: @escaping Handler) {
        add(path, .get, RoutePolicy(policy), handler)
    }

    func post(_ path: RouterPath, _ policy: RoutePolicy.Acting, use handler: @escaping Handler) {
        add(path, .post, RoutePolicy(policy), handler)
    }

    private func add(_ path: RouterPath, _ method: HTTPRequest.Method, _ policy: RoutePolicy, _ handler: @escaping Handler) {
        table.record(method, path, policy)
        router.group().add(middleware: PolicyMiddleware(policy: policy, gate: gate)).on(path, method: method, use: handler)
    }
}

/// A form's or a query's fields (`a=1&ids=2&ids=3`), percent-decoded, `+` as a space.
enum FormFields {
    static func parse(_ text: String) -> [String: [String]] {
        var fields: [String: [String]] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String { String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s) }
            guard let key = parts.first.map(decode) else { continue }
            fields[key, default: []].append(parts.count > 1 ? decode(parts[1]) : "")
        }
        return fields
    }
}
