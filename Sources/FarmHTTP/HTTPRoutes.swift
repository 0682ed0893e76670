import FarmLibrary
import FarmModel
import FarmRuntime
import FarmStore
import FarmSubmit
import Foundation
import HTTPTypes
import Hummingbird

extension HTTPFace {
    func addRoutes(to router: Router<BasicRequestContext>) {
        // Answered on the event loop by `HealthHandler`; this route serves what reaches the router anyway
        // (a request that asks to close its connection, HummingbirdTesting's requests).
        router.get("/healthz") { _, _ in
            let answer = self.health()
            return Response(status: answer.status, headers: [.contentType: "application/json; charset=utf-8"], body: ResponseBody(byteBuffer: answer.body))
        }
        router.get("/readyz") { _, _ in await self.readiness() }
        router.get("/metrics") { _, _ in await self.metricsText() }
        router.post("/api/jobs") { request, context in try await self.submit(request) }
        router.get("/api/jobs") { request, _ in try await self.list(request) }
        router.get("/api/jobs/:id") { _, context in
            let id = try Self.jobID(context)
            guard let job = try await self.store.job(id: id) else { throw APIError(status: .notFound, message: "no job \(id)") }
            return Response.json(JobView(job, now: Date()))
        }
        router.post("/api/jobs/:id/cancel") { request, context in
            try await self.change(request, id: try Self.jobID(context), .cancelled) { (id: Int64) throws(JobStoreError) in try await self.store.cancel(id: id, at: Date()) }
        }
        router.post("/api/jobs/:id/retry") { request, context in
            try await self.change(request, id: try Self.jobID(context), .retried) { (id: Int64) throws(JobStoreError) in try await self.store.retry(id: id, at: Date(), by: "the API, \(Self.who(request))") }
        }
        router.get("/api/jobs/:id/deliveries") { _, context in
            let id = try Self.jobID(context)
            guard try await self.store.job(id: id) != nil else { throw APIError(status: .notFound, message: "no job \(id)") }
            return Response.json(try await self.store.deliveries(matching: DeliveryQuery(jobID: id, limit: 1000)).map(DeliveryView.init))
        }
        router.get("/api/webhooks") { _, _ in try await self.webhookSummary() }
        router.post("/api/webhooks/retry") { request, _ in try await self.sendDeliveriesAgain(request) }
        router.get("/api/openapi.json") { _, _ in Response.text(OpenAPIDocument.json + "\n", type: "application/json; charset=utf-8") }
        router.get("/api/coordinators") { _, _ in try await self.coordinatorList() }
        router.get("/api/events") { _, _ in self.events() }
        addLibraryRoutes(to: router)
        addPictureRoutes(to: router)
        addPosterRequests(to: router)
        addConsoleRoutes(to: router)
        addConsoleFiles(to: router)
        addQueueRoutes(to: router)
        addLibraryPages(to: router)
        addChartRoutes(to: router)
        router.get("/") { request, _ in await self.statusPage(request) }
        router.get("/login") { _, _ in Response.text(StatusPage.login(failed: false), type: "text/html; charset=utf-8") }
        router.post("/login") { request, _ in try await self.login(request) }
    }

    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!

