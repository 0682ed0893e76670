import AsyncHTTPClient
import FarmModel
import FarmStore
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// How a coordinator sends the outbox's deliveries.
public struct WebhookDelivererConfiguration: Sendable {
    /// Who holds delivery leases (the coordinator's owner name).
    public var owner: String
    /// Deliveries in flight at once.
    public var concurrency: Int
    /// How long one request may take, connection included.
    public var timeout: Double
    /// How long after its event a delivery is retried before it is given up.
    public var retryFor: Double
    /// The first retry's delay; each later one doubles it, up to `maxBackoff`.
    public var backoff: Double
    public var maxBackoff: Double
    /// How often an idle sender looks at the queue for deliveries other processes recorded (its own
    /// process's wake it at once).
    public var poll: Double
    /// When the coordinator stops: how long to keep sending what is due (the events of its last jobs).
    public var drainSeconds = 5.0
    /// When it stops because the queue is idle (CI): wait for every pending delivery, retries included,
    /// up to `drainSeconds`; what is left then is said and makes the exit non-zero.
    public var drainPending = false
    /// Whether a failed answer's first 200 bytes are kept with the delivery (`lastError`), besides its
    /// status line and content type. Off by default: a receiver's answer can hold what a job's author
    /// should not read through the farm.
    public var recordFailureBodies = false
    /// Where a job's delivery may connect (tests put a resolver of their own here).
    public var destination: @Sendable (WebhookURL) async -> WebhookDestination = { await WebhookDestination.of($0) }

    public init(owner: String, concurrency: Int = 16, timeout: Double = 10, retryFor: Double = 24 * 3600, backoff: Double = 5,
                maxBackoff: Double = 3600, poll: Double = 1) {
        self.owner = owner
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.retryFor = retryFor
        self.backoff = backoff
        self.maxBackoff = maxBackoff
        self.poll = poll
    }

    /// When the attempt numbered `attempt` (1 the first) that failed is tried again: the backoff
    /// doubled per attempt, capped, with ±20% jitter; nil when that is past the retry window.
    public func nextAttempt(after attempt: Int, eventAt: Date, now: Date, jitter: Double = Double.random(in: 0.8...1.2)) -> Date? {
        let delay = min(backoff * pow(2, Double(max(0, attempt - 1))), maxBackoff) * jitter
        let next = now.addingTimeInterval(delay)
        return next.timeIntervalSince(eventAt) <= retryFor ? next : nil
    }
}

/// The body of every webhook: the event's type, when it happened, and the job as `GET /api/jobs/{id}`
/// showed it then.
struct WebhookBody: Encodable {
    var type: String
    var timestamp: Date
    var data: JobView
}

/// Sends the outbox's deliveries, as one of a coordinator's services: claims due ones under leases (any
/// coordinator of the queue may, so one that dies loses nothing: its leases expire and another sends),
/// signs each per Standard Webhooks, POSTs it with async-http-client (no redirects followed: a receiver
/// cannot send the farm elsewhere), and records the outcome: delivered on a 2xx, else retried with
/// backoff until the retry window closes. A `notify` URL whose host the farm does not allow is refused,
/// never requested.
public final class WebhookDeliverer: Service {
    let store: any JobStore
    let secret: WebhookSecret
    let configuration: WebhookDelivererConfiguration
    let logger: Logger
    let client: HTTPClient
    /// The client's configuration: a job's `notify` delivery takes a client of its own with the checked
    /// address put in (`dnsOverride`), so that no second resolution can change where it connects.
    let http: HTTPClient.Configuration
    let metrics: WebhookMetrics
    /// Wakes the loop: the store recorded an event, or a delivery ended (a slot is free).
    private let wake = WorkSignal()
    private let inFlight = Atomic<Int>(0)

    public init(store: any JobStore, secret: WebhookSecret, configuration: WebhookDelivererConfiguration, logger: Logger,
                metrics: any MetricsFactory = MetricsSystem.factory) {
        self.store = store
        self.secret = secret
        self.configuration = configuration
        self.logger = logger
        self.metrics = WebhookMetrics(factory: metrics)
        var http = HTTPClient.Configuration()
        http.redirectConfiguration = .disallow
        http.timeout = .init(connect: .milliseconds(Int64(min(configuration.timeout, 5) * 1000)),
                             read: .milliseconds(Int64(configuration.timeout * 1000)))
        http.decompression = .disabled
        self.http = http
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
    }

    public func run() async throws {
        logger.info("sending webhooks", metadata: ["key": "\(secret.keyID)", "owner": "\(configuration.owner)"])
        await withDiscardingTaskGroup { group in
            // The store's own wake-ups (an event recorded by this process) wake the loop.
            group.addTask { [store, wake] in
                while !Task.isCancelled {
                    await store.waitForDeliveries(upTo: 30)
                    wake.signal()
                }
            }
            await withGracefulShutdownHandler {
                await sendUntilStopped(drainSeconds: configuration.drainSeconds)
            } onGracefulShutdown: { [wake] in
                wake.signal()
            }
            group.cancelAll()
        }
        try? await client.shutdown()  // stopping: nothing to lose
    }

