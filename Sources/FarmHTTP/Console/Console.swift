import Crypto
import FarmModel
import Foundation
import HTTPTypes
import Hummingbird

/// The console's frame: every page is HTML made on the server that works without script, one style sheet
/// and one script served by the face (`/console.css`, `/console.js`: the Content-Security-Policy allows no
/// inline script or style), a navigation bar, times as UTC in `<time>` (the script shows them in the
/// viewer's zone, UTC on hover).
enum Console {
    /// Pages of the console, for the navigation bar.
    enum Section: String { case overview, jobs, library, charts }

    /// A whole page. `csrf` goes into every form of `body` already; here only the layout.
    /// `signedIn`: the page is one a signed-in browser sees (the bar offers to sign out).
    static func page(title: String, section: Section?, live: Bool = true, signedIn: Bool = true, body: HTML) -> HTML {
        func link(_ href: String, _ label: String, _ s: Section) -> HTML {
            "<a href=\"\(href)\"\(section == s ? " aria-current=\"page\"" as HTML : "")>\(label)</a>"
        }
        return """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title)</title>
        <link rel="stylesheet" href="/console.css?v=\(assetVersion)">
        <script src="/console.js?v=\(assetVersion)" defer></script>
        </head>
        <body\(live ? " data-live=\"1\"" as HTML : "")>
        <nav class="bar"><b class="brand">MediaFarm</b> \(link("/", "Overview", .overview)) \(link("/jobs", "Jobs", .jobs)) \(link("/library", "Library", .library)) \(link("/charts", "Charts", .charts))\(signedIn ? " <form class=\"signout\" method=\"post\" action=\"/logout\"><button type=\"submit\">Sign out</button></form>" as HTML : "")</nav>
        <main id="main">
        \(body)
        </main>
        </body></html>

        """
    }

    /// A time as UTC text in a `<time>` element (the script rewrites it in the viewer's zone).
    static func time(_ date: Date?) -> HTML {
        guard let date else { return "–" }
        let iso = date.formatted(.iso8601)
        let shown = iso.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
        return "<time datetime=\"\(iso)\" title=\"\(shown)\">\(shown)</time>"
    }

    /// A state as a badge.
    static func badge(_ state: String) -> HTML { "<span class=\"state \(state)\">\(state)</span>" }

    /// A job's state as people see it (`ShownState`): a delayed job with its due time.
    static func shownState(_ job: Job, at now: Date) -> HTML {
        let shown = ShownState(job, at: now)
        return badge(shown.rawValue) + (shown == .delayed ? " <span class=\"due muted\">due \(time(job.runAt))</span>" : "")
    }

    /// A hidden form field with the page's CSRF token.
    static func csrfField(_ token: String) -> HTML { "<input type=\"hidden\" name=\"csrf\" value=\"\(token)\">" }

    // MARK: - Assets

    /// Changes with the assets: their URLs carry it, so they can be cached for good.
    static let assetVersion: String = {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (style + script).utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }()

    static func asset(_ text: String, type: String) -> Response {
        var response = Response.text(text, type: type)
        response.headers[.cacheControl] = "public, max-age=31536000, immutable"
        return response
    }

    static let style = """
    :root { color-scheme: light dark; --fg: #1d1f23; --bg: #fff; --muted: #667; --line: #dde; --accent: #2a62c9; --bad: #b3261e;
            --good: #1e7a3c; --chip: #eef1f6; }
    @media (prefers-color-scheme: dark) {
      :root { --fg: #e4e6ea; --bg: #15171b; --muted: #9aa; --line: #2c3038; --accent: #7aa7ff; --bad: #ff8a80; --good: #7fd68f; --chip: #23272f; }
    }
    :root[data-theme="light"] { color-scheme: light; --fg: #1d1f23; --bg: #fff; --muted: #667; --line: #dde; --accent: #2a62c9;
            --bad: #b3261e; --good: #1e7a3c; --chip: #eef1f6; }
    :root[data-theme="dark"] { color-scheme: dark; --fg: #e4e6ea; --bg: #15171b; --muted: #9aa; --line: #2c3038; --accent: #7aa7ff;
            --bad: #ff8a80; --good: #7fd68f; --chip: #23272f; }
    * { box-sizing: border-box; }
    body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: var(--fg); background: var(--bg); }
    main { padding: 1em 1.5em 3em; max-width: 110em; }
    a { color: var(--accent); } a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
    .bar { display: flex; gap: 1.25em; align-items: center; flex-wrap: wrap; padding: .6em 1.5em; border-bottom: 1px solid var(--line); }
    .bar a { text-decoration: none; } .bar a[aria-current] { font-weight: 600; text-decoration: underline; }
    .bar .theme { margin-left: auto; } .bar .signout { margin: 0; order: 2; }
    h1 { margin: .2em 0; font-size: 1.45em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
    table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid var(--line); vertical-align: top; }
    th { font-weight: 600; color: var(--muted); }
    .scroll { overflow-x: auto; }
    progress { width: 10em; } .warn, .error { color: var(--bad); } .reason { max-width: 40em; word-break: break-word; } .reason pre { white-space: pre-wrap; overflow-x: visible; }
    form { margin: 0; } form.inline { display: inline; }
    code, pre { background: var(--chip); border-radius: 3px; } code { padding: 0 .25em; } pre { padding: .75em; overflow-x: auto; max-height: 40em; }
    button, .button { font: inherit; padding: .25em .8em; border: 1px solid var(--line); border-radius: 4px; background: var(--chip); color: var(--fg); cursor: pointer; }
    button.danger { color: var(--bad); }
    input[type=search], input[type=text], select { font: inherit; padding: .25em .4em; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
    .tabs { display: flex; flex-wrap: wrap; gap: .35em; margin: .5em 0; padding: 0; list-style: none; }
    .tabs a { display: inline-block; padding: .2em .7em; border-radius: 999px; background: var(--chip); text-decoration: none; }
    .tabs a[aria-current] { background: var(--accent); color: var(--bg); }
    .count { color: var(--muted); margin-left: .3em; } .tabs a[aria-current] .count { color: inherit; }
    .state { display: inline-block; padding: 0 .5em; border-radius: 999px; background: var(--chip); font-size: .9em; }
    .state.failed, .state.dead { color: var(--bad); } .state.succeeded { color: var(--good); } .state.running { color: var(--accent); }
    .filters { display: flex; flex-wrap: wrap; gap: .5em; align-items: center; margin: .5em 0 1em; }
    .actions { display: flex; flex-wrap: wrap; gap: .5em; align-items: center; margin: .75em 0; }
    .facts th { width: 12em; } .muted { color: var(--muted); }
    .pager { margin-top: 1em; display: flex; gap: 1em; }
    ol.timeline { list-style: none; padding: 0; border-left: 2px solid var(--line); margin-left: .5em; }
    ol.timeline li { padding: .2em 0 .2em 1em; position: relative; }
    ol.timeline li::before { content: ""; position: absolute; left: -.4em; top: .65em; width: .6em; height: .6em; border-radius: 50%; background: var(--accent); }
    ol.timeline li.bad::before { background: var(--bad); }
    .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(11em, 1fr)); gap: .75em; margin: .5em 0 1em; }
    .tile { position: relative; display: flex; flex-direction: column; text-decoration: none; color: var(--fg);
            border: 1px solid var(--line); border-radius: 6px; overflow: hidden; background: var(--chip); }
    .tile img, .tile .no-picture { width: 100%; aspect-ratio: 16 / 9; object-fit: cover; display: flex; align-items: center;
            justify-content: center; color: var(--muted); background: #000; }
    .tile .no-picture { background: var(--chip); }
    .tile .caption { padding: .3em .5em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    .tile .badge { position: absolute; right: .4em; top: .4em; background: rgba(0, 0, 0, .7); color: #fff; font-size: .85em;
            padding: 0 .4em; border-radius: 3px; }
    .tile:focus-visible { outline: 2px solid var(--accent); }
    .asset-pictures { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; margin: .5em 0 1em; }
    .asset-pictures .poster { max-width: min(100%, 32em); border-radius: 6px; }
    .asset-pictures .waveform { max-width: 100%; }
    .code-frame { display: block; max-width: 8em; max-height: 6em; border-radius: 4px; }
    .graph { width: 100%; max-width: 60em; height: auto; display: block; }
    .graph rect { fill: var(--chip); stroke: var(--line); stroke-width: 1.5; }
    .graph .this rect { stroke-width: 3; }
    .graph .succeeded rect { stroke: var(--good); } .graph .running rect { stroke: var(--accent); }
    .graph .failed rect, .graph .dead rect { stroke: var(--bad); } .graph .cancelled rect { stroke-dasharray: 4 3; }
    .graph text { fill: currentColor; font-size: 12px; }
    .graph line { stroke: var(--muted); stroke-width: 1.2; } .graph marker path { fill: var(--muted); }
    #files .output { display: block; max-width: min(100%, 48em); max-height: 60vh; border-radius: 6px; background: #000; }
    .scrub { border: 1px solid var(--line); border-radius: 6px; padding: .5em; cursor: ew-resize; }
    .scrub .frame { background-repeat: no-repeat; min-width: 160px; min-height: 90px; }
    .state.passed { color: var(--good); } .state.warnings { color: var(--accent); }
    .checks-strip { margin: .5em 0 1em; } .checks-strip svg { width: 100%; max-width: 60em; height: auto; display: block; }
    .checks-strip .label { fill: var(--muted); font-size: 11px; } .checks-strip .lane { fill: var(--chip); }
    .checks-strip .run { fill: var(--accent); } .checks-strip .run.failed { fill: var(--bad); } .checks-strip .run.measured { fill: var(--muted); }
    .chart { margin: .5em 0 1em; } .chart svg { width: 100%; max-width: 60em; height: auto; display: block; }
    .chart .axis { stroke: var(--line); } .chart .label { fill: var(--muted); font-size: 11px; }
    .chart path { fill: none; stroke-width: 2; } .chart figcaption { color: var(--muted); }
    .chart .key::before { content: ""; display: inline-block; width: .8em; height: .8em; margin-right: .3em; border-radius: 2px; background: currentColor; }
    .chart .succeeded { fill: var(--good); color: var(--good); } .chart .failed { fill: var(--bad); color: var(--bad); }
    .chart .dead { fill: #7a1f1a; color: #7a1f1a; } .chart .cancelled { fill: var(--muted); color: var(--muted); }
    .chart .queued, .chart .wait-p50 { fill: var(--accent); stroke: var(--accent); color: var(--accent); }
    .chart .running, .chart .run-p50 { fill: var(--good); stroke: var(--good); color: var(--good); }
    .chart .wait-p95 { fill: #b07cd8; stroke: #b07cd8; color: #b07cd8; } .chart .run-p95 { fill: #d8a23c; stroke: #d8a23c; color: #d8a23c; }
    .chart path.queued, .chart path.running, .chart path.wait-p50, .chart path.wait-p95, .chart path.run-p50, .chart path.run-p95 { fill: none; }
    @media (max-width: 640px) {
      main { padding: .75em; } .bar { padding: .5em .75em; gap: .8em; }
      table.jobs th:nth-child(n+6), table.jobs td:nth-child(n+6) { display: none; }
      progress { width: 5em; }
    }
    """

    /// Times in the viewer's zone; live updates from `/api/events` (progress moves bars in place, other
    /// events fetch the page again and replace its main part, at most twice a second (one more when an event came during a fetch), nothing while the
    /// tab is hidden); confirmations of bulk actions; the theme switch.
    static let script = """
    "use strict";
    (function () {
      var theme = localStorage.getItem("mediafarm-theme");
      if (theme) document.documentElement.dataset.theme = theme;
      function localTimes(root) {
        root.querySelectorAll("time[datetime]").forEach(function (t) {
          var d = new Date(t.getAttribute("datetime"));
          if (isNaN(d)) return;
          t.textContent = d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
        });
      }
      function confirmations(root) {
        root.querySelectorAll("form[data-confirm]").forEach(function (form) {
          form.addEventListener("submit", function (event) {
            var button = event.submitter, text = form.dataset.confirm;
            if (button && button.dataset.confirm) text = button.dataset.confirm;
            var checked = form.querySelectorAll("input[name=ids]:checked").length;
            var all = form.querySelector("input[name=all]:checked");
            if (!all && checked === 0 && form.querySelector("input[name=ids]")) { event.preventDefault(); alert("Select jobs first, or all matching."); return; }
            text = text.replace("{n}", all ? form.dataset.matching : String(checked));
            if (!confirm(text)) { event.preventDefault(); return; }
            var confirmed = document.createElement("input");
            confirmed.type = "hidden"; confirmed.name = "confirmed"; confirmed.value = "1";
            form.appendChild(confirmed);
          });
        });
        root.querySelectorAll("input[data-select-all]").forEach(function (box) {
          box.addEventListener("change", function () {
            document.querySelectorAll("input[name=ids]").forEach(function (b) { b.checked = box.checked; });
          });
        });
      }
      function themeSwitch() {
        var bar = document.querySelector(".bar");
        if (!bar) return;
        var select = document.createElement("select");
        select.className = "theme"; select.setAttribute("aria-label", "Theme");
        [["", "System theme"], ["light", "Light"], ["dark", "Dark"]].forEach(function (o) {
          var option = document.createElement("option"); option.value = o[0]; option.textContent = o[1];
          if ((theme || "") === o[0]) option.selected = true;
          select.appendChild(option);
        });
        select.addEventListener("change", function () {
          if (select.value) { localStorage.setItem("mediafarm-theme", select.value); document.documentElement.dataset.theme = select.value; }
          else { localStorage.removeItem("mediafarm-theme"); delete document.documentElement.dataset.theme; }
        });
        bar.appendChild(select);
      }
      // An event during a fetch asks for one more: the page fetched may predate its commit.
      var refreshing = null, again = false, last = 0;
      function refresh() {
        if (refreshing) { again = true; return; }
        var wait = Math.max(0, 500 - (Date.now() - last));
        refreshing = setTimeout(function () {
          fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" }).then(function (r) {
            return r.ok ? r.text() : null;
          }).then(function (text) {
            refreshing = null; last = Date.now();
            if (again) { again = false; refresh(); }
            if (!text) return;
            var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("main");
            var main = document.getElementById("main");
            if (!fresh || !main) return;
            var selected = Array.prototype.map.call(main.querySelectorAll("input[name=ids]:checked"), function (b) { return b.value; });
            var focused = document.activeElement && document.activeElement.id;
            main.innerHTML = fresh.innerHTML;
            selected.forEach(function (id) { var b = main.querySelector('input[name=ids][value="' + id + '"]'); if (b) b.checked = true; });
            if (focused) { var f = document.getElementById(focused); if (f) f.focus(); }
            localTimes(main); confirmations(main);
            document.dispatchEvent(new CustomEvent("mediafarm:refreshed"));
          }).catch(function () { refreshing = null; if (again) { again = false; refresh(); } });
        }, wait);
      }
      var source = null;
      function listen() {
        if (source || !window.EventSource || !document.body.dataset.live) return;
        source = new EventSource("/api/events");
        source.addEventListener("progress", function (m) {
          var e = JSON.parse(m.data), rows = document.querySelectorAll('[data-job="' + e.job + '"]');
          if (!rows.length) return;
          rows.forEach(function (row) {
            var p = Math.round(e.fraction * 100), bar = row.querySelector("progress"), percent = row.querySelector(".percent"), phase = row.querySelector(".phase");
            if (bar) bar.value = p;
            if (percent) percent.textContent = p + "%";
            if (phase && e.phase) phase.textContent = e.phase;
          });
        });
        ["started", "finished", "submitted", "cancelled", "retried", "published"].forEach(function (name) { source.addEventListener(name, refresh); });
      }
      function stop() { if (source) { source.close(); source = null; } }
      document.addEventListener("visibilitychange", function () { if (document.hidden) stop(); else { listen(); refresh(); } });
      // A storyboard scrubbed with the pointer or the arrow keys: the tile of that time from its sheet.
      function scrubbers(root) {
        root.querySelectorAll(".scrub[data-index]").forEach(function (box) {
          fetch(box.dataset.index, { credentials: "same-origin" }).then(function (r) { return r.ok ? r.json() : null; }).then(function (index) {
            if (!index || !index.tiles.length) return;
            var frame = box.querySelector(".frame"), at = box.querySelector(".at"), current = 0;
            frame.style.width = index.tileWidth + "px"; frame.style.height = index.tileHeight + "px";
            function show(i) {
              current = Math.max(0, Math.min(index.tiles.length - 1, i));
              var t = index.tiles[current];
              frame.style.backgroundImage = "url(" + box.dataset.base + "storyboard/" + encodeURIComponent(index.sheets[t.sheet]) + ")";
              frame.style.backgroundPosition = (-t.x) + "px " + (-t.y) + "px";
              box.setAttribute("aria-valuenow", String(Math.round(t.frameTime)));
              at.textContent = t.frameTime.toFixed(1) + " s";
            }
            box.addEventListener("pointermove", function (e) {
              var r = box.getBoundingClientRect();
              show(Math.floor((e.clientX - r.left) / r.width * index.tiles.length));
            });
            box.addEventListener("keydown", function (e) {
              if (e.key === "ArrowRight") { show(current + 1); e.preventDefault(); }
              if (e.key === "ArrowLeft") { show(current - 1); e.preventDefault(); }
            });
            show(0);
          });
        });
      }
      // A package's rendition switcher: the player loads the master of one rung (or all), where it was.
      function renditions(root) {
        root.querySelectorAll("select.rendition").forEach(function (select) {
          select.addEventListener("change", function () {
            var video = document.getElementById(select.dataset.video);
            if (!video) return;
            var at = video.currentTime, playing = !video.paused;
            video.addEventListener("loadedmetadata", function () {
              video.currentTime = at;
              if (playing) video.play();
            }, { once: true });
            video.src = select.value;
          });
        });
      }
      document.addEventListener("DOMContentLoaded", function () {
        localTimes(document); confirmations(document); themeSwitch(); scrubbers(document); renditions(document);
        window.addEventListener("load", function () { setTimeout(listen, 0); });
      });
    })();
    """
}

