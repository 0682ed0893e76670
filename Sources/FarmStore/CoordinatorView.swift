import FarmStore
import Foundation

/// One coordinator of the farm as the status page, `GET /api/coordinators` and `queue stats --json` show it:
/// its last report in the queue's list, or, for the coordinator serving the request, its state now
/// (`thisCoordinator`; always false from the command line, which is no coordinator).
public struct CoordinatorView: Encodable, Sendable {
    public var owner: String
    public var host: String
    public var slots: Int
    public var busy: Int
    public var free: Int
    public var draining: Bool
    public var startedAt: Date
    public var seenAt: Date
    public var secondsSinceReport: Double
    /// Not heard from for three report intervals: stopped without saying so, or cut off from the queue.
    public var silent: Bool
    public var thisCoordinator: Bool
    /// Claiming paused for it (the farm's, its host's or its own pause: `queue pause`): it takes no new job.
    public var paused: Bool
    /// What it provides (`--provides`): jobs that require these may run there.
    public var provides: [String]

    public init(_ presence: CoordinatorPresence, now: Date, silentAfter: Double, this: Bool, pauses: [QueuePause]) {
        owner = presence.owner
        host = presence.host
        slots = presence.slots
        busy = presence.busy
        free = max(0, presence.slots - presence.busy)
        draining = presence.draining
        startedAt = presence.startedAt
        seenAt = presence.seenAt
        secondsSinceReport = presence.secondsSinceReport(at: now)
        silent = !this && secondsSinceReport > silentAfter
        thisCoordinator = this
        paused = pauses.contains { $0.stops(owner: presence.owner) }
        provides = presence.provides
    }
}
