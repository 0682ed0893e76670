import FarmModel
import Synchronization

/// The farm's one stream of events in a process: the coordinator's attempts and notices and the HTTP
/// face's changes (submitted, cancelled, retried) are published here, and every reader hears all of
/// them: `coordinator --json` (the printer), `GET /api/events` (the face's hub); events one task publishes reach each reader in that order. Publishing never waits for a reader (each reader returns at once: the printer writes a
/// line, the hub buffers).
public final class EventBus: Sendable {
    private let readers = Mutex<[@Sendable (CoordinatorEvent) -> Void]>([])

    public init() {}

    /// Adds a reader; it hears every event published from now on.
    public func subscribe(_ reader: @escaping @Sendable (CoordinatorEvent) -> Void) {
        readers.withLock { $0.append(reader) }
    }

    public func publish(_ event: CoordinatorEvent) {
        for reader in readers.withLock({ $0 }) { reader(event) }
    }
}
