import FarmModel
import Foundation

/// A job's report on its page, as tables: the composition's pieces (each source range and where it lands,
/// at what rate), the codes found with their times (and the pictures of their first frames, when the scan
/// made them: `scan.images`), and the export. Read only when the report is a local
/// JSON file under the job's output roots, of at most 4 MiB; otherwise the page says where it is.
enum ConsoleReport {
    static func section(_ job: Job) -> HTML {
        guard let text = job.result, let result = try? JSONParser.parse(text),  // a result that is not JSON has no report to show
              case .string(let path)? = result["report"] else { return "" }
        let full = path.hasPrefix("/") || path.hasPrefix("s3://") ? path : job.baseDirectory + "/" + path
        let body: HTML = "<h2>Report</h2><p class=\"muted\">\(full)</p>"
        let underRoots = job.writableRoots.contains { full.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }
        guard underRoots, !full.hasPrefix("s3://"), let report = read(full) else {
            return body + "<p class=\"muted\">Not shown here (not a local file under the job's output roots, or not readable now).</p>\n"
        }
        let pictures: [JSONValue] = if case .array(let list)? = report["scan"]?["images"] { list } else { [] }
        return body + tables(report, job: job, codePictures: pictures.count)
    }

    /// A report of at most 4 MiB, parsed; nil when it is gone, bigger or not JSON.
    static func read(_ path: String) -> JSONValue? {
        // One descriptor, never a link's or a FIFO's (`OpenedFile`); gone, bigger or unreadable: nil.
        guard let file = OpenedFile(path: URL(fileURLWithPath: path).resolvingSymlinksInPath().path), file.size <= 4 << 20,
              let text = file.text() else { return nil }
        return try? JSONParser.parse(Array(text.utf8))  // not JSON: nil
    }

    /// The paths of the pictures of the codes' frames (`scan.images[i].path`) in the report at `path`, in
    /// the codes' order; nil when it has none.
    static func codePictures(_ path: String) -> [String?]? {
        guard case .array(let list)? = read(path)?["scan"]?["images"] else { return nil }
        return list.map { if case .string(let p)? = $0["path"] { p } else { nil } }
    }

    static func tables(_ report: JSONValue, job: Job, codePictures: Int) -> HTML {
        var body: HTML = ""
        if case .array(let pieces)? = report["composition"]?["pieces"], !pieces.isEmpty {
            body += "<h3>Composition</h3><div class=\"scroll\"><table id=\"pieces\"><tr><th>source</th><th>from</th><th>for</th><th>at</th><th>rate</th></tr>"
            for piece in pieces.prefix(500) {
                body += "<tr><td><code>\(string(piece["source"]))</code></td><td>\(seconds(piece["sourceRange"]?["start"]))</td>"
                body += "<td>\(seconds(piece["sourceRange"]?["duration"]))</td><td>\(seconds(piece["targetRange"]?["start"]))</td><td>\(string(piece["rate"]))</td></tr>"
            }
            body += "</table></div>\n"
        }
        if let scan = report["scan"] {
            let codes: [JSONValue] = if case .array(let list)? = scan["codes"] { list } else { [] }
            body += "<h3>Codes</h3><p>\(codes.count) found in \(string(scan["framesScanned"])) frames (decoded by \(string(scan["decodedBy"]))).</p>"
            if !codes.isEmpty {
                let pictured = codePictures > 0
                body += "<div class=\"scroll\"><table id=\"codes\"><tr>\(pictured ? "<th>first frame</th>" as HTML : "")<th>symbology</th><th>payload</th><th>first seen</th><th>last seen</th><th>frames</th></tr>"
                for (i, code) in codes.prefix(1000).enumerated() {
                    body += "<tr>"
                    if pictured {
                        body += i < codePictures ? "<td><a href=\"/jobs/\(job.id)/files/code-\(i + 1)\"><img class=\"code-frame\" src=\"/jobs/\(job.id)/files/code-\(i + 1)\" alt=\"The frame where code \(i + 1) was first seen\" loading=\"lazy\"></a></td>" : "<td></td>"
                    }
                    body += "<td>\(string(code["symbology"]))</td><td><code>\(string(code["payload"]))</code></td>"
                    body += "<td>\(seconds(code["firstTime"]))</td><td>\(seconds(code["lastTime"]))</td><td>\(string(code["frameCount"]))</td></tr>"
                }
                body += "</table></div>\n"
            }
        }
        if let export = report["export"] {
            let count = { (key: String) -> Int in if case .array(let list)? = export[key] { list.count } else { 0 } }
            body += "<h3>Export</h3><table class=\"facts\" id=\"export\">"
            body += "<tr><th>output</th><td><code>\(string(export["output"]))</code></td></tr>"
            body += "<tr><th>mode</th><td>\(string(export["mode"]))</td></tr><tr><th>duration</th><td>\(seconds(export["duration"]))</td></tr>"
            body += "<tr><th>cuts</th><td>\(count("cuts")) (snapped to keyframes: \(count("snappedCuts")))</td></tr>"
            // Each audio track kept: how it was made, and its language.
            let more: [JSONValue] = if case .array(let list)? = export["additionalAudio"] { list } else { [] }
            let tracks = ([export["audio"]].compactMap { $0 } + more).map { track in
                string(track["handling"]) + (track["language"].map { " (\(string($0)))" } ?? "")
            }
            body += "<tr><th>audio</th><td>\(tracks.isEmpty ? "–" : tracks.joined(separator: ", "))</td></tr>"
            let took = Double(string(export["seconds"])).map { $0 < 10 ? String(format: "%.2f s", $0) : Spoken.duration($0) } ?? "–"
            body += "<tr><th>took</th><td>\(took)</td></tr></table>\n"
        }
        return body
    }

    /// A scalar's text ("–" for none).
    static func string(_ value: JSONValue?) -> String {
        switch value {
        case .string(let s)?: s
        case .number(let n)?: n
        case .bool(let b)?: b ? "yes" : "no"
        default: "–"
        }
    }

    /// A time as the reports write it ({"seconds", "value", "timescale"}, or a number): seconds, to the millisecond.
    static func seconds(_ value: JSONValue?) -> String {
        let number: String? = switch value {
        case .number(let n)?: n
        case .object?: if case .number(let n)? = value?["seconds"] { n } else { nil }
        default: nil
        }
        guard let number, let seconds = Double(number), seconds.isFinite else { return "–" }
        return String(format: "%.3f s", seconds)
    }
}
