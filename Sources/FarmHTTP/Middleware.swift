import FarmStore
import FarmSubmit
import Foundation
import Hummingbird
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An error the API answers with a status and a JSON body `{"error": ..., "issues": [...]}`.
struct APIError: Error {
    var status: HTTPResponse.Status
    var message: String
    var issues: [Issue] = []

    struct Issue: Encodable {
        var path: String
        var message: String
    }

    struct Body: Encodable {
        var error: String
        var issues: [Issue]?
    }

    var response: Response {
        Response.json(Body(error: message, issues: issues.isEmpty ? nil : issues), status: status)
    }

    /// The error as a console page (a form of the console, a page asked for by a browser).
    var page: Response {
        let e = StatusPage.escape
        var body = "<h1>\(status.code) \(e(status.reasonPhrase))</h1><p class=\"error\" id=\"error\">\(e(message))</p>"
        if !issues.isEmpty {
            body += "<ul>" + issues.map { "<li><code>\(e($0.path))</code>: \(e($0.message))</li>" }.joined() + "</ul>"
        }
        body += "<p><a href=\"/jobs\">Jobs</a></p>"
        return Response.text(Console.page(title: "\(status.code) · MediaFarm", section: nil, live: false, body: body), status: status,
                             type: "text/html; charset=utf-8")
    }

    /// Whether `request` is the console's (a page or a form of it, not the API's): its errors are pages.
    static func isConsole(_ request: Request) -> Bool {
        let path = request.uri.path
        return path == "/jobs" || path.hasPrefix("/jobs/") || path.hasPrefix("/queue/") || path == "/library" || path.hasPrefix("/library/") || path == "/charts"
    }
}

extension APIError {
    /// Every error of the queue as the status that says whose fault it is, in one place: the caller's
    /// (404 no such job; 409 a change the job's state or another live job forbids; 422 a submission naming
    /// what is not there) or the queue's (503: it did not answer, try again).
    init(_ error: JobStoreError, submitting: Bool = false) {
        switch error {
        case .notFound(let id): self.init(status: .notFound, message: "no job \(id)")
        case .transition: self.init(status: .conflict, message: error.description)
        case .refused: self.init(status: submitting ? .unprocessableContent : .conflict, message: error.description)
        case .unavailable, .invalidLocation: self.init(status: .serviceUnavailable, message: error.description)
        }
    }
}

extension APIError {
    /// A submission refused, as every way in says it, with the status that says whose fault it is: the
    /// manifest's (422, every issue at its JSON path), a scoped token's limits (403), the queue's
    /// refusal of a dependency (422), the library's error, or no confirmation from the queue (503, with
    /// how to retry without queueing twice: `keyed` when the request named itself).
    init(_ error: SubmissionError, keyed: Bool) {
        let issues = error.issues.map { Issue(path: $0.path, message: $0.message) }
        switch error {
        case .invalid:
            self.init(status: .unprocessableContent, message: "invalid manifest: nothing was queued", issues: issues)
        case .notPermitted:
            self.init(status: .forbidden, message: "a scoped library token submits only assets of its albums (asset:ID); nothing was queued",
                      issues: issues)
        case .refused(let message):
            self.init(status: .unprocessableContent, message: message)
        case .library(let error):
            self = HTTPFace.apiError(error)
        case .outcomeUnknown:
            // The statement may still commit after its deadline: say so, and how to find out.
            let retry = keyed
                ? "send the same request with the same key: it answers with the job if it was queued, and queues it once if not"
                : "send the request again with an Idempotency-Key header (or ?key=) so that a retry cannot queue it twice, or look for it in GET /api/jobs"
            self.init(status: .serviceUnavailable, message: "outcome unknown: \(error.description); " + retry)
        }
    }
}

extension JobStoreError {
    /// The queue failed (unreachable, broken): not the request's fault.
    var isQueueFault: Bool {
        switch self {
        case .unavailable, .invalidLocation: true
        case .notFound, .transition, .refused: false
        }
    }
}

/// Every error becomes a JSON answer naming the problem; nothing leaks a stack or a Swift type name. An
/// unexpected error is answered with an id that the log line with its details carries too.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger
    let maxBodyBytes: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return APIError.isConsole(request) ? error.page : error.response
        } catch let error as any HTTPResponseError {
            let message = switch error.status {
            case .notFound: "no such resource: \(request.method) \(request.uri.path)"
            case .contentTooLarge: Self.tooLarge(limit: maxBodyBytes)
            case .methodNotAllowed: "\(request.method) is not allowed on \(request.uri.path)"
            default: error.status.reasonPhrase
            }
            return APIError(status: error.status, message: message).response
        } catch {
            let id = String(UInt64.random(in: 0...UInt64.max), radix: 36)
            logger.error("\(request.method) \(request.uri.path): internal error \(id): \(error)")
            return APIError(status: .internalServerError, message: "internal error \(id); the coordinator's log has the details").response
        }
    }

    static func tooLarge(limit: Int, length: Int? = nil) -> String {
        let limitText = limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes"
        return (length.map { "the request body is \($0) bytes" } ?? "the request body is too large") + "; a manifest may be at most \(limitText)"
    }
}

