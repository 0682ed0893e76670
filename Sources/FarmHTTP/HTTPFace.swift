import FarmModel
import FarmRuntime
import FarmStore
import FarmLibrary
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// How the coordinator's HTTP face listens and what the API may do.
public struct HTTPFaceConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// The bearer token requests must carry; nil: none (`--no-auth`, loopback only, see `BindAddress.isLoopback`).
    public var token: String?
    /// A token that may only look (`--read-only-token-file`): GET and HEAD; its sessions' forms are refused.
    public var readOnlyToken: String?
    /// Names besides the listen address, `localhost`, `127.0.0.1` and `[::1]` a request's `Host` may give
    /// (`--allowed-host`): the names clients reach this coordinator by. Any other name is refused (DNS
    /// rebinding: a page on another site whose name now points here).
    public var allowedHosts: [String] = []
    /// Browser sessions' cookies are `Secure` (the face is behind a TLS proxy).
    public var cookieSecure = false
    /// How long a browser session lasts after sign-in.
    public var sessionSeconds: Double = 12 * 3600
    /// Failed sign-ins and bearer checks from one address before each next try waits (`--http-auth-failures-allowed`).
    public var authFailuresAllowed = 5
    /// A browser session not used for this long ends (`--session-idle-minutes`).
    public var sessionIdleSeconds: Double = 2 * 3600
    /// Whether manifests posted with the coordinator's own token may set `"overwrite": true`.
    public var allowOverwrite = false
    /// What a scoped library token's submissions may ask for.
    public var scopedLimits = ScopedLimits()
    /// The clock sessions expire by (tests pass their own).
    public var now: @Sendable () -> Date = { Date() }
    /// Relative paths in manifests posted to the API resolve against this folder.
    public var baseDirectory: String
    /// Outputs of manifests posted to the API must lie under these folders; nil: under `baseDirectory`.
    public var outputRoots: [String]?
    /// This host's name in the asset library (`/api/library/resolve` answers with its paths).
    public var libraryHost: String = AssetLibrary.defaultHost
    /// Larger request bodies are refused with 413.
    public var maxBodyBytes = 1 << 20
    /// A coordinator loop that has not turned for this long makes `/healthz` fail.
    public var stalledLoopSeconds: Double = 120
    /// How long the face waits on clients, and how many it lets hold a connection before their first request.
    public var connections = ConnectionLimits()

    public init(host: String, port: Int, token: String?, baseDirectory: String, outputRoots: [String]?) {
        self.host = host
        self.port = port
        self.token = token
        self.baseDirectory = baseDirectory
        self.outputRoots = outputRoots
    }
}

/// Bounds on what a job submitted with a scoped library token may ask for (it can never set `overwrite`).
public struct ScopedLimits: Sendable, Hashable {
    public var maxPriority = 0
    public var maxAttempts = 3
    public var maxDelaySeconds: Double = 86_400

    public init() {}
}

/// A `/healthz` answer as made at `at`.
struct HealthAnswer: Sendable {
    var at: Date
    /// The coordinator was draining when it was made (a cached answer from before the drain is stale).
    var draining = false
    var status: HTTPResponse.Status
    var body: ByteBuffer
}

/// `HOST:PORT` as `--http` takes it (`[::1]:8080` for IPv6).
public struct BindAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init?(_ text: String) {
        var host: Substring
        let portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") {
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            return nil
        }
        if host.isEmpty { host = "0.0.0.0" }
        guard let port = Int(portText), (0...65535).contains(port), !host.contains(" ") else { return nil }
        self.host = String(host)
        self.port = port
    }

    /// Only this machine can connect: 127.0.0.0/8, ::1, localhost.
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The coordinator's HTTP face (Hummingbird 2): `/healthz`, `/readyz`, `/metrics`, the JSON API under
/// `/api`, and the status page at `/`. A swift-service-lifecycle `Service`: run it in the coordinator's
/// service group, before the coordinator, so that it serves (readyz: 503) while the coordinator drains
/// and stops after it.
public final class HTTPFace: Service, Sendable {
    /// What the controllers share.
    let face: FaceServices
    let onListening: @Sendable (String) -> Void

