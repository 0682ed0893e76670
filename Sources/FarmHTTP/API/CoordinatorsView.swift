import FarmModel
import FarmRuntime
import FarmStore
import Foundation
import Hummingbird

extension FaceController {
    /// Every coordinator in the queue's list, this one with its slots as they are now (it may not have
    /// reported yet).
    func coordinators(at now: Date) async throws -> [CoordinatorView] {
        let snapshot = coordinator.snapshot
        let me = CoordinatorPresence(owner: snapshot.owner, host: Job.host(ofOwner: snapshot.owner), slots: snapshot.workers,
                                     busy: snapshot.busySlots, draining: snapshot.draining,
                                     startedAt: snapshot.startedAt, seenAt: now, provides: coordinator.configuration.provides)
        var all = try await store.registry.all().filter { $0.owner != me.owner }
        let pauses = try await store.pauses.all()
        all.append(me)
        all.sort { ($0.host, $0.owner) < ($1.host, $1.owner) }
        return all.map { CoordinatorView($0, now: now, silentAfter: coordinator.configuration.silentAfter, this: $0.owner == me.owner, pauses: pauses) }
    }
}
