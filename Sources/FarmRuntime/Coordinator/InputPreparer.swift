import FarmLibrary
import FarmModel
import FarmStore
import FarmSubmit
import Foundation

/// What a job's worker runs: the queued manifest with other jobs' results (`job:KEY#output`) and the
/// library's assets (`asset:ID`) put in, renamed inputs followed, checked against this host's file system
/// once, and a coordinator's chunking or a split job's join derived from it.
struct InputPreparer: CoordinatorPart {
    let context: CoordinatorContext
    let joiner: ChunkJoiner

    /// The manifest a job's worker runs, and its text: other jobs' results and the library's assets put in
    /// (the assets' lineage recorded), renamed inputs followed, checked against the file system, then a
    /// coordinator's chunking or a split job's join derived from it. The assets it reads beside.
    func prepare(_ job: Job, token: String) async -> Result<ClaimedJob, InputFailure> {
        var sources: [AssetID] = []
        // The manifest is parsed once; each step below rewrites that value, and the worker gets it once.
        var document: JSONValue
        do {
            document = try JSONParser.parse(job.manifest)
        } catch {
            return .failure(InputFailure(message: "the queued manifest is no JSON: \(error)", retry: false))
        }
        if !job.after.isEmpty, job.manifest.contains(JobOutputReference.scheme) {
            switch await resolveJobResults(job, document) {
            case .success(let resolved): document = resolved
            case .failure(let failure): return .failure(failure)
            }
        }
        if job.manifest.contains(AssetID.scheme) {
            switch await resolveAssets(document) {
            case .success(let resolved):
                (document, sources) = resolved
                if !sources.isEmpty {
                    do { try await configuration.library?.recordJobInputs(job.id, sources) } catch {
                        events(.notice("job \(job.id): the library did not record the assets it reads (\(error)); its lineage is recorded when it succeeds"))
                    }
                }
            case .failure(let failure): return .failure(failure)
            }
        }
        document = await followRenamedInputs(job, document)
        var manifest: JobManifest
        switch ManifestLoader.validate(document: document, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
        case .success(let m): manifest = m
        case .failure(let e): return .failure(InputFailure(message: e.description, retry: false))
        }
        // A coordinator's chunking, and the last run of a job made in parts: manifests derived from the value.
        var derived = false
        if job.chunkOf == nil, let chunked = configuration.defaultChunking?.applied(to: manifest) { (manifest, derived) = (chunked, true) }
        if let plan = job.chunkPlan {
            switch await joiner.joinManifest(job, manifest, plan: plan) {
            case .success(let joining): (manifest, derived) = (joining, true)
            case .failure(let failure): return .failure(failure)
            }
        }
        // What the worker runs: the document validated, or the one derived from it.
        return .success(ClaimedJob(job: job, token: token, document: derived ? manifest.document : document, manifest: manifest, sources: sources))
    }

    /// The manifest with each `job:REF#output` (or `#report`) source replaced by the path that job wrote.
    /// A failure names the reference and why (the job did not succeed, wrote no such file, or is gone).
    func resolveJobResults(_ job: Job, _ document: JSONValue) async -> Result<JSONValue, InputFailure> {
        let dependencies: [Job]
        do {
            dependencies = try await store.jobs(ids: job.after)
        } catch {
            return .failure(InputFailure(message: "the results of the jobs this one waited for could not be read: \(error)", retry: true))
        }
        func resolve(_ text: String) -> Result<String?, InputFailure> {
            guard case .success(let reference)? = JobOutputReference.parse(text) else { return .success(nil) }
            let found: Job? = switch reference.job {
            case .id(let id): dependencies.first { $0.id == id }
            case .key(let key):
                // A key given through the API is kept in its namespace: its submitter names it as given.
                dependencies.filter { $0.uniqueKey == key }.max { $0.id < $1.id }
                    ?? dependencies.filter { $0.uniqueKey.map { UniqueKey(stored: $0).isNamed(key) } ?? false }.max { $0.id < $1.id }
            }
            guard let found else {
                return .failure(InputFailure(message: "\(text): that job is no longer in the queue (pruned?); its result cannot be read", retry: false))
            }
            guard found.state == .succeeded else {
                return .failure(InputFailure(message: "\(text): job \(found.id) (\(found.name)) \(found.state.rawValue), so it has no \(reference.field.rawValue)",
                                             retry: false))
            }
            var result: JobResult?
            if let recorded = found.result {
                do { result = try JSONDecoder().decode(JobResult.self, from: Data(recorded.utf8)) } catch {
                    return .failure(InputFailure(message: "\(text): the result job \(found.id) (\(found.name)) recorded cannot be read: \(error)",
                                                 retry: false))
                }
            }
            let path = reference.field == .output ? result?.output : result?.report
            guard let path else {
                return .failure(InputFailure(message: "\(text): job \(found.id) (\(found.name)) wrote no \(reference.field.rawValue)", retry: false))
            }
            return .success(path)
        }
        var replacements: [String: String] = [:]
        for source in document.manifestSources {
            switch resolve(source) {
            case .success(let path?): replacements[source] = path
            case .success(nil): break
            case .failure(let failure): return .failure(failure)
            }
        }
        return .success(document.replacingManifestSources(replacements))
    }

    /// The manifest with each `asset:ID` replaced by this host's path, and the ids.
    func resolveAssets(_ document: JSONValue) async -> Result<(JSONValue, [AssetID]), InputFailure> {
        guard let library = configuration.library else {
            return .failure(InputFailure(message: "the manifest names assets (asset:ID) but this coordinator has no asset library", retry: false))
        }
        do {
            return .success(try await library.resolveManifest(document))
        } catch {
            if case .unknownAsset = error { return .failure(InputFailure(message: error.description, retry: false)) }
            return .failure(InputFailure(message: error.description, retry: true))
        }
    }

    /// The manifest with each input or edit source that is no longer at its path replaced by where the
    /// library has the same bytes now on this host (a file renamed after its job was queued, which ingest
    /// or `library add` saw at its new name). Each change is a notice.
    func followRenamedInputs(_ job: Job, _ document: JSONValue) async -> JSONValue {
        guard let library = configuration.library else { return document }
        var replacements: [String: String] = [:]
        for source in Set(document.manifestSources) where !source.isEmpty && !source.hasPrefix(AssetID.scheme) {
            let path = PathRules.resolve(source, against: job.baseDirectory)
            let relocation: (AssetID, String)?
            do {
                relocation = try await library.relocation(of: path)
            } catch {
                events(.notice("job \(job.id): cannot ask the library where \(path) went (\(error)); the job reads it where it was"))
                continue
            }
            guard let (id, now) = relocation else { continue }
            events(.notice("job \(job.id): \(path) is gone; the same content (\(id)) is at \(now): the job reads it there"))
            replacements[source] = now
        }
        return document.replacingManifestSources(replacements)
    }
}

/// A job from its claim to its end: as claimed (its manifest as submitted), its lease's token, and what its
/// worker runs: the document with its inputs put in (or derived from it), and the manifest read from that,
/// checked against this host's files once before the worker starts. The worker trusts that check.
struct ClaimedJob: Sendable {
    let job: Job
    let token: String
    let document: JSONValue
    let manifest: JobManifest
    /// The library's assets it reads.
    let sources: [AssetID]
    /// The manifest as submitted (the lineage's parameters; the parts of a split are derived from it).
    var submitted: String { job.manifest }
}

/// An input (a library asset, another job's result) that could not be put in before the worker starts.
struct InputFailure: Error {
    var message: String
    /// It may be there on a later attempt (another host, the queue answering again): the attempt is retried.
    var retry: Bool
}
