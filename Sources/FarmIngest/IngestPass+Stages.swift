import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import S3Client
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// A pass's stages, each returning what the next one takes: scan → settle → prepare → enqueue → commit.
extension IngestPass {
    /// A file or object that passes its watch's patterns, as it is now.
    struct Sighting {
        var path: String
        var identity: IngestState.Identity
        var modified: Date
        var watch: IngestConfig.Watch
        /// The object as listed, for a watch that is an object prefix.
        var object: S3Object?
    }

    /// What the watches hold this pass.
    struct Walk {
        var sightings: [Sighting] = []
        /// Every path met, matching or not: a row whose path is not here is gone.
        var walked: Set<String> = []
        /// Folders and prefixes that could not be read: their rows stay as they are.
        var unread: [String] = []
    }

    /// Which sightings have settled, and the state's changes for the others.
    struct Settled {
        var candidates: [Candidate] = []
        var changes: [IngestState.Change] = []
        var settling = 0
        /// Of `settling`, the ones first seen (or changed): their settle time starts now.
        var firstSeen = 0
    }

    /// One settled file on its way to the queue: its content, the path its job reads, and its chain.
    struct Entry {
        var candidate: Candidate
        var content: ContentHash
        var input: String
        var facts: AssetFacts?
        var chain: [NewJob]
    }

    /// The settled files made into jobs, those found renamed, and the state's changes for the rest.
    struct Prepared {
        var jobs: [Entry] = []
        var renamed: [(candidate: Candidate, content: ContentHash)] = []
        var changes: [IngestState.Change] = []
    }

    /// What became of one settled file.
    enum Verdict {
        case unreadable(reason: String)
        /// Known content at a new path whose earlier file is gone.
        case renamed(ContentHash, from: String)
        case duplicate(hash: String, of: String)
        case quarantined(hash: String, problem: String)
        case rejected(hash: String, IngestError)
        /// Its jobs name objects that are not there (an output's bucket): left as it is, for the next pass.
        case objectsMissing(IngestError)
        case job(Entry)
    }

    // MARK: - Scan

    /// Every file and object of the watches that passes their patterns; what is skipped, and why, goes in
    /// the report.
    func scan(into report: inout IngestReport) async -> Walk {
        var walk = Walk()
        for watch in config.watch {
            if watch.isObjectPrefix {
                await scanObjects(watch, into: &walk, report: &report)
            } else {
                scanFolder(watch, into: &walk, report: &report)
            }
        }
        return walk
    }

    func scanObjects(_ watch: IngestConfig.Watch, into walk: inout Walk, report: inout IngestReport) async {
        switch await Self.list(watch.path) {
        case .failure(let problem):
            // Like a folder that cannot be read: its rows stay as they are, and the pass says so (exit 1).
            report.unlisted.append(.init(path: watch.path, reason: problem.description))
            walk.unread.append(String(watch.path.dropLast()))
        case .success(let objects):
            for object in objects {
                let path = object.location.description
                walk.walked.insert(path)
                guard Self.matches(object.location.name, watch) else { continue }
                report.seen += 1
                report.seenObjects += 1
                if let why = Self.unwanted(object.location.name) {
                    report.skipped.append(.init(path: path, reason: why))
                    continue
                }
                walk.sightings.append(Sighting(path: path, identity: .object(size: object.size, etag: object.etag),
                                               modified: Self.modified(object, or: now()), watch: watch, object: object))
            }
        }
    }

    func scanFolder(_ watch: IngestConfig.Watch, into walk: inout Walk, report: inout IngestReport) {
        let root = URL(fileURLWithPath: watch.path).resolvingSymlinksInPath().path
        let folderWalk = FolderWalk(watch.path)
        for folder in folderWalk.unreadable { report.skipped.append(.init(path: folder, reason: "a folder that cannot be read")) }
        walk.unread += folderWalk.unreadable
        let files = folderWalk.entries.map(\.path).sorted()
        walk.walked.formUnion(files)
        for path in files {
            let name = (path as NSString).lastPathComponent
            guard Self.matches(name, watch) else { continue }
            report.seen += 1
            if let why = Self.unwanted(name) {
                report.skipped.append(.init(path: path, reason: why))
                continue
            }
            switch Self.identity(of: path, root: root) {
            case .none: continue
            case .failure(let why): report.skipped.append(.init(path: path, reason: why.description))
            case .success(let identity):
                walk.sightings.append(Sighting(path: path, identity: identity,
                                               modified: Date(timeIntervalSince1970: Double(identity.mtimeNanoseconds) / 1e9), watch: watch))
            }
        }
    }