/// Answers only requests whose `Host` names this coordinator: an IP address, `localhost`, the listen
/// address, or a name given with `--allowed-host`. A page on another site that makes its own name point at
/// 127.0.0.1 (DNS rebinding) sends its name as Host and is refused, on every path but `/healthz`.
struct HostAllowlistMiddleware<Context: RequestContext>: RouterMiddleware {
    let allowed: Set<String>

    /// The names answered when listening on `host`, with `extra` from `--allowed-host`.
    static func names(listening host: String, extra: [String]) -> Set<String> {
        var names: Set<String> = ["localhost"]
        if !["0.0.0.0", "::", ""].contains(host) { names.insert(host.lowercased()) }
        for name in extra { names.insert(name.lowercased()) }
        return names
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path != "/healthz" else { return try await next(request, context) }
        let given = request.head.authority ?? ""
        guard let host = Self.hostName(given), allowed.contains(host) || Self.isAddress(host) else {
            throw APIError(status: .misdirectedRequest,
                           message: "Host \"\(given)\" is not a name this coordinator answers to; start it with --allowed-host NAME to allow a name")
        }
        return try await next(request, context)
    }

    /// The host of a `Host` value, lower case, without port or IPv6 brackets; nil when malformed.
    static func hostName(_ authority: String) -> String? {
        let text = authority.lowercased()
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && Int(rest.dropFirst()) != nil) else { return nil }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let name = parts.first, !name.isEmpty else { return nil }
        if parts.count == 2, Int(parts[1]) == nil { return nil }
        return String(name)
    }

    /// An IP address literal: no name to rebind.
    static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// Browser sessions: a random value in an HttpOnly cookie, valid until its expiry; the token itself is
/// never put in a cookie. Bounded: at most `capacity` at once (when full, expired sessions are dropped,
/// then the oldest make way); an expired session is forgotten when it is presented.
final class SessionStore: Sendable {
    /// Each session's expiry, and what the token it was begun with may do.
    private let sessions = Mutex<[String: (expiry: Date, access: Access)]>([:])
    let capacity = 10_000
    let lifetime: Double
    let secureCookies: Bool
    let now: @Sendable () -> Date
    static var cookieName: String { "mediafarm_session" }

    init(lifetime: Double, secureCookies: Bool, now: @escaping @Sendable () -> Date = { Date() }) {
        self.lifetime = lifetime
        self.secureCookies = secureCookies
        self.now = now
    }

    /// A new session's cookie: HttpOnly, SameSite=Strict, `Secure` behind TLS, expiring with the session.
    func newCookie(_ access: Access = .full) -> Cookie {
        Cookie(name: Self.cookieName, value: start(lasting: lifetime, access), maxAge: Int(lifetime), path: "/",
               secure: secureCookies, httpOnly: true, sameSite: .strict)
    }

    /// A new session lasting `seconds`.
    func start(lasting seconds: Double, _ access: Access = .full) -> String {
        let now = self.now()
        let id = Self.randomHex(bytes: 32)
        sessions.withLock { table in
            if table.count >= capacity { table = table.filter { $0.value.expiry > now } }
            while table.count >= capacity, let oldest = table.min(by: { $0.value.expiry < $1.value.expiry }) { table[oldest.key] = nil }
            table[id] = (now.addingTimeInterval(seconds), access)
        }
        return id
    }

    func isValid(_ id: String) -> Bool { access(id) != nil }

    /// What the session may do: nil when it is unknown or expired (then forgotten).
    func access(_ id: String) -> Access? {
        let now = self.now()
        return sessions.withLock { table in
            guard let session = table[id] else { return nil }
            if session.expiry <= now { table[id] = nil; return nil }
            return session.access
        }
    }

    var count: Int { sessions.withLock { $0.count } }

    /// `bytes` random bytes as hex: a session's id, a form's CSRF token.
    static func randomHex(bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}

/// With a token (`--token-file`, or one made at start): every request but the health checks and `/login`
/// carries `Authorization: Bearer TOKEN`, or the cookie of a browser session begun at `/login` or by
/// opening a URL with `?token=TOKEN` (which then redirects to the same URL without it). Compared in
/// constant time. A bearer that is not the token passes only to the routes a scoped library token may
/// use, whose handlers check it before reading anything else of the request.
/// What a signed-in caller may do: everything; only look (`--read-only-token-file`: GET and HEAD); or look
/// at the albums of a scoped library token (its sessions: the library's pages and reads only).
enum Access: Sendable, Equatable { case full, readOnly, scoped(token: String) }

struct BearerAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String
    /// A second token that may only look (GET, HEAD): its bearers and sessions can see but not act.
    var readOnlyToken: String? = nil
    let sessions: SessionStore
    static var open: Set<String> { ["/healthz", "/readyz", "/login", "/api/openapi.json"] }

