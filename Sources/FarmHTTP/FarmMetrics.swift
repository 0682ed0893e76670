import FarmModel
import FarmRuntime
import FarmStore
import Foundation
import QualityModel

import Prometheus
import Synchronization

/// The Prometheus side of the coordinator: a registry of its own (not the process-global one, so that
/// several coordinators in one process do not mix), the swift-metrics factory the coordinator counts
/// through, and the gauges that describe the queue, refreshed from the store at each scrape.
public final class FarmMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    public let factory: PrometheusMetricsFactory
    /// Hosts that had running jobs at an earlier scrape: their gauge drops to 0 rather than going stale.
    private let hostsSeen = Mutex<Set<String>>([])

    public init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[CoordinatorMetrics.durationLabel] = CoordinatorMetrics.durationBuckets.map { .milliseconds(Int64($0 * 1000)) }
        factory.durationHistogramBuckets["mediafarm_webhook_delivery_latency_seconds"] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 60, 600, 3600, 86400]
            .map { .microseconds(Int64($0 * 1_000_000)) }
        factory.durationHistogramBuckets[CoordinatorMetrics.latenessLabel] = CoordinatorMetrics.latenessBuckets.map { .microseconds(Int64($0 * 1_000_000)) }
        self.factory = factory
        // Counters a fresh coordinator has not touched yet still appear, at 0.
        // (The coordinator's counters carry no help text: swift-metrics has none to give.)
        for outcome in ["succeeded", "failed", "crashed", "timed_out", "released", "cancelled", "lost", "stale"] {
            _ = registry.makeCounter(descriptor: Self.name("attempts_total"), labels: [("outcome", outcome)])
        }
        for kind in ["requeued", "dead", "publication_completed"] {
            _ = registry.makeCounter(descriptor: Self.name("rescues_total"), labels: [("kind", kind)])
        }
        for reason in ["jobs", "memory", "unclean", "died", "stopped"] {
            _ = registry.makeCounter(descriptor: Self.name("worker_retirements_total"), labels: [("reason", reason)])
        }
        for outcome in ["delivered", "retried", "failed", "refused"] {
            _ = registry.makeCounter(descriptor: Self.name("webhook_deliveries_total"), labels: [("outcome", outcome)])
        }
        for verdict in CheckVerdict.allCases {
            _ = registry.makeCounter(descriptor: Self.name("check_verdicts_total"), labels: [("verdict", verdict.rawValue)])
        }
        for kind in GuessLimiter.Kind.allCases {
            _ = registry.makeCounter(descriptor: Self.name("http_auth_failures_total"), labels: [("kind", kind.rawValue)])
        }
        for name in ["claims_total", "lease_renewals_total", "output_bytes_total"] {
            _ = registry.makeCounter(descriptor: Self.name(name))
        }
    }

    static func name(_ name: String, help: String = "") -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "mediafarm", metricName: name, unitName: "", helpText: help)
    }

    private func gauge(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> Prometheus.Gauge {
        registry.makeGauge(descriptor: Self.name(name, help: help), labels: labels)
    }

    /// Sets the gauges from the queue and the coordinator, then renders every metric in the text format.
    func scrape(stats: QueueStats?, webhooks: WebhookSettings? = nil, pauses: [QueuePause]? = nil, scaling: ScalingDemand? = nil,
                snapshot: CoordinatorSnapshot, now: Date) -> [UInt8] {
        if let scaling {
            gauge("scaling_jobs", """
                Due queued jobs this coordinator's kind (its host and --provides) could claim plus jobs running on its kind: what \
                KEDA's query reads (`mediafarm queue depth`); an autoscaler's target is --workers of them a coordinator.
                """).set(Double(scaling.jobs))
        }
        if let pauses {
            gauge("queue_pauses", "Pauses of claiming in the queue (the farm's, hosts', coordinators').").set(Double(pauses.count))
            gauge("claiming_paused", "1 when a pause stops this coordinator's claims (queue pause).")
                .set(pauses.contains { $0.stops(owner: snapshot.owner) } ? 1.0 : 0.0)
        }
        if let webhooks {
            for state in WebhookDeliveryState.allCases {
                gauge("webhook_deliveries", "Webhook deliveries in the queue by state.", [("state", state.rawValue)])
                    .set(Double(webhooks.counts[state] ?? 0))
            }
            gauge("webhook_oldest_pending_age_seconds", "How long ago the event of the oldest undelivered webhook happened.")
                .set(webhooks.oldestPendingAt.map { max(0, now.timeIntervalSince($0)) } ?? 0)
        }
        if let stats {
            let shown = stats.shown
            for state in ShownState.allCases {
                gauge("jobs", "Jobs in the queue by state (queued: due now; delayed: queued, not due yet).", [("state", state.rawValue)])
                    .set(Double(shown[state] ?? 0))
            }
            gauge("queue_depth", "Queued jobs, due now or not yet.")
                .set(Double(stats.counts[JobState.queued.rawValue] ?? 0))
            gauge("oldest_queued_age_seconds", "How long the longest-waiting due job has waited.")
                .set(stats.oldestDueAt.map { max(0, now.timeIntervalSince($0)) } ?? 0)
            let hosts = hostsSeen.withLock { seen -> Set<String> in
                seen.formUnion(stats.runningByHost.keys)
                return seen
            }
            for host in hosts {
                gauge("running_jobs", "Running jobs by the host holding their lease.", [("host", host)])
                    .set(Double(stats.runningByHost[host] ?? 0))
            }
        }
        gauge("queue_up", "1 when the queue answered this scrape.").set(stats == nil ? 0.0 : 1.0)
        gauge("worker_slots", "This coordinator's worker slots.", [("state", "busy")])
            .set(Double(snapshot.busySlots))
        gauge("worker_slots", "This coordinator's worker slots.", [("state", "free")])
            .set(Double(snapshot.freeSlots))
        gauge("draining", "1 while the coordinator drains (SIGTERM).").set(snapshot.draining ? 1.0 : 0.0)
        return registry.emitToBuffer()
    }
}
