import FarmLibrary
import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import QualityModel
import HTTPTypes
import Hummingbird

/// The console's jobs: the list (`/jobs`: state tabs with counts, a name filter, pages newest first, chunk
/// jobs folded under their export, bulk retry, cancel and delete of the selected or of all matching) and a job's
/// page (`/jobs/{id}`), with their actions as form POSTs that carry the CSRF token.
struct ConsoleJobs: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.get("/console.css", .open) { _, _ in Console.asset(Console.style, type: "text/css; charset=utf-8") }
        routes.get("/console.js", .open) { _, _ in Console.asset(Console.script, type: "text/javascript; charset=utf-8") }
        routes.get("/jobs", .look) { request, context in try await jobsPage(request, context.caller) }
        routes.get("/jobs/:id", .look) { request, context in try await jobPage(request, context.caller, id: Self.jobID(context)) }
        routes.get("/jobs/:id/files/:name", .look) { request, context in
            try await jobFile(request, context, id: Self.jobID(context), name: context.parameters.get("name") ?? "")
        }
        routes.get("/jobs/:id/package/**", .look) { request, context in
            try await packageFile(request, context, id: Self.jobID(context), path: context.parameters.getCatchAll().joined(separator: "/"))
        }
        routes.post("/jobs/bulk", .form) { _, context in try await bulk(context.form, context.caller) }
        routes.post("/jobs/:id/:action", .form) { _, context in
            try await act(context.caller, id: Self.jobID(context), action: context.parameters.get("action") ?? "")
        }
    }

    // MARK: - The list

    /// What `/jobs` shows: a tab (a state, "delayed", or all), a name prefix, a page.
    struct JobFilter {
        static let tabs = ["all", "queued", "delayed", "waiting", "running", "succeeded", "failed", "dead", "cancelled"]
        var tab = "all"
        var name = ""
        /// The unique key's beginning, a text of the manifest (a path), and the days submitted (YYYY-MM-DD, UTC).
        var key = ""
        var path = ""
        var from = ""
        var to = ""
        /// The host that ran (or runs) the latest attempt; an album one of whose assets the job reads.
        var host = ""
        var album = ""
        /// The verdict of the jobs' quality checks (passed, warnings, failed).
        var verdict = ""
        var before: Int64?

        /// A day as YYYY-MM-DD (UTC): its start.
        static func day(_ text: String, _ name: String) throws -> Date? {
            guard !text.isEmpty else { return nil }
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withFullDate]
            guard text.count == 10, let date = f.date(from: text) else {
                throw APIError(status: .badRequest, message: "\(name) \(text): a day as YYYY-MM-DD")
            }
            return date
        }

        init(_ query: [String: [String]]) throws {
            if let tab = query["state"]?.first, !tab.isEmpty {
                guard Self.tabs.contains(tab) else {
                    throw APIError(status: .badRequest, message: "state \(tab): give one of \(Self.tabs.joined(separator: ", "))")
                }
                self.tab = tab
            }
            name = String((query["name"]?.first ?? "").prefix(200))
            key = String((query["key"]?.first ?? "").prefix(200))
            path = String((query["path"]?.first ?? "").prefix(1000))
            host = String((query["host"]?.first ?? "").prefix(200))
            album = String((query["album"]?.first ?? "").prefix(200))
            verdict = try CheckVerdict(queried: query["verdict"]?.first)?.rawValue ?? ""
            from = query["from"]?.first ?? ""
            to = query["to"]?.first ?? ""
            _ = try Self.day(from, "from")
            _ = try Self.day(to, "to")
            if let text = query["before"]?.first, !text.isEmpty {
                switch UserNumbers.jobID.parse(text) {
                case .success(let id): before = id
                case .failure(let error): throw APIError(status: .badRequest, message: "before \(text): \(error)")
                }
            }
        }

        /// The store's query for this filter, `limit` jobs.
        func query(limit: Int, now: Date) -> JobQuery {
            var query = JobQuery(limit: limit, newest: true, before: before)
            switch tab {
            case "all": break
            case "queued": (query.states, query.runBy) = ([.queued], now)
            case "delayed": (query.states, query.runAfter) = ([.queued], now)
            default: query.states = JobState(rawValue: tab).map { [$0] }
            }
            query.namePrefix = name.isEmpty ? nil : name
            query.keyPrefix = key.isEmpty ? nil : key
            query.mentions = path.isEmpty ? nil : path
            query.host = host.isEmpty ? nil : host
            query.album = album.isEmpty ? nil : album
            query.verdict = CheckVerdict(rawValue: verdict)
            query.createdFrom = try? Self.day(from, "from")  // checked when read
            query.createdBefore = (try? Self.day(to, "to"))??.addingTimeInterval(86_400)  // the whole day
            query.topLevel = true
            return query
        }

        var isFiltered: Bool { !(name + key + path + from + to + host + album + verdict).isEmpty }

        /// This filter's query string, with `before` when given.
        func link(tab: String? = nil, before: Int64? = nil) -> String {
            var items = [URLQueryItem(name: "state", value: tab ?? self.tab)]
            for (field, value) in [("name", name), ("key", key), ("path", path), ("host", host), ("album", album), ("verdict", verdict), ("from", from), ("to", to)]
            where !value.isEmpty {
                items.append(URLQueryItem(name: field, value: value))
            }
            if let before { items.append(URLQueryItem(name: "before", value: String(before))) }
            var c = URLComponents()
            c.queryItems = items
            return "/jobs?" + (c.percentEncodedQuery ?? "")
        }
    }

    static let jobsPageSize = 50

    func jobsPage(_ request: Request, _ caller: Caller) async throws -> Response {
        let (csrf, cookie) = ConsoleCSRF.token(of: request, sessions: face.sessions)
        let query = FormFields.parse(request.uri.query ?? "")
        let filter = try JobFilter(query)
        let now = Date()
        let jobs: [Job]
        let counts: [ShownState: Int]
        var chunks: [Int64: Int] = [:]
        do {
            counts = try await store.stats(at: now).shown
            jobs = try await store.jobs(matching: filter.query(limit: Self.jobsPageSize, now: now)).reversed()
            for job in jobs where job.chunkPlan != nil {
                chunks[job.id] = job.chunkPlan?.chunks.count
            }
        } catch {
            throw APIError(error)
        }
        // What the host and album fields suggest: the coordinators' hosts, the library's albums (none when
        // the library cannot answer: the fields still take any text).
        let hosts = Array(Set(((try? await coordinators(at: now)) ?? []).map(\.host))).sorted()  // no suggestions: see above
        let albums = ((try? await library(for: caller).albums()) ?? []).map(\.name)  // no suggestions: see above
        var body: HTML = "<h1>Jobs</h1>\n"
        body += Self.notice(query)
        body += Self.tabs(filter, counts: counts)
        body += Self.filters(filter, hosts: hosts, albums: albums)
        if jobs.isEmpty {
            let words = [filter.tab == "all" ? nil : "in this state", filter.isFiltered ? "match the filter" : nil].compactMap { $0 }
            body += "<p id=\"no-jobs\">No jobs\(words.isEmpty ? "" : " " + words.joined(separator: " ")).</p>\n"
            return html(Console.page(title: "Jobs · MediaFarm", section: .jobs, body: body), cookie: cookie)
        }
        body += Self.table(jobs, filter: filter, counts: counts, chunks: chunks, csrf: csrf, canAct: caller.canAct, now: now)
        return html(Console.page(title: "Jobs · MediaFarm", section: .jobs, body: body), cookie: cookie)
    }

    /// What a bulk action just did, when the list is shown after one.
    static func notice(_ query: [String: [String]]) -> HTML {
        var body: HTML = ""
        if let acted = query["acted"]?.first, let n = query["n"]?.first.flatMap(Int.init) {
            let refused = query["refused"]?.first.flatMap(Int.init) ?? 0
            let verb = ["cancel": "Cancelled", "retry": "Retried", "delete": "Deleted"][acted] ?? "Changed"
            body += "<p class=\"notice\" role=\"status\">\(verb) \(n) job\(n == 1 ? "" : "s")\(refused > 0 ? "; \(refused) could not be (their state does not allow it\(acted == "delete" ? ": only jobs that ended are deleted" : ""))" : "").</p>\n"
        }
        return body
    }

    /// The state tabs with their counts.
    static func tabs(_ filter: JobFilter, counts: [ShownState: Int]) -> HTML {
        var body: HTML = ""
        body += "<ul class=\"tabs\" aria-label=\"States\">"
        for tab in JobFilter.tabs {
            let count: Int? = tab == "all" ? counts.values.reduce(0, +) : ShownState(rawValue: tab).map { counts[$0] ?? 0 }
            body += "<li><a href=\"\(filter.link(tab: tab))\"\(tab == filter.tab ? " aria-current=\"page\"" as HTML : "")>\(tab)"
            body += count.map { "<span class=\"count\">\($0)</span>" as HTML } ?? ""
            body += "</a></li>"
        }
        body += "</ul>\n"
        return body
    }

    /// The filter form; its host and album fields suggest `hosts` and `albums`.
    static func filters(_ filter: JobFilter, hosts: [String], albums: [String]) -> HTML {
        var body: HTML = ""
        body += """
        <form class="filters" method="get" action="/jobs" role="search">
        <input type="hidden" name="state" value="\(filter.tab)">
        <label>Name begins with <input type="search" name="name" id="filter-name" value="\(filter.name)" autocomplete="on"></label>
        <label>Key begins with <input type="search" name="key" id="filter-key" value="\(filter.key)" size="10"></label>
        <label>Path <input type="search" name="path" id="filter-path" value="\(filter.path)" placeholder="input or output" size="14"></label>
        <label>Host <input type="search" name="host" id="filter-host" value="\(filter.host)" size="8" list="hosts"></label>
        <label>Album <input type="search" name="album" id="filter-album" value="\(filter.album)" size="8" list="albums"></label>
        <label>Checks <select name="verdict" id="filter-verdict"><option value="">any</option>\(CheckVerdict.allCases.map {
            "<option value=\"\($0.rawValue)\"\($0.rawValue == filter.verdict ? " selected" : "")>\($0.rawValue)</option>" as HTML }.joined())</select></label>
        <datalist id="hosts">\(hosts.map { "<option value=\"\($0)\">" as HTML }.joined())</datalist>
        <datalist id="albums">\(albums.map { "<option value=\"\($0)\">" as HTML }.joined())</datalist>
        <label>Submitted from <input type="date" name="from" value="\(filter.from)"></label>
        <label>to <input type="date" name="to" value="\(filter.to)"></label>
        <button>Filter</button>\(filter.isFiltered ? " <a href=\"/jobs?state=\(filter.tab)\">clear</a>" as HTML : "")
        </form>

        """
        return body
    }

    /// The page of jobs in the bulk form, and the pager.
    static func table(_ jobs: [Job], filter: JobFilter, counts: [ShownState: Int], chunks: [Int64: Int], csrf: String, canAct: Bool,
                      now: Date) -> HTML {
        var body: HTML = ""
        // What "all matching" counts, when the counts say it.
        let matching = filter.tab == "all" ? counts.values.reduce(0, +) : ShownState(rawValue: filter.tab).map { counts[$0] ?? 0 }
        body += """
        <form method="post" action="/jobs/bulk" id="bulk" data-confirm="Apply to {n} jobs?" data-matching="\(!filter.isFiltered ? matching.map(String.init) ?? "every matching" : "every matching")">
        \(Console.csrfField(csrf))<input type="hidden" name="state" value="\(filter.tab)"><input type="hidden" name="name" value="\(filter.name)">\
        <input type="hidden" name="key" value="\(filter.key)"><input type="hidden" name="path" value="\(filter.path)">\
        <input type="hidden" name="from" value="\(filter.from)"><input type="hidden" name="to" value="\(filter.to)">\
        <input type="hidden" name="host" value="\(filter.host)"><input type="hidden" name="album" value="\(filter.album)">\
        <input type="hidden" name="verdict" value="\(filter.verdict)">
        \(canAct ? """
        <div class="actions"><button name="action" value="retry" data-confirm="Retry {n} jobs?">Retry</button>
        <button name="action" value="cancel" class="danger" data-confirm="Cancel {n} jobs?">Cancel</button>
        <button name="action" value="delete" class="danger" data-confirm="Delete {n} jobs? Only those that ended are deleted.">Delete</button>
        <label><input type="checkbox" name="all" value="1"> all matching this filter</label></div>
        """ as HTML : "<p class=\"muted\">Read-only: this sign-in can look, not act.</p>")
        <div class="scroll"><table class="jobs"><thead><tr><th><input type="checkbox" data-select-all aria-label="Select all shown"></th>
        <th>job</th><th>name</th><th>state</th><th>progress</th><th>attempt</th><th>host</th><th>created</th><th>ended</th></tr></thead><tbody>

        """
        for job in jobs {
            let percent = Int(((job.progress ?? (job.state == .succeeded ? 1 : 0)) * 100).rounded())
            let host = job.lease.map { Job.host(ofOwner: $0.owner) } ?? job.host ?? "–"
            let folded: HTML = chunks[job.id].map { " <span class=\"muted\">(\($0) chunks)</span>" as HTML } ?? ""
            let progress: HTML = job.state == .running || job.state == .waiting && job.chunkPlan != nil
                ? "<progress max=\"100\" value=\"\(percent)\"></progress> <span class=\"percent\">\(percent)%</span> <span class=\"phase muted\">\(job.phase ?? "")</span>"
                : job.state == .succeeded ? "100%" : "–"
            body += """
            <tr class="job" data-job="\(job.id)"><td><input type="checkbox" name="ids" value="\(job.id)" aria-label="Select job \(job.id)"></td>\
            <td><a href="/jobs/\(job.id)">\(job.id)</a></td><td class="name"><a href="/jobs/\(job.id)">\(job.name)</a>\(folded)</td>\
            <td>\(Console.shownState(job, at: now))</td><td>\(progress)</td><td>\(job.attemptsSummary)</td>\
            <td>\(host)</td><td>\(Console.time(job.createdAt))</td><td>\(Console.time(job.finishedAt))</td></tr>

            """
        }
        body += "</tbody></table></div></form>\n<nav class=\"pager\">"
        if filter.before != nil { body += "<a href=\"\(filter.link())\">Newest</a>" }
        if jobs.count == Self.jobsPageSize, let last = jobs.last {
            body += "<a href=\"\(filter.link(before: last.id))\" rel=\"next\">Older</a>"
        }
        body += "</nav>\n"
        return body
    }

    // MARK: - Actions

    /// `POST /jobs/{id}/cancel|retry|resubmit` from a job's page: done, logged, and back to the page.
    func act(_ caller: Caller, id: Int64, action: String) async throws -> Response {
        let now = Date()
        switch action {
        case "cancel", "retry":
            let kind: CoordinatorEvent.Kind = action == "cancel" ? .cancelled : .retried
            let job: Job
            do {
                job = action == "cancel" ? try await store.cancel(id: id, at: now)
                    : try await store.retry(id: id, at: now, by: "the console, \(caller.who)")
            } catch {
                throw APIError(error)
            }
            audit("console: \(action) of job \(id) (\(job.name)) by \(caller.who)")
            events.publish(.changed(kind, id: id, name: job.name, state: job.state.rawValue))
            return .redirect(to: "/jobs/\(id)", type: .normal)
        case "resubmit":
            guard let job = try await storeJob(id) else { throw APIError(status: .notFound, message: "no job \(id)") }
            let submitted = try await resubmit(job, caller)
            audit("console: job \(id) resubmitted as job \(submitted) by \(caller.who)")
            return .redirect(to: "/jobs/\(submitted)", type: .normal)
        default:
            throw APIError(status: .notFound, message: "no action \(action): give cancel, retry or resubmit")
        }
    }

    /// What a bulk action is called on its button.
    static let bulkActions = ["retry": "Retry", "cancel": "Cancel", "delete": "Delete"]

    /// `POST /jobs/bulk`: retry, cancel or delete the selected jobs, or every job matching the list's filter. Without
    /// `confirmed` (a browser without script), a page asks first, saying how many.
    func bulk(_ form: [String: [String]], _ caller: Caller) async throws -> Response {
        guard let action = form["action"]?.first, Self.bulkActions.keys.contains(action) else {
            throw APIError(status: .badRequest, message: "action: give retry, cancel or delete")
        }
        let filter = try JobFilter(form)
        let all = form["all"]?.first == "1"
        var ids: [Int64] = []
        if all {
            // Every match, newest first, a page at a time (at most 100,000).
            var page = filter
            page.before = nil
            while ids.count < 100_000 {
                let found: [Job]
                do { found = try await store.jobs(matching: page.query(limit: 1000, now: Date())) } catch { throw APIError(error) }
                ids += found.map(\.id).sorted(by: >)
                guard found.count == 1000, let last = ids.last else { break }
                page.before = last
            }
        } else {
            ids = try (form["ids"] ?? []).map { text in
                guard case .success(let id) = UserNumbers.jobID.parse(text) else {
                    throw APIError(status: .badRequest, message: "ids \(text): a job id is a positive integer")
                }
                return id
            }
        }
        guard !ids.isEmpty else { throw APIError(status: .badRequest, message: "no jobs selected: tick some, or all matching this filter") }
        guard form["confirmed"]?.first == "1" else {
            let verb = Self.bulkActions[action] ?? action
            var body: HTML = "<h1>\(verb) \(ids.count) job\(ids.count == 1 ? "" : "s")?</h1>\n"
            if action == "delete" { body += "<p>Only jobs that ended are deleted, with their chunks; the others stay.</p>" }
            body += "<form method=\"post\" action=\"/jobs/bulk\">\(Console.csrfField(form["csrf"]?.first ?? ""))"
            for (key, values) in form where !["csrf", "confirmed"].contains(key) {
                for value in values { body += "<input type=\"hidden\" name=\"\(key)\" value=\"\(value)\">" }
            }
            body += "<input type=\"hidden\" name=\"confirmed\" value=\"1\"><div class=\"actions\"><button>\(verb) them</button>"
            body += " <a href=\"\(filter.link())\">Back</a></div></form>\n"
            return html(Console.page(title: "Confirm · MediaFarm", section: .jobs, body: body), cookie: nil)
        }
        var (done, refused) = (0, 0)
        do {
            if action == "delete" {
                let deleted = try await store.delete(ids)
                (done, refused) = (deleted.count, ids.count - deleted.count)
            } else {
                let change: BulkChange = action == "cancel" ? .cancel : .retry
                for outcome in try await store.change(ids, change, at: Date(), by: "the console's bulk retry, \(caller.who)") {
                    switch outcome {
                    case .success(let job):
                        events.publish(.changed(change == .cancel ? .cancelled : .retried, id: job.id, name: job.name, state: job.state.rawValue))
                        done += 1
                    case .failure(let error) where error.isRefusal: refused += 1
                    case .failure(let error): throw APIError(error)
                    }
                }
            }
        } catch let error as JobStoreError {
            throw APIError(error)
        }
        audit("console: bulk \(action) of \(ids.count) jobs (\(done) done, \(refused) refused) by \(caller.who)")
        var back = filter
        back.before = nil
        return .redirect(to: back.link() + "&acted=\(action)&n=\(done)&refused=\(refused)", type: .normal)
    }

    /// A job's manifest submitted again as a new job, through the one submission path (validated again,
    /// its outputs checked as the API checks them), with the job's priority, attempts and requirements.
    func resubmit(_ job: Job, _ caller: Caller) async throws -> Int64 {
        let library = try library(for: caller)
        let offer = ManifestOffer(bytes: Array(job.manifest.utf8), file: "job \(job.id)'s manifest", name: job.name, baseDirectory: job.baseDirectory)
        let options = JobOptions(outputRoots: job.outputRoots, priority: job.priority, maxAttempts: job.maxAttempts, timeout: job.timeout,
                                 name: job.name, baseDirectory: job.baseDirectory)
        return try await enqueue(offer, as: .resubmit(outputRoots: job.outputRoots, allowOverwrite: configuration.allowOverwrite), library: library, keyed: false,
                                 options: options).id
    }
}

extension JobStoreError {
    /// The queue refused the change for the job's own state (not found, a state that does not allow it,
    /// a key held elsewhere): the caller's, not the queue's, fault.
    var isRefusal: Bool {
        switch self {
        case .notFound, .transition, .refused: true
        case .unavailable, .invalidLocation: false
        }
    }
}
