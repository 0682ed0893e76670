import ArgumentParser
import FarmIngest
import FarmModel
import FarmRuntime
import FarmStore
import FarmSubmit
import Foundation
import QueueCLI
#if canImport(Glibc)
import Glibc
#endif

/// On a terminal, a line on stderr while settled files are hashed and inspected (a long first pass).
enum IngestProgress {
    static func callback() -> @Sendable (Int, Int) -> Void {
        guard isatty(STDERR_FILENO) == 1 else { return { _, _ in } }
        return { done, total in
            guard total >= 20 else { return }
            if done == total {
                FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
            } else if done % 10 == 0 {
                FileHandle.standardError.write(Data("\rchecking settled files: \(done) of \(total)\u{1B}[K".utf8))
            }
        }
    }
}

/// `mediafarm ingest`: one pass over the watch folders of a config, for cron or a systemd timer.
struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "One pass over watch folders and object prefixes: new media files that have settled become jobs, once each.",
        discussion: """
        A file is enqueued when its size, modification time and inode stayed the same across passes at least \
        settleSeconds apart, it is not a duplicate of anything ingested before (by SHA-256 of its content), \
        and it inspects as readable, composable media; bad files go to the quarantine folder with a \
        NAME.reason.json beside them. A pass that finds another one running on the same state exits 0 at \
        once. A watch that is an object prefix (s3://BUCKET/PREFIX/) is listed at each pass: an object settles \
        while its size and entity tag stay the same, and stays where it is. Exit 0 when the pass ran, 1 when \
        it failed (nothing marked ingested: the next pass retries) or a prefix could not be listed (the rest \
        was ingested), 2 for a bad config. The config's JSON Schema is jobs/ingest.schema.json.
        """)

    @Option(help: "The ingest config (JSON).")
    var config: String

    @OptionGroup var queue: QueueOptions

    @Option(help: ArgumentHelp("This host's name in the asset library, which registers every ingested file (default: $MEDIAFARM_HOST, else the machine's host name).", valueName: "name"))
    var host: String?

    @Flag(name: .customLong("dry-run"), help: "Say what the pass would do; change nothing.")
    var dryRun = false

    @Option(help: "Ingest again a file (path), an object (s3:// address) or content (SHA-256) ingested before (repeatable).")
    var reingest: [String] = []

    @Flag(help: "Print the pass as JSON.")
    var json = false

    @Option(name: .customLong("metrics-file"),
            help: "Write the pass's figures in Prometheus' text format to this file (for node_exporter's textfile collector).")
    var metricsFile: String?

    /// The pass in one line; a dry run says what a pass would do, since it does nothing.
    /// Files and objects (of `s3://` watches) each by their own name.
    static func summary(_ report: IngestReport) -> String {
        let files = report.seen - report.seenObjects
        let seen = report.seenObjects == 0 ? counted(report.seen, "file") : files == 0 ? counted(report.seen, "object")
            : "\(counted(files, "file")) and \(counted(report.seenObjects, "object"))"
        let item = report.seenObjects == 0 ? "file" : files == 0 ? "object" : "file or object"
        guard report.dryRun else {
            return "ingest: \(seen) seen, \(report.settling) settling, \(report.enqueued) enqueued, "
                + "\(counted(report.duplicates, "duplicate")), \(report.quarantined) quarantined, \(report.skipped.count) skipped"
        }
        return "ingest (dry run: nothing changed): \(seen) seen; a pass would "
            + "start the settle time of \(counted(report.firstSeen, "new or changed \(item)")), "
            + "wait for \(report.settling - report.firstSeen) still settling, enqueue \(report.enqueued), skip \(counted(report.duplicates, "duplicate")), "
            + "quarantine \(report.quarantined), and skip \(counted(report.skipped.count, "other \(item)"))"
    }

    func run() async throws {
        let settings: IngestConfig
        do {
            settings = try IngestConfig.load(config)
        } catch {
            throw CLIError(error.description, status: ExitStatus.usage)
        }
        let location = try queue.location()
        let pass = IngestPass(config: settings, openQueue: { try await JobStores.open(location, create: true) }, progress: IngestProgress.callback(),
           libraryHost: LibraryOptions.hostName(host))
        let report: IngestReport
        var failed = false
        let started = Date()
        // Paths to ingest again are absolute, as the state records them; hashes are lower case.
        let reingest = reingest.map { IngestReport.isHash($0) ? $0.lowercased() : PathRules.resolve($0, against: FileManager.default.currentDirectoryPath) }
        do {
            report = try await pass.run(dryRun: dryRun, reingest: reingest)
        } catch {
            if error.isUsage { throw CLIError("ingest: \(error)", status: ExitStatus.usage) }
            // The ingest's own error is the one reported, not the metrics file's.
            if let metricsFile, !dryRun { try? IngestMetrics.write(nil, seconds: Date().timeIntervalSince(started), to: metricsFile) }
            throw CLIError("ingest: \(error)")
        }
        if let metricsFile, !dryRun, !report.busy {
            try IngestMetrics.write(report, seconds: Date().timeIntervalSince(started), to: metricsFile)
        }
        defer {
            if !report.libraryWarnings.isEmpty {
                FileHandle.standardError.write(Data(("ingest: the jobs are queued, but the asset library did not record every file "
                    + "(register them with `mediafarm library add PATH`):\n" + report.libraryWarnings.map { "  \($0)\n" }.joined()).utf8))
            }
        }
        if !report.libraryWarnings.isEmpty || !report.notReingested.isEmpty || !report.unlisted.isEmpty { failed = true }
        for u in report.unlisted {
            FileHandle.standardError.write(Data("ingest: \(u.path): \(u.reason); its objects were left as the last pass saw them\n".utf8))
        }
        if json {
            print(String(decoding: try JSONEncoder.sortedPretty().encode(report), as: UTF8.self))
            if failed { throw ExitCode(ExitStatus.failure) }
            return
        }
        if report.busy {
            print("ingest: another pass is running on \(settings.state); this one did nothing")
            return
        }
        print(Self.summary(report))
        for job in report.jobs {
            print("  " + (job.id.map { "job \($0)" } ?? "would enqueue") + ": \(job.path) (\(job.hash.prefix(16)))")
        }
        for q in report.quarantine {
            print("  \(dryRun ? "would quarantine" : "quarantined"): \(q.path): \(q.reason)"
                  + (q.movedTo.map { " -> \($0)" } ?? "") + (q.notMoved.map { " (left in place: \($0))" } ?? ""))
        }
        for r in report.notReingested { print("  not ingested again: \(r.path): \(r.reason)") }
        for d in report.duplicateFiles { print("  duplicate: \(d.path): \(d.reason)") }
        for s in report.skipped { print("  skipped: \(s.path): \(s.reason)") }
        if failed { throw ExitCode(ExitStatus.failure) }
    }
}
