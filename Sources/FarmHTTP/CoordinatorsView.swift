import FarmModel
import FarmRuntime
import FarmStore
import Foundation
import Hummingbird

/// One coordinator of the farm as the status page and `GET /api/coordinators` show it: its last report in
/// the queue's list, or, for the coordinator serving the request, its state now.
struct CoordinatorView: Encodable, Sendable {
    var owner: String
    var host: String
    var slots: Int
    var busy: Int
    var free: Int
    var draining: Bool
    var startedAt: Date
    var seenAt: Date
    var secondsSinceReport: Double
    /// Not heard from for three report intervals: stopped without saying so, or cut off from the queue.
    var silent: Bool
    var thisCoordinator: Bool

    init(_ presence: CoordinatorPresence, now: Date, silentAfter: Double, this: Bool) {
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
    }
}

extension HTTPFace {
    /// Every coordinator in the queue's list, this one with its slots as they are now (it may not have
    /// reported yet).
    func coordinators(at now: Date) async throws -> [CoordinatorView] {
        let snapshot = coordinator.snapshot
        let me = CoordinatorPresence(owner: snapshot.owner, host: Job.host(ofOwner: snapshot.owner), slots: snapshot.workers,
                                     busy: snapshot.busySlots, draining: snapshot.draining,
                                     startedAt: snapshot.startedAt, seenAt: now)
        var all = try await CoordinatorRegistry(try store.database).all().filter { $0.owner != me.owner }
        all.append(me)
        all.sort { ($0.host, $0.owner) < ($1.host, $1.owner) }
        return all.map { CoordinatorView($0, now: now, silentAfter: coordinator.configuration.silentAfter, this: $0.owner == me.owner) }
    }

    func coordinatorList() async throws -> Response {
        struct Body: Encodable { var coordinators: [CoordinatorView] }
        do {
            return .json(Body(coordinators: try await coordinators(at: Date())))
        } catch {
            throw APIError(status: .serviceUnavailable, message: "the queue's list of coordinators: \(error)")
        }
    }
}
