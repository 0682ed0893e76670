import FarmLibrary
import FarmModel
import FarmRuntime
import FarmStore
import FarmSubmit
import Foundation
import QualityModel
import HTTPTypes
import Hummingbird

/// The API's jobs: submission (`POST /api/jobs`), the list and a job, cancel and retry, a job's webhook
/// deliveries, the farm's webhooks, its coordinators, and the event stream.
struct JobsAPI: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.post("/api/jobs", .submit) { request, context in try await submit(request, context.caller) }
        routes.get("/api/jobs", .look) { request, _ in try await list(request) }
        routes.get("/api/jobs/:id", .look) { _, context in
            let id = try Self.jobID(context)
            guard let job = try await storeJob(id) else { throw APIError(status: .notFound, message: "no job \(id)") }
            return Response.json(JobView(job, now: Date()))
        }
        routes.post("/api/jobs/:id/cancel", .act) { _, context in
            try await change(try Self.jobID(context), .cancelled) { (id: Int64) throws(JobStoreError) in try await store.cancel(id: id, at: Date()) }
        }
        routes.post("/api/jobs/:id/retry", .act) { _, context in
            let who = try context.caller.who
            return try await change(try Self.jobID(context), .retried) { (id: Int64) throws(JobStoreError) in
                try await store.retry(id: id, at: Date(), by: "the API, \(who)")
            }
        }
        routes.get("/api/jobs/:id/deliveries", .look) { _, context in
            let id = try Self.jobID(context)
            guard try await storeJob(id) != nil else { throw APIError(status: .notFound, message: "no job \(id)") }
            return Response.json(try await store.deliveries(matching: DeliveryQuery(jobID: id, limit: 1000)).map(DeliveryView.init))
        }
        routes.get("/api/webhooks", .look) { _, _ in try await webhookSummary() }
        routes.post("/api/webhooks/retry", .act) { request, _ in try await sendDeliveriesAgain(request) }
        routes.get("/api/coordinators", .look) { _, _ in try await coordinatorList() }
        routes.get("/api/events", .look) { _, _ in events() }
    }

    /// `GET /api/webhooks`: the farm's endpoints and allowed hosts, deliveries by state, the newest failures
    /// (as `webhooks list --json` prints them).
    func webhookSummary() async throws -> Response {
        do {
            return .json(try await WebhookSettingsView.of(store, at: Date()))
        } catch {
            throw APIError(error)
        }
    }

    /// `POST /api/webhooks/retry?id=N&id=M` or `?failed=true`: as `webhooks retry --json`, the deliveries
    /// sent again as they ended; an id that did not fail (or is no delivery) is not among them.
    func sendDeliveriesAgain(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let failed = try Self.boolean(query, "failed")
        var ids: [Int64] = []
        for text in query.getAll("id") {
            guard case .success(let id) = UserNumbers.jobID.parse(text) else {
                throw APIError(status: .badRequest, message: "id \(text): a delivery id is a positive whole number")
            }
            ids.append(id)
        }
        guard ids.isEmpty == failed else {
            throw APIError(status: .badRequest, message: failed ? "give ids or failed=true, not both"
                           : "name the deliveries to send again (?id=N, as many as you like) or every failed one (?failed=true)")
        }
        do {
            return .json(try await store.sendAgain(ids: failed ? nil : ids, at: Date()).map(DeliveryView.init))
        } catch {
            throw APIError(error)
        }
    }

    // MARK: - Jobs

    /// `POST /api/jobs`: the body is a manifest; query: name, priority, key (unique key), maxAttempts, timeout, delay,
    /// allowMissingInputs (as `submit --allow-missing-inputs`: inputs that are not there yet).
    /// Who asks was settled by the route's policy: nothing reads the body, the manifest or the file system
    /// for a caller without a valid token.
    func submit(_ request: Request, _ caller: Caller) async throws -> Response {
        let library = try library(for: caller)
        let scoped: Bool = if case .limited = library.access { true } else { false }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > configuration.maxBodyBytes {
            throw APIError(status: .contentTooLarge, message: ErrorMiddleware<FarmRequestContext>.tooLarge(limit: configuration.maxBodyBytes, length: length))
        }
        var request = request
        let body = try await request.collectBody(upTo: configuration.maxBodyBytes)
        let query = request.uri.queryParameters
        let name = query.get("name") ?? "api-job"
        let limits = configuration.scopedLimits
        let priority = try Self.number(query, "priority", scoped ? UserNumbers.priority.narrowed(maximum: limits.maxPriority) : UserNumbers.priority) ?? 0
        let attempts = scoped ? UserNumbers.attempts.narrowed(maximum: limits.maxAttempts) : UserNumbers.attempts
        let maxAttempts = try Self.number(query, "maxAttempts", attempts) ?? min(RetryPolicy.default.maxAttempts, attempts.maximum)
        let timeout = try Self.number(query, "timeout", UserNumbers.timeout)
        let delay = try Self.number(query, "delay", scoped ? UserNumbers.delay.narrowed(maximum: limits.maxDelaySeconds) : UserNumbers.delay) ?? 0
        // A client that may retry names its request: the same key answers with the same job.
        let key = query.get("key").flatMap { $0.isEmpty ? nil : $0 }
            ?? request.headers[Self.idempotencyKey].flatMap { $0.isEmpty ? nil : $0 }
        let allowMissingInputs = try Self.boolean(query, "allowMissingInputs")
        let roots = configuration.outputRoots ?? [configuration.baseDirectory]
        let submitter = Submitter.api(outputRoots: roots, allowMissingInputs: allowMissingInputs, allowOverwrite: configuration.allowOverwrite, scoped: scoped)
        let offer = ManifestOffer(bytes: Array(body.readableBytesView), file: "request body", name: name, baseDirectory: configuration.baseDirectory)
        // Assets the library does not know are reported with the manifest's other errors.
        let keys = Self.keys(library.access)
        let options = JobOptions(outputRoots: roots, priority: priority, maxAttempts: maxAttempts, runAt: delay > 0 ? Date().addingTimeInterval(delay) : nil,
                                 uniqueKey: key.map(keys.key), timeout: timeout, keys: keys, baseDirectory: configuration.baseDirectory)
        let submitted = try await enqueue(offer, as: submitter, library: library, keyed: key != nil, options: options)
        var response = Response.json(submitted, status: submitted.queued ? .created : .ok)
        response.headers[.location] = "/api/jobs/\(submitted.id)"
        return response
    }

    /// `GET /api/jobs?state=&limit=&after=`: newest first; `next` is the `after` of the following page.
    func list(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        var states: [JobState]?
        if let text = query.get("state"), !text.isEmpty {
            states = try text.split(separator: ",").map { name in
                guard let state = JobState(rawValue: String(name)) else {
                    throw APIError(status: .badRequest, message: "state \(name): give one of \(JobState.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                return state
            }
        }
        let verdict = try CheckVerdict(queried: query.get("verdict"))
        let limit = try Self.number(query, "limit", Self.pageSize) ?? 50
        let after = try Self.number(query, "after", UserNumbers.jobID)
        var matching = JobQuery(states: states, limit: limit, newest: true, before: after)
        matching.verdict = verdict
        let jobs = try await store.jobs(matching: matching)
        struct Page: Encodable {
            var jobs: [JobView]
            var next: Int64?
        }
        let now = Date()
        let newestFirst = jobs.reversed().map { JobView($0, now: now) }
        return .json(Page(jobs: newestFirst, next: jobs.count == limit ? newestFirst.last?.id : nil))
    }

    /// Cancel or retry, announced to the event stream.
    func change(_ id: Int64, _ kind: CoordinatorEvent.Kind, _ apply: (Int64) async throws(JobStoreError) -> Job) async throws -> Response {
        let job: Job
        do {
            job = try await apply(id)
        } catch {
            throw APIError(error)
        }
        events.publish(.changed(kind, id: id, name: job.name, state: job.state.rawValue))
        return .json(JobView(job, now: Date()))
    }

    /// `GET /api/events`: server-sent events (`started`, `progress`, `finished`, `submitted`, `cancelled`,
    /// `retried`, `notice`), each with a JSON `data` line.
    func events() -> Response {
        let stream = hub.subscribe()
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
                        body: ResponseBody { writer in
                            try await writer.write(ByteBuffer(string: ": mediafarm events\nretry: 2000\n\n"))
                            for await frame in stream { try await writer.write(ByteBuffer(string: frame)) }
                            try await writer.finish(nil)
                        })
    }

    /// `GET /api/coordinators`: every coordinator in the queue's list.
    func coordinatorList() async throws -> Response {
        struct Body: Encodable { var coordinators: [CoordinatorView] }
        do {
            return .json(Body(coordinators: try await coordinators(at: Date())))
        } catch {
            throw APIError(status: .serviceUnavailable, message: "the queue's list of coordinators: \(error)")
        }
    }

    /// The API's keys: its own namespace, a scoped library token's inside it.
    static func keys(_ access: LibraryAccess) -> KeyNamespace {
        switch access {
        case .full: .api(scopedToken: nil)
        case .limited(let name, _): .api(scopedToken: name)
        }
    }
}

extension CheckVerdict {
    /// A query string's `verdict`: nil when absent or empty, a 400 naming the values when it is none of them.
    init?(queried text: String?) throws(APIError) {
        guard let text, !text.isEmpty else { return nil }
        guard let verdict = CheckVerdict(rawValue: text) else {
            throw APIError(status: .badRequest, message: "verdict \(text): give one of \(CheckVerdict.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = verdict
    }
}
