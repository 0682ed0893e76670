import ArgumentParser
import FarmApplication
import FarmModel
import FarmRuntime
import FarmStore
import FarmSubmit
import Foundation
import Logging
import QueueCLI
import ServiceLifecycle

/// `mediafarm batch`: CI mode. Every manifest is validated first; then all of them run through an
/// embedded queue in a temporary folder and a coordinator with worker processes (the farm's own path:
/// crashes retried, outputs published atomically); a summary, optionally a JUnit XML report, and exit 0
/// only if every job succeeded.
struct BatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Run manifests to completion as a farm would (for CI): exit 0 only if every job succeeded.",
        discussion: """
        All manifests are validated before anything runs: if any is invalid, every error is printed and \
        nothing runs (exit 2). The jobs then run through a queue in a temporary folder (removed afterwards) \
        and a coordinator with --workers worker processes: a crashing worker is retried, outputs appear \
        only when complete. --junit writes a JUnit XML report (one test case per job, the job's error as the \
        failure) that CI systems display; its folder is checked before anything runs, and when manifests are \
        invalid the report holds each of them as a failed test case (the valid ones as skipped). SIGTERM or \
        SIGINT drains: running jobs get --grace seconds.
        """)

    @Option(parsing: .unconditional, help: "Worker processes at once \(UserNumbers.workers.inHelp).", transform: UserNumbers.workers.option)
    var workers: Int = 2

    @Option(help: "Write a JUnit XML report here.")
    var junit: String?

    @Flag(help: "Print the coordinator's events and then a summary as JSON lines.")
    var json = false

    @Option(name: .customLong("output-root"), help: "A folder outputs may be written under (repeatable; default: MEDIAFARM_OUTPUT_ROOTS, else each manifest's folder).")
    var outputRoots: [String] = []

    @Option(name: .customLong("max-attempts"), parsing: .unconditional, help: "Attempts before a crashing job counts as failed \(UserNumbers.attempts.inHelp).", transform: UserNumbers.attempts.option)
    var maxAttempts: Int = RetryPolicy.default.maxAttempts

    @Option(name: .customLong("job-timeout"), parsing: .unconditional, help: "Seconds an attempt may take \(UserNumbers.timeout.inHelp).", transform: UserNumbers.timeout.option)
    var jobTimeout: Double = 3600

    @Option(parsing: .unconditional, help: "Seconds running jobs get to finish after SIGTERM \(UserNumbers.grace.inHelp).", transform: UserNumbers.grace.option)
    var grace: Double = 30

    @OptionGroup var reuse: WorkerReuseOptions

    @Argument(help: "Manifest files, or folders whose *.json files are manifests.")
    var manifests: [String]

    @OptionGroup var stall: StallOptions

    func run() async throws {
        stall.apply()
        let files = try SubmitCommand.expand(manifests)
        let roots = OutputRoots.chosen(outputRoots)
        // The report's place is checked before anything runs: a CI run must not end without it.
        if let junit { try Self.reporting { try JUnitReport.checkWritable(junit) } }
        // Checked as `submit` checks them (no library: the batch's queue is its own).
        let read = files.map(ManifestOffer.reading)
        let loaded: CheckedManifests
        do {
            loaded = try await Submission.check(read.compactMap { try? $0.get() }, unreadable: read.compactMap(\.failure),  // the failures go in as unreadable
                                                as: .batch(outputRoots: roots)) { _ in nil }
        } catch {
            throw error.cliError
        }
        if !loaded.invalid.isEmpty {
            if let junit {
                // CI shows what it can read: each invalid manifest a failed test case, the others not run.
                let results = loaded.invalid.map(BatchResult.init(invalid:))
                    + loaded.valid.map { BatchResult(notRun: $0.manifest.name, file: $0.offer.file) }
                try Self.reporting { try JUnitReport.write(results, seconds: 0, to: junit) }
            }
            for e in loaded.invalid { FileHandle.standardError.write(Data((e.description + "\n").utf8)) }
            throw CLIError("nothing was run: \(loaded.invalid.count) of \(loaded.count) manifests are invalid", status: ExitStatus.usage)
        }
        // The embedded coordinator runs every job: a host's capabilities are a farm's.
        let options = JobOptions(outputRoots: roots ?? [], maxAttempts: maxAttempts, requires: [])

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mediafarm-batch-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }  // the batch's scratch folder: a leftover is swept with TMPDIR
        let store: SQLiteJobStore
        let queued: [Enqueued]
        do {
            store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path, listen: true)
            // The one way into a queue (the batch's own: no library to record lineage in).
            queued = try await Submission(store: store, library: nil).submit(loaded, options: options).queued.jobs
        } catch {
            throw CLIError("batch: cannot make its queue in \(folder.path): \(error)")
        }

        var configuration = CoordinatorConfiguration()
        configuration.workers = workers
        configuration.jobTimeout = jobTimeout
        configuration.grace = grace
        configuration.exitWhenIdle = true
        try reuse.apply(to: &configuration)
        configuration.keepFinished = nil
        let printer = CoordinatorPrinter(json: json)
        let started = Date()
        try await FarmApplication.batch(store: store, configuration: configuration, events: { printer.print($0) }).group.run()
        printer.finish()
        let seconds = Date().timeIntervalSince(started)

        let ended = try await store.jobs(ids: queued.map(\.id))
        let byID = Dictionary(uniqueKeysWithValues: zip(queued.map(\.id), loaded.valid.map(\.offer.file)))
        let results = ended.map { BatchResult($0, file: byID[$0.id] ?? $0.name) }
        let failed = results.filter { $0.state != "succeeded" }
        if let junit { try Self.reporting { try JUnitReport.write(results, seconds: seconds, to: junit) } }
        if json {
            let summary = BatchSummary(event: "summary", jobs: results, succeeded: results.count - failed.count, failed: failed.count,
                                       seconds: (seconds * 1000).rounded() / 1000)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(summary), as: UTF8.self))
        } else {
            print(String(format: "batch: %d jobs, %d succeeded, %d failed, in %.1f s", results.count, results.count - failed.count,
                         failed.count, seconds))
            for r in failed { print("  \(r.state): \(r.name) (\(r.manifest)): \(r.error ?? "no reason recorded")") }
        }
        if !failed.isEmpty { throw ExitCode(ExitStatus.failure) }
    }

    /// The report's errors as the command line says them: found before anything ran, exit 2.
    static func reporting(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as JUnitReportError {
            throw CLIError(error.description, status: error.isUsage ? ExitStatus.usage : ExitStatus.failure)
        }
    }
}
