import Foundation
import Metrics
import QualityModel

/// What a coordinator counts as it works, through swift-metrics: the process chooses the backend (the HTTP
/// face's Prometheus registry), a coordinator without one counts into the no-op backend. Names follow
/// Prometheus conventions (`_total` counters, seconds).
public struct CoordinatorMetrics: Sendable {
    /// The buckets of `mediafarm_job_duration_seconds`: a second to two hours.
    public static let durationBuckets: [Double] = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200]
    public static let durationLabel = "mediafarm_job_duration_seconds"
    /// How late each turn of the lease heartbeat began (after its 0.25 s wait): a millisecond to 2.5 s.
    public static let latenessLabel = "mediafarm_heartbeat_lateness_seconds"
    public static let latenessBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

    let factory: any MetricsFactory
    let claims: Counter
    let renewals: Counter
    let outputBytes: Counter
    let duration: Metrics.Timer
    let heartbeatLateness: Metrics.Timer

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        claims = Counter(label: "mediafarm_claims_total", factory: factory)
        renewals = Counter(label: "mediafarm_lease_renewals_total", factory: factory)
        outputBytes = Counter(label: "mediafarm_output_bytes_total", factory: factory)
        duration = Metrics.Timer(label: Self.durationLabel, factory: factory)
        heartbeatLateness = Metrics.Timer(label: Self.latenessLabel, factory: factory)
    }

    /// An attempt ended: `outcome` is succeeded, failed, crashed, timed_out, released, cancelled, lost or stale.
    func attemptEnded(_ outcome: String, seconds: Double) {
        Counter(label: "mediafarm_attempts_total", dimensions: [("outcome", outcome)], factory: factory).increment()
        if seconds > 0 { duration.recordSeconds(seconds) }
    }

    /// A job's quality checks gave `verdict` (`mediafarm_check_verdicts_total{verdict}`).
    func checked(_ verdict: CheckVerdict) {
        Counter(label: "mediafarm_check_verdicts_total", dimensions: [("verdict", verdict.rawValue)], factory: factory).increment()
    }

    /// A kept worker process ended: `kind` is jobs, memory, unclean, died or stopped (`WorkerRetirement`).
    func workerRetired(_ kind: String) {
        Counter(label: "mediafarm_worker_retirements_total", dimensions: [("reason", kind)], factory: factory).increment()
    }

    /// The rescuer acted on an expired lease: `requeued`, `dead`, or `publication_completed`.
    func rescued(_ kind: String) {
        Counter(label: "mediafarm_rescues_total", dimensions: [("kind", kind)], factory: factory).increment()
    }

    /// Files just published: their sizes are added to the bytes written.
    func published(_ paths: [String]) {
        let bytes = paths.reduce(Int64(0)) { sum, path in
            sum + (((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0)  // a file gone since counts nothing
        }
        if bytes > 0 { outputBytes.increment(by: bytes) }
    }
}

/// A coordinator's own view, for its HTTP face: its slots, its running jobs with their live progress, and
/// when each of its loops last turned (a loop that stopped turning makes the process unhealthy).
public struct CoordinatorSnapshot: Sendable {
    public struct RunningJob: Sendable {
        public var id: Int64
        public var name: String
        public var attempt: Int
        public var pid: Int32?
        public var started: Date
        public var fraction: Double?
        public var phase: String?
        /// The worker's estimate of the seconds left.
        public var eta: Double?
    }

    public var owner: String
    public var workers: Int
    public var draining: Bool
    public var startedAt: Date
    public var running: [RunningJob]
    /// The last turn of the claimer, the lease heartbeat and the rescuer; nil before the first.
    public var loops: [String: Date]
    /// What it provides (`--provides`): with its host and slots, the kind an autoscaler counts it in.
    public var provides: [String] = []

    public var busySlots: Int { running.count }
    public var freeSlots: Int { max(0, workers - running.count) }
}
