import FarmModel
import FarmRuntime
import FarmStore
import Foundation
import Hummingbird

/// `GET /`: the status page.
struct Overview: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.get("/", .look) { request, context in try await statusPage(request, context.caller) }
    }

    /// The status page, rendered from the queue and this coordinator at the time of the request.
    func statusPage(_ request: Request, _ caller: Caller) async -> Response {
        let now = Date()
        let (csrf, cookie) = ConsoleCSRF.token(of: request, sessions: face.sessions)
        var page = StatusPage(snapshot: coordinator.snapshot, location: store.location, now: now)
        page.csrf = csrf
        page.canAct = caller.canAct
        do {
            page.stats = try await store.stats(at: now)
            page.coordinators = try await coordinators(at: now)
            page.pauses = try await store.pauses.all()
            page.running = try await store.jobs(matching: JobQuery(states: [.running], limit: 200, newest: true)).reversed()
            page.waiting = try await store.jobs(matching: JobQuery(states: [.waiting], limit: 20))
            var failures = JobQuery(states: [.failed, .dead, .queued], limit: 20, newest: true)
            failures.failedAttempts = true
            page.failures = try await store.jobs(matching: failures).reversed()
        } catch {
            page.queueError = String(describing: error)
        }
        return html(page.html, cookie: cookie)
    }
}

/// The status page's HTML (`HTML`: every string that came from a manifest, a job or an error goes in
/// as text). A small script follows `/api/events`: progress moves the bars, other events reload the page.
struct StatusPage {
    var snapshot: CoordinatorSnapshot
    var location: String
    var now: Date
    var stats: QueueStats?
    var running: [Job] = []
    var failures: [Job] = []
    /// The oldest jobs that wait for others.
    var waiting: [Job] = []
    var coordinators: [CoordinatorView] = []
    var queueError: String?
    /// The CSRF token the page's forms carry.
    var csrf = ""
    /// Claiming paused, for the farm, hosts or coordinators.
    var pauses: [QueuePause] = []
    /// The sign-in may act (not the read-only token's): the page has its forms.
    var canAct = true

    init(snapshot: CoordinatorSnapshot, location: String, now: Date) {
        self.snapshot = snapshot
        self.location = location
        self.now = now
    }

    static func duration(_ seconds: Double?) -> String { Spoken.duration(seconds) }

