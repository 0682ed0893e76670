import FarmModel
import FarmStore
import Foundation
import Hummingbird

/// `/jobs/{id}`: one job as a page. Its facts, a timeline from the times the queue keeps, every failed
/// attempt's error, progress (live), its dependencies both ways and its chunks with their states, its
/// result and manifest pretty-printed (asset references linked), its webhook deliveries, and its actions.
extension HTTPFace {
    func jobPage(_ request: Request, id: Int64) async throws -> Response {
        let (csrf, cookie) = ConsoleCSRF.token(of: request, secure: configuration.cookieSecure)
        let job: Job
        var after: [Job] = [], dependents: [Job] = [], chunks: [Job] = []
        var deliveries: [WebhookDelivery] = []
        var parent: Job?
        do {
            guard let found = try await store.job(id: id) else {
                let body = "<h1>No job \(id)</h1><p>The queue holds no job \(id): it was never submitted, or it was pruned.</p><p><a href=\"/jobs\">All jobs</a></p>"
                return html(Console.page(title: "No job \(id) · MediaFarm", section: .jobs, body: body), cookie: cookie, status: .notFound)
            }
            job = found
            if !job.after.isEmpty { after = try await store.jobs(matching: JobQuery(ids: Array(job.after.prefix(200)))) }
            var waiting = JobQuery(limit: 200)
            waiting.dependsOn = id
            dependents = try await store.jobs(matching: waiting)
            if job.chunkPlan != nil {
                var query = JobQuery(limit: 1000)
                query.chunkOf = id
                chunks = try await store.jobs(matching: query)
            }
            if let of = job.chunkOf { parent = try await store.job(id: of) }
            deliveries = try await store.deliveries(matching: DeliveryQuery(jobID: id, limit: 50))
        } catch {
            throw APIError(error)
        }
        let e = StatusPage.escape
        let now = Date()
        var body = "<p class=\"muted\"><a href=\"/jobs\">Jobs</a> › job \(job.id)</p>\n"
        body += "<h1>\(e(job.name)) \(Console.badge(job.state.rawValue))</h1>\n"
        if let parent { body += "<p>Chunk of <a href=\"/jobs/\(parent.id)\">job \(parent.id) (\(e(parent.name)))</a>.</p>\n" }

        // Actions.
        let act = canAct(request)
        body += "<div class=\"actions\">"
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

        // Progress and facts.
        let live = coordinator.snapshot.running.first { $0.id == id }
        if job.state == .running || (job.state == .waiting && job.chunkPlan != nil) {
            let percent = Int(((live?.fraction ?? job.progress ?? 0) * 100).rounded())
            body += "<p class=\"job\" data-job=\"\(id)\"><progress max=\"100\" value=\"\(percent)\"></progress> <span class=\"percent\">\(percent)%</span> "
            body += "<span class=\"phase\">\(e(live?.phase ?? job.phase ?? "starting"))</span></p>\n"
        }
        let eta = live?.eta ?? job.startedAt.flatMap { started in
            job.state == .running ? JobView.eta(elapsed: now.timeIntervalSince(started), fraction: live?.fraction ?? job.progress ?? 0) : nil
        }
        body += "<div class=\"scroll\"><table class=\"facts\">"
        func fact(_ name: String, _ value: String) { body += "<tr><th>\(name)</th><td>\(value)</td></tr>" }
        // The phase while it runs only: once ended, the last phase reported would mislead (a job failed while "starting").
        fact("state", Console.shownState(job, at: now) + (job.state == .running ? job.phase.map { " <span class=\"muted\">\(e($0))</span>" } ?? "" : ""))
        fact("attempts", e(job.attemptsSummary))
        fact("priority", String(job.priority))
        if let key = job.uniqueKey { fact("unique key", "<code>\(e(key))</code>") }
        if let lease = job.lease {
            fact("held by", "\(e(Job.host(ofOwner: lease.owner))) <span class=\"muted\">(\(e(lease.owner))\(job.workerPID.map { ", worker pid \($0)" } ?? ""))</span>, until \(Console.time(lease.expiresAt))")
        }
        if job.lease == nil, let host = job.host { fact("ran on", e(host)) }
        if !job.requires.isEmpty { fact("requires", job.requires.map { "<code>\(e($0))</code>" }.joined(separator: " ")) }
        if let timeout = job.timeout { fact("timeout", StatusPage.duration(timeout)) }
        if let eta { fact("ETA", StatusPage.duration(eta)) }
        fact("folder", "<code>\(e(job.baseDirectory))</code>")
        body += "</table></div>\n"

        // Timeline.
        var events: [(Date, String, Bool)] = [(job.createdAt, "submitted", false)]
        if !job.after.isEmpty { events.append((job.createdAt, "waits for \(job.after.count) job\(job.after.count == 1 ? "" : "s") to \(job.afterPolicy == .always ? "end" : "succeed")", false)) }
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
        body += "<h2>Timeline</h2><ol class=\"timeline\">"
        for (at, what, bad) in events.sorted(by: { $0.0 < $1.0 }) {
            body += "<li\(bad ? " class=\"bad\"" : "")>\(Console.time(at)) · \(e(what))</li>"
        }
        body += "</ol>\n"

        // Failed attempts.
        if !job.errors.isEmpty {
            body += "<h2>Failed attempts</h2><div class=\"scroll\"><table><tr><th>attempt</th><th>ended</th><th>ran</th><th>on</th><th>worker</th><th>retried</th><th>error</th></tr>"
            for error in job.errors.reversed() {
                let ran = error.startedAt.map { StatusPage.duration(max(0, error.at.timeIntervalSince($0))) } ?? "–"
                body += "<tr class=\"attempt\"><td>\(error.attempt)</td><td>\(Console.time(error.at))</td><td class=\"ran\">\(ran)</td>"
                body += "<td>\(e(error.host ?? "–"))</td><td>\(error.worker.map { "pid \($0)" } ?? "–")</td>"
                body += "<td class=\"retried\">\(error.retriedAt.map { Console.time($0) + (error.retriedBy.map { " by " + e($0) } ?? "") } ?? "–")</td><td class=\"reason\"><pre>\(e(error.message))</pre></td></tr>"
            }
            body += "</table></div>\n"
        }

