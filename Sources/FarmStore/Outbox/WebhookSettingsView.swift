import FarmModel
import Foundation

/// The farm's webhook settings and figures as people and programs read them: `webhooks list --json`
/// and `GET /api/webhooks` print this one type with one encoding (dates in RFC 3339).
public struct WebhookSettingsView: Encodable, Sendable {
    public struct Endpoint: Encodable, Sendable {
        public var url: String
        /// The event types it is sent (absent: all of them).
        public var events: [String]?
        public var addedBy: String
        public var addedAt: Date
    }

    public struct Host: Encodable, Sendable {
        public var host: String
        public var addedBy: String
        public var addedAt: Date
    }

    public var endpoints: [Endpoint]
    public var allowedHosts: [Host]
    /// Deliveries by state: pending, delivered, failed, refused.
    public var deliveries: [String: Int]
    /// When the event of the oldest pending delivery happened.
    public var oldestPendingAt: Date?
    /// The newest deliveries that failed or were refused (at most 20).
    public var failed: [DeliveryView]

    public init(_ settings: WebhookSettings, failed: [WebhookDelivery]) {
        endpoints = settings.endpoints.map { Endpoint(url: $0.url, events: $0.events, addedBy: $0.addedBy, addedAt: $0.addedAt) }
        allowedHosts = settings.allowedHosts.map { Host(host: $0.host, addedBy: $0.addedBy, addedAt: $0.addedAt) }
        deliveries = Dictionary(uniqueKeysWithValues: WebhookDeliveryState.allCases.map { ($0.rawValue, settings.counts[$0] ?? 0) })
        oldestPendingAt = settings.oldestPendingAt
        self.failed = failed.map(DeliveryView.init)
    }

    /// `store`'s settings, with its newest failed or refused deliveries.
    public static func of(_ store: any JobStore, at now: Date) async throws(JobStoreError) -> WebhookSettingsView {
        WebhookSettingsView(try await store.webhookSettings(at: now), failed: try await failures(store))
    }

    /// `store`'s newest failed or refused deliveries (at most 20).
    public static func failures(_ store: any JobStore) async throws(JobStoreError) -> [WebhookDelivery] {
        try await store.deliveries(matching: DeliveryQuery(states: [.failed, .refused], limit: 20))
    }
}
