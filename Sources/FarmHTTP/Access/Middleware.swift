import FarmLibrary
import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOHTTP1
import Synchronization
import Crypto
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
        var body: HTML = "<h1>\(status.code) \(status.reasonPhrase)</h1><p class=\"error\" id=\"error\">\(message)</p>"
        if !issues.isEmpty {
            body += "<ul>" + issues.map { "<li><code>\($0.path)</code>: \($0.message)</li>" as HTML }.joined() + "</ul>"
        }
        body += "<p><a href=\"/jobs\">Jobs</a></p>"
        return Response.text(Console.page(title: "\(status.code) · MediaFarm", section: nil, live: false, body: body).text, status: status,
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
            self.init(error)
        case .outcomeUnknown:
            // The statement may still commit after its deadline: say so, and how to find out.
            let retry = keyed
                ? "send the same request with the same key: it answers with the job if it was queued, and queues it once if not"
                : "send the request again with an Idempotency-Key header (or ?key=) so that a retry cannot queue it twice, or look for it in GET /api/jobs"
            self.init(status: .serviceUnavailable, message: "outcome unknown: \(error.description); " + retry)
        }
    }
}

extension APIError {
    /// A library's refusal or failure as the status that says whose fault it is.
    init(_ error: LibraryError) {
        let status: HTTPResponse.Status = switch error {
        case .unknownAsset, .unknownAlbum, .unknownPath: .notFound
        case .notPermitted: .forbidden
        case .store: .serviceUnavailable
        case .albumExists: .conflict
        default: .badRequest
        }
        self.init(status: status, message: error.description)
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
        } catch let error as HTTPParserError {
            // The request's body could not be read as HTTP: the client's fault, not the face's.
            return APIError(status: .badRequest, message: "the request could not be read (\(error)): see RFC 9112").response
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
        // A second Host (the first is the request's authority, the rest stay among the fields): which one
        // a proxy on the way used is unknown.
        if request.headers[HTTPField.Name("Host")!] != nil {
            throw APIError(status: .badRequest, message: "the request has more than one Host header")
        }
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

/// Browser sessions: a random value in an HttpOnly cookie, valid until its expiry and while it is used
/// (one idle for `idleSeconds` ends); the token itself is never put in a cookie. Bounded: at most
/// `capacity` at once (when full, expired sessions are dropped, then the oldest make way); an expired session
/// is forgotten when it is presented, and a signed-out one at once. The key the console's CSRF tokens are
/// made with is the store's, new with each process.
final class SessionStore: Sendable {
    struct Session {
        var expiry: Date
        var lastSeen: Date
        /// What the token it was begun with may do.
        var access: Access
    }

    private let sessions = Mutex<[String: Session]>([:])
    let capacity = 10_000
    let lifetime: Double
    let idleSeconds: Double
    let secureCookies: Bool
    let now: @Sendable () -> Date
    /// What the console's CSRF tokens are an HMAC with.
    let csrfKey = SymmetricKey(size: .bits256)
    static var cookieName: String { "mediafarm_session" }

    init(lifetime: Double, idleSeconds: Double = 2 * 3600, secureCookies: Bool, now: @escaping @Sendable () -> Date = { Date() }) {
        self.lifetime = lifetime
        self.idleSeconds = idleSeconds
        self.secureCookies = secureCookies
        self.now = now
    }

    /// A new session's cookie: HttpOnly, SameSite=Strict, `Secure` behind TLS, expiring with the session.
    func newCookie(_ access: Access = .full) -> Cookie {
        Cookie(name: Self.cookieName, value: start(lasting: lifetime, access), maxAge: Int(lifetime), path: "/",
               secure: secureCookies, httpOnly: true, sameSite: .strict)
    }

    /// The cookie that makes a browser forget its session.
    var endedCookie: Cookie {
        Cookie(name: Self.cookieName, value: "", maxAge: 0, path: "/", secure: secureCookies, httpOnly: true, sameSite: .strict)
    }

    /// A new session lasting `seconds`.
    func start(lasting seconds: Double, _ access: Access = .full) -> String {
        let now = self.now()
        let id = Self.randomHex(bytes: 32)
        sessions.withLock { table in
            if table.count >= capacity { table = table.filter { $0.value.expiry > now && now.timeIntervalSince($0.value.lastSeen) < idleSeconds } }
            while table.count >= capacity, let oldest = table.min(by: { $0.value.expiry < $1.value.expiry }) { table[oldest.key] = nil }
            table[id] = Session(expiry: now.addingTimeInterval(seconds), lastSeen: now, access: access)
        }
        return id
    }

    /// What the session may do: nil when it is unknown, expired or was idle too long (then forgotten). A
    /// session asked for is a session used: its idle time starts again.
    func access(_ id: String) -> Access? {
        let now = self.now()
        return sessions.withLock { table in
            guard var session = table[id] else { return nil }
            if session.expiry <= now || now.timeIntervalSince(session.lastSeen) >= idleSeconds { table[id] = nil; return nil }
            session.lastSeen = now
            table[id] = session
            return session.access
        }
    }

    /// Ends the session (sign-out); whether there was one.
    @discardableResult
    func end(_ id: String) -> Bool { sessions.withLock { $0.removeValue(forKey: id) != nil } }

    var count: Int { sessions.withLock { $0.count } }

    /// `bytes` random bytes as hex: a session's id, a browser's CSRF cookie.
    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
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
        if request.method != .get, request.method != .head {
            // The Origin a browser sends; without one, its Referer (some send only that).
            for name in [HTTPField.Name.origin, .referer] {
                guard let value = request.headers[name] else { continue }
                guard Self.sameOrigin(value, request) else {
                    throw APIError(status: .forbidden, message: "cross-origin request refused (\(name): \(UserText.printable(value.prefix(200))))")
                }
                break
            }
        }
        return try await next(request, context)
    }

    /// Whether the URL `value` is of the host and port `request` was sent to.
    static func sameOrigin(_ value: String, _ request: Request) -> Bool {
        let from = URLComponents(string: value).flatMap { c in c.host.map { host in c.port.map { "\(host):\($0)" } ?? host } }
        guard let from, let to = request.head.authority else { return false }
        return from.lowercased() == to.lowercased()
    }
}
