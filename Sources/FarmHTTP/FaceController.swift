import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmRuntime
import FarmStore
import FarmSubmit
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// What every controller of the face works with: the queue, the coordinator, the face's settings, the event
/// hub its clients follow, the browser sessions, and where actions are written down.
final class FaceServices: Sendable {
    let configuration: HTTPFaceConfiguration
    let coordinator: Coordinator
    let store: any JobStore
    let metrics: FarmMetrics
    let hub = EventHub()
    /// The process's events: the face publishes its own there, and its hub reads them all.
    let events: EventBus
    let sessions: SessionStore
    let logger: Logger
    /// Each action taken through the console or the API, who took it (the coordinator prints them).
    let onAction: @Sendable (String) -> Void
    /// The last `/healthz` answer, kept for 0.1 s.
    let healthCache = Mutex<HealthAnswer?>(nil)
    /// Each route's policy as registered.
    let routes = RouteTable()
    /// Failed sign-ins and bearer checks by client address.
    let guesses: GuessLimiter

    init(configuration: HTTPFaceConfiguration, coordinator: Coordinator, store: any JobStore, metrics: FarmMetrics, logger: Logger,
         events: EventBus, onAction: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.events = events
        self.coordinator = coordinator
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.onAction = onAction
        sessions = SessionStore(lifetime: configuration.sessionSeconds, idleSeconds: configuration.sessionIdleSeconds,
                                secureCookies: configuration.cookieSecure, now: configuration.now)
        guesses = GuessLimiter(freeFailures: configuration.authFailuresAllowed, factory: metrics.factory, now: configuration.now) { line in
            logger.warning("\(line)")
            onAction(line)
        }
        let hub = self.hub
        events.subscribe { hub.publish($0) }
    }

    /// Who a request is, as every route's policy asks it.
    var gate: Gate {
        Gate(token: configuration.token, readOnlyToken: configuration.readOnlyToken, sessions: sessions, store: store,
             libraryHost: configuration.libraryHost, guesses: guesses)
    }
}

/// One part of the face: a struct whose routes are registered with their policies (`Routes`), and whose
/// handlers read who the caller is from the request context.
protocol FaceController: Sendable {
    var face: FaceServices { get }
    init(face: FaceServices)
    func register(on routes: Routes)
}

extension FaceController {
    var configuration: HTTPFaceConfiguration { face.configuration }
    var coordinator: Coordinator { face.coordinator }
    var store: any JobStore { face.store }
    var hub: EventHub { face.hub }
    var events: EventBus { face.events }
    var logger: Logger { face.logger }

    /// An action, for the coordinator's output and the log.
    func audit(_ line: String) {
        face.logger.notice("\(line)")
        face.onAction(line)
    }

    /// An HTML answer with the page's CSRF cookie set when the browser had none.
    func html(_ page: HTML, cookie: Cookie?, status: HTTPResponse.Status = .ok) -> Response {
        var response = Response.text(page.text, status: status, type: "text/html; charset=utf-8")
        if let cookie { response.setCookie(cookie) }
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func storeJob(_ id: Int64) async throws -> Job? {
        do { return try await store.job(id: id) } catch { throw APIError(error) }
    }

    /// The library as `caller` sees it: whole, or a scoped library token's albums.
    func library(for caller: Caller) throws -> AssetLibrary {
        do {
            return try AssetLibrary(store: store, host: configuration.libraryHost, inspector: .media).seen(as: caller.library)
        } catch {
            throw APIError(status: .serviceUnavailable, message: "the asset library: \(error)")
        }
    }

    /// One manifest through the one submission path: checked by `rules`, limited to a scoped caller's
    /// albums, made into a job by `options`, queued, announced. Refusals as HTTP answers.
    func enqueue(_ offer: ManifestOffer, as submitter: Submitter, library: AssetLibrary, keyed: Bool, options: JobOptions) async throws -> SubmittedJob {
        do {
            let checked = try await Submission.check([offer], as: submitter) { _ in library }
            let (jobs, queued) = try await Submission(store: store, library: library).submit(checked, options: options)
            guard let new = jobs.first, let first = queued.jobs.first else {
                throw SubmissionError.outcomeUnknown(.unavailable("the queue answered no job"))
            }
            let submitted = SubmittedJob(id: first.id, name: new.name, queued: first.inserted, warnings: queued.warnings[first.id])
            for warning in submitted.warnings ?? [] { logger.warning("job \(first.id): \(warning)") }
            events.publish(.submitted(id: submitted.id, name: submitted.name, queued: submitted.queued))
            return submitted
        } catch let error as SubmissionError {
            throw APIError(error, keyed: keyed)
        }
    }

    // MARK: - Reading requests

    static var idempotencyKey: HTTPField.Name { HTTPField.Name("Idempotency-Key")! }

    /// The route's `:id`, a job's.
    static func jobID(_ context: FarmRequestContext) throws -> Int64 {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw APIError(status: .notFound, message: "a job id is a positive integer, not \(context.parameters.get("id") ?? "nothing")")
        }
        return id
    }

    /// An asset's id, with or without `asset:`.
    static func assetID(_ text: String) throws -> AssetID {
        let bare = text.hasPrefix(AssetID.scheme) ? String(text.dropFirst(AssetID.scheme.count)) : text
        guard let id = AssetID(bare) else { throw APIError(status: .badRequest, message: AssetIDError(text: text).description) }
        return id
    }

    /// A number of the query, read by its rule (FarmModel's `UserNumbers`): nil when absent, 400 naming
    /// the parameter and the range when it is not a number of the range.
    static func number<Value>(_ query: Parameters, _ name: String, _ rule: NumberRule<Value>) throws -> Value? {
        guard let text = query.get(name) else { return nil }
        switch rule.parse(text) {
        case .success(let value): return value
        case .failure(let error): throw APIError(status: .badRequest, message: "\(name) \(text): \(error)")
        }
    }

    /// A page of jobs: 1 to 1000.
    static var pageSize: NumberRule<Int> { .integer(1, 1000) }

    static func boolean(_ query: Parameters, _ name: String) throws -> Bool {
        switch query.get(name) {
        case nil, "false": return false
        case "true": return true
        case let text?: throw APIError(status: .badRequest, message: "\(name) \(text): give true or false")
        }
    }

    static func flag(_ query: Parameters, _ name: String) throws -> Bool? {
        guard let text = query.get(name) else { return nil }
        switch text {
        case "true", "1", "": return true
        case "false", "0": return false
        default: throw APIError(status: .badRequest, message: "\(name): true or false, not \(text)")
        }
    }

    static func date(_ query: Parameters, _ name: String) throws -> Date? {
        guard let text = query.get(name), !text.isEmpty else { return nil }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: text) { return date }
        throw APIError(status: .badRequest, message: "\(name): a date as YYYY-MM-DD or ISO 8601, not \(text)")
    }

    /// A library call, its errors as HTTP answers.
    static func answer<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as LibraryError {
            throw APIError(error)
        }
    }

    static func queueError(_ error: any Error) -> APIError {
        if let error = error as? JobStoreError { return APIError(error) }
        return APIError(status: .serviceUnavailable, message: "the queue's pauses: \(error)")
    }
}