    /// Every part of the face, each registering its routes with their policies.
    static var controllers: [any FaceController.Type] { [
        HealthRoutes.self, SignIn.self, JobsAPI.self, QueueAPI.self, LibraryAPI.self, PictureAPI.self, PosterRequests.self,
        Overview.self, ConsoleJobs.self, LibraryPages.self, ChartsPage.self,
    ] }

    /// `metrics` must be the one whose factory the coordinator counts through; `events` the bus the
    /// coordinator publishes on (the face's own events go there too, and `/api/events` reads it).
    public init(configuration: HTTPFaceConfiguration, coordinator: Coordinator, store: any JobStore, metrics: FarmMetrics,
                logger: Logger, events: EventBus = EventBus(), onListening: @escaping @Sendable (String) -> Void = { _ in },
                onAction: @escaping @Sendable (String) -> Void = { _ in }) {
        face = FaceServices(configuration: configuration, coordinator: coordinator, store: store, metrics: metrics, logger: logger, events: events,
                            onAction: onAction)
        self.onListening = onListening
    }

    public var configuration: HTTPFaceConfiguration { face.configuration }
    var hub: EventHub { face.hub }
    var sessions: SessionStore { face.sessions }
    var logger: Logger { face.logger }

    /// The router with its middleware: the security headers of HTML answers, errors as JSON or pages
    /// (internal ones by id), the Host allowlist, the same-origin rule; then each route behind its own policy, which settles
    /// who the caller is before the route reads a body or the file system. `router` may come with
    /// middleware of its own that runs first (tests).
    func buildRouter(_ router: Router<FarmRequestContext> = Router(context: FarmRequestContext.self)) -> Router<FarmRequestContext> {
        // Outermost: every HTML answer gets the security headers, the error pages the next one makes included.
        router.add(middleware: ContentSecurityMiddleware())
        router.add(middleware: ErrorMiddleware(logger: logger, maxBodyBytes: configuration.maxBodyBytes))
        router.add(middleware: HostAllowlistMiddleware(allowed: HostAllowlistMiddleware<FarmRequestContext>.names(listening: configuration.host,
                                                                                                              extra: configuration.allowedHosts)))
        router.add(middleware: SameOriginMiddleware())
        router.add(middleware: DeclaredRoutesOnly(table: face.routes))
        let routes = Routes(router: router, gate: face.gate, table: face.routes)
        for controller in Self.controllers { controller.init(face: face).register(on: routes) }
        return router
    }

    /// `/healthz`'s answer, as `HealthHandler` gives it on the event loop.
    func health() -> HealthAnswer { HealthRoutes(face: face).health() }

    public func run() async throws {
        let router = buildRouter()
        let pending = PendingConnections(limit: configuration.connections.maxPendingConnections)
        let limits = configuration.connections
        let app = Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [
                ConnectionGuard.handler(limits: limits, pending: pending),
                HealthHandler(serverName: "mediafarm") { [self] in
                    let answer = self.health()
                    return (answer.status, answer.body)
                },
            ])),
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                    serverName: "mediafarm", reuseAddress: true),
            onServerRunning: { [configuration, onListening] channel in
                let port = channel.localAddress?.port ?? configuration.port
                onListening(BindAddress("\(configuration.host):\(port)")?.description ?? "\(configuration.host):\(port)")
            },
            logger: logger)
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await app.run() }
                group.addTask { [hub] in
                    // Comment frames keep event clients' connections open and find those that went away.
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(15))  // cancelled: the server is stopping
                        hub.keepAlive()
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: { [hub] in
            // Event streams end, so that the server's graceful shutdown does not wait on them.
            hub.close()
        }
    }
}
