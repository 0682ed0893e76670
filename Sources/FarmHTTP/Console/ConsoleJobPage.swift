import FarmModel
import FarmRuntime
import FarmStore
import Foundation
import Hummingbird

/// `/jobs/{id}`: one job as a page. Its facts, a timeline from the times the queue keeps, every failed
/// attempt's error, progress (live), its dependencies both ways and its chunks with their states, its
/// result and manifest pretty-printed (asset references linked), its webhook deliveries, and its actions.
extension ConsoleJobs {
    /// A job and what its page shows beside it: the jobs it waits for and that wait for it, its chunks, the
    /// job it is a chunk of, its webhook deliveries.
    struct JobPageData {
        var job: Job
        var after: [Job] = [], dependents: [Job] = [], chunks: [Job] = []
        var deliveries: [WebhookDelivery] = []
        var parent: Job?
    }

    func jobPage(_ request: Request, _ caller: Caller, id: Int64) async throws -> Response {
        let (csrf, cookie) = ConsoleCSRF.token(of: request, sessions: face.sessions)
        guard let data = try await jobPageData(id) else {
            let body: HTML = "<h1>No job \(id)</h1><p>The queue holds no job \(id): it was never submitted, or it was pruned.</p><p><a href=\"/jobs\">All jobs</a></p>"
            return html(Console.page(title: "No job \(id) · MediaFarm", section: .jobs, body: body), cookie: cookie, status: .notFound)
        }
        let job = data.job
        var body: HTML = "<p class=\"muted\"><a href=\"/jobs\">Jobs</a> › job \(job.id)</p>\n"
        body += "<h1>\(job.name) \(Console.badge(job.state.rawValue))</h1>\n"
        if let parent = data.parent { body += "<p>Chunk of <a href=\"/jobs/\(parent.id)\">job \(parent.id) (\(parent.name))</a>.</p>\n" }
        body += Self.actions(job, canAct: caller.canAct, csrf: csrf)
        body += Self.progressAndFacts(job, live: coordinator.snapshot.running.first { $0.id == id }, now: Date())
        body += Self.timeline(job)
        body += Self.failedAttempts(job)
        body += Self.dependencyGraph(job, after: data.after, dependents: data.dependents)
        body += Self.jobRows(data.after, caption: "Waits for", id: "after")
        body += Self.jobRows(data.dependents, caption: "Jobs that wait for it", id: "dependents")
        body += Self.jobRows(data.chunks, caption: "Chunks", id: "chunks")
        if let result = job.result {
            body += "<h2>Result</h2><pre id=\"result\">\(Self.prettyJSON(result, linkAssets: false))</pre>\n"
        }
        body += await filesSection(job, caller)
        body += await checksSection(job, caller)
        body += ConsoleReport.section(job)
        body += "<h2>Manifest</h2><pre id=\"manifest\">\(Self.prettyJSON(job.manifest, linkAssets: true))</pre>\n"
        body += Self.deliveries(data.deliveries)
        return html(Console.page(title: "Job \(id): \(job.name) · MediaFarm", section: .jobs, body: body), cookie: cookie)
    }

    /// Job `id` and what its page shows beside it; nil when the queue holds no such job.
    func jobPageData(_ id: Int64) async throws -> JobPageData? {
        do {
            guard let job = try await store.job(id: id) else { return nil }
            var data = JobPageData(job: job)
            if !job.after.isEmpty { data.after = try await store.jobs(matching: JobQuery(ids: Array(job.after.prefix(200)))) }
            var waiting = JobQuery(limit: 200)
            waiting.dependsOn = id
            data.dependents = try await store.jobs(matching: waiting)
            if job.chunkPlan != nil {
                var query = JobQuery(limit: 1000)
                query.chunkOf = id
                data.chunks = try await store.jobs(matching: query)
            }
            if let of = job.chunkOf { data.parent = try await store.job(id: of) }
            data.deliveries = try await store.deliveries(matching: DeliveryQuery(jobID: id, limit: 50))
            return data
        } catch {
            throw APIError(error)
        }
    }

