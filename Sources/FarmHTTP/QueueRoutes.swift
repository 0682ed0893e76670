import FarmModel
import FarmStore
import Foundation
import Hummingbird

/// Pausing and resuming claims, kept in the queue (`QueuePauses`): `GET /api/queue/pauses`,
/// `POST /api/queue/pause` and `POST /api/queue/resume` (`?host=` or `?coordinator=`, neither for the whole
/// farm), and the console's forms (`POST /queue/pause`, `/queue/resume`, with the CSRF token).
extension HTTPFace {
    struct PausesBody: Encodable {
        var pauses: [QueuePause]
        /// For a resume: whether the scope was paused.
        var resumed: Bool?
    }

    func addQueueRoutes(to router: Router<BasicRequestContext>) {
        router.get("/api/queue/pauses") { _, _ -> Response in .json(PausesBody(pauses: try await self.pauses())) }
        router.post("/api/queue/pause") { request, _ -> Response in
            let scope = try Self.pauseScope(Self.formFields(request.uri.query ?? ""))
            let pauses = try await self.pause(scope, by: "the API (\(Self.who(request)))")
            return .json(PausesBody(pauses: pauses))
        }
        router.post("/api/queue/resume") { request, _ -> Response in
            let scope = try Self.pauseScope(Self.formFields(request.uri.query ?? ""))
            let outcome = try await self.resume(scope, by: "the API (\(Self.who(request)))")
            return .json(PausesBody(pauses: outcome.pauses, resumed: outcome.lifted))
        }
        router.post("/queue/:action") { request, context -> Response in
            let form = try await self.checkedForm(request)
            let scope = try Self.pauseScope(form)
            switch context.parameters.get("action") {
            case "pause": _ = try await self.pause(scope, by: "the console (\(Self.who(request)))")
            case "resume": _ = try await self.resume(scope, by: "the console (\(Self.who(request)))")
            default: throw APIError(status: .notFound, message: "give /queue/pause or /queue/resume")
            }
            return .redirect(to: "/", type: .normal)
        }
    }

    /// The scope a request names: `host`, `coordinator`, or neither (the farm).
    static func pauseScope(_ fields: [String: [String]]) throws -> String {
        let host = fields["host"]?.first.flatMap { $0.isEmpty ? nil : $0 }
        let coordinator = fields["coordinator"]?.first.flatMap { $0.isEmpty ? nil : $0 }
        if host != nil && coordinator != nil { throw APIError(status: .badRequest, message: "host and coordinator: give one, or neither for the whole farm") }
        if let host, host.contains(":") || host.count > 255 { throw APIError(status: .badRequest, message: "host \(host): a host name, without a colon") }
        if let coordinator, coordinator.split(separator: ":").count < 2 || coordinator.count > 400 {
            throw APIError(status: .badRequest, message: "coordinator \(coordinator): an owner name, HOST:PID:RANDOM")
        }
        return QueuePause.scope(host: host, coordinator: coordinator)
    }

    func pauses() async throws -> [QueuePause] {
        do { return try await store.pauses.all() } catch { throw Self.queueError(error) }
    }

    func pause(_ scope: String, by: String) async throws -> [QueuePause] {
        let pauses: [QueuePause]
        do { pauses = try await store.pauses.pause(scope, by: by, at: Date()) } catch { throw Self.queueError(error) }
        audit("claiming paused for \(scope) by \(by)")
        return pauses
    }

    func resume(_ scope: String, by: String) async throws -> (lifted: Bool, pauses: [QueuePause]) {
        let outcome: (lifted: Bool, pauses: [QueuePause])
        do { outcome = try await store.pauses.resume(scope) } catch { throw Self.queueError(error) }
        if outcome.lifted { audit("claiming resumed for \(scope) by \(by)") }
        return outcome
    }

    static func queueError(_ error: any Error) -> APIError {
        if let error = error as? JobStoreError { return APIError(error) }
        return APIError(status: .serviceUnavailable, message: "the queue's pauses: \(error)")
    }
}
