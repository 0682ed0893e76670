import ArgumentParser
import FarmModel
import FarmRuntime
import FarmStore
import Foundation

/// `mediafarm submit`: validate manifests and queue them, all or nothing.
struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Queue job manifests (files, or folders of *.json) for the coordinators.",
        discussion: """
        Every manifest is validated first: if any is invalid, every error is printed with its JSON path and \
        nothing of the submission is queued (exit 2). The jobs are queued in one transaction and their ids \
        printed. With --unique-key, a manifest whose key is held by a live (queued or running) job is not \
        queued again: the live job's id is printed instead.
        """)

    @OptionGroup var queue: QueueOptions

    @Option(parsing: .unconditional, help: "Higher runs first (default 0).")
    var priority: Int = 0

    @Option(name: .customLong("unique-key"), help: "At most one live job per key.")
    var uniqueKey: String?

    @Option(name: .customLong("max-attempts"), parsing: .unconditional, help: "Attempts before a crashing job is dead (default 3).")
    var maxAttempts: Int = RetryPolicy.default.maxAttempts

    @Option(parsing: .unconditional, help: "Seconds one attempt may take (default: the coordinator's --job-timeout).")
    var timeout: Double?

    @Option(parsing: .unconditional, help: "Seconds to wait before the job may start.")
    var delay: Double = 0

    @Option(name: .customLong("output-root"), help: "A folder outputs may be written under (repeatable; default: MEDIAFARM_OUTPUT_ROOTS, else each manifest's folder).")
    var outputRoots: [String] = []

    @Flag(help: "Wait until every job ends; exit 1 when any did not succeed.")
    var wait = false

    @Flag(help: "Print the queued jobs as JSON.")
    var json = false

    @Argument(help: "Manifest files, or folders whose *.json files are manifests.")
    var manifests: [String]

    func validate() throws {
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be at least 1") }
        if let timeout, timeout <= 0 { throw ValidationError("--timeout must be positive") }
        guard delay >= 0 else { throw ValidationError("--delay cannot be negative") }
    }

    func run() async throws {
        let files = try Self.expand(manifests)
        let roots = OutputRoots.chosen(outputRoots)

        let runAt = delay > 0 ? Date().addingTimeInterval(delay) : nil
        let jobs = try Self.load(files, outputRoots: roots, nothing: "queued") { manifest, text in
            NewJob(name: manifest.name, manifest: text, baseDirectory: manifest.baseDirectory, outputRoots: roots ?? [],
                   priority: priority, maxAttempts: maxAttempts, runAt: runAt, uniqueKey: uniqueKey, timeout: timeout)
        }

        let store = try await queue.open(create: true)
        let queued: [Enqueued]
        do {
            queued = try await store.enqueue(jobs, at: Date())
        } catch {
            throw CLIError("\(error); nothing was queued")
        }
        if json {
            let rows = zip(jobs, queued).map { job, q in SubmittedJob(id: q.id, name: job.name, queued: q.inserted) }
            print(String(decoding: try JSONEncoder.sortedPretty().encode(rows), as: UTF8.self))
        } else {
            for (job, q) in zip(jobs, queued) {
                print(q.inserted ? "queued job \(q.id) (\(job.name))"
                                 : "job \(q.id) already holds key \(uniqueKey ?? ""): \(job.name) not queued again")
            }
        }
        if wait {
            let ids = Array(Set(queued.map(\.id))).sorted()
            let jobs = try await StatusCommand.watch(store: store, ids: ids, draw: !json)
            if jobs.contains(where: { $0.state != .succeeded }) { throw ExitCode(ExitStatus.failure) }
        }
    }

    /// Loads and validates every manifest, making a job of each; if any is invalid, prints every error and
    /// exits 2 ("nothing was `nothing`").
    static func load(_ files: [String], outputRoots roots: [String]?, nothing: String,
                     job: (JobManifest, String) -> NewJob) throws -> [NewJob] {
        var jobs: [NewJob] = []
        var invalid: [ManifestValidationError] = []
        for file in files {
            switch ManifestLoader.loadWithText(file, outputRoots: roots) {
            case .success(let (manifest, text)): jobs.append(job(manifest, text))
            case .failure(let e): invalid.append(e)
            }
        }
        guard invalid.isEmpty else {
            for e in invalid { FileHandle.standardError.write(Data((e.description + "\n").utf8)) }
            FileHandle.standardError.write(Data("nothing was \(nothing): \(invalid.count) of \(files.count) manifests are invalid\n".utf8))
            throw ExitCode(ExitStatus.usage)
        }
        return jobs
    }

    /// Manifest files: each file as given, each folder's *.json files in name order.
    static func expand(_ arguments: [String]) throws -> [String] {
        var files: [String] = []
        for argument in arguments {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
                let manifests = names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
                if manifests.isEmpty { throw CLIError("\(argument): no *.json manifests in this folder", status: ExitStatus.usage) }
                files += manifests.map { (argument as NSString).appendingPathComponent($0) }
            } else {
                files.append(argument)
            }
        }
        return files
    }
}

struct SubmittedJob: Encodable {
    var id: Int64
    var name: String
    /// false: a live job already held the unique key; `id` is that job's.
    var queued: Bool
}

extension JSONEncoder {
    static func sortedPretty() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
