import FarmStore
import FarmLibrary
import FarmModel
import Foundation
import MediaTime
import Metrics

/// How a coordinator runs its workers. Times are seconds.
public struct CoordinatorConfiguration: Sendable {
    /// Worker processes at once: jobs are claimed only for free slots.
    public var workers: Int = 2
    /// How long a claim holds without renewal; a coordinator that stops renewing loses its jobs to the rescuer.
    public var leaseDuration: Double = 30
    /// How often running jobs are checked for cancellation, lost leases and timeouts.
    public var checkInterval: Double = 0.25
    /// How often leases are renewed and progress recorded.
    public var renewInterval: Double = 1
    /// How often the queue is looked at when slots are free (at first: with a queue that does not
    /// notify, idle polls back off up to the store's `idlePollLimit`).
    public var pollInterval: Double = 0.01
    /// With a queue that notifies of new work: the longest idle wait between looks at the queue.
    public var idleWait: Double = 2
    /// How often the coordinator reports its slots in the queue's list of coordinators (status pages on
    /// every host show it; one not heard from for three of these is shown as silent).
    public var presenceInterval: Double = CoordinatorPresence.reportInterval
    /// A coordinator not heard from for this long is shown as silent: three report intervals.
    public var silentAfter: Double { 3 * presenceInterval }
    /// How often expired leases are looked for.
    public var rescueInterval: Double = 1
    /// Finished jobs are deleted this many seconds after they finished; nil keeps them.
    public var keepFinished: Double? = 30 * 86400
    /// How often finished jobs are pruned.
    public var pruneInterval: Double = 3600
    /// Wall-clock limit of one attempt, unless the job sets its own.
    public var jobTimeout: Double = 3600
    /// On SIGTERM: how long running jobs may take to finish before they are stopped and given back.
    public var grace: Double = 30
    /// Process the queue, then exit (non-zero when a job failed).
    public var exitWhenIdle = false
    /// Exit once this coordinator has run nothing and found nothing it could claim for this many seconds,
    /// whatever runs elsewhere (a pod of a Kubernetes ScaledJob); nil: run until told to stop.
    public var exitAfterIdle: Double?
    /// The worker program; the worker's arguments are appended. Default: this executable's `worker`.
    public var workerCommand: [String] = [WorkerProcess.currentExecutable, "worker"]
    public var limits: WorkerLimits = .default
    /// Keep a worker process (`worker --standby`) waiting for each free slot, and run job after job in it
    /// (up to `recycling`), so that a claimed job neither waits for nor pays for a process start.
    public var standbyWorkers = true
    /// When a kept worker process is replaced by a new one.
    public var recycling: WorkerRecycling = .default
    /// Jobs claimed beyond the free slots while recent jobs are short (shorter than `claimAheadBelow`
    /// seconds on average): the next job starts the moment a worker is free, without a claim's round
    /// trip. Their leases are renewed with the running jobs'; one that waits longer than
    /// `claimAheadHold` goes back to the queue.
    public var claimAhead: Int = 2
    public var claimAheadBelow: Double = 1
    public var claimAheadHold: Double = 2
    /// Constant-frame-rate exports whose manifest gives no `chunkSeconds` are chunked as if it said these
    /// (`--chunk-seconds`, `--chunk-above`); nil: only those whose manifest asks.
    public var defaultChunking: DefaultChunking?
    /// Answer a job from an earlier job's result with the same content, and record the results of jobs
    /// that may answer later ones (`ResultReuse`); a manifest's `"reuse": false` opts out.
    public var reuseResults = true
    /// What this host provides (`--provides gpu`): it claims only jobs whose requirements are among these
    /// (and whose `asset:ID` inputs are present on its host, the host part of `owner`).
    public var provides: [String] = []
    /// This coordinator's name in leases: "host:pid:random".
    public var owner: String = CoordinatorConfiguration.defaultOwner()
    /// The asset library of this host: `asset:ID` inputs are resolved to its paths before a worker starts,
    /// and each exported output of a job whose sources are in the library is registered as their
    /// representation. nil: manifests that name assets fail.
    public var library: AssetLibrary?
    /// Where the coordinator's counters go (`CoordinatorMetrics`); nil: swift-metrics' global factory.
    public var metricsFactory: (any MetricsFactory)?

    public init() {}

    /// "host:pid:random", with this machine's short host name unless `host` is given.
    public static func defaultOwner(host: String? = nil) -> String {
        let host = host ?? ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        return "\(host):\(getpid()):\(String(UInt16.random(in: 0...UInt16.max), radix: 16))"
    }
}

/// What a coordinator reports as it works.

/// When a job passed each step between the queue and its worker (wall-clock times): the claimer's turn
/// that claimed it began (`woke`: after a notification, a freed slot or a poll), the claim returned, and
/// the job was handed to its worker process. With the job's submission time and the worker's first
/// event, the hops of a pickup (`bench/farm` reports them).
public struct PickupHops: Sendable, Hashable {
    public var woke: Date
    public var claimed: Date
    public var handed: Date

    public init(woke: Date, claimed: Date, handed: Date) {
        self.woke = woke
        self.claimed = claimed
        self.handed = handed
    }
}

/// A coordinator's chunking for constant-frame-rate exports that do not choose: chunks of about `seconds`,
/// for exports longer than `above` (any length when nil).
public struct DefaultChunking: Sendable, Hashable {
    public var seconds: Double
    public var above: Double?

    public init(seconds: Double, above: Double? = nil) {
        self.seconds = seconds
        self.above = above
    }

    /// `manifest` with these chunks (`JobManifest.chunked`), when it is a constant-frame-rate export or a
    /// package that chooses none and is not a chunk; nil when nothing is to change.
    public func applied(to manifest: JobManifest) -> JobManifest? {
        // The numbers were checked as the coordinator's options were read (2...3600 s, at most 6 decimals as
        // written here): one that did not read back would chunk nothing.
        guard let every = try? MediaTime(parsing: MediaTime.formatSeconds(seconds)) else { return nil }
        let above = self.above.flatMap { try? MediaTime(parsing: MediaTime.formatSeconds($0)) }  // as `every`
        return manifest.chunked(every: every, above: above)
    }
}

extension PickupHops {
    /// As an event carries them: the seconds between the steps, from when the job was `due` (negative
    /// `wait`: the turn that claimed it began just before it came due); they add up to its `queuedFor`.
    public func event(due: Date) -> CoordinatorEvent.Hops {
        CoordinatorEvent.Hops(wait: woke.timeIntervalSince(due), claim: claimed.timeIntervalSince(woke), hand: handed.timeIntervalSince(claimed))
    }
}
