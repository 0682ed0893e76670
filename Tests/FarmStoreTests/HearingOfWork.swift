import FarmStore
import Foundation
import Synchronization

/// How long a listening store takes to hear of the work that `act` makes: seconds from the start of
/// `act` to the listener's wake-up. A waiter is seen waiting (`waiting` counts it) before `act` runs, so
/// that it is not a signal kept from before that answers it. A wake-up that comes before the act's work
/// can be seen (`visible`), such as a ring from setting the queue up that a busy machine delivered late,
/// is slept through again; so only a signal sent after the act's commit ends the wait. Without it the
/// waiter sleeps its whole 30 s, which the caller's bound tells apart.
func secondsToHear(_ listener: any JobStore, waiting: @escaping @Sendable () -> Int, visible: @escaping @Sendable () async -> Bool,
                   by act: () async throws -> Void) async throws -> Double {
    let acting = ActStart()
    let waiter = Task {
        while true {
            await listener.waitForWork(upTo: 30)
            if let started = acting.at.withLock({ $0 }), await visible() { return Date().timeIntervalSince(started) }
            if Task.isCancelled { return .infinity }
        }
    }
    // The condition, not a time: the waiter is registered with the signal.
    let deadline = Date().addingTimeInterval(60)
    while waiting() == 0 {
        guard Date() < deadline else {
            waiter.cancel()
            throw WaiterNeverWaited()
        }
        try await Task.sleep(for: .milliseconds(5))
    }
    acting.at.withLock { $0 = Date() }
    try await act()
    return await waiter.value
}

private final class ActStart: Sendable {
    let at = Mutex<Date?>(nil)
}

struct WaiterNeverWaited: Error, CustomStringConvertible {
    var description: String { "the listener's waiter was not waiting within 60 s" }
}
