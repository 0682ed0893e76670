import FarmModel
import FarmStore
import Foundation
import Hummingbird

/// Pausing and resuming claims, kept in the queue (`QueuePauses`): `GET /api/queue/pauses`,
/// `POST /api/queue/pause` and `POST /api/queue/resume` (`?host=` or `?coordinator=`, neither for the whole
/// farm), and the console's forms (`POST /queue/pause`, `/queue/resume`, with the CSRF token).
struct QueueAPI: FaceController {
    let face: FaceServices

    struct PausesBody: Encodable {
        var pauses: [QueuePause]
        /// For a resume: whether the scope was paused.
        var resumed: Bool?
    }

    func register(on routes: Routes) {
        routes.get("/api/queue/pauses", .look) { _, _ in .json(PausesBody(pauses: try await pauses())) }
        routes.post("/api/queue/pause", .act) { request, context in
            let scope = try Self.pauseScope(FormFields.parse(request.uri.query ?? ""))
            return .json(PausesBody(pauses: try await pause(scope, by: "the API (\(try context.caller.who))")))
        }
        routes.post("/api/queue/resume", .act) { request, context in
            let scope = try Self.pauseScope(FormFields.parse(request.uri.query ?? ""))
            let outcome = try await resume(scope, by: "the API (\(try context.caller.who))")
            return .json(PausesBody(pauses: outcome.pauses, resumed: outcome.lifted))
        }
        routes.post("/queue/:action", .form) { _, context in
            let scope = try Self.pauseScope(context.form)
            let by = "the console (\(try context.caller.who))"
            switch context.parameters.get("action") {
            case "pause": _ = try await pause(scope, by: by)
            case "resume": _ = try await resume(scope, by: by)
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
}
