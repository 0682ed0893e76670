import FarmLibrary
import FarmModel
import FarmStore
import Foundation

/// A manifest offered to the farm: its text, what to call it in messages (its file, "request body", a
/// template and the asset it was filled in for), its default job name and the folder its relative paths
/// resolve against.
public struct ManifestOffer: Sendable {
    /// As read or received: the strict parser sees these bytes (invalid UTF-8 is an error at `$`).
    public var bytes: [UInt8]
    public var file: String
    public var name: String
    public var baseDirectory: String
    /// What the queue stores.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public init(bytes: [UInt8], file: String, name: String, baseDirectory: String) {
        self.bytes = bytes
        self.file = file
        self.name = name
        self.baseDirectory = baseDirectory
    }

    public init(text: String, file: String, name: String, baseDirectory: String) {
        self.init(bytes: Array(text.utf8), file: file, name: name, baseDirectory: baseDirectory)
    }

    /// The manifest file `path` (relative to the current folder): its text, its folder, its name without
    /// `.json`; an error at `$` when it cannot be read or is no small file.
    public static func reading(_ path: String) -> Result<ManifestOffer, ManifestValidationError> {
        let absolute = PathRules.resolve(path, against: FileManager.default.currentDirectoryPath)
        func fail(_ message: String) -> Result<ManifestOffer, ManifestValidationError> {
            var error = ManifestValidationError(file: path, issues: [ManifestIssue(path: "$", message: message)])
            error.unreadable = true
            return .failure(error)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory) else { return fail("no such manifest file") }
        if isDirectory.boolValue { return fail("is a folder, not a manifest file") }
        guard let handle = FileHandle(forReadingAtPath: absolute) else { return fail("cannot be read (permission denied?)") }
        defer { try? handle.close() }   // read-only: closing cannot lose anything
        let data: Data
        do { data = try handle.read(upToCount: ManifestLoader.maxBytes + 1) ?? Data() } catch {
            return fail("cannot be read (\(error.localizedDescription))")
        }
        if data.count > ManifestLoader.maxBytes { return fail("is larger than \(ManifestLoader.maxBytes >> 20) MiB; a manifest is a small JSON file") }
        let url = URL(fileURLWithPath: absolute)
        return .success(ManifestOffer(bytes: [UInt8](data), file: path,
                                      name: url.deletingPathExtension().lastPathComponent, baseDirectory: url.deletingLastPathComponent().path))
    }
}

/// The rules one way in checks its manifests by (the command line's, the API's, a watch folder's).
public struct SubmissionRules: Sendable {
    /// Folders (and object prefixes) outputs may be written under; nil: each manifest's folder.
    public var outputRoots: [String]?
    /// How a user is entitled to write outside them, said with the refusal.
    public var outputRootsWayOut: String
    /// How to queue a manifest whose inputs are not there yet; nil: missing inputs are allowed.
    public var missingInputWayOut: String?
    /// Refuses `"overwrite": true` where the submitter may not replace files.
    public var overwriteRefusal: ManifestIssue?
    /// Refuses outputs that exist now (a person's submission); a watch folder's jobs find theirs when they run.
    public var refuseExistingOutputs: Bool
    /// Where the object storage settings are read (the process's environment).
    public var environment = ProcessInfo.processInfo.environment
    /// Every job of the submission carries one unique key, so at most one of them is ever live: they may
    /// name the same outputs (the others are answered "already holds key").
    public var oneUniqueKey = false

    public init(outputRoots: [String]?, outputRootsWayOut: String = ManifestContext.commandLineOutputRootsWayOut,
                missingInputWayOut: String? = nil, overwriteRefusal: ManifestIssue? = nil, refuseExistingOutputs: Bool = true) {
        self.outputRoots = outputRoots.flatMap { $0.isEmpty ? nil : $0 }
        self.outputRootsWayOut = outputRootsWayOut
        self.missingInputWayOut = missingInputWayOut
        self.overwriteRefusal = overwriteRefusal
        self.refuseExistingOutputs = refuseExistingOutputs
    }
}