    /// A regular file's size, modification time and inode, following a link that stays inside the watch
    /// folder `root`; why it is skipped; or nil for what ingest passes over without a word (a folder, a
    /// device, a file gone since the walk).
    static func identity(of path: String, root: String) -> Result<IngestState.Identity, IngestError>? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        if (info.st_mode & S_IFMT) == S_IFLNK {
            let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            guard target.hasPrefix(root + "/") else { return .failure(IngestError("a symbolic link to outside the watch folder")) }
            guard stat(path, &info) == 0 else { return .failure(IngestError("a symbolic link to nothing")) }
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        guard access(path, R_OK) == 0 else { return .failure(IngestError("no permission to read it")) }
        return .success(IngestState.Identity(size: Int64(info.st_size),
                                             mtimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                                             inode: UInt64(info.st_ino), device: UInt64(info.st_dev)))
    }

    // MARK: - Settle

    /// Settling starts for what is new or changed, goes on for what has not kept still for `settleSeconds`,
    /// and ends with a candidate; what was taken before is left alone unless `forced` names its path or hash.
    static func settle(_ sightings: [Sighting], known: [String: IngestState.Row], at passStart: Double, settleSeconds: Double,
                       forced: Set<String>) -> Settled {
        var settled = Settled()
        var forced = forced
        for sighting in sightings {
            let isForced = forced.remove(sighting.path) != nil
            guard let row = known[sighting.path], row.identity == sighting.identity else {
                // New, or changed since it was last seen: it settles from now.
                settled.changes.append(.seen(path: sighting.path, sighting.identity, at: passStart))
                settled.settling += 1
                settled.firstSeen += 1
                continue
            }
            if row.goneSince != nil { settled.changes.append(.back(path: sighting.path)) }
            if row.status == .settling {
                guard row.seenAt < passStart, passStart - row.seenAt >= settleSeconds else {
                    settled.settling += 1
                    continue
                }
            } else if !isForced && !(row.hash.map { forced.contains($0) } ?? false) {
                continue  // already ingested, a duplicate, quarantined or rejected: nothing to do
            }
            settled.candidates.append(Candidate(path: sighting.path, identity: sighting.identity, modified: sighting.modified,
                                                template: sighting.watch.template, watch: sighting.watch, object: sighting.object))
        }
        return settled
    }

    /// Rows of files no longer there (deleted, or renamed: the new name is a new row) are marked at the
    /// first pass that misses them and forgotten `grace` seconds later; a folder that could not be read
    /// this pass (an unmounted card) leaves its rows as they are.
    static func gone(_ known: [String: IngestState.Row], walked: Set<String>, unread: [String], at passStart: Double,
                     grace: Double) -> (changes: [IngestState.Change], forgotten: Int) {
        var changes: [IngestState.Change] = []
        var forgotten = 0
        for (path, row) in known where !walked.contains(path) && !unread.contains(where: { path.hasPrefix($0 + "/") }) {
            if let since = row.goneSince {
                if passStart - since >= grace {
                    changes.append(.forget(path: path))
                    forgotten += 1
                }
            } else {
                changes.append(.gone(path: path, at: passStart))
            }
        }
        return (changes, forgotten)
    }

    // MARK: - Prepare

    /// Settled files: hashed, weeded of duplicates, inspected (bad ones quarantined), and made into their jobs.
    func prepare(_ candidates: [Candidate], state: IngestState?, forced: Set<String>, dryRun: Bool,
                 into report: inout IngestReport) async throws(IngestError) -> Prepared {
        var prepared = Prepared()
        var hashesThisPass: [String: String] = [:]
        var reserved: Set<String> = []   // processing/ paths this pass gives out
        for (done, candidate) in candidates.enumerated() {
            progress(done, candidates.count)
            let at = now().timeIntervalSince1970
            let verdict = try await examine(candidate, state: state, forced: forced, hashesThisPass: &hashesThisPass, reserved: &reserved)
            let path = candidate.path
            switch verdict {
            case .unreadable(let reason):
                report.skipped.append(.init(path: path, reason: reason))
            case .renamed(let content, let earlier):
                prepared.renamed.append((candidate, content))
                report.renamed.append(.init(path: path, from: earlier))
                prepared.changes.append(.ended(path: path, candidate.identity, status: .ingested, hash: content.sha256, jobID: nil,
                                               reason: "renamed from \(earlier)", at: at))
                prepared.changes.append(.renamed(hash: content.sha256, path: path))
            case .duplicate(let hash, let earlier):
                report.duplicates += 1
                report.duplicateFiles.append(.init(path: path, reason: "the same content as \(earlier)"))
                prepared.changes.append(.ended(path: path, candidate.identity, status: .duplicate, hash: hash, jobID: nil,
                                               reason: "same content as \(earlier)", at: at))
            case .quarantined(let hash, let problem):
                let (entry, change) = quarantine(candidate, hash: hash, problem: problem, dryRun: dryRun, at: at)
                report.quarantined += 1
                report.quarantine.append(entry)
                if let change { prepared.changes.append(change) }
            case .rejected(let hash, let invalid):
                report.skipped.append(.init(path: path, reason: "its job would be invalid: \(invalid)"))
                prepared.changes.append(.ended(path: path, candidate.identity, status: .rejected, hash: hash, jobID: nil,
                                               reason: invalid.description, at: at))
            case .objectsMissing(let problem):
                report.skipped.append(.init(path: path, reason: "its job names what is not there: \(problem); the next pass tries again"))
            case .job(let entry):
                prepared.jobs.append(entry)
            }
        }
        progress(candidates.count, candidates.count)
        return prepared
    }

