import FarmModel
import FarmRuntime
import FarmStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The face's open doors and its scrape: `/healthz` (also answered on the event loop by `HealthHandler`),
/// `/readyz`, the OpenAPI document, and `/metrics`.
struct HealthRoutes: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        // Answered on the event loop by `HealthHandler`; this route serves what reaches the router anyway
        // (a request that asks to close its connection, HummingbirdTesting's requests).
        routes.get("/healthz", .open) { _, _ in
            let answer = health()
            return Response(status: answer.status, headers: [.contentType: "application/json; charset=utf-8"], body: ResponseBody(byteBuffer: answer.body))
        }
        routes.get("/readyz", .open) { _, context in await readiness(known: context.identity != nil) }
        routes.get("/api/openapi.json", .open) { _, _ in Response.text(OpenAPIDocument.json + "\n", type: "application/json; charset=utf-8") }
        routes.get("/metrics", .look) { _, _ in await metricsText() }
    }

    /// Alive while the coordinator's loops keep turning (a loop stuck longer than `stalledLoopSeconds`
    /// fails it; draining is healthy). The answer is made at most every 0.1 s and kept: a probe or a
    /// load balancer asking thousands of times a second costs the jobs as little as it can; a drain
    /// shows at once.
    func health() -> HealthAnswer {
        let now = Date()
        if let cached = face.healthCache.withLock({ $0 }), now.timeIntervalSince(cached.at) < 0.1,
           cached.draining || !coordinator.isDraining { return cached }
        let made = makeHealth(now)
        face.healthCache.withLock { $0 = made }
        return made
    }

    private func makeHealth(_ now: Date) -> HealthAnswer {
        let snapshot = coordinator.loopsSnapshot
        let ages = snapshot.loops.mapValues { now.timeIntervalSince($0) }
        let stalled = snapshot.draining ? [] : ages.filter { $0.value > configuration.stalledLoopSeconds }.keys.sorted()
        struct Health: Encodable {
            var status: String
            var draining: Bool
            var loopAgeSeconds: [String: Double]
            var stalled: [String]?
        }
        let body = Health(status: stalled.isEmpty ? "ok" : "stalled", draining: snapshot.draining,
                          loopAgeSeconds: ages.mapValues { ($0 * 1000).rounded() / 1000 }, stalled: stalled.isEmpty ? nil : stalled)
        let data = (try? JSONEncoder.api.encode(body)) ?? Data("{}".utf8)  // a Health always encodes
        return HealthAnswer(at: now, draining: snapshot.draining, status: stalled.isEmpty ? .ok : .serviceUnavailable, body: ByteBuffer(bytes: data))
    }

    /// Ready while the queue answers and the coordinator is not draining. Which queue, and why it does not
    /// answer, are told to a caller with a credential only (`known`): a path or a server's address is a map
    /// of the farm.
    func readiness(known: Bool) async -> Response {
        struct Ready: Encodable {
            var status: String
            var queue: String?
            var error: String?
        }
        let queue = known ? store.location : nil
        if coordinator.isDraining {
            return .json(Ready(status: "draining", queue: queue), status: .serviceUnavailable)
        }
        do {
            _ = try await store.counts()
            return .json(Ready(status: "ready", queue: queue))
        } catch {
            return .json(Ready(status: "queue unavailable", queue: queue, error: known ? error.description : nil), status: .serviceUnavailable)
        }
    }

    func metricsText() async -> Response {
        let stats = try? await store.stats(at: Date())  // a scrape while the queue does not answer has the coordinator's own figures
        let webhooks = try? await store.webhookSettings(at: Date())  // as above
        let pauses = try? await store.pauses.all()  // as above
        let snapshot = coordinator.snapshot
        let scaling = try? await store.scaling.demand(provides: snapshot.provides, host: Job.host(ofOwner: snapshot.owner), slots: snapshot.workers)  // as above
        let bytes = face.metrics.scrape(stats: stats, webhooks: webhooks, pauses: pauses, scaling: scaling, snapshot: snapshot, now: Date())
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

/// Signing in: the form (`GET /login`) and its answer (`POST /login`), a session's cookie.
struct SignIn: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.get("/login", .open) { _, _ in Response.text(StatusPage.login(failed: false).text, type: "text/html; charset=utf-8") }
        routes.post("/login", .open) { request, context in
            if let wait = face.gate.backoff(context.client) { return wait }
            return try await login(request, client: context.client)
        }
        routes.post("/logout", .open) { request, _ in logout(request) }
    }

    /// Signing out: the browser's session ends on the face (its cookie is worth nothing after, wherever a
    /// copy of it is) and the browser forgets it. Open: a request without a session has nothing to end, and
    /// the session cookie (SameSite=Strict) comes only with the face's own pages.
    func logout(_ request: Request) -> Response {
        if let id = request.cookies[SessionStore.cookieName]?.value, face.sessions.end(id) {
            audit("http: session \(id.prefix(8))… signed out")
        }
        var response = Response.redirect(to: "/login?signed-out=1", type: .normal)
        response.setCookie(face.sessions.endedCookie)
        return response
    }

    /// The sign-in form: the token for a session cookie (never the token itself in the cookie).
    func login(_ request: Request, client: String?) async throws -> Response {
        struct Form: Decodable { var token: String? }
        var request = request
        let body = try await request.collectBody(upTo: 4096)
        // an unreadable form gives no token: refused below
        let given = (try? URLEncodedFormDecoder().decode(Form.self, from: String(buffer: body)))?.token ?? ""
        guard let token = configuration.token else { return .redirect(to: "/", type: .normal) }
        let readOnly = configuration.readOnlyToken.map { Gate.constantTimeEqual(given, $0) } ?? false
        var access: Access = readOnly ? .readOnly : .full
        if !Gate.constantTimeEqual(given, token) && !readOnly {
            // A scoped library token signs its browser in to its albums' pages.
            guard !given.isEmpty, ((try? await face.gate.albums(of: given)) ?? nil) != nil else {  // a library that cannot say: not signed in
                if let client { face.guesses.failed(client, .signIn) }
                return .text(StatusPage.login(failed: true).text, status: .unauthorized, type: "text/html; charset=utf-8")
            }
            access = .scoped(token: given)
        }
        let landing = if case .scoped = access { "/library" } else { "/" }
        var response = Response.redirect(to: landing, type: .normal)
        response.setCookie(face.sessions.newCookie(access))
        return response
    }
}
