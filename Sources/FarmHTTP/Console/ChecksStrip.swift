import FarmLibrary
import FarmModel
import Foundation
import QualityModel

/// A quality-check report on a page: the verdict, each check's outcome and summary, and the runs drawn as a
/// strip (one lane per check that found any, each run a bar at its place in the file's timeline: black,
/// frozen, silent, clipped, out of range, …). A run links to the still picture at its start when the checked
/// file is an asset this host has (`GET /api/assets/{id}/still?at=`). An SVG, so the page's
/// Content-Security-Policy (no inline style) holds.
enum ChecksStrip {
    /// The section, under `title`; empty without a report.
    static func section(_ report: CheckReport?, still asset: AssetID?, title: String = "Quality checks") -> HTML {
        guard let report else { return "" }
        var body: HTML = "<h2>\(title) \(Console.badge(report.verdict.rawValue))</h2>\n"
        body += strip(report, still: asset)
        body += "<div class=\"scroll\"><table id=\"checks\"><tr><th>check</th><th>outcome</th><th>found</th></tr>"
        for c in report.checks {
            body += "<tr class=\"check-\(c.outcome.rawValue)\"><td>\(c.check)</td><td>\(c.outcome.rawValue)</td><td>\(c.summary)</td></tr>"
        }
        return body + "</table></div>\n"
    }

    /// The runs of every check that found some, one lane each; nothing when none did.
    static func strip(_ report: CheckReport, still asset: AssetID?) -> HTML {
        let lanes = report.checks.filter { !$0.runs.isEmpty }
        let total = max(report.duration, lanes.flatMap(\.runs).map(\.end).max() ?? 0)
        guard !lanes.isEmpty, total > 0, total.isFinite else { return "" }
        let width = 1000.0, label = 90.0, lane = 16.0
        let span = width - label
        var svg: HTML = "<figure class=\"checks-strip\" id=\"checks-strip\"><svg viewBox=\"0 0 \(Int(width)) \(Int(lane * Double(lanes.count)))\" role=\"img\" "
        svg += "aria-label=\"Runs the quality checks found, over \(String(format: "%.1f", total)) s\">"
        for (i, c) in lanes.enumerated() {
            let y = Double(i) * lane
            svg += "<text class=\"label\" x=\"0\" y=\"\(y + 12)\">\(c.check)</text>"
            svg += "<rect class=\"lane\" x=\"\(label)\" y=\"\(y + 2)\" width=\"\(span)\" height=\"\(lane - 4)\"/>"
            for run in c.runs {
                let x = label + min(max(run.start / total, 0), 1) * span
                let w = max(2, min(run.duration / total, 1) * span)
                var where_ = String(format: "%.3f–%.3f s", run.start, run.end)
                if let track = run.track { where_ += " track \(track)" }
                if let channel = run.channel { where_ += " channel \(channel)" }
                let bar: HTML = "<rect class=\"run run-\(c.check) \(c.outcome.rawValue)\" x=\"\(x)\" y=\"\(y + 2)\" width=\"\(w)\" height=\"\(lane - 4)\">"
                    + "<title>\(c.check) \(where_)</title></rect>"
                if let asset {
                    svg += "<a href=\"/api/assets/\(asset.rawValue)/still?at=\(String(format: "%.6f", max(run.start, 0)))\">\(bar)</a>"
                } else {
                    svg += bar
                }
            }
        }
        svg += "</svg><figcaption class=\"muted\">0 s to \(String(format: "%.1f", total)) s"
        if asset != nil { svg += "; each run links to the picture at its start" }
        return svg + "</figcaption></figure>\n"
    }
}

extension ConsoleJobs {
    /// The job's quality checks (its result's, succeeded or failed), their runs linking to stills of the file
    /// they were of when the library has it: the export the job made, or the input it read.
    func checksSection(_ job: Job, _ caller: Caller) async -> HTML {
        guard let report = Self.result(of: job)?.checks else { return "" }
        var still: AssetID?
        if let library = try? library(for: caller) {  // no library here: the runs are drawn without stills
            let manifest = (try? JSONSerialization.jsonObject(with: Data(job.manifest.utf8))) as? [String: Any]  // the queue's own JSON
            let of = ((manifest?["checks"] as? [String: Any])?["of"] as? String).flatMap(JobManifest.ChecksSettings.Subject.init(rawValue:))
            let subject = JobManifest.ChecksSettings(of: of, plan: CheckPlan()).subject(hasExport: manifest?["export"] != nil)
            var options = FetchOptions()
            options.ids = (try? await subject == .export ? library.jobOutputs(job.id) : library.jobInputs(job.id)) ?? []  // as above
            (options.limit, options.mediaType) = (10, .video)
            if options.ids?.isEmpty == false {
                still = (try? await library.fetch(options))?.assets.first { LibraryPages.stillSource($0) != nil }?.id  // as above
            }
        }
        return ChecksStrip.section(report, still: still)
    }
}