    static func jobID(_ context: BasicRequestContext) throws -> Int64 {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw APIError(status: .notFound, message: "a job id is a positive integer, not \(context.parameters.get("id") ?? "nothing")")
        }
        return id
    }

    // MARK: - Health

    /// Alive while the coordinator's loops keep turning (a loop stuck longer than `stalledLoopSeconds`
    /// fails it; draining is healthy). The answer is made at most every 0.1 s and kept: a probe or a
    /// load balancer asking thousands of times a second costs the jobs as little as it can; a drain
    /// shows at once.
    func health() -> HealthAnswer {
        let now = Date()
        if let cached = healthCache.withLock({ $0 }), now.timeIntervalSince(cached.at) < 0.1,
           cached.draining || !coordinator.isDraining { return cached }
        let made = makeHealth(now)
        healthCache.withLock { $0 = made }
        return made
    }

    private func makeHealth(_ now: Date) -> HealthAnswer {
        let snapshot = coordinator.loopsSnapshot
        let ages = snapshot.loops.mapValues { now.timeIntervalSince($0) }
        let stalled = snapshot.draining ? [] : ages.filter { $0.value > configuration.stalledLoopSeconds }.keys.sorted()
        struct Health: Encodable {
            var status: String
            var draining: Bool
            var loopAgeSeconds: [String: Double]
            var stalled: [String]?
        }
        let body = Health(status: stalled.isEmpty ? "ok" : "stalled", draining: snapshot.draining,
                          loopAgeSeconds: ages.mapValues { ($0 * 1000).rounded() / 1000 }, stalled: stalled.isEmpty ? nil : stalled)
        let data = (try? JSONEncoder.api.encode(body)) ?? Data("{}".utf8)  // a Health always encodes
        return HealthAnswer(at: now, draining: snapshot.draining, status: stalled.isEmpty ? .ok : .serviceUnavailable, body: ByteBuffer(bytes: data))
    }

    /// Ready while the queue answers and the coordinator is not draining.
    func readiness() async -> Response {
        struct Ready: Encodable {
            var status: String
            var queue: String
            var error: String?
        }
        if coordinator.isDraining {
            return .json(Ready(status: "draining", queue: store.location), status: .serviceUnavailable)
        }
        do {
            _ = try await store.counts()
            return .json(Ready(status: "ready", queue: store.location))
        } catch {
            return .json(Ready(status: "queue unavailable", queue: store.location, error: error.description), status: .serviceUnavailable)
        }
    }

    func metricsText() async -> Response {
        let stats = try? await store.stats(at: Date())  // a scrape while the queue does not answer has the coordinator's own figures
        let webhooks = try? await store.webhookSettings(at: Date())  // as above
        let pauses = try? await store.pauses.all()  // as above
        let bytes = metrics.scrape(stats: stats, webhooks: webhooks, pauses: pauses, snapshot: coordinator.snapshot, now: Date())
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
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
    /// Who asks is settled first: nothing reads the body, the manifest or the file system for a caller
    /// without a valid token.
    func submit(_ request: Request) async throws -> Response {
        let library = try await library(for: request)
        let scoped: Bool = if case .limited = library.access { true } else { false }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > configuration.maxBodyBytes {
            throw APIError(status: .contentTooLarge, message: ErrorMiddleware<BasicRequestContext>.tooLarge(limit: configuration.maxBodyBytes, length: length))
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
        let overwriteRefusal: ManifestIssue? = scoped
            ? ManifestIssue(path: "$.overwrite", message: "a scoped library token cannot replace existing files")
            : configuration.allowOverwrite ? nil
            : ManifestIssue(path: "$.overwrite", message: "not allowed through the API: the coordinator replaces no existing file for a request "
                            + "unless started with --api-allow-overwrite")
        let roots = configuration.outputRoots ?? [configuration.baseDirectory]
        let rules = SubmissionRules(outputRoots: roots, outputRootsWayOut: "to write there, the coordinator must be started with --output-root naming a folder above it",
                                    missingInputWayOut: allowMissingInputs ? nil : "if it will be there when the job runs, add ?allowMissingInputs=true",
                                    overwriteRefusal: overwriteRefusal)
        let offer = ManifestOffer(bytes: Array(body.readableBytesView), file: "request body", name: name, baseDirectory: configuration.baseDirectory)
        // Assets the library does not know are reported with the manifest's other errors.
        let keys = Self.keys(library.access)
        let options = JobOptions(outputRoots: roots, priority: priority, maxAttempts: maxAttempts, runAt: delay > 0 ? Date().addingTimeInterval(delay) : nil,
                                 uniqueKey: key.map(keys.key), timeout: timeout, keys: keys, baseDirectory: configuration.baseDirectory)
        let submitted = try await enqueue(offer, rules: rules, library: library, keyed: key != nil, options: options)
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
        let limit = try Self.number(query, "limit", Self.pageSize) ?? 50
        let after = try Self.number(query, "after", UserNumbers.jobID)
        let jobs = try await store.jobs(matching: JobQuery(states: states, limit: limit, newest: true, before: after))
        struct Page: Encodable {
            var jobs: [JobView]
            var next: Int64?
        }
        let now = Date()
        let newestFirst = jobs.reversed().map { JobView($0, now: now) }
        return .json(Page(jobs: newestFirst, next: jobs.count == limit ? newestFirst.last?.id : nil))
    }

    /// Cancel or retry; from the status page's form (not JSON) the answer is a redirect back to it.
    func change(_ request: Request, id: Int64, _ kind: CoordinatorEvent.Kind, _ apply: (Int64) async throws(JobStoreError) -> Job) async throws -> Response {
        let job: Job
        do {
            job = try await apply(id)
        } catch {
            throw APIError(error)
        }
        hub.publish(.changed(kind, id: id, name: job.name, state: job.state.rawValue))
        if request.headers[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true {
            return .redirect(to: "/", type: .normal)
        }
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

    /// The sign-in form: the token for a session cookie (never the token itself in the cookie).
    func login(_ request: Request) async throws -> Response {
        struct Form: Decodable { var token: String? }
        var request = request
        let body = try await request.collectBody(upTo: 4096)
        // an unreadable form gives no token: refused below
        let given = (try? URLEncodedFormDecoder().decode(Form.self, from: String(buffer: body)))?.token ?? ""
        guard let token = configuration.token else { return .redirect(to: "/", type: .normal) }
        let readOnly = configuration.readOnlyToken.map { BearerAuthMiddleware<BasicRequestContext>.constantTimeEqual(given, $0) } ?? false
        var access: Access = readOnly ? .readOnly : .full
        if !BearerAuthMiddleware<BasicRequestContext>.constantTimeEqual(given, token) && !readOnly {
            // A scoped library token signs its browser in to its albums' pages.
            guard !given.isEmpty, (try? await AssetLibrary.open(store, host: configuration.libraryHost, token: given, inspector: .none)) != nil else {  // any failure: not a token
                return .text(StatusPage.login(failed: true), status: .unauthorized, type: "text/html; charset=utf-8")
            }
            access = .scoped(token: given)
        }
        let landing = if case .scoped = access { "/library" } else { "/" }
        var response = Response.redirect(to: landing, type: .normal)
        response.setCookie(sessions.newCookie(access))
        return response
    }

    /// A unique key as the API stores it: in a namespace of its own (`api:KEY`, `api:TOKEN-NAME:KEY` for a
    /// scoped token), so that no request can take the keys ingest (`ingest:HASH`), capture or another
    /// token's clients hold.
    /// A dependency named by key in a request is a key given through the API (`?key=`), as that request's
    /// caller gave it; ids are the queue's.
    /// The API's keys: its own namespace, a scoped library token's inside it.
    static func keys(_ access: LibraryAccess) -> KeyNamespace {
        switch access {
        case .full: .api(scopedToken: nil)
        case .limited(let name, _): .api(scopedToken: name)
        }
    }

    // MARK: - Query parameters


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
    static let pageSize = NumberRule<Int>.integer(1, 1000)

    static func boolean(_ query: Parameters, _ name: String) throws -> Bool {
        switch query.get(name) {
        case nil, "false": return false
        case "true": return true
        case let text?: throw APIError(status: .badRequest, message: "\(name) \(text): give true or false")
        }
    }

}
