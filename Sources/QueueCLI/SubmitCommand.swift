import ArgumentParser
import FarmLibrary
import FarmModel
import FarmStore
import FarmSubmit
import Foundation

/// `mediafarm submit`: validate manifests and queue them, all or nothing.
public struct SubmitCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Queue job manifests (files, or folders of *.json) for the coordinators.",
        discussion: """
        Every manifest is validated first: if any is invalid, every error is printed with its JSON path and \
        nothing of the submission is queued (exit 2). The jobs are queued in one transaction and their ids \
        printed. With --unique-key, a manifest whose key is held by a live (queued or running) job is not \
        queued again: the live job's id is printed instead.

        A manifest may name library assets ("input": "asset:ID"): each must be in the library (else exit 2), \
        and the host that runs the job resolves it to its own path. With --album, the one manifest is a \
        template: one job per asset of the album, {input} standing for "asset:ID", {id} for the id, and \
        {stem} and {ext} for the file's name on this host. With a scoped library token, only assets of its \
        albums may be submitted.
        """)

    @OptionGroup var queue: QueueOptions
    @OptionGroup var library: LibraryOptions

    @Option(help: "One job per asset of this album (user or smart), from the manifest template given.")
    var album: String?

    @Option(parsing: .unconditional, help: "Higher runs first \(UserNumbers.priority.inHelp).", transform: UserNumbers.priority.option)
    var priority: Int = 0

    @Option(name: .customLong("unique-key"), help: "At most one live job per key.")
    var uniqueKey: String?

    @Option(name: .customLong("after"), help: ArgumentHelp(
        "Run only after this job succeeded: an id, or a key given with --unique-key to an earlier submission (repeatable).",
        valueName: "id|key"))
    var after: [String] = []

    @Option(name: .customLong("after-policy"), help: "success (default): a dependency that fails fails these jobs; passed: one whose quality checks warned fails them too; always: run once every dependency ended.")
    var afterPolicy: AfterPolicy?

    @Option(name: .customLong("max-attempts"), parsing: .unconditional, help: "Attempts before a crashing job is dead \(UserNumbers.attempts.inHelp).", transform: UserNumbers.attempts.option)
    var maxAttempts: Int = RetryPolicy.default.maxAttempts

    @Option(parsing: .unconditional, help: "Seconds one attempt may take (default: the coordinator's --job-timeout) \(UserNumbers.timeout.inHelp).", transform: UserNumbers.timeout.option)
    var timeout: Double?

    @Option(parsing: .unconditional, help: "Seconds to wait before the job may start \(UserNumbers.delay.inHelp).", transform: UserNumbers.delay.option)
    var delay: Double = 0

    @Option(name: .customLong("output-root"), help: "A folder outputs may be written under (repeatable; default: MEDIAFARM_OUTPUT_ROOTS, else each manifest's folder).")
    var outputRoots: [String] = []

    @Flag(name: .customLong("allow-missing-inputs"),
          help: "Queue manifests whose input files are not there yet (they must be when the job runs).")
    var allowMissingInputs = false

    @Flag(help: "Wait until every job ends; exit 1 when any did not succeed.")
    var wait = false

    @Flag(help: "Print the queued jobs as JSON.")
    var json = false

    @Argument(help: "Manifest files, or folders whose *.json files are manifests.")
    var manifests: [String]

    public func validate() throws {
        if album != nil && manifests.count != 1 { throw ValidationError("--album takes one manifest template") }
        for text in after where JobReference(parsing: text) == nil {
            throw ValidationError("--after \(text): give a job id (a positive number) or a unique key (key:NAME for a key of digits)")
        }
    }

    public func run() async throws {
        let (jobs, queued, store) = try await enqueue()
        try say(jobs, queued)
        if wait {
            let ids = Array(Set(queued.jobs.map(\.id))).sorted()
            let ended = try await StatusCommand.watch(store: store, ids: ids, draw: !json)
            if ended.contains(where: { $0.state != .succeeded }) { throw ExitCode(ExitStatus.failure) }
        }
    }

    /// Checks and queues what the options name, printing nothing (a library that cannot be opened is warned
    /// of on standard error): the jobs made, what was queued, and the queue. What `run` does before it prints; what a test of the farm submits with in its own process.
    public func enqueue() async throws -> (jobs: [NewJob], queued: Submission.Queued, store: any JobStore) {
        let roots = OutputRoots.chosen(outputRoots)
        let runAt = delay > 0 ? Date().addingTimeInterval(delay) : nil
        let dependencies = after.compactMap(JobReference.init(parsing:))
        let options = JobOptions(outputRoots: roots ?? [], priority: priority, maxAttempts: maxAttempts, runAt: runAt,
                                 uniqueKey: uniqueKey.map(UniqueKey.given), timeout: timeout, after: dependencies, afterPolicy: afterPolicy)
        let token = try library.token()
        let submitter = Submitter.commandLine(outputRoots: roots, allowMissingInputs: allowMissingInputs, oneUniqueKey: uniqueKey != nil)
        // The queue is opened when it is needed: to ask the library about assets, for a scoped token, an
        // album, or to queue. Invalid manifests are refused before a new queue is made.
        var opened: (any JobStore)?
        var assets: AssetLibrary?
        func openLibrary(create: Bool) async throws -> AssetLibrary {
            if let assets { return assets }
            let store: any JobStore
            if let opened { store = opened } else { store = try await queue.open(create: create) }
            opened = store
            let made = try await library.open(store)
            assets = made
            return made
        }
        if token != nil || album != nil { _ = try await openLibrary(create: album == nil) }
        let checked: CheckedManifests
        do {
            if let album {
                checked = try await Self.albumOffers(album, template: manifests[0], library: try await openLibrary(create: false), as: submitter)
            } else {
                let read = try Self.expand(manifests).map(ManifestOffer.reading)
                // the failures go in as unreadable
                checked = try await Submission.check(read.compactMap { try? $0.get() }, unreadable: read.compactMap(\.failure), as: submitter) { allValid in
                    // With invalid manifests, an existing queue is still asked, so that every error is said at once.
                    // (No library on this queue then: no asset can be known, and each reference is said to be unknown.)
                    allValid ? try await openLibrary(create: true) : try? await openLibrary(create: false)
                }
            }
            // Refused before a queue is made (`submit` asks the same again).
            _ = try Submission.accepting(checked, access: assets?.access)
        } catch let error as SubmissionError {
            throw error.cliError
        }
        let store: any JobStore
        if let opened { store = opened } else { store = try await queue.open(create: true) }
        if assets == nil {
            do { assets = try await library.open(store) } catch {
                // The jobs are queued all the same; which assets they read is not recorded.
                FileHandle.standardError.write(Data("warning: the asset library cannot be opened (\(error)); the jobs' inputs are not recorded\n".utf8))
            }
        }
        do {
            let (jobs, queued) = try await Submission(store: store, library: assets).submit(checked, options: options)
            return (jobs, queued, store)
        } catch {
            throw error.cliError
        }
    }

    /// What was queued (and what was not, for a unique key already held), with each job's warnings.
    func say(_ jobs: [NewJob], _ queued: Submission.Queued) throws {
        for (id, warnings) in queued.warnings.sorted(by: { $0.key < $1.key }) {
            for warning in warnings { FileHandle.standardError.write(Data("warning: job \(id): \(warning)\n".utf8)) }
        }
        if json {
            let rows = zip(jobs, queued.jobs).map { job, q in SubmittedJob(id: q.id, name: job.name, queued: q.inserted, warnings: queued.warnings[q.id]) }
            print(String(decoding: try JSONEncoder.sortedPretty().encode(rows), as: UTF8.self))
            return
        }
        for (job, q) in zip(jobs, queued.jobs) {
            print(!q.inserted ? "job \(q.id) already holds key \(UserText.printable(uniqueKey ?? "")): \(UserText.printable(job.name)) not queued again"
                  : job.after.isEmpty ? "queued job \(q.id) (\(job.name))"
                  : "queued job \(q.id) (\(job.name)), after \(job.after.map(\.description).joined(separator: ", "))")
        }
    }

    /// One manifest per asset of `album`, from a template in which {input} is "asset:ID", each checked
    /// as a submitted file is.
    static func albumOffers(_ album: String, template path: String, library: AssetLibrary, as submitter: Submitter) async throws -> CheckedManifests {
        let template: IngestTemplate
        do {
            template = try IngestTemplate.load(path, placeholders: ["input", "id", "stem", "ext"])
        } catch {
            throw CLIError(error.description, status: ExitStatus.usage)
        }
        var options = FetchOptions()
        options.album = album
        options.sort = .added
        let assets = try await LibraryOptions.run { try await library.fetch(options) }.assets
        guard !assets.isEmpty else { throw CLIError("the album \"\(album)\" has no assets; nothing was queued") }
        let folder = PathRules.resolve(template.folder, against: FileManager.default.currentDirectoryPath)
        let stem = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        var offers: [ManifestOffer] = []
        for asset in assets {
            // {stem} and {ext}: the file's name on this host, else on another.
            var file = asset.path
            if file == nil { file = try await LibraryOptions.run { try await library.detail(asset.id) }.locations.first?.path }
            let text = template.manifest(values: ["input": asset.id.reference, "id": asset.id.rawValue], file: file ?? asset.id.rawValue)
            offers.append(ManifestOffer(text: text, file: "\(path) for \(asset.id)", name: "\(stem)-\(asset.id.rawValue.prefix(10))", baseDirectory: folder))
        }
        // The album's assets are the library's: nothing to look up.
        return try await Submission.check(offers, as: submitter) { _ in nil }
    }

    /// Manifest files: each file as given, each folder's *.json files in name order.
    public static func expand(_ arguments: [String]) throws -> [String] {
        var files: [String] = []
        for argument in arguments {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue {
                let names: [String]
                do { names = try FileManager.default.contentsOfDirectory(atPath: argument) } catch {
                    throw CLIError("\(argument): cannot list the folder: \(error.localizedDescription)", status: ExitStatus.usage)
                }
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

extension AfterPolicy: ExpressibleByArgument {}


extension JSONEncoder {
    /// The farm's one encoding (the API's), laid out for people.
    public static func sortedPretty() -> JSONEncoder { .farm(pretty: true) }
}

extension SubmissionError {
    /// The error as the command line says it: the manifests' issues, a scoped token's refusal and the
    /// queue's refusal are usage errors (exit 2); a library or a queue that did not answer is a failure.
    public var cliError: CLIError {
        switch self {
        case .invalid, .notPermitted, .refused: CLIError(description, status: ExitStatus.usage)
        case .library(let error): CLIError(description, status: error.isUsage ? ExitStatus.usage : ExitStatus.failure)
        case .outcomeUnknown: CLIError(description + "; see `mediafarm status` before submitting again")
        }
    }
}

extension Result {
    public var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