/// Manifests checked: the valid ones with their offers, every issue of the others.
public struct CheckedManifests: Sendable {
    public var valid: [(offer: ManifestOffer, manifest: JobManifest)] = []
    public var invalid: [ManifestValidationError] = []
    public var count: Int { valid.count + invalid.count }

    public init() {}
}

/// Why a submission queued nothing, said the same way by every way in.
public enum SubmissionError: Error, Sendable, CustomStringConvertible {
    /// Manifests that fail their checks: every issue of each, at its JSON path; `of` manifests offered.
    case invalid([ManifestValidationError], of: Int)
    /// A scoped library token offered a source that is not an asset of its albums.
    case notPermitted([ManifestValidationError])
    /// The queue refused the jobs as they are (a dependency that does not exist).
    case refused(String)
    /// The library could not be asked about the assets the manifests name.
    case library(LibraryError)
    /// The queue did not confirm the jobs: they may or may not have been queued.
    case outcomeUnknown(JobStoreError)

    public var description: String {
        switch self {
        case let .invalid(errors, count):
            (errors.map(\.description) + ["nothing was queued: \(errors.count) of \(count) manifests are invalid"]).joined(separator: "\n")
        case .notPermitted(let errors):
            (errors.map(\.description) + ["nothing was queued: a scoped library token submits only assets of its albums (asset:ID)"])
                .joined(separator: "\n")
        case .refused(let message): message   // the queue's refusals say that nothing was queued
        case .library(let error): "the asset library: \(error); nothing was queued"
        case .outcomeUnknown(let error): "the queue did not confirm the jobs (\(error)); they may have been queued"
        }
    }

    /// Every issue at its JSON path (an API's 422 body).
    public var issues: [ManifestIssue] {
        switch self {
        case .invalid(let errors, _), .notPermitted(let errors): errors.flatMap(\.issues)
        case .refused, .library, .outcomeUnknown: []
        }
    }
}

/// The one way jobs enter the queue: `submit`, `POST /api/jobs`, ingest and capture call it. A
/// submission is checked whole (every manifest against the file system, the assets it names against the
/// library, a scoped token's policy), every problem reported at once, and queued all or nothing; the
/// library then records which assets each queued job reads (lineage).
public struct Submission: Sendable {
    public let store: any JobStore
    /// The library of the queue, with the submitter's access; nil where there is none to ask.
    public let library: AssetLibrary?

    public init(store: any JobStore, library: AssetLibrary?) {
        self.store = store
        self.library = library
    }

