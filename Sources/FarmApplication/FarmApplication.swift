import FarmHTTP
import FarmModel
import FarmRuntime
import FarmStore
import FarmWebhooks
import Foundation
import Logging
import Metrics
import ServiceLifecycle

/// A coordinator process built as a library: the coordinator, and beside it the HTTP face and the webhook
/// deliverer when asked, in one service group that drains on SIGTERM and SIGINT. The command line parses
/// its options into this and prints what it says; a test can build and run the same group in-process.
public struct FarmApplication: Sendable {
    /// What runs beside the coordinator.
    public struct Faces: Sendable {
        /// The HTTP face's settings; nil: no HTTP face.
        public var http: HTTPFaceConfiguration?
        /// The HTTP face's token was made for this run: it is said, with the address that signs a browser in.
        public var tokenMadeForThisRun = false
        /// Webhook endpoints and allowed hosts this coordinator adds to the queue.
        public var webhookEndpoints: [WebhookEndpoint] = []
        public var webhookAllowHosts: [String] = []
        /// The secret webhooks are signed with, and how they are delivered; nil: this coordinator does not
        /// deliver them (another one with the secret does).
        public var webhookDelivery: (secret: WebhookSecret, configuration: WebhookDelivererConfiguration)?
        /// The Kubernetes pod this coordinator runs in: its deletion cost is kept current (`PodDeletionCost`).
        public var pod: KubernetesPod?

        public init() {}
    }

    /// Why the application could not be built: what to say, as it is.
    public struct BuildError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let coordinator: Coordinator
    public let group: ServiceGroup
    /// The HTTP face, when there is one.
    public let face: HTTPFace?

    /// The coordinator process: `events` hears every event of the process (the coordinator's, and the HTTP
    /// face's own: one bus, which `/api/events` reads too),
    /// `notice` what the process says on its own account (listening, webhooks, actions taken on the face).
    /// `stopSignals`: SIGTERM and SIGINT drain it (the process's own application); false for one built in a
    /// program that is not a coordinator (a test), which stops it with `group.triggerGracefulShutdown()`.
    public static func coordinator(store: any JobStore, configuration: CoordinatorConfiguration, faces: Faces, stopSignals: Bool = true,
                                   events: @escaping @Sendable (CoordinatorEvent) -> Void,
                                   notice: @escaping @Sendable (String) -> Void) async throws(BuildError) -> FarmApplication {
        var configuration = configuration
        let metrics = faces.http.map { _ in FarmMetrics() }
        configuration.metricsFactory = metrics?.factory
        // One bus: the coordinator's events and the face's own reach the printer and `/api/events` alike.
        let bus = EventBus()
        bus.subscribe(events)
        let coordinator = Coordinator(store: store, configuration: configuration, events: { bus.publish($0) })
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        var face: HTTPFace?
        if let http = faces.http, let metrics {
            let tokenMadeForThisRun = faces.tokenMadeForThisRun
            let httpFace = HTTPFace(configuration: http, coordinator: coordinator, store: store, metrics: metrics, logger: Logger(label: "mediafarm.http"),
                            events: bus, onListening: { address in
                                notice("http: listening on \(address)" + (http.token == nil ? " (no authentication: --no-auth)" : " (bearer token required)"))
                                if let token = http.token, tokenMadeForThisRun {
                                    notice("http: this run's token is \(token); open http://\(address)/?token=\(token) to sign in")
                                }
                            },
                            onAction: { notice("http: " + $0) })
            face = httpFace
            // Before the coordinator: a graceful shutdown stops the coordinator first (draining while
            // /readyz says 503), then the server.
            services.append(.init(service: httpFace))
        }
        services += try await webhookServices(store: store, faces: faces, owner: configuration.owner, metrics: metrics, notice: notice)
        if let pod = faces.pod {
            // Its end (a refusal, said once) leaves the coordinator running.
            services.append(.init(service: PodDeletionCost(pod: pod, coordinator: coordinator, notice: notice), successTerminationBehavior: .ignore))
        }
        services.append(.init(service: coordinator, successTerminationBehavior: .gracefullyShutdownGroup))
        return FarmApplication(coordinator: coordinator, group: group(services, label: "mediafarm.coordinator", stopSignals: stopSignals), face: face)
    }

    /// A batch: the coordinator alone, on the batch's own queue, until it is idle.
    public static func batch(store: any JobStore, configuration: CoordinatorConfiguration,
                             events: @escaping @Sendable (CoordinatorEvent) -> Void) -> FarmApplication {
        let coordinator = Coordinator(store: store, configuration: configuration, events: events)
        return FarmApplication(coordinator: coordinator,
                               group: group([.init(service: coordinator, successTerminationBehavior: .gracefullyShutdownGroup)], label: "mediafarm.batch"),
                               face: nil)
    }

    /// The webhooks this coordinator adds to the queue, and the deliverer when it has the secret.
    private static func webhookServices(store: any JobStore, faces: Faces, owner: String, metrics: FarmMetrics?,
                                        notice: @Sendable (String) -> Void) async throws(BuildError) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        if !faces.webhookEndpoints.isEmpty || !faces.webhookAllowHosts.isEmpty {
            do {
                try await store.registerWebhooks(faces.webhookEndpoints, allowing: faces.webhookAllowHosts, by: owner, at: Date())
            } catch {
                throw BuildError(description: "webhooks: \(error)")
            }
        }
        guard let (secret, configuration) = faces.webhookDelivery else {
            if !faces.webhookEndpoints.isEmpty {
                notice("webhooks: endpoints added to the queue; this coordinator does not send them (no --webhook-secret-file): another one with the secret does")
            }
            return []
        }
        // Before the coordinator: it stops first, and the events of its last jobs are sent before this stops.
        let deliverer = WebhookDeliverer(store: store, secret: secret, configuration: configuration, logger: Logger(label: "mediafarm.webhooks"),
                                         metrics: metrics?.factory ?? MetricsSystem.factory)
        notice("webhooks: delivering the queue's webhooks, signed with key \(secret.keyID)")
        return [.init(service: deliverer, successTerminationBehavior: .gracefullyShutdownGroup)]
    }

    /// `services` with the stop signals' watcher: SIGTERM and SIGINT drain from the program's first moment
    /// (caught before main, kept until here). Without it (`stopSignals` false), only the group's own
    /// shutdown stops it: a signal the program caught once would end every group built after it.
    private static func group(_ services: [ServiceGroupConfiguration.ServiceConfiguration], label: String, stopSignals: Bool = true) -> ServiceGroup {
        guard stopSignals else {
            return ServiceGroup(configuration: ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [], logger: Logger(label: label)))
        }
        return ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services + [.init(service: StopSignals.Watcher(), successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: StopSignals.shared.lifecycleSignals, logger: Logger(label: label)))
    }
}