        // Dependencies and chunks.
        func jobRows(_ jobs: [Job], caption: String, id: String) {
            guard !jobs.isEmpty else { return }
            body += "<h2>\(caption) (\(jobs.count))</h2><div class=\"scroll\"><table id=\"\(id)\"><tr><th>job</th><th>name</th><th>state</th><th>progress</th></tr>"
            for other in jobs {
                let percent = Int(((other.progress ?? (other.state == .succeeded ? 1 : 0)) * 100).rounded())
                body += "<tr data-job=\"\(other.id)\"><td><a href=\"/jobs/\(other.id)\">\(other.id)</a></td><td>\(e(other.name))</td>"
                body += "<td>\(Console.badge(other.state.rawValue))</td><td><progress max=\"100\" value=\"\(percent)\"></progress> <span class=\"percent\">\(percent)%</span></td></tr>"
            }
            body += "</table></div>\n"
        }
        body += Self.dependencyGraph(job, after: after, dependents: dependents)
        jobRows(after, caption: "Waits for", id: "after")
        jobRows(dependents, caption: "Jobs that wait for it", id: "dependents")
        jobRows(chunks, caption: "Chunks", id: "chunks")

        // Result and manifest.
        if let result = job.result {
            body += "<h2>Result</h2><pre id=\"result\">\(Self.prettyJSON(result, linkAssets: false))</pre>\n"
        }
        body += await filesSection(job, request: request)
        body += ConsoleReport.section(job)
        body += "<h2>Manifest</h2><pre id=\"manifest\">\(Self.prettyJSON(job.manifest, linkAssets: true))</pre>\n"

        // Webhook deliveries.
        if !deliveries.isEmpty {
            body += "<h2>Webhook deliveries</h2><div class=\"scroll\"><table><tr><th>event</th><th>to</th><th>state</th><th>attempts</th><th>answer</th><th>delivered</th></tr>"
            for d in deliveries {
                let answer = d.lastStatus.map(String.init) ?? d.lastError ?? "–"
                body += "<tr><td>\(e(d.type))</td><td><code>\(e(d.url))</code></td><td>\(Console.badge(d.state.rawValue))</td><td>\(d.attempts)</td>"
                body += "<td class=\"reason\">\(e(answer))</td><td>\(Console.time(d.deliveredAt))</td></tr>"
            }
            body += "</table></div>\n"
        }
        return html(Console.page(title: "Job \(id): \(job.name) · MediaFarm", section: .jobs, body: body), cookie: cookie)
    }

    /// The job between the jobs it waits for (left) and those that wait for it (right), as an SVG drawn
    /// here: a box per job with its state, linked to its page, and an arrow per edge. At most 12 a side.
    static func dependencyGraph(_ job: Job, after: [Job], dependents: [Job]) -> String {
        guard !after.isEmpty || !dependents.isEmpty else { return "" }
        let e = StatusPage.escape
        let (left, right) = (Array(after.prefix(12)), Array(dependents.prefix(12)))
        let rows = max(left.count, right.count, 1)
        let (w, h, gap, columns) = (220.0, 30.0, 10.0, [10.0, 290.0, 570.0])
        let height = Double(rows) * (h + gap) + gap
        func y(_ i: Int, of n: Int) -> Double { (height - Double(n) * (h + gap) + gap) / 2 + Double(i) * (h + gap) }
        func box(_ other: Job, x: Double, y: Double, this: Bool = false) -> String {
            let label = "\(other.id) · \(other.name)"
            let shown = label.count > 30 ? String(label.prefix(29)) + "…" : label
            return "<a href=\"/jobs/\(other.id)\"><g class=\"node \(e(other.state.rawValue))\(this ? " this" : "")\"><title>\(e(label)): \(e(other.state.rawValue))</title>"
                + "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(w)\" height=\"\(h)\" rx=\"5\"></rect>"
                + "<text x=\"\(x + 8)\" y=\"\(y + 19)\">\(e(shown))</text></g></a>"
        }
        let centerY = y(0, of: 1)
        var svg = "<h2>Dependencies</h2><svg class=\"graph\" id=\"graph\" viewBox=\"0 0 800 \(height)\" role=\"img\" aria-label=\"The jobs it waits for and the jobs that wait for it\">"
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
        return svg + (more > 0 ? "<p class=\"muted\">\(more) more in the tables below.</p>" : "") + "\n"
    }

    /// JSON text indented, escaped for HTML; with `linkAssets`, each `"asset:ID"` string links to the asset.
    static func prettyJSON(_ text: String, linkAssets: Bool) -> String {
        guard let value = try? JSONParser.parse(text) else { return StatusPage.escape(text) }  // not JSON: shown as it is
        let escaped = StatusPage.escape(value.indented)
        guard linkAssets else { return escaped }
        // "asset:ID" (escaped quotes around it): the id is letters, digits, - and _ only.
        var out = ""
        var rest = Substring(escaped)
        while let range = rest.range(of: "&quot;asset:") {
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            let id = rest.prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
            if !id.isEmpty, rest.dropFirst(id.count).hasPrefix("&quot;") {
                out += "<a href=\"/library/assets/\(id)\">\(id)</a>"
                rest = rest.dropFirst(id.count)
            }
        }
        return out + rest
    }
}
