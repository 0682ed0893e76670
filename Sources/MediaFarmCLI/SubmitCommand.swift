import ArgumentParser
import FarmIngest
import FarmLibrary
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

    @Option(name: .customLong("after-policy"), help: "success (default): a dependency that fails fails these jobs; always: run once every dependency ended.")
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

    func validate() throws {
        if album != nil && manifests.count != 1 { throw ValidationError("--album takes one manifest template") }
        for text in after where JobReference(parsing: text) == nil {
            throw ValidationError("--after \(text): give a job id (a positive number) or a unique key (key:NAME for a key of digits)")
        }
    }

    func run() async throws {
        let files = album == nil ? try Self.expand(manifests) : manifests
        let roots = OutputRoots.chosen(outputRoots)

        let runAt = delay > 0 ? Date().addingTimeInterval(delay) : nil
        let dependencies = after.compactMap(JobReference.init(parsing:))
        let make = { (manifest: JobManifest, text: String) in
            NewJob(name: manifest.name, manifest: text, baseDirectory: manifest.baseDirectory, outputRoots: roots ?? [],
                   priority: priority, maxAttempts: maxAttempts, runAt: runAt, uniqueKey: uniqueKey, timeout: timeout,
                   after: manifest.after + dependencies.filter { !manifest.after.contains($0) },
                   afterPolicy: afterPolicy ?? manifest.afterPolicy, requires: manifest.requires)
        }
        let token = try library.token()
        var sources: [[String]] = []
        var jobs: [NewJob] = []
        var loaded = Loaded()
        if album == nil {
            loaded = Self.validateAll(files, outputRoots: roots, missingInputWayOut: allowMissingInputs ? nil
                                      : "if it will be there when the job runs, give --allow-missing-inputs")
        }
        let namesAssets = !loaded.references.isEmpty
        // Invalid manifests are refused before the queue is made; the library is asked about the assets
        // they name only when the queue is there to ask.
        var opened: (any JobStore)?
        var assets: AssetLibrary?
        if album != nil || namesAssets || token != nil {
            opened = loaded.invalid.isEmpty ? try await queue.open(create: album == nil) : try? await queue.open()
            if let opened { assets = try await library.open(opened) }
        }
        if let assets, album == nil, namesAssets { try await Self.addUnknownAssets(&loaded, library: assets) }
        try Self.refuseInvalid(loaded, nothing: "queued")
        for entry in loaded.valid {
            sources.append(entry.manifest.edits.map(\.source))
            jobs.append(make(entry.manifest, entry.text))
        }
        let store: any JobStore
        if let opened { store = opened } else { store = try await queue.open(create: true) }
        if let album, let assets {
            (jobs, sources) = try await Self.albumJobs(album, template: files[0], library: assets, outputRoots: roots, make: make)
        }
        // A scoped token submits nothing but assets (of its albums: it sees no other).
        if token != nil, let path = sources.flatMap({ $0 }).first(where: { AssetID.reference($0) == nil }) {
            throw CLIError("\(path): a scoped library token submits only assets of its albums (asset:ID); nothing was queued",
                           status: ExitStatus.usage)
        }
        let queued: [Enqueued]
        do {
            queued = try await store.enqueue(jobs, at: Date())
        } catch .refused(let message) {
            throw CLIError(message, status: ExitStatus.usage)
        } catch {
            throw CLIError("\(error); nothing was queued")
        }
        if assets == nil { assets = try? await library.open(store) }
        await Self.recordInputs(queued, sources, library: assets)
        if json {
            let rows = zip(jobs, queued).map { job, q in SubmittedJob(id: q.id, name: job.name, queued: q.inserted) }
            print(String(decoding: try JSONEncoder.sortedPretty().encode(rows), as: UTF8.self))
        } else {
            for (job, q) in zip(jobs, queued) {
                print(!q.inserted ? "job \(q.id) already holds key \(uniqueKey ?? ""): \(job.name) not queued again"
                      : job.after.isEmpty ? "queued job \(q.id) (\(job.name))"
                      : "queued job \(q.id) (\(job.name)), after \(job.after.map(\.description).joined(separator: ", "))")
            }
        }
        if wait {
            let ids = Array(Set(queued.map(\.id))).sorted()
            let jobs = try await StatusCommand.watch(store: store, ids: ids, draw: !json)
            if jobs.contains(where: { $0.state != .succeeded }) { throw ExitCode(ExitStatus.failure) }
        }
    }

    /// Records which library assets each queued job reads: those it names, and input files this host
    /// registered (Failed Jobs' Inputs, lineage). The jobs are queued already: a failure here is a warning.
    static func recordInputs(_ queued: [Enqueued], _ sources: [[String]], library: AssetLibrary?) async {
        guard let library else { return }
        for (job, paths) in zip(queued, sources) where job.inserted {
            do {
                try await library.recordJobInputs(job.id, sources: paths)
            } catch {
                FileHandle.standardError.write(Data("warning: job \(job.id): the library did not record its inputs: \(error)\n".utf8))
            }
        }
    }

    /// One job per asset of `album`, from a template in which {input} is "asset:ID"; every manifest is
    /// validated first (exit 2 with every error, nothing queued).
    static func albumJobs(_ album: String, template path: String, library: AssetLibrary, outputRoots roots: [String]?,
                          make: (JobManifest, String) -> NewJob) async throws -> ([NewJob], [[String]]) {
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
        var jobs: [NewJob] = []
        var sources: [[String]] = []
        var invalid: [ManifestValidationError] = []
        for asset in assets {
            // {stem} and {ext}: the file's name on this host, else on another.
            var file = asset.path
            if file == nil { file = try await LibraryOptions.run { try await library.detail(asset.id) }.locations.first?.path }
            let text = template.manifest(values: ["input": asset.id.reference, "id": asset.id.rawValue], file: file ?? asset.id.rawValue)
            let name = "\(stem)-\(asset.id.rawValue.prefix(10))"
            switch ManifestLoader.validate(bytes: Array(text.utf8), file: "\(path) for \(asset.id)", name: name, baseDirectory: folder,
                                           outputRoots: roots, refuseExistingOutputs: true) {
            case .success(let manifest):
                jobs.append(make(manifest, text))
                sources.append(manifest.edits.map(\.source))
            case .failure(let e):
                invalid.append(e)
            }
        }
        guard invalid.isEmpty else {
            for e in invalid { FileHandle.standardError.write(Data((e.description + "\n").utf8)) }
            FileHandle.standardError.write(Data("nothing was queued: \(invalid.count) of \(assets.count) manifests are invalid\n".utf8))
            throw ExitCode(ExitStatus.usage)
        }
        return (jobs, sources)
    }

    /// Every manifest loaded and validated: the valid ones (file, manifest, text), every error, and the
    /// well-formed `asset:ID` references of each file, valid or not.
    struct Loaded {
        var valid: [(file: String, manifest: JobManifest, text: String)] = []
        var invalid: [ManifestValidationError] = []
        var references: [String: [(path: String, id: AssetID)]] = [:]
        var count: Int { valid.count + invalid.count }
    }

    static func validateAll(_ files: [String], outputRoots roots: [String]?, missingInputWayOut: String? = nil) -> Loaded {
        var loaded = Loaded()
        for file in files {
            let references: [(path: String, id: AssetID)]
            switch ManifestLoader.loadWithText(file, outputRoots: roots, missingInputWayOut: missingInputWayOut) {
            case .success(let (manifest, text)):
                loaded.valid.append((file, manifest, text))
                references = AssetID.references(inManifest: Array(text.utf8))
            case .failure(let e):
                loaded.invalid.append(e)
                let bytes = FileHandle(forReadingAtPath: file).flatMap { try? $0.read(upToCount: ManifestLoader.maxBytes) } ?? Data()
                references = AssetID.references(inManifest: Array(bytes))
            }
            if !references.isEmpty { loaded.references[file] = references }
        }
        return loaded
    }

    /// Adds to `loaded`'s errors the assets its manifests name (valid or not) that `library` does not know,
    /// at their JSON paths, so that they are reported with the manifests' other errors.
    /// The library is asked once for every id of every file (not once a file: a folder of thousands).
    static func addUnknownAssets(_ loaded: inout Loaded, library: AssetLibrary) async throws {
        let ids = Array(Set(loaded.references.values.flatMap { $0.map(\.id) }))
        let missing = try await LibraryOptions.run { try await library.unknown(ids) }
        guard !missing.isEmpty else { return }
        for (file, references) in loaded.references.sorted(by: { $0.key < $1.key }) {
            let unknown = AssetLibrary.issues(references, unknown: missing)
            guard !unknown.isEmpty else { continue }
            if let index = loaded.invalid.firstIndex(where: { $0.file == file }) {
                loaded.invalid[index].issues += unknown
            } else if let index = loaded.valid.firstIndex(where: { $0.file == file }) {
                loaded.valid.remove(at: index)
                loaded.invalid.append(ManifestValidationError(file: file, issues: unknown))
            }
        }
    }

    /// Prints every error of `loaded` and exits 2 ("nothing was `nothing`") when any manifest is invalid.
    static func refuseInvalid(_ loaded: Loaded, nothing: String) throws {
        guard !loaded.invalid.isEmpty else { return }
        for e in loaded.invalid { FileHandle.standardError.write(Data((e.description + "\n").utf8)) }
        FileHandle.standardError.write(Data("nothing was \(nothing): \(loaded.invalid.count) of \(loaded.count) manifests are invalid\n".utf8))
        throw ExitCode(ExitStatus.usage)
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

extension AfterPolicy: ExpressibleByArgument {}

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