    /// The job's actions as forms, for a sign-in that may act.
    static func actions(_ job: Job, canAct act: Bool, csrf: String) -> HTML {
        let id = job.id
        var body: HTML = "<div class=\"actions\">"
        if !act { body += "<span class=\"muted\">Read-only: this sign-in can look, not act.</span>" }
        if act && job.state.isLive {
            body += "<form class=\"inline\" method=\"post\" action=\"/jobs/\(id)/cancel\">\(Console.csrfField(csrf))<button class=\"danger\" id=\"cancel\">Cancel</button></form>"
        }
        if act && (job.state == .failed || job.state == .dead || job.state == .cancelled) {
            body += "<form class=\"inline\" method=\"post\" action=\"/jobs/\(id)/retry\">\(Console.csrfField(csrf))<button id=\"retry\">Retry</button></form>"
        }
        if act && job.chunkOf == nil {
            body += "<form class=\"inline\" method=\"post\" action=\"/jobs/\(id)/resubmit\">\(Console.csrfField(csrf))<button id=\"resubmit\">Resubmit as a new job</button></form>"
        }
        body += " <a href=\"/api/jobs/\(id)\">JSON</a></div>\n"
        return body
    }

    /// Its progress while it runs, and its facts.
    static func progressAndFacts(_ job: Job, live: CoordinatorSnapshot.RunningJob?, now: Date) -> HTML {
        let id = job.id
        var body: HTML = ""
        if job.state == .running || (job.state == .waiting && job.chunkPlan != nil) {
            let percent = Int(((live?.fraction ?? job.progress ?? 0) * 100).rounded())
            body += "<p class=\"job\" data-job=\"\(id)\"><progress max=\"100\" value=\"\(percent)\"></progress> <span class=\"percent\">\(percent)%</span> "
            body += "<span class=\"phase\">\(live?.phase ?? job.phase ?? "starting")</span></p>\n"
        }
        let eta = live?.eta ?? job.startedAt.flatMap { started in
            job.state == .running ? JobView.eta(elapsed: now.timeIntervalSince(started), fraction: live?.fraction ?? job.progress ?? 0) : nil
        }
        body += "<div class=\"scroll\"><table class=\"facts\">"
        func fact(_ name: String, _ value: HTML) { body += "<tr><th>\(name)</th><td>\(value)</td></tr>" }
        // The phase while it runs only: once ended, the last phase reported would mislead (a job failed while "starting").
        fact("state", Console.shownState(job, at: now) + (job.state == .running ? job.phase.map { " <span class=\"muted\">\($0)</span>" as HTML } ?? "" : ""))
        fact("attempts", HTML(text: job.attemptsSummary))
        fact("priority", "\(job.priority)")
        if let key = job.uniqueKey { fact("unique key", "<code>\(key)</code>") }
        if let lease = job.lease {
            fact("held by", "\(Job.host(ofOwner: lease.owner)) <span class=\"muted\">(\(lease.owner)\(job.workerPID.map { ", worker pid \($0)" } ?? ""))</span>, until \(Console.time(lease.expiresAt))")
        }
        if job.lease == nil, let host = job.host { fact("ran on", HTML(text: host)) }
        if !job.requires.isEmpty { fact("requires", job.requires.map { "<code>\($0)</code>" as HTML }.joined(separator: " ")) }
        if let timeout = job.timeout { fact("timeout", HTML(text: StatusPage.duration(timeout))) }
        if let eta { fact("ETA", HTML(text: StatusPage.duration(eta))) }
        fact("folder", "<code>\(job.baseDirectory)</code>")
        body += "</table></div>\n"
        return body
    }