    /// Checks `offers` by the rules of their `submitter`: each validated against the file system (outputs that exist now are
    /// refused, `ProtectedFiles`' are never written); then the assets they name, valid or not, that
    /// `library` does not know are added to their issues (the library is asked once for all of them, and
    /// only when some offer names an asset: `library` is called then). `unreadable` are offers that
    /// could not even be read, reported with the others.
    public static func check(_ offers: [ManifestOffer], unreadable: [ManifestValidationError] = [], as submitter: Submitter,
                             library: (_ allValid: Bool) async throws -> AssetLibrary?) async throws(SubmissionError) -> CheckedManifests {
        let rules = submitter.rules
        var checked = CheckedManifests()
        checked.invalid = unreadable
        var references: [(file: String, references: [(path: String, id: AssetID)])] = []
        for offer in offers {
            let named: [(path: String, id: AssetID)]
            switch validate(offer, rules: rules) {
            case .success(let manifest):
                checked.valid.append((offer, manifest))
                named = manifest.assetReferences
            case .failure(let error):
                checked.invalid.append(error)
                named = error.assets
            }
            if !named.isEmpty { references.append((offer.file, named)) }
        }
        // Two of its own manifests writing one file: named both (the queue would name a job that was never
        // made, its submission rolled back). One that waits for others may write theirs: the queue decides.
        var writers = OutputClaimIndex<String>()
        var clashing: Set<Int> = []
        for (index, (offer, manifest)) in checked.valid.enumerated() where manifest.after.isEmpty && !rules.oneUniqueKey {
            var clashes: [ManifestIssue] = []
            for file in Set(manifest.writes).sorted() {
                if let (held, first) = writers.clashing(file).first {
                    let other = first == offer.file ? "\(first), given twice" : first
                    let what = held == file ? "\(file) is written by \(other) too" : "\(file) and \(held), which \(other) writes, are one inside the other"
                    clashes.append(ManifestIssue(path: "$", message: "\(what), in the same submission: two jobs may not "
                                                 + "write one file; write another path, or make one wait for the other (\"after\")"))
                } else {
                    writers.add(file, offer.file)
                }
            }
            if !clashes.isEmpty {
                checked.invalid.append(ManifestValidationError(file: offer.file, issues: clashes))
                clashing.insert(index)
            }
        }
        checked.valid = checked.valid.enumerated().filter { !clashing.contains($0.offset) }.map(\.element)
        // The objects they name: inputs there, outputs' buckets made.
        for (file, issues) in await ObjectChecks.issues(checked, rules: rules, environment: rules.environment) {
            guard let index = checked.valid.firstIndex(where: { $0.offer.file == file }) else { continue }
            checked.valid.remove(at: index)
            checked.invalid.append(ManifestValidationError(file: file, issues: issues))
        }
        guard !references.isEmpty else { return checked }
        let asked: AssetLibrary?
        do { asked = try await library(checked.invalid.isEmpty) } catch let error as LibraryError {
            throw .library(error)
        } catch let error as JobStoreError {
            throw .library(.store(error))
        } catch {
            throw .library(.store(.unavailable("\(error)")))
        }
        guard let asked else { return checked }
        let missing: Set<AssetID>
        do { missing = try await asked.unknown(Array(Set(references.flatMap { $0.references.map(\.id) }))) } catch { throw .library(error) }
        guard !missing.isEmpty else { return checked }
        for (file, named) in references {
            let unknown = AssetLibrary.issues(named, unknown: missing)
            guard !unknown.isEmpty else { continue }
            if let index = checked.invalid.firstIndex(where: { $0.file == file }) {
                checked.invalid[index].issues += unknown
            } else if let index = checked.valid.firstIndex(where: { $0.offer.file == file }) {
                checked.valid.remove(at: index)
                checked.invalid.append(ManifestValidationError(file: file, issues: unknown))
            }
        }
        return checked
    }

    /// One manifest validated by its `submitter`'s rules against the file system, the library not asked (a
    /// watch folder's or a capture's job, filled in from a template: it names no asset of its own).
    public static func validate(_ offer: ManifestOffer, as submitter: Submitter) -> Result<JobManifest, ManifestValidationError> {
        validate(offer, rules: submitter.rules)
    }

    private static func validate(_ offer: ManifestOffer, rules: SubmissionRules) -> Result<JobManifest, ManifestValidationError> {
        ManifestLoader.validate(bytes: offer.bytes, file: offer.file, name: offer.name, baseDirectory: offer.baseDirectory,
                                outputRoots: rules.outputRoots, refuseExistingOutputs: rules.refuseExistingOutputs,
                                overwriteRefusal: rules.overwriteRefusal, outputRootsWayOut: rules.outputRootsWayOut,
                                missingInputWayOut: rules.missingInputWayOut)
    }

    /// The issues of the objects valid manifests name, by offer file: each input object there (when `rules`
    /// refuses missing inputs) and each output's bucket made. What `check` adds for the command line and the
    /// API, for the ways in that validate their manifests one at a time (ingest, capture).
    public static func objectIssues(_ manifests: [(offer: ManifestOffer, manifest: JobManifest)], as submitter: Submitter) async -> [String: [ManifestIssue]] {
        var checked = CheckedManifests()
        checked.valid = manifests
        let rules = submitter.rules
        return await ObjectChecks.issues(checked, rules: rules, environment: rules.environment)
    }

    /// `checked`'s manifests when every one is valid and, for a caller scoped to albums (`access`), names only
    /// assets of them; else what refuses them. `submit` asks this; a way in may ask it sooner (the command
    /// line, before it makes a queue).
    public static func accepting(_ checked: CheckedManifests, access: LibraryAccess?) throws(SubmissionError) -> [(offer: ManifestOffer, manifest: JobManifest)] {
        let accepted = try refusingInvalid(checked)
        if let access {
            let refusals = scopedRefusals(accepted, access: access)
            if !refusals.isEmpty { throw .notPermitted(refusals) }
        }
        return accepted
    }