    /// Claims and sends until shutdown. A graceful shutdown (the coordinator stopped first) still sends what
    /// is due then, such as the events of the coordinator's last jobs, for up to `drainSeconds`; what is
    /// left stays in the queue for the next sender.
    func sendUntilStopped(drainSeconds: Double = 5) async {
        var drainUntil: Date?
        await withDiscardingTaskGroup { senders in
            while !Task.isCancelled {
                if drainUntil == nil && Task.isShuttingDownGracefully { drainUntil = Date().addingTimeInterval(drainSeconds) }
                if let drainUntil, Date() >= drainUntil { break }
                let free = configuration.concurrency - inFlight.load(ordering: .relaxed)
                var claimed: [WebhookDelivery] = []
                if free > 0 {
                    do {
                        claimed = try await store.claimDeliveries(limit: free, owner: configuration.owner,
                                                                  leaseDuration: configuration.timeout + 5, at: Date())
                    } catch {
                        logger.warning("cannot claim webhook deliveries: \(error)")
                    }
                }
                for delivery in claimed {
                    inFlight.add(1, ordering: .relaxed)
                    senders.addTask { [self] in
                        await send(delivery)
                        inFlight.subtract(1, ordering: .relaxed)
                        wake.signal()
                    }
                }
                if drainUntil != nil && claimed.isEmpty && inFlight.load(ordering: .relaxed) == 0 {
                    // Draining for an idle exit: retries not yet due are waited for too.
                    guard configuration.drainPending, await hasPending() else { break }
                }
                if claimed.count < free || free <= 0 {
                    await wake.wait(upTo: drainUntil == nil ? configuration.poll : min(configuration.poll, 0.1))
                }
            }
        }
    }

    /// Whether any delivery is still pending in the queue (unknown counts as none: the exit says what is left).
    func hasPending() async -> Bool {
        ((try? await store.deliveries(matching: DeliveryQuery(states: [.pending], limit: 1))) ?? []).isEmpty == false  // see above
    }

    /// One attempt of one delivery, and its outcome recorded under its lease.
    func send(_ delivery: WebhookDelivery) async {
        let outcome = await attempt(delivery)
        switch outcome {
        case .delivered: metrics.delivered(latency: Date().timeIntervalSince(delivery.eventAt))
        case .retry: metrics.ended("retried")
        case .gaveUp: metrics.ended("failed")
        case .refused: metrics.ended("refused")
        }
        do {
            if try await store.finishDelivery(id: delivery.id, token: delivery.leaseToken ?? "", outcome: outcome, at: Date()) == false {
                logger.notice("webhook delivery \(delivery.id): its lease was taken over before its outcome was recorded")
            }
        } catch {
            // The lease expires and another sender tries again: a duplicate, never a loss.
            logger.warning("webhook delivery \(delivery.id): the outcome could not be recorded: \(error)")
        }
        switch outcome {
        case .delivered(let status):
            logger.debug("webhook delivered", metadata: ["delivery": "\(delivery.id)", "url": "\(delivery.url)", "status": "\(status)"])
        case let .retry(_, error, next):
            logger.notice("webhook to \(delivery.url) for job \(delivery.jobID) (attempt \(delivery.attempts)): \(error); trying again at \(next.formatted(.iso8601))")
        case let .gaveUp(_, error):
            logger.error("webhook to \(delivery.url) for job \(delivery.jobID): \(error); given up after \(delivery.attempts) attempts")
        case .refused(let error):
            logger.error("webhook to \(delivery.url) for job \(delivery.jobID) refused: \(error)")
        }
    }

