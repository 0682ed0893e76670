import FarmIngest
import Foundation
import Prometheus
import QueueCLI

/// `ingest --metrics-file`: the last pass's figures in Prometheus' text format, for node_exporter's
/// textfile collector (an ingest pass is a short-lived process that no scraper could reach). Written to a
/// temporary name and renamed, so the collector never reads half a file.
enum IngestMetrics {
    static func write(_ report: IngestReport?, seconds: Double, to path: String) throws {
        let registry = PrometheusCollectorRegistry()
        func gauge(_ name: String, _ help: String, _ value: Double) {
            registry.makeGauge(descriptor: MetricNameDescriptor(namespace: "mediafarm_ingest", metricName: name, unitName: "", helpText: help))
                .set(value)
        }
        gauge("last_pass_success", "1 when the last pass ran, 0 when it failed.", report == nil ? 0 : 1)
        gauge("last_pass_timestamp_seconds", "When the last pass ended (Unix time).", Date().timeIntervalSince1970)
        gauge("last_pass_duration_seconds", "How long the last pass took.", seconds)
        if let report {
            gauge("last_pass_files_seen", "Files the last pass saw in the watch folders.", Double(report.seen))
            gauge("last_pass_files_settling", "Files still changing or not yet settled.", Double(report.settling))
            gauge("last_pass_jobs_enqueued", "Jobs the last pass enqueued.", Double(report.enqueued))
            gauge("last_pass_duplicates", "Files whose content was ingested before.", Double(report.duplicates))
            gauge("last_pass_quarantined", "Files moved to the quarantine folder.", Double(report.quarantined))
            gauge("last_pass_skipped", "Files skipped (unreadable, vanished, ...).", Double(report.skipped.count))
            gauge("last_pass_prefixes_unlisted", "Object prefixes the last pass could not list (the pass exits 1).", Double(report.unlisted.count))
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let temporary = folder + "/." + URL(fileURLWithPath: path).lastPathComponent + ".\(getpid()).tmp"
        do {
            try Data(registry.emitToBuffer()).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, path) == 0 else { throw CLIError("\(path): \(String(cString: strerror(errno)))") }
        } catch {
            unlink(temporary)
            throw CLIError("--metrics-file \(path): cannot write it: \(error)")
        }
    }
}