    var html: HTML {
        var body: HTML = """
        <header><h1>MediaFarm</h1><p>Coordinator <b>\(snapshot.owner)</b> on <code>\(location)</code> · \
        \(snapshot.busySlots) of \(snapshot.workers) worker slots busy\(snapshot.draining ? " · <b class=\"warn\">draining</b>" as HTML : "") · \
        page made \(ISO8601DateFormatter().string(from: now))</p></header>

        """
        if let queueError { body += "<p class=\"error\" id=\"queue-error\">The queue does not answer: \(queueError)</p>\n" }
        body += pauseSection
        if let stats {
            body += "<section id=\"queue\"><h2>Queue</h2><table><tr>"
            let shown = stats.shown
            body += ShownState.allCases.map { "<th>\($0.rawValue)</th>" as HTML }.joined()
            body += "<th>oldest queued</th></tr><tr>"
            body += ShownState.allCases.map { "<td data-state=\"\($0.rawValue)\">\(shown[$0] ?? 0)</td>" as HTML }.joined()
            body += "<td>\(Self.duration(stats.oldestDueAt.map { now.timeIntervalSince($0) }))</td></tr></table></section>\n"
            body += "<section id=\"hosts\"><h2>Coordinators</h2><div class=\"scroll\"><table><tr><th>host</th><th>coordinator</th><th>slots</th>"
            body += "<th>provides</th><th>last report</th><th>claiming</th></tr>"
            for c in coordinators {
                let state: HTML = c.silent ? " <b class=\"warn\">silent</b>" : c.draining ? " <b class=\"warn\">draining</b>" : ""
                let seen = c.thisCoordinator ? "now (this coordinator)" : "\(Self.duration(c.secondsSinceReport)) ago"
                let own = pauses.contains { $0.scope == "coordinator:" + c.owner }
                let claiming: HTML = c.paused ? "<b class=\"warn\">paused</b>" : "yes"
                let action = own ? "resume" : "pause"
                let form: HTML = !canAct || c.paused && !own ? "" : """
                    <form class="inline" method="post" action="/queue/\(action)">\(Console.csrfField(csrf))\
                    <input type="hidden" name="coordinator" value="\(c.owner)"><button>\(own ? "Resume" : "Pause")</button></form>
                    """
                body += "<tr data-owner=\"\(c.owner)\"><td>\(c.host)</td><td>\(c.owner)\(state)</td>"
                let provides: HTML = c.provides.isEmpty ? "–" : c.provides.map { "<code>\($0)</code>" as HTML }.joined(separator: " ")
                body += "<td>\(c.busy) busy, \(c.free) free</td><td class=\"provides\">\(provides)</td><td>\(seen)</td><td class=\"claiming\">\(claiming) \(form)</td></tr>"
            }
            // Jobs leased to hosts with no coordinator in the list (stopped, or of an older MediaFarm).
            let listed = Set(coordinators.map(\.host))
            for (host, n) in stats.runningByHost.filter({ !listed.contains($0.key) }).sorted(by: { $0.key < $1.key }) {
                body += "<tr><td>\(host)</td><td>not reporting</td><td>\(n) running</td><td>–</td><td>–</td><td>–</td></tr>"
            }
            body += "</table></div></section>\n"
        }
        body += "<section id=\"running\"><h2>Running</h2>"
        if running.isEmpty {
            body += "<p>Nothing is running.</p>"
        } else {
            body += "<table><tr><th>job</th><th>name</th><th>host</th><th>attempt</th><th>progress</th><th>phase</th><th>elapsed</th><th>ETA</th></tr>"
            let live = Dictionary(snapshot.running.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            for job in running {
                let fraction = live[job.id]?.fraction ?? job.progress ?? 0
                let phase = live[job.id]?.phase ?? job.phase ?? "starting"
                let elapsed = job.startedAt.map { now.timeIntervalSince($0) }
                let eta = live[job.id]?.eta ?? elapsed.flatMap { JobView.eta(elapsed: $0, fraction: fraction) }
                let percent = Int((fraction * 100).rounded())
                body += """
                <tr class="job" data-job="\(job.id)"><td><a href="/jobs/\(job.id)">\(job.id)</a></td><td class="name">\(job.name)</td>\
                <td>\(job.lease.map { Job.host(ofOwner: $0.owner) } ?? "–")</td><td>\(job.attemptsSummary)</td>\
                <td><progress max="100" value="\(percent)"></progress> <span class="percent">\(percent)%</span></td>\
                <td class="phase">\(phase)</td><td>\(Self.duration(elapsed))</td><td class="eta">\(Self.duration(eta))</td></tr>
                """
            }
            body += "</table>"
        }
        body += "</section>\n"
        if !waiting.isEmpty {
            let total = stats?.counts[JobState.waiting.rawValue] ?? waiting.count
            body += "<section id=\"waiting\"><h2>Waiting for other jobs (\(total))</h2>"
            body += "<table><tr><th>job</th><th>name</th><th>waits for</th><th>not ended</th><th>runs when they</th></tr>"
            for job in waiting {
                let ids: HTML = job.after.prefix(10).map { "<a href=\"/jobs/\($0)\">\($0)</a>" as HTML }.joined(separator: ", ")
                    + (job.after.count > 10 ? " and \(job.after.count - 10) more" : "")
                body += """
                <tr class="waiting" data-job="\(job.id)"><td>\(job.id)</td><td class="name">\(job.name)</td><td class="after">\(ids)</td>\
                <td>\(job.waitingFor)</td><td>\(job.afterPolicy.waitsTo)</td></tr>
                """
            }
            body += "</table></section>\n"
        }
        body += "<section id=\"failures\"><h2>Recent failures</h2>"
        if failures.isEmpty {
            body += "<p>No failures.</p>"
        } else {
            body += "<table><tr><th>job</th><th>name</th><th>state</th><th>attempts</th><th>last error</th><th></th></tr>"
            for job in failures {
                let last = job.errors.last.map { "attempt \($0.attempt): \($0.message)" } ?? ""
                let retry: HTML = !canAct ? "" : job.state == .dead || job.state == .failed
                    ? "<form method=\"post\" action=\"/jobs/\(job.id)/retry\">\(Console.csrfField(csrf))<button>Retry</button></form>" : "retrying"
                body += """
                <tr class="failure \(job.state.rawValue)" data-job="\(job.id)"><td><a href="/jobs/\(job.id)">\(job.id)</a></td><td class="name">\(job.name)</td>\
                <td>\(job.state.rawValue)</td><td>\(job.attemptsSummary)</td><td class="reason">\(last)</td><td>\(retry)</td></tr>
                """
            }
            body += "</table>"
        }
        body += "</section>\n"
        return Console.page(title: "MediaFarm", section: .overview, body: body)
    }

    /// Pauses in force with their Resume buttons, or a button that pauses the farm.
    var pauseSection: HTML {
        var body: HTML = "<section id=\"pauses\">"
        if canAct && !pauses.contains(where: { $0.scope == "farm" }) {
            body += "<form class=\"inline\" method=\"post\" action=\"/queue/pause\">\(Console.csrfField(csrf))<button id=\"pause-farm\">Pause claiming (the farm)</button></form>"
        }
        for pause in pauses {
            let (field, value, what) = pause.scope == "farm" ? ("", "", "the farm")
                : pause.scope.hasPrefix("host:") ? ("host", String(pause.scope.dropFirst(5)), "host " + pause.scope.dropFirst(5))
                : ("coordinator", String(pause.scope.dropFirst(12)), "coordinator " + pause.scope.dropFirst(12))
            body += "<div class=\"warn paused\" data-scope=\"\(pause.scope)\">Claiming is paused for \(what) since \(Console.time(pause.since))"
            body += (pause.by.map { " by \($0)" as HTML } ?? "") + ": running jobs go on, nothing new starts. "
            if canAct {
                body += "<form class=\"inline\" method=\"post\" action=\"/queue/resume\">\(Console.csrfField(csrf))"
                if !field.isEmpty { body += "<input type=\"hidden\" name=\"\(field)\" value=\"\(value)\">" }
                body += "<button class=\"resume\">Resume</button></form>"
            }
            body += "</div>"
        }
        return body + "</section>\n"
    }

    static func login(failed: Bool) -> HTML {
        Console.page(title: "MediaFarm: sign in", section: nil, live: false, signedIn: false, body: """
        <h1>MediaFarm</h1>
        \(failed ? "<p class=\"error\">That is not the coordinator's token.</p>" as HTML : "")
        <form method="post" action="/login"><label>Token <input type="password" name="token" autofocus></label> <button>Sign in</button></form>
        """)
    }
}