    /// One settled file's verdict. `hashesThisPass` (content → the path that took it) and `reserved` carry
    /// what the pass's earlier files took.
    func examine(_ candidate: Candidate, state: IngestState?, forced: Set<String>, hashesThisPass: inout [String: String],
                 reserved: inout Set<String>) async throws(IngestError) -> Verdict {
        let content: ContentHash
        do {
            content = try await Self.hash(candidate)
        } catch {
            return .unreadable(reason: error.reasonOnly)
        }
        let hash = content.sha256
        let earlier: String?
        do {
            if let here = hashesThisPass[hash] { earlier = here } else { earlier = try await state?.hashIsKnown(hash) }
        } catch {
            throw IngestError("\(config.state): cannot look up \(candidate.path)'s content among the files ingested before: \(error); nothing was enqueued")
        }
        if !forced.contains(hash) && !forced.contains(candidate.path), let earlier {
            // Known content at a new path where the file ingested before is gone: renamed or moved inside the
            // watch folders. Not a new job: the library learns where it is now, so that its job (queued and
            // not run yet, or run again) reads it here.
            if hashesThisPass[hash] == nil, config.afterEnqueue == .leave, !(await Self.present(earlier)) {
                hashesThisPass[hash] = candidate.path
                return .renamed(content, from: earlier)
            }
            return .duplicate(hash: hash, of: earlier)
        }
        let (problem, facts) = await Self.probe(candidate.path, size: candidate.identity.size)
        if let problem { return .quarantined(hash: hash, problem: problem) }
        let input = config.afterEnqueue == .move
            ? processingPath(for: candidate.path, watch: candidate.watch, hash: hash, reserved: &reserved) : candidate.path
        switch chain(for: candidate, input: input, hash: hash) {
        case .failure(let invalid):
            return .rejected(hash: hash, invalid)
        case .success(let chain):
            // The objects its jobs name, checked as `submit` checks them, before its content counts as taken.
            let roots = config.outputRoots ?? [candidate.template.folder]
            if let issues = await Submission.objectIssues(chain.map(\.checked), as: .ingest(outputRoots: roots))[candidate.path] {
                return .objectsMissing(IngestError(invalid: ManifestValidationError(file: candidate.path, issues: issues)))
            }
            hashesThisPass[hash] = candidate.path
            return .job(Entry(candidate: candidate, content: content, input: input, facts: facts, chain: chain.map(\.job)))
        }
    }

    /// A file's content hash; an object's is streamed from ranged reads that must all find it as listed
    /// (nothing on disk).
    static func hash(_ candidate: Candidate) async throws(LibraryError) -> ContentHash {
        if let object = candidate.object {
            return try await ContentHash.streaming(object, s3: try AssetLibrary.objectClient())
        }
        return try await ContentHash.reading(candidate.path)
    }

