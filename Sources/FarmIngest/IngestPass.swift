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
    ///
    /// The stages: scan (what the watches hold), settle (what has stopped changing, and what is gone), prepare
    /// (hash, weed out duplicates, inspect, make each file's jobs), enqueue (move, then one transaction), and
    /// commit (the library learns the files; the state records the pass).
    public func run(dryRun: Bool = false, reingest: [String] = []) async throws(IngestError) -> IngestReport {
        var report = IngestReport()
        report.dryRun = dryRun
        // One pass at a time per state file.
        guard let lock = try await PassLock.take(config.state, dryRun: dryRun) else {
            report.busy = true
            return report
        }
        defer { lock.release() }
        let state: IngestState?
        let known: [String: IngestState.Row]
        do {
            state = try IngestState.open(config.state, readOnly: dryRun)
            known = try await state?.rows() ?? [:]
        } catch {
            throw IngestError("\(config.state): cannot open the ingest state: \(error)")
        }
        try await checkReingest(reingest, state: state)
        let passStart = now().timeIntervalSince1970
        let forced = Self.forced(reingest)

        let walk = await scan(into: &report)
        let settled = Self.settle(walk.sightings, known: known, at: passStart, settleSeconds: config.settleSeconds, forced: forced)
        report.settling += settled.settling
        report.firstSeen += settled.firstSeen
        let gone = Self.gone(known, walked: walk.walked, unread: walk.unread, at: passStart, grace: config.forgetGoneAfterDays * 86400)
        report.forgotten += gone.forgotten
        let prepared = try await prepare(settled.candidates, state: state, forced: forced, dryRun: dryRun, into: &report)
        var changes = settled.changes + gone.changes + prepared.changes
        report.notReingested = Self.notReingested(reingest, taken: prepared.jobs, known: known)
        if dryRun {
            report.enqueued = prepared.jobs.count
            report.jobs = prepared.jobs.map { .init(id: nil, path: $0.input, hash: $0.content.sha256) }
            return report
        }

        let (store, enqueued) = try await enqueue(prepared.jobs, state: state, changes: changes)
        changes += taken(prepared.jobs, as: enqueued, into: &report)
        await register(prepared, as: enqueued, in: store, into: &report)
        await store.close()
        do {
            try await state?.apply(changes)
        } catch {
            throw IngestError("\(config.state): cannot record the pass: \(error)")
        }
        return report
    }

    /// What `--reingest` names, as the pass compares it: paths as given, hashes in lower case.
    static func forced(_ reingest: [String]) -> Set<String> {
        Set(reingest.map { IngestReport.isHash($0) ? $0.lowercased() : $0 })
    }

    /// Every file or content asked for again must have been taken; why not, of the others.
    static func notReingested(_ reingest: [String], taken jobs: [Entry], known: [String: IngestState.Row]) -> [IngestReport.Skipped] {
        reingest.compactMap { item in
            let taken = IngestReport.isHash(item)
                ? jobs.contains { $0.content.sha256 == item.lowercased() }
                : jobs.contains { $0.candidate.path == item }
            guard !taken else { return nil }
            let why = IngestReport.isHash(item)
                ? "no settled file in the watch folders has this content now"
                : known[item] == nil || known[item]?.status == .settling ? "it is new or still settling: a pass will ingest it when it has settled"
                : "it was not ingested again (see the other lines of this pass)"
            return .init(path: item, reason: why)
        }
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
                do { earlier = try await state?.hashIsKnown(item.lowercased()) } catch {
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