/// The console's forms carry a CSRF token the face made: an HMAC, with its sessions' key, of what the form
/// is bound to, the browser's session (or, with no session, as on a face without a token, the browser's
/// own `mediafarm_csrf` cookie, issued by the face). A cookie a page elsewhere sets, or another session's
/// token, does not pass.
enum ConsoleCSRF {
    static let cookieName = "mediafarm_csrf"

    /// The token the request's pages carry, and the cookie to set when it is bound to a browser that had
    /// none.
    static func token(of request: Request, sessions: SessionStore) -> (token: String, cookie: Cookie?) {
        if let binding = binding(of: request) { return (mac(binding, sessions), nil) }
        let value = SessionStore.randomHex(bytes: 16)
        let cookie = Cookie(name: cookieName, value: value, path: "/", secure: sessions.secureCookies, httpOnly: true, sameSite: .strict)
        return (mac("browser:" + value, sessions), cookie)
    }

    /// Refuses a form whose `csrf` field is not the token of its session or browser.
    static func check(_ form: [String: [String]], _ request: Request, sessions: SessionStore) throws {
        guard let binding = binding(of: request), let given = form["csrf"]?.first, Gate.constantTimeEqual(mac(binding, sessions), given) else {
            throw APIError(status: .forbidden, message: "the form's CSRF token is missing or not this browser's: load the page again and resend")
        }
    }

    /// What the request's forms are bound to: its session, else its browser's cookie; nil for neither.
    static func binding(of request: Request) -> String? {
        if let session = request.cookies[SessionStore.cookieName]?.value, !session.isEmpty { return "session:" + session }
        if let value = request.cookies[cookieName]?.value, value.count == 32, value.allSatisfy(\.isHexDigit) { return "browser:" + value }
        return nil
    }

    static func mac(_ binding: String, _ sessions: SessionStore) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(binding.utf8), using: sessions.csrfKey).map { String(format: "%02x", $0) }.joined()
    }
}

/// Every HTML answer carries a Content-Security-Policy that allows the face's own script and style only
/// (no inline script, no other site), and may not be framed.
struct ContentSecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    static var policy: String {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if response.headers[.contentType]?.hasPrefix("text/html") == true {
            response.headers[.contentSecurityPolicy] = Self.policy
            response.headers[.xContentTypeOptions] = "nosniff"
            response.headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        }
        return response
    }
}