    /// A file's jobs: its template's one, or its chain, each checked as a submission is (the objects they
    /// name, by `examine`), with the manifests as checked; or the first that is invalid.
    func chain(for candidate: Candidate, input: String, hash: String)
        -> Result<[(job: NewJob, checked: (offer: ManifestOffer, manifest: JobManifest))], IngestError> {
        let stem = ((candidate.path as NSString).lastPathComponent as NSString).deletingPathExtension
        let name = "\(stem)-\(hash.prefix(8))"
        let roots = config.outputRoots ?? [candidate.template.folder]
        var chain: [(job: NewJob, checked: (offer: ManifestOffer, manifest: JobManifest))] = []
        for step in candidate.template.jobs(for: input, hash: hash, modified: candidate.modified) {
            let offer = ManifestOffer(text: step.manifest, file: candidate.path, name: step.key.map { "\(name)-\($0)" } ?? name,
                                      baseDirectory: candidate.template.folder)
            switch Submission.validate(offer, as: .ingest(outputRoots: roots)).mapError(IngestError.init(invalid:)) {
            case .success(let manifest):
                let job = JobOptions(outputRoots: roots, priority: config.priority, maxAttempts: config.maxAttempts ?? 3,
                                     uniqueKey: step.uniqueKey).job(manifest, text: step.manifest)
                chain.append((job, (offer, manifest)))
            case .failure(let problem):
                return .failure(step.key.map { IngestError("its chain's job \"\($0)\": \(problem)") } ?? problem)
            }
        }
        return .success(chain)
    }

    /// Moves a bad file into quarantine with its reason (an object stays in its bucket). The state's change:
    /// a moved file is forgotten here; one that is not moved is remembered as quarantined, so that it is not
    /// inspected again at every pass while it stays. A dry run moves and records nothing.
    func quarantine(_ candidate: Candidate, hash: String, problem: String, dryRun: Bool,
                    at: Double) -> (IngestReport.Quarantined, IngestState.Change?) {
        let stays = IngestState.Change.ended(path: candidate.path, candidate.identity, status: .quarantined, hash: hash, jobID: nil,
                                             reason: problem, at: at)
        if candidate.object != nil {
            // Its row keeps it from being read again until it changes.
            return (.init(path: candidate.path, movedTo: nil, reason: problem,
                          notMoved: "an object is left where it is; ingest does not read it again until it changes"), dryRun ? nil : stays)
        }
        guard !dryRun else { return (.init(path: candidate.path, movedTo: nil, reason: problem, notMoved: nil), nil) }
        do {
            let moved = try QuarantineFolder(config.quarantine).place(candidate.path, reason: problem, details: ["hash": hash], at: now())
            return (.init(path: candidate.path, movedTo: moved, reason: problem, notMoved: nil), .forget(path: candidate.path))
        } catch {
            return (.init(path: candidate.path, movedTo: nil, reason: problem, notMoved: error.reason), stays)
        }
    }

    // MARK: - Enqueue

    /// Moves the files into `processing/` when the config says so, then enqueues every chain in one
    /// transaction. With nothing to enqueue the queue is still opened (which connects and checks its schema),
    /// so that cron notices a queue that cannot be reached at the first pass, not the first file. A queue that
    /// fails undoes the moves, records `changes` (what settled is remembered; the next pass tries again at
    /// once) and marks nothing ingested.
    func enqueue(_ jobs: [Entry], state: IngestState?,
                 changes: [IngestState.Change]) async throws(IngestError) -> (store: any JobStore, enqueued: [Enqueued]) {
        let moved = try moveIntoProcessing(jobs)
        var store: (any JobStore)?
        do {
            let opened = try await openQueue()
            store = opened
            // The one way into the queue; the library learns each file and its jobs once it is registered.
            let enqueued = jobs.isEmpty ? [] : try await Submission(store: opened, library: nil).enqueue(jobs.flatMap(\.chain), sources: [], at: now()).jobs
            return (opened, enqueued)
        } catch {
            let undone = undo(moved)
            await store?.close()
            let recorded: String
            do { try await state?.apply(changes); recorded = "" } catch { recorded = "; \(config.state): cannot record the pass either: \(error)" }
            let outcome = jobs.isEmpty ? "nothing was due this pass, but the next files cannot be enqueued" : "nothing was enqueued (the next pass tries again)"
            throw IngestError("the queue: \(error); \(outcome)\(undone)\(recorded)")
        }
    }

