import FarmModel
import Foundation
import Synchronization

/// Fans server-sent events out to every `/api/events` client. Each client has a bounded buffer (the
/// newest frames are kept: a slow client misses progress ticks, never blocks the coordinator). `close`
/// ends every stream, so a server that stops is not held open by its event clients.
final class EventHub: Sendable {
    private struct State {
        var next = 0
        var subscribers: [Int: AsyncStream<String>.Continuation] = [:]
        var closed = false
    }

    private let state = Mutex(State())

    /// A stream of SSE frames; it ends when the hub closes or the client goes away.
    func subscribe() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = state.withLock { state -> Int? in
            guard !state.closed else { return nil }
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Sends `event` with a JSON `data` line to every client.
    /// The event, named by its kind, its data the one encoding `coordinator --json` prints too.
    func publish(_ event: CoordinatorEvent) {
        send("event: \(event.kind.rawValue)\ndata: \(event.json)\n\n")
    }

    /// A comment line: keeps idle connections (and proxies) open, and finds clients that went away.
    func keepAlive() { send(": keep-alive\n\n") }

    private func send(_ frame: String) {
        for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.yield(frame) }
    }

    func close() {
        let all = state.withLock { state -> [AsyncStream<String>.Continuation] in
            state.closed = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in all { continuation.finish() }
    }
}
