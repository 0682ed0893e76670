import Foundation
import Hummingbird
import Logging

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
}

/// Every error becomes a JSON answer naming the problem; nothing leaks a stack or a Swift type name.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return error.response
        } catch let error as any HTTPResponseError {
            let message = switch error.status {
            case .notFound: "no such resource: \(request.method) \(request.uri.path)"
            case .contentTooLarge: "the request body is larger than 1 MiB"
            case .methodNotAllowed: "\(request.method) is not allowed on \(request.uri.path)"
            default: error.status.reasonPhrase
            }
            return APIError(status: error.status, message: message).response
        } catch {
            logger.error("\(request.method) \(request.uri.path): \(error)")
            return APIError(status: .internalServerError, message: "\(error)").response
        }
    }
}

/// With `--token-file`: every request but the health checks carries `Authorization: Bearer TOKEN`, or
/// the cookie `/login` sets for browsers. Compared in constant time.
struct BearerAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String
    static var cookieName: String { "mediafarm_token" }
    static var open: Set<String> { ["/healthz", "/readyz", "/login"] }

    /// What a scoped library token may reach (its handlers check the token and limit what it sees).
    static func scoped(_ request: Request) -> Bool {
        let path = request.uri.path
        return path.hasPrefix("/api/assets") || path == "/api/albums" || path.hasPrefix("/api/library/")
            || (path == "/api/jobs" && request.method == .post)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let token = Self.presented(request)
        if Self.open.contains(request.uri.path) || token.map({ Self.constantTimeEqual($0, self.token) }) == true
            || (token != nil && Self.scoped(request)) {
            return try await next(request, context)
        }
        if request.method == .get, request.headers[.accept]?.contains("text/html") == true {
            return .redirect(to: "/login", type: .normal)
        }
        var response = APIError(status: .unauthorized, message: "missing or wrong bearer token").response
        response.headers[.wwwAuthenticate] = "Bearer realm=\"mediafarm\""
        return response
    }

    static func presented(_ request: Request) -> String? {
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") {
            return String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        return request.cookies[Self.cookieName]?.value
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
        let data = (try? JSONEncoder.api.encode(value)) ?? Data("{}".utf8)
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
