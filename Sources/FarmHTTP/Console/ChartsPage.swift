import FarmModel
import FarmStore
import Foundation
import Hummingbird

/// `/charts`: the farm over the last hour by the minute or the last 72 hours by the hour, drawn on the
/// server as SVG (no script needed): jobs ended by outcome, the queue's depth, and how long jobs waited and
/// ran (p50 and p95), from the queue's own history (`QueueHistory`). Each bar and point has a tooltip.
struct ChartsPage: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.get("/charts", .look) { request, _ in try await chartsPage(request) }
        routes.get("/api/queue/history", .look) { request, _ in
            let span = try Self.span(request)
            let buckets: [QueueHistory.Bucket]
            do { buckets = try await store.history.chart(span, at: Date()) } catch { throw Self.queueError(error) }
            struct Body: Encodable { var span: String, bucketSeconds: Double, buckets: [QueueHistory.Bucket] }
            return .json(Body(span: span.rawValue, bucketSeconds: span.bucketSeconds, buckets: buckets))
        }
    }

    static func span(_ request: Request) throws -> QueueHistory.Span {
        guard let text = request.uri.queryParameters.get("span"), !text.isEmpty else { return .hour }
        guard let span = QueueHistory.Span(rawValue: text) else {
            throw APIError(status: .badRequest, message: "span \(text): hour (the last hour by the minute) or days (the last 72 hours by the hour)")
        }
        return span
    }

    func chartsPage(_ request: Request) async throws -> Response {
        let span = try Self.span(request)
        let buckets: [QueueHistory.Bucket]
        do { buckets = try await store.history.chart(span, at: Date()) } catch { throw Self.queueError(error) }
        var body: HTML = "<h1>Charts</h1><ul class=\"tabs\">"
        for s in QueueHistory.Span.allCases {
            body += "<li><a href=\"/charts?span=\(s.rawValue)\"\(s == span ? " aria-current=\"page\"" as HTML : "")>\(s == .hour ? "last hour, by the minute" : "last 72 hours, by the hour")</a></li>"
        }
        body += "</ul>\n"
        let label = { (b: QueueHistory.Bucket) in Chart.timeLabel(b.start, span: span) }
        let outcomes = ["succeeded", "failed", "dead", "cancelled"]
        body += "<h2>Jobs ended, by outcome</h2>"
        body += Chart.bars(buckets.map { b in outcomes.map { Double(b.ended[$0] ?? 0) } }, series: outcomes, labels: buckets.map(label), id: "ended")
        body += "<h2>Queue depth</h2>"
        body += Chart.lines([buckets.map { $0.queued.map(Double.init) }, buckets.map { $0.running.map(Double.init) }],
                            series: ["queued", "running"], labels: buckets.map(label), unit: "", id: "depth")
        body += "<h2>Wait (due to started) and run time of the jobs that ended</h2>"
        body += Chart.lines([buckets.map(\.waitP50), buckets.map(\.waitP95), buckets.map(\.runP50), buckets.map(\.runP95)],
                            series: ["wait-p50", "wait-p95", "run-p50", "run-p95"], labels: buckets.map(label), unit: " s", id: "times")
        body += "<p class=\"muted\">From the queue itself: the jobs' own times (jobs pruned are gone from it) and a sample of its depth each "
        body += "minute by a coordinator. The same figures as JSON: <a href=\"/api/queue/history?span=\(span.rawValue)\">/api/queue/history</a>.</p>"
        return html(Console.page(title: "Charts · MediaFarm", section: .charts, body: body), cookie: nil)
    }
}

/// Charts as SVG: one series a CSS class (coloured by the console's style sheet), a tooltip (`<title>`)
/// on each bar and point, the top value and the first, middle and last times on the axes.
enum Chart {
    static let (width, height, left, bottom) = (720.0, 180.0, 44.0, 22.0)

    static func timeLabel(_ date: Date, span: QueueHistory.Span) -> String {
        let f = DateFormatter()
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = span == .hour ? "HH:mm" : "d MMM HH:00"
        return f.string(from: date) + " UTC"
    }

    static func number(_ v: Double) -> String {
        v >= 100 || v == v.rounded() ? String(Int(v.rounded())) : String(format: "%.1f", v)
    }

    static func frame(_ top: Double, labels: [String], id: String, legend: [String], unit: String, content: HTML) -> HTML {
        var svg: HTML = "<figure class=\"chart\" id=\"chart-\(id)\"><svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(legend.joined(separator: ", "))\">"
        svg += "<line class=\"axis\" x1=\"\(left)\" y1=\"\(height - bottom)\" x2=\"\(width)\" y2=\"\(height - bottom)\"/>"
        svg += "<text class=\"label\" x=\"\(left - 4)\" y=\"12\" text-anchor=\"end\">\(number(top) + unit)</text>"
        svg += "<text class=\"label\" x=\"\(left - 4)\" y=\"\(height - bottom)\" text-anchor=\"end\">0</text>"
        for i in [0, labels.count / 2, labels.count - 1] where labels.indices.contains(i) {
            let x = left + (width - left) * (Double(i) + 0.5) / Double(labels.count)
            svg += "<text class=\"label\" x=\"\(x)\" y=\"\(height - 6)\" text-anchor=\"middle\">\(labels[i])</text>"
        }
        svg += content + "</svg><figcaption>"
        svg += legend.map { "<span class=\"key \($0)\">\($0.replacingOccurrences(of: "-", with: " "))</span>" as HTML }.joined(separator: " ")
        return svg + "</figcaption></figure>\n"
    }

    /// Stacked bars: `values[bucket][series]`.
    static func bars(_ values: [[Double]], series: [String], labels: [String], id: String) -> HTML {
        let top = max(1, values.map { $0.reduce(0, +) }.max() ?? 1)
        let slot = (width - left) / Double(max(values.count, 1))
        let scale = (height - bottom - 14) / top
        var content: HTML = ""
        for (i, stack) in values.enumerated() {
            var y = height - bottom
            for (k, v) in stack.enumerated() where v > 0 {
                let h = v * scale
                y -= h
                content += "<rect class=\"\(series[k])\" x=\"\(left + Double(i) * slot + slot * 0.1)\" y=\"\(y)\" width=\"\(slot * 0.8)\" height=\"\(h)\">"
                content += "<title>\(labels[i]): \(Int(v)) \(series[k])</title></rect>"
            }
        }
        return frame(top, labels: labels, id: id, legend: series, unit: "", content: content)
    }

    /// Lines, one per series; a bucket without a value leaves a gap.
    static func lines(_ values: [[Double?]], series: [String], labels: [String], unit: String, id: String) -> HTML {
        let top = max(1, values.flatMap { $0.compactMap { $0 } }.max() ?? 1)
        let slot = (width - left) / Double(max(labels.count, 1))
        let scale = (height - bottom - 14) / top
        var content: HTML = ""
        for (k, line) in values.enumerated() {
            var path = "", pen = false
            for (i, v) in line.enumerated() {
                guard let v else { pen = false; continue }
                let (x, y) = (left + (Double(i) + 0.5) * slot, height - bottom - v * scale)
                path += (pen ? "L" : "M") + String(format: "%.1f %.1f ", x, y)
                pen = true
                content += "<circle class=\"\(series[k])\" cx=\"\(x)\" cy=\"\(y)\" r=\"2\"><title>\(labels[i]): \(number(v))\(unit) \(series[k])</title></circle>"
            }
            if !path.isEmpty { content = "<path class=\"\(series[k])\" d=\"\(path)\"/>" as HTML + content }
        }
        return frame(top, labels: labels, id: id, legend: series, unit: unit, content: content)
    }
}