    /// What a scoped library token may reach (its handlers check the token and limit what it sees).
    static func scoped(_ request: Request) -> Bool {
        let path = request.uri.path
        return path.hasPrefix("/api/assets") || path == "/api/albums" || path.hasPrefix("/api/library/")
            || (path == "/api/jobs" && request.method == .post)
    }

    /// Who `request` is: the one decision the middleware, the pages' actions and the library's scope all take.
    /// The coordinator's token is everything; the read-only token only looks; any other bearer is taken as a
    /// scoped library token (the library's handlers check it); a session has the access it was started with.
    /// nil when the request presents no token and no live session, and the face has a token.
    static func access(of request: Request, token: String?, readOnlyToken: String?, sessions: SessionStore) -> Access? {
        if let bearer = presented(request) {
            if let token, constantTimeEqual(bearer, token) { return .full }
            if let readOnlyToken, constantTimeEqual(bearer, readOnlyToken) { return .readOnly }
            return .scoped(token: bearer)
        }
        if let session = request.cookies[SessionStore.cookieName]?.value, let access = sessions.access(session) { return access }
        return token == nil ? .full : nil
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if Self.open.contains(request.uri.path) || Self.asset(request.uri.path) { return try await next(request, context) }
        let byBearer = Self.presented(request) != nil
        let looks = request.method == .get || request.method == .head
        switch Self.access(of: request, token: token, readOnlyToken: readOnlyToken, sessions: sessions) {
        case .full?:
            return try await next(request, context)
        case .readOnly?:
            guard looks else { throw Self.readOnlyRefusal(request) }
            return try await next(request, context)
        case .scoped? where byBearer:
            if Self.scoped(request) { return try await next(request, context) }
        case .scoped?:
            // A scoped library token's browser: its albums' pages and the library's reads, nothing else.
            guard looks, Self.scoped(request) || request.uri.path.hasPrefix("/library") || Self.asset(request.uri.path) else {
                throw APIError(status: .forbidden, message: "a scoped library sign-in sees its albums only (\(request.method) \(request.uri.path))")
            }
            return try await next(request, context)
        case nil:
            break
        }
        if !byBearer, request.method == .get, let given = request.uri.queryParameters.get("token") {
            let readOnly = readOnlyToken.map { Self.constantTimeEqual(given, $0) } ?? false
            if Self.constantTimeEqual(given, token) || readOnly {
                // The URL printed at start: a session for this browser, and the token out of the address bar.
                var query = URLComponents(string: "?" + (request.uri.query ?? ""))?.queryItems ?? []
                query.removeAll { $0.name == "token" }
                var response = Response.redirect(to: request.uri.path + (query.isEmpty ? "" : "?" + query.map { "\($0.name)=\($0.value ?? "")" }
                    .joined(separator: "&")), type: .normal)
                response.setCookie(sessions.newCookie(readOnly ? .readOnly : .full))
                return response
            }
        }
        if request.method == .get, request.headers[.accept]?.contains("text/html") == true {
            return .redirect(to: "/login", type: .normal)
        }
        var response = APIError(status: .unauthorized, message: "missing or wrong bearer token").response
        response.headers[.wwwAuthenticate] = "Bearer realm=\"mediafarm\""
        return response
    }

    /// The console's own files: its style sheet and script.
    static func asset(_ path: String) -> Bool { path == "/console.css" || path == "/console.js" }

    static func readOnlyRefusal(_ request: Request) -> APIError {
        APIError(status: .forbidden, message: "read-only: this sign-in may look but not act (\(request.method) \(request.uri.path)); "
                 + "sign in with the coordinator's token to act")
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

extension Response {
    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONEncoder.api.encode(value)) ?? Data("{}".utf8)  // the API's values always encode
        return Response(status: status, headers: [.contentType: "application/json; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func text(_ text: String, status: HTTPResponse.Status = .ok, type: String = "text/plain; charset=utf-8") -> Response {
        Response(status: status, headers: [.contentType: type], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

/// Refuses state-changing requests a browser sends from another site (a page elsewhere posting to a
/// coordinator on loopback): when a request other than GET carries an `Origin`, its host and port must be
/// the ones the request was sent to. Command-line clients send no Origin and are not affected.
struct SameOriginMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.method != .get, request.method != .head, let origin = request.headers[.origin] {
            let from = URLComponents(string: origin).flatMap { c in c.host.map { host in c.port.map { "\(host):\($0)" } ?? host } }
            guard let from, let to = request.head.authority, from.lowercased() == to.lowercased() else {
                throw APIError(status: .forbidden, message: "cross-origin request refused (Origin: \(origin))")
            }
        }
        return try await next(request, context)
    }
}