    /// What happened to it, in order, from the times the queue keeps.
    static func timeline(_ job: Job) -> HTML {
        var events: [(Date, String, Bool)] = [(job.createdAt, "submitted", false)]
        if !job.after.isEmpty { events.append((job.createdAt, "waits for \(job.after.count) job\(job.after.count == 1 ? "" : "s") to \(job.afterPolicy.waitsTo)", false)) }
        if job.runAt > job.createdAt.addingTimeInterval(1) && (job.startedAt == nil || job.state == .queued) {
            events.append((job.runAt, job.state == .queued ? "due to run" : "was due", false))
        }
        for error in job.errors {
            events.append((error.at, "attempt \(error.attempt) \(error.message == "cancelled" ? "cancelled" : "failed")", true))
            if let retried = error.retriedAt {
                events.append((retried, "retried after attempt \(error.attempt)" + (error.retriedBy.map { " by \($0)" } ?? ""), false))
            }
        }
        if let started = job.startedAt {
            let host = job.lease.map { " on " + Job.host(ofOwner: $0.owner) } ?? ""
            events.append((started, "attempt \(job.attemptNumber) started\(host)", false))
        }
        if let finished = job.finishedAt { events.append((finished, job.state.rawValue, job.state == .failed || job.state == .dead)) }
        var body: HTML = "<h2>Timeline</h2><ol class=\"timeline\">"
        for (at, what, bad) in events.sorted(by: { $0.0 < $1.0 }) {
            body += "<li\(bad ? " class=\"bad\"" as HTML : "")>\(Console.time(at)) · \(what)</li>"
        }
        body += "</ol>\n"
        return body
    }

    /// Each failed attempt, newest first, with its error.
    static func failedAttempts(_ job: Job) -> HTML {
        var body: HTML = ""
        if !job.errors.isEmpty {
            body += "<h2>Failed attempts</h2><div class=\"scroll\"><table><tr><th>attempt</th><th>ended</th><th>ran</th><th>on</th><th>worker</th><th>retried</th><th>error</th></tr>"
            for error in job.errors.reversed() {
                let ran = error.startedAt.map { StatusPage.duration(max(0, error.at.timeIntervalSince($0))) } ?? "–"
                body += "<tr class=\"attempt\"><td>\(error.attempt)</td><td>\(Console.time(error.at))</td><td class=\"ran\">\(ran)</td>"
                body += "<td>\(error.host ?? "–")</td><td>\(error.worker.map { "pid \($0)" } ?? "–")</td>"
                body += "<td class=\"retried\">\(error.retriedAt.map { Console.time($0) + (error.retriedBy.map { HTML(text: " by " + $0) } ?? "") } ?? "–")</td><td class=\"reason\"><pre>\(error.message)</pre></td></tr>"
            }
            body += "</table></div>\n"
        }
        return body
    }

    /// Jobs as a table with their states and progress.
    static func jobRows(_ jobs: [Job], caption: String, id: String) -> HTML {
        guard !jobs.isEmpty else { return "" }
        var body: HTML = "<h2>\(caption) (\(jobs.count))</h2><div class=\"scroll\"><table id=\"\(id)\"><tr><th>job</th><th>name</th><th>state</th><th>progress</th></tr>"
        for other in jobs {
            let percent = Int(((other.progress ?? (other.state == .succeeded ? 1 : 0)) * 100).rounded())
            body += "<tr data-job=\"\(other.id)\"><td><a href=\"/jobs/\(other.id)\">\(other.id)</a></td><td>\(other.name)</td>"
            body += "<td>\(Console.badge(other.state.rawValue))</td><td><progress max=\"100\" value=\"\(percent)\"></progress> <span class=\"percent\">\(percent)%</span></td></tr>"
        }
        body += "</table></div>\n"
        return body
    }

    /// Its webhook deliveries.
    static func deliveries(_ deliveries: [WebhookDelivery]) -> HTML {
        var body: HTML = ""
        if !deliveries.isEmpty {
            body += "<h2>Webhook deliveries</h2><div class=\"scroll\"><table><tr><th>event</th><th>to</th><th>state</th><th>attempts</th><th>answer</th><th>delivered</th></tr>"
            for d in deliveries {
                let answer = d.lastStatus.map(String.init) ?? d.lastError ?? "–"
                body += "<tr><td>\(d.type)</td><td><code>\(d.url)</code></td><td>\(Console.badge(d.state.rawValue))</td><td>\(d.attempts)</td>"
                body += "<td class=\"reason\">\(answer)</td><td>\(Console.time(d.deliveredAt))</td></tr>"
            }
            body += "</table></div>\n"
        }
        return body
    }

    /// The job between the jobs it waits for (left) and those that wait for it (right), as an SVG drawn
    /// here: a box per job with its state, linked to its page, and an arrow per edge. At most 12 a side.
    static func dependencyGraph(_ job: Job, after: [Job], dependents: [Job]) -> HTML {
        guard !after.isEmpty || !dependents.isEmpty else { return "" }
        let (left, right) = (Array(after.prefix(12)), Array(dependents.prefix(12)))
        let rows = max(left.count, right.count, 1)
        let (w, h, gap, columns) = (220.0, 30.0, 10.0, [10.0, 290.0, 570.0])
        let height = Double(rows) * (h + gap) + gap
        func y(_ i: Int, of n: Int) -> Double { (height - Double(n) * (h + gap) + gap) / 2 + Double(i) * (h + gap) }
        func box(_ other: Job, x: Double, y: Double, this: Bool = false) -> HTML {
            let label = "\(other.id) · \(other.name)"
            let shown = label.count > 30 ? String(label.prefix(29)) + "…" : label
            return "<a href=\"/jobs/\(other.id)\"><g class=\"node \(other.state.rawValue)\(this ? " this" : "")\"><title>\(label): \(other.state.rawValue)</title>"
                + "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(w)\" height=\"\(h)\" rx=\"5\"></rect>"
                + "<text x=\"\(x + 8)\" y=\"\(y + 19)\">\(shown)</text></g></a>"
        }
        let centerY = y(0, of: 1)
        var svg: HTML = "<h2>Dependencies</h2><svg class=\"graph\" id=\"graph\" viewBox=\"0 0 800 \(height)\" role=\"img\" aria-label=\"The jobs it waits for and the jobs that wait for it\">"
        svg += "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\"></path></marker></defs>"
        for (i, _) in left.enumerated() {
            svg += "<line x1=\"\(columns[0] + w)\" y1=\"\(y(i, of: left.count) + h / 2)\" x2=\"\(columns[1])\" y2=\"\(centerY + h / 2)\" marker-end=\"url(#arrow)\"></line>"
        }
        for (i, _) in right.enumerated() {
            svg += "<line x1=\"\(columns[1] + w)\" y1=\"\(centerY + h / 2)\" x2=\"\(columns[2])\" y2=\"\(y(i, of: right.count) + h / 2)\" marker-end=\"url(#arrow)\"></line>"
        }
        for (i, other) in left.enumerated() { svg += box(other, x: columns[0], y: y(i, of: left.count)) }
        svg += box(job, x: columns[1], y: centerY, this: true)
        for (i, other) in right.enumerated() { svg += box(other, x: columns[2], y: y(i, of: right.count)) }
        svg += "</svg>"
        let more = max(0, after.count - 12) + max(0, dependents.count - 12)
        return svg + (more > 0 ? "<p class=\"muted\">\(more) more in the tables below.</p>" as HTML : "") + "\n"
    }

    /// JSON text indented, as text; with `linkAssets`, each `"asset:ID"` string links to the asset.
    static func prettyJSON(_ text: String, linkAssets: Bool) -> HTML {
        guard let value = try? JSONParser.parse(text) else { return HTML(text: text) }  // not JSON: shown as it is
        let escaped = HTML(text: value.indented)
        guard linkAssets else { return escaped }
        // "asset:ID" (escaped quotes around it): the id is letters, digits, - and _ only.
        var out = ""
        var rest = Substring(escaped.text)
        while let range = rest.range(of: "&quot;asset:") {
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            let id = rest.prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
            if !id.isEmpty, rest.dropFirst(id.count).hasPrefix("&quot;") {
                out += "<a href=\"/library/assets/\(id)\">\(id)</a>"
                rest = rest.dropFirst(id.count)
            }
        }
        // The escaped text, with links made of letters, digits, - and _ between its quotes.
        return HTML(trusted: out + rest)
    }
}
