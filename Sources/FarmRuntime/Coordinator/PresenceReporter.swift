import FarmModel
import FarmStore
import Foundation
import Synchronization

/// The queue's list of coordinators: this coordinator's slots, reported every few seconds, and its row
/// removed when it stops, so that status pages on every host show the whole farm. Also the queue's depth
/// for the console's charts, once a minute.
final class PresenceReporter: Sendable {
    let store: any JobStore
    let configuration: CoordinatorConfiguration
    let events: @Sendable (CoordinatorEvent) -> Void
    let now: @Sendable () -> Date
    /// The coordinator as it is now.
    let snapshot: @Sendable () -> CoordinatorSnapshot
    /// The minute whose depth this coordinator recorded last.
    private let sampledMinute = Mutex<Double?>(nil)

    init(store: any JobStore, configuration: CoordinatorConfiguration, events: @escaping @Sendable (CoordinatorEvent) -> Void,
         now: @escaping @Sendable () -> Date, snapshot: @escaping @Sendable () -> CoordinatorSnapshot) {
        (self.store, self.configuration, self.events, self.now, self.snapshot) = (store, configuration, events, now, snapshot)
    }

    /// Reports this coordinator in the queue's list every `presenceInterval` (a loop of its own, so that a
    /// slow report never delays the lease heartbeat), until draining has ended every job. A failure is said
    /// once, until a report succeeds again: the list is for people looking at the farm; jobs do not depend on it.
    func run() async {
        var failing = false
        while true {
            let snapshot = self.snapshot()
            let presence = CoordinatorPresence(owner: snapshot.owner, host: Job.host(ofOwner: snapshot.owner), slots: snapshot.workers,
                                               busy: snapshot.busySlots, draining: snapshot.draining, startedAt: snapshot.startedAt,
                                               seenAt: now(), provides: configuration.provides)
            do {
                try await store.registry.report(presence)
                try await sampleQueue()
                failing = false
            } catch {
                if !failing { events(.notice("the queue's list of coordinators: \(error)")) }
                failing = true
            }
            var waited = 0.0
            while waited < configuration.presenceInterval {
                let current = self.snapshot()
                if current.draining && current.running.isEmpty { return }
                if !(await Coordinator.pause(0.25)) { return }
                waited += 0.25
            }
        }
    }

    /// The queue's depth for the console's charts, once a minute (the first coordinator to report in a
    /// minute records it; the others' inserts do nothing).
    func sampleQueue() async throws {
        let minute = (now().timeIntervalSince1970 / 60).rounded(.down)
        guard sampledMinute.withLock({ $0 }) != minute else { return }
        let counts = try await store.counts()
        try await store.history.sample(queued: counts[.queued] ?? 0, running: counts[.running] ?? 0,
                                       waiting: counts[.waiting] ?? 0, at: now())
        sampledMinute.withLock { $0 = minute }
    }

    /// This coordinator's row removed (it stopped).
    func leave() async {
        do {
            try await store.registry.leave(owner: configuration.owner)
        } catch {
            events(.notice("the queue's list of coordinators: \(error)"))
        }
    }
}
