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
        if album != nil && manifests.count != 1 { throw ValidationError("--album takes one manifest template") }
    }

    func run() async throws {
        let files = album == nil ? try Self.expand(manifests) : manifests
        let roots = OutputRoots.chosen(outputRoots)

        let runAt = delay > 0 ? Date().addingTimeInterval(delay) : nil
        let make = { (manifest: JobManifest, text: String) in
            NewJob(name: manifest.name, manifest: text, baseDirectory: manifest.baseDirectory, outputRoots: roots ?? [],
                   priority: priority, maxAttempts: maxAttempts, runAt: runAt, uniqueKey: uniqueKey, timeout: timeout)
        }
        let token = try library.token()
        var sources: [[String]] = []
        var jobs: [NewJob] = []
        // Invalid manifests are refused before the queue is touched (or made).
        if album == nil {
            jobs = try Self.load(files, outputRoots: roots, nothing: "queued") { manifest, text in
                sources.append(manifest.edits.map(\.source))
                return make(manifest, text)
            }
        }
        let store = try await queue.open(create: album == nil)
        if let album {
            let assets = try await library.open(store)
            (jobs, sources) = try await Self.albumJobs(album, template: files[0], library: assets, outputRoots: roots, make: make)
        }
        // Assets must be known (and visible to a scoped token, which submits nothing but assets).
        let named = sources.flatMap { $0 }.compactMap { source -> AssetID? in
            if case .success(let id)? = AssetID.reference(source) { return id }
            return nil
        }
        var assets: AssetLibrary?
        if !named.isEmpty || token != nil {
            let opened = try await library.open(store)
            assets = opened
            if token != nil, let path = sources.flatMap({ $0 }).first(where: { AssetID.reference($0) == nil }) {
                throw CLIError("\(path): a scoped library token submits only assets of its albums (asset:ID); nothing was queued",
                               status: ExitStatus.usage)
            }
            let unknown = try await LibraryOptions.run { try await opened.resolve(Array(Set(named))) }.filter { $0.status == .unknown }
            guard unknown.isEmpty else {
                throw CLIError("no asset \(unknown.map(\.id.rawValue).sorted().joined(separator: ", ")) in the library; nothing was queued",
                               status: ExitStatus.usage)
            }
        }
        let queued: [Enqueued]
        do {
            queued = try await store.enqueue(jobs, at: Date())
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