    /// Each file moved to the path its job reads, when the config moves files; the moves made. One that
    /// fails undoes the others.
    func moveIntoProcessing(_ jobs: [Entry]) throws(IngestError) -> [(from: String, to: String)] {
        guard config.afterEnqueue == .move else { return [] }
        var moved: [(from: String, to: String)] = []
        for entry in jobs {
            let folder = (entry.input as NSString).deletingLastPathComponent
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                try SafeFiles.move(entry.candidate.path, to: entry.input)
            } catch {
                let undone = undo(moved)
                let hint = (error as? FileMoveError)?.crossesDevices == true
                    ? " (processing/ must be on the same file system as the watch folder)" : ""
                throw IngestError("\(entry.candidate.path): \(error)\(hint); nothing was enqueued\(undone)")
            }
            moved.append((entry.candidate.path, entry.input))
        }
        return moved
    }

    /// Each file recorded with the first job of its chain: in the report, and as the state's changes.
    func taken(_ jobs: [Entry], as enqueued: [Enqueued], into report: inout IngestReport) -> [IngestState.Change] {
        let at = now().timeIntervalSince1970
        var changes: [IngestState.Change] = []
        for (entry, queued) in zip(jobs, Self.firsts(of: jobs.map(\.chain.count), in: enqueued)) {
            report.enqueued += 1
            report.jobs.append(.init(id: queued.id, path: entry.input, hash: entry.content.sha256))
            changes.append(.ingested(hash: entry.content.sha256, path: entry.input, jobID: queued.id, at: at))
            changes.append(config.afterEnqueue == .move
                ? .forget(path: entry.candidate.path)
                : .ended(path: entry.candidate.path, entry.candidate.identity, status: .ingested, hash: entry.content.sha256,
                         jobID: queued.id, reason: nil, at: at))
        }
        return changes
    }

    // MARK: - Commit

    /// The asset library learns each ingested file and its jobs, and where renamed files are now. The jobs
    /// are queued and the files moved whatever it says, so the pass is recorded; `libraryWarnings` makes the
    /// command exit 1.
    func register(_ prepared: Prepared, as enqueued: [Enqueued], in store: any JobStore, into report: inout IngestReport) async {
        guard !prepared.jobs.isEmpty || !prepared.renamed.isEmpty else { return }
        let library: AssetLibrary
        do {
            library = try AssetLibrary(store: store, host: libraryHost, inspector: .media)
        } catch {
            report.libraryWarnings.append("the asset library: \(error)")
            return
        }
        for (entry, chain) in zip(prepared.jobs, Self.groups(of: prepared.jobs.map(\.chain.count), in: enqueued))
        where chain.contains(where: \.inserted) {
            do {
                let added = if let object = entry.candidate.object {
                    try await library.registerObject(object, hash: entry.content, facts: entry.facts, album: config.libraryAlbum)
                } else {
                    try await library.register(entry.input, hash: entry.content, facts: entry.facts, album: config.libraryAlbum)
                }
                if let id = added.id {
                    for queued in chain where queued.inserted { try await library.recordJobInputs(queued.id, [id]) }
                }
                report.registered += 1
            } catch {
                report.libraryWarnings.append("\(entry.input): not registered in the asset library: \(error)")
            }
        }
        for entry in prepared.renamed {
            do {
                if let object = entry.candidate.object {
                    _ = try await library.registerObject(object, hash: entry.content, album: config.libraryAlbum)
                } else {
                    _ = try await library.register(entry.candidate.path, hash: entry.content, album: config.libraryAlbum)
                }
                report.registered += 1
            } catch {
                report.libraryWarnings.append("\(entry.candidate.path): its new path is not registered in the asset library: \(error)")
            }
        }
    }
}

/// The lock beside an ingest state that keeps overlapping passes from racing. A dry run takes none.
struct PassLock {
    let descriptor: Int32

    /// How long a pass waits for the lock before it calls itself busy. A process that forks (the farm's
    /// workers, a test's tools) holds every lock its open descriptions carry until its child has exec'd,
    /// so a lock just released can seem held for a moment; a pass that is really running holds it far longer.
    static let patience: Duration = .seconds(5)

    /// The lock, or nil when another pass holds it for longer than `patience`.
    static func take(_ state: String, dryRun: Bool, patience: Duration = patience) async throws(IngestError) -> PassLock? {
        guard !dryRun else { return PassLock(descriptor: -1) }
        do {
            try FileManager.default.createDirectory(atPath: (state as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        } catch {
            throw IngestError("\(state): cannot make its folder: \(error.localizedDescription)")
        }
        let lock = open(state + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else { throw IngestError("\(state).lock: \(String(cString: strerror(errno)))") }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: patience)
        while flock(lock, LOCK_EX | LOCK_NB) != 0 {
            let reason = errno
            if reason == EINTR { continue }
            guard reason == EWOULDBLOCK else {
                close(lock)
                throw IngestError("\(state).lock: cannot be locked: \(String(cString: strerror(reason)))")
            }
            guard clock.now < deadline else {
                close(lock)
                return nil
            }
            // A cancelled pass stops waiting at the next look.
            do { try await Task.sleep(for: .milliseconds(20)) } catch {
                close(lock)
                return nil
            }
        }
        return PassLock(descriptor: lock)
    }

    func release() {
        if descriptor >= 0 { close(descriptor) }
    }
}