    /// `checked`'s manifests when every one is valid; else `.invalid` with every issue.
    public static func refusingInvalid(_ checked: CheckedManifests) throws(SubmissionError) -> [(offer: ManifestOffer, manifest: JobManifest)] {
        guard checked.invalid.isEmpty else { throw .invalid(checked.invalid, of: checked.count) }
        return checked.valid
    }

    /// Where a scoped library token (`access`) may submit only assets of its albums: each source of
    /// each manifest that is not an asset, at its JSON path.
    public static func scopedRefusals(_ manifests: [(offer: ManifestOffer, manifest: JobManifest)], access: LibraryAccess) -> [ManifestValidationError] {
        guard case .limited = access else { return [] }
        return manifests.compactMap { offer, manifest in
            let issues = manifest.edits.filter { AssetID.reference($0.source) == nil }.map { edit in
                ManifestIssue(path: edit.path, message: "\(edit.source) is not an asset: a scoped library token submits only assets of its albums (asset:ID)")
            }
            return issues.isEmpty ? nil : ManifestValidationError(file: offer.file, issues: issues)
        }
    }

    /// The outcome of queueing: each job's id and whether it was queued now (false: a live job held its
    /// unique key, and `id` is that one's), and what the library could not record (the jobs are queued).
    public struct Queued: Sendable {
        public var jobs: [Enqueued]
        /// By job id.
        public var warnings: [Int64: [String]]
    }

    /// The way checked manifests are queued, whoever submits them: refused whole when one is invalid or,
    /// for a caller scoped to albums, names what is not an asset of them; else each made into its job by
    /// `options` and queued in one transaction, with its lineage. The jobs made, and what the queue said.
    public func submit(_ checked: CheckedManifests, options: JobOptions) async throws(SubmissionError) -> (jobs: [NewJob], queued: Queued) {
        let accepted = try Self.accepting(checked, access: library?.access)
        let jobs = accepted.map { options.job($0.manifest, text: $0.offer.text) }
        return (jobs, try await enqueue(jobs, sources: accepted.map { $0.manifest.edits.map(\.source) }))
    }

    /// Queues `jobs` in one transaction, all or nothing; then records, for each job queued now, the
    /// assets its `sources` name or this host's files they are (lineage, Failed Jobs' Inputs). A failure
    /// to record is a warning: the jobs are queued.
    public func enqueue(_ jobs: [NewJob], sources: [[String]], at now: Date = Date()) async throws(SubmissionError) -> Queued {
        if let library, case .limited = library.access {
            // A scoped token submits nothing but assets; checked here too, whatever the caller checked.
            if let path = sources.joined().first(where: { AssetID.reference($0) == nil }) {
                throw .notPermitted([ManifestValidationError(file: path, issues: [ManifestIssue(path: "$", message: "\(path) is not an asset")])])
            }
        }
        let queued: [Enqueued]
        do {
            queued = try await store.enqueue(jobs, at: now)
        } catch {
            if case .refused(let message) = error { throw .refused(message) }
            throw .outcomeUnknown(error)
        }
        var warnings: [Int64: [String]] = [:]
        if let library {
            for (job, paths) in zip(queued, sources) where job.inserted {
                do {
                    try await library.recordJobInputs(job.id, sources: paths)
                } catch {
                    warnings[job.id, default: []].append("the library did not record its inputs: \(error)")
                }
            }
        }
        return Queued(jobs: queued, warnings: warnings)
    }
}

/// A job as a submission answers it, on the command line (`submit --json`) and in the API alike.
public struct SubmittedJob: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    /// false: a live job already held the unique key; `id` is that job's.
    public var queued: Bool
    /// What the asset library could not record of the job (it is queued all the same).
    public var warnings: [String]?

    public init(id: Int64, name: String, queued: Bool, warnings: [String]? = nil) {
        self.id = id
        self.name = name
        self.queued = queued
        self.warnings = warnings
    }
}