    func attempt(_ delivery: WebhookDelivery) async -> DeliveryOutcome {
        guard delivery.allowed else {
            let host = (try? WebhookURL.parse(delivery.url).get())?.hostKey ?? delivery.url  // names the host in the refusal, or the whole URL
            return .refused("the host \(host) is not one the farm sends webhooks to (coordinator --webhook-allow-host)")
        }
        let job: Job
        do {
            job = try delivery.jobAtEvent()
        } catch {
            return .gaveUp(status: nil, error: "the event's job could not be read: \(error)")
        }
        let body: Data
        do {
            body = try JSONEncoder.api.encode(WebhookBody(type: delivery.type, timestamp: delivery.eventAt, data: JobView(job, now: delivery.eventAt)))
        } catch {
            return .gaveUp(status: nil, error: "the body could not be encoded: \(error)")
        }
        let id = "msg_\(delivery.id)"
        let timestamp = Int(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: delivery.url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "MediaFarm-Webhooks")
        request.headers.add(name: "webhook-id", value: id)
        request.headers.add(name: "webhook-timestamp", value: String(timestamp))
        request.headers.add(name: "webhook-signature", value: WebhookSignature.sign(id: id, timestamp: timestamp, body: body, secret: secret))
        request.body = .bytes(ByteBuffer(bytes: body))
        let failure: (status: Int?, error: String)
        var client = self.client
        if delivery.origin != "endpoint" {
            switch await destination(delivery.url) {
            case .refused(let reason): return .refused(reason)
            case .unresolved(let reason): return retryOrGiveUp(delivery, status: nil, error: reason)
            case .connect(let address?):
                // The host as the client reads it (Foundation's URL), which must be the one checked: else the
                // client would look up a name no one checked.
                let read = URL(string: delivery.url)?.host ?? ""
                guard read.lowercased() == (try? WebhookURL.parse(delivery.url).get())?.host else {  // parsed by `destination` above
                    return .refused("\(delivery.url): its host reads differently to the check and to the connection; write it in ASCII")
                }
                var pinned = http
                pinned.dnsOverride[read] = address
                pinned.dnsOverride[read.lowercased()] = address
                client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: pinned)
            case .connect(nil): break
            }
        }
        defer {
            // A delivery's own client ends with it (its connection is never reused for another name).
            if client !== self.client { Task { [client] in try? await client.shutdown() } }  // nothing is in flight on it
        }
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(configuration.timeout * 1000)), logger: logger)
            let status = Int(response.status.code)
            if (200..<300).contains(status) {
                _ = try? await response.body.collect(upTo: 64 << 10)  // delivered: the body is read only to free the connection
                return .delivered(status: status)
            }
            var said = response.headers.first(name: "content-type").map { " (\(UserText.printable($0.prefix(100))))" } ?? ""
            if configuration.recordFailureBodies, let text = try? await response.body.collect(upTo: 4 << 10) {  // the status is the failure
                let body = UserText.printable(String(decoding: text.readableBytesView.prefix(200), as: UTF8.self))
                if !body.isEmpty { said += ": \(body)" }
            }
            var text = "HTTP \(status) \(UserText.printable(response.status.reasonPhrase.prefix(100)))" + said
            if status == 401 || status == 403 {
                text += "; the receiver refused the request: compare its secret with the one of key \(secret.keyID) (this coordinator's --webhook-secret-file)"
            }
            failure = (status, text)
        } catch {
            failure = (nil, Self.describe(error))
        }
        return retryOrGiveUp(delivery, status: failure.status, error: failure.error)
    }

    /// A failed attempt: tried again after the backoff, or given up when that is past the retry window.
    func retryOrGiveUp(_ delivery: WebhookDelivery, status: Int?, error: String) -> DeliveryOutcome {
        if let next = configuration.nextAttempt(after: delivery.attempts, eventAt: delivery.eventAt, now: Date()) {
            return .retry(status: status, error: error, next: next)
        }
        return .gaveUp(status: status, error: error)
    }

    /// Where a job's delivery to `url` may connect (a URL that does not parse was refused at submission).
    func destination(_ url: String) async -> WebhookDestination {
        guard let parsed = try? WebhookURL.parse(url).get() else { return .refused("\(url) is not a webhook URL") }  // the reason is the refusal
        return await configuration.destination(parsed)
    }


    /// A failed request in words: refused connection, timeout, TLS.
    static func describe(_ error: any Error) -> String {
        if let e = error as? HTTPClientError {
            switch e {
            case .connectTimeout: return "no connection within the timeout"
            case .readTimeout, .deadlineExceeded: return "no answer within the timeout"
            case .remoteConnectionClosed: return "the receiver closed the connection"
            default: return "\(e)"
            }
        }
        let text = String(describing: error)
        if text.contains("connectionRefused") || text.contains("Connection refused") { return "connection refused" }
        return text
    }
}

/// What the sender counts, through swift-metrics.
struct WebhookMetrics: Sendable {
    static let latencyLabel = "mediafarm_webhook_delivery_latency_seconds"
    let factory: any MetricsFactory
    let latency: Metrics.Timer

    init(factory: any MetricsFactory) {
        self.factory = factory
        latency = Metrics.Timer(label: Self.latencyLabel, factory: factory)
    }

    /// An attempt ended: `delivered`, `retried`, `failed` (given up) or `refused`.
    func ended(_ outcome: String) {
        Counter(label: "mediafarm_webhook_deliveries_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// A 2xx came back, `latency` seconds after the event was recorded.
    func delivered(latency seconds: Double) {
        ended("delivered")
        latency.recordSeconds(max(0, seconds))
    }
}
