import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import MediaInspect
import S3Client
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// One ingest pass over the watch folders: new and changed files start settling; files that have kept
/// their size, modification time and inode for the settle time are hashed, checked against every hash
/// ingested before (duplicates are reported, not enqueued), inspected (bad ones go to quarantine with a
/// reason file), and enqueued from their folder's template with the unique key `ingest:<hash>`. A lock
/// beside the state keeps overlapping passes from racing: the second one does nothing and says so.
public struct IngestPass: Sendable {
    public let config: IngestConfig
    /// Checks an expanded manifest (text, default name, base folder, output roots) as `submit` would:
    /// the job's name, or what is wrong.
    /// Validates a job's manifest (text, default name, base folder, output roots).
    /// Opens the queue (at every pass that is not a dry run: to enqueue, or to check that it answers).
    public let openQueue: @Sendable () async throws -> any JobStore
    public let now: @Sendable () -> Date
    /// Called as settled files are checked: (done, of how many).
    public let progress: @Sendable (Int, Int) -> Void
    /// This host's name in the asset library.
    public let libraryHost: String

    public init(config: IngestConfig,
                openQueue: @escaping @Sendable () async throws -> any JobStore, now: @escaping @Sendable () -> Date = { Date() },
                progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in }, libraryHost: String = AssetLibrary.defaultHost) {
        self.config = config
        self.libraryHost = libraryHost
        self.openQueue = openQueue
        self.now = now
        self.progress = progress
    }

    /// How a watch folder's jobs are checked: as a submission is, outputs under the config's roots (an
    /// output that exists already is found when the job runs).
    static func rules(outputRoots: [String]) -> SubmissionRules {
        SubmissionRules(outputRoots: outputRoots, outputRootsWayOut: "to write there, add the folder to outputRoots in the config",
                        refuseExistingOutputs: false)
    }

    /// Files ingest never takes, by name.
    static func unwanted(_ name: String) -> String? {
        if name.hasPrefix(".") { return "hidden file" }
        for suffix in [".part", ".tmp", ".crdownload"] where name.lowercased().hasSuffix(suffix) {
            return "a partial download or temporary file (\(suffix))"
        }
        if name.hasSuffix("~") { return "a backup file (~)" }
        return nil
    }

    struct Candidate {
        var path: String
        var identity: IngestState.Identity
        var modified: Date
        var template: IngestTemplate
        var watch: IngestConfig.Watch
        /// The object as listed, for a watch that is an object prefix.
        var object: S3Object?
    }

    /// - Parameters:
    ///   - dryRun: report what would happen; change nothing (no state, no moves, no jobs).
    ///   - reingest: hashes (or paths of files) to ingest again although ingested before.
    public func run(dryRun: Bool = false, reingest: [String] = []) async throws(IngestError) -> IngestReport {
        var report = IngestReport()
        report.dryRun = dryRun
        // One pass at a time per state file.
        var lock: Int32 = -1
        if !dryRun {
            do {
                try FileManager.default.createDirectory(atPath: (config.state as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true)
            } catch {
                throw IngestError("\(config.state): cannot make its folder: \(error.localizedDescription)")
            }
            lock = open(config.state + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard lock >= 0 else { throw IngestError("\(config.state).lock: \(String(cString: strerror(errno)))") }
            if flock(lock, LOCK_EX | LOCK_NB) != 0 {
                close(lock)
                report.busy = true
                return report
            }
        }
        defer { if lock >= 0 { close(lock) } }

        let state: IngestState?
        let known: [String: IngestState.Row]
        do {
            state = try IngestState.open(config.state, readOnly: dryRun)
            known = try state?.rows() ?? [:]
        } catch {
            throw IngestError("\(config.state): cannot open the ingest state: \(error)")
        }
        try await checkReingest(reingest, state: state)
        let passStart = now().timeIntervalSince1970
        var changes: [IngestState.Change] = []
        var candidates: [Candidate] = []
        var forced = Set(reingest)
        var walked: Set<String> = []
        var unread: [String] = []

        /// A file or object that passes the watch's patterns, with what it is now: settling starts, goes on, or
        /// ends with a candidate; or it was taken before.
        func consider(_ path: String, _ identity: IngestState.Identity, modified: Date, watch: IngestConfig.Watch, object: S3Object? = nil) {
            let isForced = forced.contains(path)
            if isForced { forced.remove(path) }
            guard let row = known[path], row.identity == identity else {
                // New, or changed since it was last seen: it settles from now.
                changes.append(.seen(path: path, identity, at: passStart))
                report.settling += 1
                report.firstSeen += 1
                return
            }
            if row.goneSince != nil { changes.append(.back(path: path)) }
            if row.status == .settling {
                guard row.seenAt < passStart, passStart - row.seenAt >= config.settleSeconds else {
                    report.settling += 1
                    return
                }
            } else if !isForced && !(row.hash.map { forced.contains($0) } ?? false) {
                return  // already ingested, a duplicate, quarantined or rejected: nothing to do
            }
            candidates.append(Candidate(path: path, identity: identity, modified: modified, template: watch.template, watch: watch, object: object))
        }

        for watch in config.watch {
            if watch.isObjectPrefix {
                switch await Self.list(watch.path) {
                case .failure(let problem):
                    // Like a folder that cannot be read: its rows stay as they are, and the pass says so (exit 1).
                    report.unlisted.append(.init(path: watch.path, reason: problem.description))
                    unread.append(String(watch.path.dropLast()))
                case .success(let objects):
                    for object in objects {
                        let path = object.location.description
                        walked.insert(path)
                        guard Self.matches(object.location.name, watch) else { continue }
                        report.seen += 1
                        report.seenObjects += 1
                        if let why = Self.unwanted(object.location.name) {
                            report.skipped.append(.init(path: path, reason: why))
                            continue
                        }
                        consider(path, .object(size: object.size, etag: object.etag), modified: Self.modified(object, or: now()),
                                 watch: watch, object: object)
                    }
                }
                continue
            }
            let root = URL(fileURLWithPath: watch.path).resolvingSymlinksInPath().path
            let walk = FolderWalk(watch.path)
            for folder in walk.unreadable { report.skipped.append(.init(path: folder, reason: "a folder that cannot be read")) }
            unread += walk.unreadable
            let files = walk.entries.map(\.path).sorted()
            walked.formUnion(files)
            for path in files {
                let name = (path as NSString).lastPathComponent
                guard Self.matches(name, watch) else { continue }
                report.seen += 1
                if let why = Self.unwanted(name) {
                    report.skipped.append(.init(path: path, reason: why))
                    continue
                }
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                if (info.st_mode & S_IFMT) == S_IFLNK {
                    let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
                    guard target.hasPrefix(root + "/") else {
                        report.skipped.append(.init(path: path, reason: "a symbolic link to outside the watch folder"))
                        continue
                    }
                    guard stat(path, &info) == 0 else {
                        report.skipped.append(.init(path: path, reason: "a symbolic link to nothing"))
                        continue
                    }
                }
                guard (info.st_mode & S_IFMT) == S_IFREG else { continue }
                guard access(path, R_OK) == 0 else {
                    report.skipped.append(.init(path: path, reason: "no permission to read it"))
                    continue
                }
                let identity = IngestState.Identity(size: Int64(info.st_size),
                                                    mtimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                                                    inode: UInt64(info.st_ino), device: UInt64(info.st_dev))
                consider(path, identity, modified: Date(timeIntervalSince1970: Double(identity.mtimeNanoseconds) / 1e9), watch: watch)
            }
        }

        // Rows of files no longer there (deleted, or renamed: the new name is a new row) are marked at the
        // first pass that misses them and forgotten after the grace period; a folder that could not be read
        // this pass (an unmounted card) leaves its rows as they are.
        let grace = config.forgetGoneAfterDays * 86400
        for (path, row) in known where !walked.contains(path) && !unread.contains(where: { path.hasPrefix($0 + "/") }) {
            if let since = row.goneSince {
                if passStart - since >= grace {
                    changes.append(.forget(path: path))
                    report.forgotten += 1
                }
            } else {
                changes.append(.gone(path: path, at: passStart))
            }
        }

        // Settled files: hash, weed out duplicates, inspect, and make their jobs.
        var hashesThisPass: [String: String] = [:]
        var reservedNames: Set<String> = []   // processing/ paths this pass gives out
        // Each file's jobs: its template's one, or its chain (enqueued together, in one transaction with the others).
        var jobs: [(candidate: Candidate, content: ContentHash, input: String, facts: AssetFacts?, chain: [NewJob])] = []
        var renamed: [(candidate: Candidate, content: ContentHash)] = []
        for (done, candidate) in candidates.enumerated() {
            progress(done, candidates.count)
            let at = now().timeIntervalSince1970
            let content: ContentHash
            do {
                if let object = candidate.object {
                    // Streamed from ranged reads that must all find the object as listed: nothing on disk.
                    content = try await ContentHash.streaming(object, s3: try AssetLibrary.objectClient())
                } else {
                    content = try await ContentHash.reading(candidate.path)
                }
            } catch {
                report.skipped.append(.init(path: candidate.path, reason: error.reasonOnly))
                continue
            }
            let hash = content.sha256
            let forcedHash = forced.contains(hash) || reingest.contains(candidate.path)
            let earlier: String?
            do {
                earlier = try hashesThisPass[hash] ?? state?.hashIsKnown(hash)
            } catch {
                throw IngestError("\(config.state): cannot look up \(candidate.path)'s content among the files ingested before: \(error); nothing was enqueued")
            }
            // Known content at a new path where the file ingested before is gone: renamed or moved inside the
            // watch folders. Not a new job: the library learns where it is now, so that its job (queued and
            // not run yet, or run again) reads it here.
            if !forcedHash, let earlier, hashesThisPass[hash] == nil, config.afterEnqueue == .leave, !(await Self.present(earlier)) {
                renamed.append((candidate, content))
                report.renamed.append(.init(path: candidate.path, from: earlier))
                changes.append(.ended(path: candidate.path, candidate.identity, status: .ingested, hash: hash, jobID: nil,
                                      reason: "renamed from \(earlier)", at: at))
                changes.append(.renamed(hash: hash, path: candidate.path))
                hashesThisPass[hash] = candidate.path
                continue
            }
            if !forcedHash, let earlier {
                report.duplicates += 1
                report.duplicateFiles.append(.init(path: candidate.path, reason: "the same content as \(earlier)"))
                changes.append(.ended(path: candidate.path, candidate.identity, status: .duplicate, hash: hash, jobID: nil,
                                      reason: "same content as \(earlier)", at: at))
                continue
            }
            let (problem, facts) = await Self.probe(candidate.path, size: candidate.identity.size)
            if let problem {
                report.quarantined += 1
                var moved: String?
                var notMoved: String?
                if candidate.object != nil {
                    // An object stays in its bucket; its row keeps it from being read again until it changes.
                    notMoved = "an object is left where it is; ingest does not read it again until it changes"
                    if !dryRun {
                        changes.append(.ended(path: candidate.path, candidate.identity, status: .quarantined, hash: hash, jobID: nil,
                                              reason: problem, at: at))
                    }
                } else if !dryRun {
                    do {
                        moved = try QuarantineFolder(config.quarantine).place(candidate.path, reason: problem, details: ["hash": hash], at: now())
                    } catch {
                        notMoved = error.reason
                    }
                    // Moved: forgotten here. Not movable: remembered as quarantined, so that it is not
                    // inspected again at every pass while it stays.
                    changes.append(moved == nil
                        ? .ended(path: candidate.path, candidate.identity, status: .quarantined, hash: hash, jobID: nil, reason: problem, at: at)
                        : .forget(path: candidate.path))
                }
                report.quarantine.append(.init(path: candidate.path, movedTo: moved, reason: problem, notMoved: notMoved))
                continue
            }
            let input = config.afterEnqueue == .move
                ? processingPath(for: candidate.path, watch: candidate.watch, hash: hash, reserved: &reservedNames) : candidate.path
            let stem = ((candidate.path as NSString).lastPathComponent as NSString).deletingPathExtension
            let name = "\(stem)-\(hash.prefix(8))"
            let roots = config.outputRoots ?? [candidate.template.folder]
            var chain: [NewJob] = []
            var invalid: IngestError?
            for step in candidate.template.jobs(for: input, hash: hash, modified: candidate.modified) {
                let offer = ManifestOffer(text: step.manifest, file: name, name: step.key.map { "\(name)-\($0)" } ?? name,
                                          baseDirectory: candidate.template.folder)
                switch Submission.validate(offer, rules: Self.rules(outputRoots: roots)).mapError(IngestError.init(invalid:)) {
                case .success(let manifest):
                    chain.append(JobOptions(outputRoots: roots, priority: config.priority, maxAttempts: config.maxAttempts ?? 3,
                                            uniqueKey: step.uniqueKey).job(manifest, text: step.manifest))
                case .failure(let problem):
                    invalid = step.key.map { IngestError("its chain's job \"\($0)\": \(problem)") } ?? problem
                }
                if invalid != nil { break }
            }
            if let invalid {
                report.skipped.append(.init(path: candidate.path, reason: "its job would be invalid: \(invalid)"))
                changes.append(.ended(path: candidate.path, candidate.identity, status: .rejected, hash: hash, jobID: nil,
                                      reason: invalid.description, at: at))
                continue
            }
            hashesThisPass[hash] = candidate.path
            jobs.append((candidate, content, input, facts, chain))
        }

        progress(candidates.count, candidates.count)
        // Every file or content asked for again must have been taken; say why not of the others.
        for item in reingest {
            let taken = IngestReport.isHash(item)
                ? jobs.contains { $0.content.sha256 == item.lowercased() }
                : jobs.contains { $0.candidate.path == item }
            guard !taken else { continue }
            let why = IngestReport.isHash(item)
                ? "no settled file in the watch folders has this content now"
                : known[item] == nil || known[item]?.status == .settling ? "it is new or still settling: a pass will ingest it when it has settled"
                : "it was not ingested again (see the other lines of this pass)"
            report.notReingested.append(.init(path: item, reason: why))
        }
        if dryRun {
            report.enqueued = jobs.count
            report.jobs = jobs.map { .init(id: nil, path: $0.input, hash: $0.content.sha256) }
            return report
        }

        // Enqueue (moving files first when asked); a queue that fails undoes the moves and marks nothing.
        var store: (any JobStore)?
        var enqueued: [Enqueued] = []
        if !jobs.isEmpty {
            var moved: [(from: String, to: String)] = []
            if config.afterEnqueue == .move {
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
            }
            do {
                let opened = try await openQueue()
                store = opened
                // The one way into the queue; the library learns each file and its jobs below, once it is registered.
                enqueued = try await Submission(store: opened, library: nil).enqueue(jobs.flatMap(\.chain), sources: [], at: now()).jobs
            } catch {
                let undone = undo(moved)
                await store?.close()
                // What settled is still remembered (the next pass tries again at once).
                let recorded: String
                do { try state?.apply(changes); recorded = "" } catch { recorded = "; \(config.state): cannot record the pass either: \(error)" }
                throw IngestError("the queue: \(error); nothing was enqueued (the next pass tries again)\(undone)\(recorded)")
            }
            let at = now().timeIntervalSince1970
            for (entry, queued) in zip(jobs, Self.firsts(of: jobs.map(\.chain.count), in: enqueued)) {
                report.enqueued += 1
                report.jobs.append(.init(id: queued.id, path: entry.input, hash: entry.content.sha256))
                changes.append(.ingested(hash: entry.content.sha256, path: entry.input, jobID: queued.id, at: at))
                if config.afterEnqueue == .move {
                    changes.append(.forget(path: entry.candidate.path))
                } else {
                    changes.append(.ended(path: entry.candidate.path, entry.candidate.identity, status: .ingested, hash: entry.content.sha256,
                                          jobID: queued.id, reason: nil, at: at))
                }
            }
        }
        // Nothing to enqueue: the queue is still opened (which connects and checks its schema), so that cron
        // notices a queue that cannot be reached (a wrong URL, a server down) at the first pass, not the first file.
        if jobs.isEmpty {
            do {
                store = try await openQueue()
            } catch {
                let recorded: String
                do { try state?.apply(changes); recorded = "" } catch { recorded = "; \(config.state): cannot record the pass either: \(error)" }
                throw IngestError("the queue: \(error); nothing was due this pass, but the next files cannot be enqueued\(recorded)")
            }
        }
        // The asset library learns each ingested file and its job, and where renamed files are now. The jobs
        // are queued and the files moved whatever it says, so the pass is recorded; `libraryWarnings` makes
        // the command exit 1.
        if !jobs.isEmpty || !renamed.isEmpty {
            do {
                let opened: any JobStore
                if let store { opened = store } else { opened = try await openQueue() }
                store = opened
                let library = try AssetLibrary(store: opened, host: libraryHost, inspector: .media)
                for (entry, chain) in zip(jobs, Self.groups(of: jobs.map(\.chain.count), in: enqueued)) where chain.contains(where: \.inserted) {
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
                for entry in renamed {
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
            } catch {
                report.libraryWarnings.append("the asset library: \(error)")
            }
        }
        await store?.close()
        do {
            try state?.apply(changes)
        } catch {
            throw IngestError("\(config.state): cannot record the pass: \(error)")
        }
        return report
    }

    /// `enqueued` cut into each file's chain, of `counts` jobs each.
    static func groups(of counts: [Int], in enqueued: [Enqueued]) -> [[Enqueued]] {
        var start = 0
        return counts.map { n in
            defer { start += n }
            return Array(enqueued[start..<min(start + n, enqueued.count)])
        }
    }

    /// The first job of each file's chain: the one the file is recorded with.
    static func firsts(of counts: [Int], in enqueued: [Enqueued]) -> [Enqueued] {
        groups(of: counts, in: enqueued).compactMap(\.first)
    }

    /// What `--reingest` names must be there to take: a path (absolute) of a file in a watch folder, or the
    /// SHA-256 of content ingested before. Anything else is refused before the pass does anything.
    func checkReingest(_ items: [String], state: IngestState?) async throws(IngestError) {
        var problems: [String] = []
        for item in items {
            if IngestReport.isHash(item) {
                let earlier: String?
                do { earlier = try state?.hashIsKnown(item.lowercased()) } catch {
                    throw IngestError("\(config.state): cannot look up --reingest \(item): \(error); nothing was done")
                }
                if earlier == nil {
                    problems.append("--reingest \(item): no file with this content was ingested (the state \(config.state) does not know it)")
                }
            } else if S3Location.isObject(item) {
                if !config.watch.contains(where: { $0.isObjectPrefix && item.hasPrefix($0.path) && item != $0.path }) {
                    problems.append("--reingest \(item): not under an object prefix the config watches "
                                    + "(\(config.watch.filter(\.isObjectPrefix).map(\.path).joined(separator: ", ")))")
                } else if !(await Self.present(item)) {
                    problems.append("--reingest \(item): no such object")
                }
            } else if !item.hasPrefix("/") {
                problems.append("--reingest \(item): give the file's absolute path, its s3:// address, or its SHA-256")
            } else if !Self.exists(item) {
                problems.append("--reingest \(item): no such file")
            } else if !config.watch.contains(where: { PathRules.isInside(item, root: $0.path) && item != $0.path }) {
                problems.append("--reingest \(item): not in a watch folder of the config (\(config.watch.map(\.path).joined(separator: ", ")))")
            }
        }
        if !problems.isEmpty { throw IngestError(problems.joined(separator: "\n") + "\nnothing was done", isUsage: true) }
    }

    /// Moves files back where they were after a failed pass; what could not be moved back, in words
    /// (nothing is replaced to put a file back: a new file at its old name stays, and the moved one is named).
    func undo(_ moved: [(from: String, to: String)]) -> String {
        var stuck: [String] = []
        for m in moved.reversed() {
            do { try SafeFiles.move(m.to, to: m.from) } catch { stuck.append("\(m.from) stays at \(m.to): \(error)") }
        }
        return stuck.isEmpty ? "" : "; " + stuck.joined(separator: "; ")
    }

    // MARK: - Files

    /// Whether anything is at `path` (a link to nothing counts: something is there).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Whether `name` passes the watch folder's patterns, upper and lower case alike (cameras write
    /// `C0001.MP4`, configs say `*.mp4`).
    static func matches(_ name: String, _ watch: IngestConfig.Watch) -> Bool {
        let caseFold: Int32 = 1 << 4   // glibc's FNM_CASEFOLD, which the Swift overlay does not export
        if !watch.include.isEmpty && !watch.include.contains(where: { fnmatch($0, name, caseFold) == 0 }) { return false }
        return !watch.exclude.contains { fnmatch($0, name, caseFold) == 0 }
    }

    /// nil when the file is readable, composable media, as `mediafarm inspect` reports it (a file that
    /// ends before its header says it does is truncated, and refused); else why not.
    /// The same inspection gives the asset library its facts.
    static func probe(_ path: String, size: Int64) async -> (problem: String?, facts: AssetFacts?) {
        if size == 0 { return ("the file is empty", nil) }
        let report = await AssetReport.inspect(Asset(path: path), keys: AssetFacts.keys.union([.isComposable]), trackKeys: AssetFacts.trackKeys)
        if let error = report.error { return (error.hasPrefix(path + ": ") ? String(error.dropFirst(path.count + 2)) : error, nil) }
        if report.isReadable != true { return ("not readable as media", nil) }
        if report.isComposable != true { return ("not composable: no track can be placed in a composition", nil) }
        // Readable, composable media: ingested; facts that cannot be formed leave its library entry without them.
        return (nil, try? AssetFacts.facts(report, path: path, size: size))
    }

    /// The file's place in `processing/` beside its watch folder: its path inside the watch folder kept
    /// (`processing/cardA/C0001.MP4`), with the hash's first digits added (`C0001-1a2b3c4d.MP4`) when that
    /// name is taken, by a file there or by another file of this pass (`reserved`). The move itself
    /// refuses to replace anything, so a name taken meanwhile fails the pass instead of losing a file.
    func processingPath(for path: String, watch: IngestConfig.Watch, hash: String, reserved: inout Set<String>) -> String {
        let folder = (watch.path as NSString).deletingLastPathComponent + "/processing"
        let relative = path.hasPrefix(watch.path + "/") ? String(path.dropFirst(watch.path.count + 1)) : (path as NSString).lastPathComponent
        let plain = folder + "/" + relative
        var chosen = plain
        if reserved.contains(plain) || FileManager.default.fileExists(atPath: plain) {
            let ext = (plain as NSString).pathExtension
            let stem = ext.isEmpty ? plain : String(plain.dropLast(ext.count + 1))
            chosen = stem + "-" + hash.prefix(8) + (ext.isEmpty ? "" : "." + ext)
        }
        reserved.insert(chosen)
        return chosen
    }
}
