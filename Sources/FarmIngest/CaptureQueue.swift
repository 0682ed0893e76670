import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import Synchronization
import MediaCapture
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// Feeds finished segments to the queue (`capture --enqueue TEMPLATE`): one job per segment from the
/// template, under the unique key `capture:<capture-id>:<index>`, so that a segment is enqueued once
/// however often it is retried. Every segment is first written to the journal beside the output folder
/// (`.<capture-id>.journal`, one JSON line per segment, then one per enqueued job); while the queue
/// cannot be reached, segments wait there and are enqueued, in order, when it answers again. The
/// recording never waits for the queue. A segment the template makes an invalid manifest for is reported
/// once and set aside (it is never retried, and never holds up the segments after it); a journal that
/// cannot be written is reported at once and makes `journalProblem` say why. A recording's assembly
/// (`assemble`) is journaled and queued the same way, after its segments.
public final class CaptureQueue: Sendable {
    struct Entry: Codable {
        var captureID: String
        var index: Int
        var path: String
        var job: Int64?
        /// A line about an assembly rather than a segment (`index` is its first segment's).
        var assembly: CaptureAssembly?
    }

    enum Item {
        case segment(SegmentReport, captureID: String)
        case assembly(CaptureAssembly)
    }

    /// What `run` left undone when feeding ended.
    public struct Outcome: Sendable {
        /// Segments still waiting for the queue (journaled: the next capture into the folder enqueues them).
        public var waiting: [SegmentReport] = []
        /// Assemblies still waiting for the queue (journaled too).
        public var waitingAssemblies: [CaptureAssembly] = []
        /// Assemblies the queue took: (job, the assembly).
        public var assembled: [(job: Int64, assembly: CaptureAssembly)] = []
        /// How many segments the template gave an invalid manifest for, and the first one's reason (each
        /// was reported as it came).
        public var rejected = 0
        public var firstRejection: String?
    }

    let template: IngestTemplate
    let captureID: String
    public let journalPath: String
    let folder: String
    let outputRoots: [String]?
    let location: QueueLocation
    let libraryHost: String
    private let state = Mutex(State())
    private let wakeUps: AsyncStream<Void>
    /// Tells `run` of a change.
    private let wake: AsyncStream<Void>.Continuation
    private let report: @Sendable (CaptureFeedEvent) -> Void

    private struct State {
        /// Segments not yet enqueued, in order, and whether more may come.
        var pending: [Item] = []
        var feeding = true
        /// Jobs of segments, by "captureID-index": the ones this capture queued and, once an assembly needs
        /// them, those the folder's journals record.
        var segmentJobs: [String: Int64] = [:]
        var assembled: [(job: Int64, assembly: CaptureAssembly)] = []
        /// The queue, while it answers (only `run`'s task opens and closes it).
        var store: (any JobStore)?
        var rejected = 0
        var firstRejection: String?
        var journalError: String?
    }

    public static let placeholders = ["input", "stem", "ext", "index", "captureID", "date"]

    public init(template: IngestTemplate, captureID: String, outputDirectory: String, outputRoots: [String]?, location: QueueLocation,
                libraryHost: String,
                report: @escaping @Sendable (CaptureFeedEvent) -> Void) {
        self.template = template
        self.captureID = captureID
        self.outputRoots = outputRoots
        self.location = location
        self.libraryHost = libraryHost
        self.report = report
        folder = outputDirectory
        journalPath = outputDirectory + "/." + captureID + ".journal"
        ProtectedFiles.shared.protect(journalPath, role: "this capture's journal")
        (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Why the journal could not be kept (the first failure), or nil: the capture then exits 1, since a
    /// segment it did not record could be lost to the queue if this process died before enqueueing it.
    public var journalProblem: String? { state.withLock { $0.journalError } }

    /// Called on the capture thread as each segment is finished: journaled at once, enqueued by `run`.
    /// `captureID`: the recording it belongs to (a salvaged segment's may be an earlier one's).
    public func segmentFinished(_ segment: SegmentReport, captureID: String? = nil) {
        let id = captureID ?? self.captureID
        journal(Entry(captureID: id, index: segment.index, path: segment.path, job: nil))
        state.withLock { $0.pending.append(.segment(segment, captureID: id)) }
        wake.yield()
    }

    /// Called when a recording has ended, with its assembly: journaled at once, enqueued by `run` after
    /// every segment offered before it.
    public func assemble(_ assembly: CaptureAssembly) {
        journal(Entry(captureID: assembly.captureID, index: assembly.first, path: "", job: nil, assembly: assembly))
        state.withLock { $0.pending.append(.assembly(assembly)) }
        wake.yield()
    }

    /// No more segments will come.
    public func finishFeeding() {
        state.withLock { $0.feeding = false }
        wake.yield()
    }

    /// Enqueues segments as they come, retrying a queue that does not answer with backoff (up to 5 s
    /// apart); when feeding has finished, one last attempt, then returns what is still waiting and what
    /// the template could not make a job of.
    public func run() async -> Outcome {
        var wakeUps = self.wakeUps.makeAsyncIterator()
        var delay = 0.25
        var failing: String?
        while true {
            let (next, more) = state.withLock { ($0.pending.first, $0.feeding) }
            guard let next else {
                if !more { break }
                _ = await wakeUps.next()
                continue
            }
            let what: String
            switch next {
            case .segment(let segment, _): what = "segment \(segment.index)"
            case .assembly(let assembly): what = "the assembly of \(assembly.captureID)"
            }
            do {
                switch next {
                case .segment(let segment, let id): try await enqueue(segment, captureID: id)
                case .assembly(let assembly): try await enqueue(assembly)
                }
                state.withLock { _ = $0.pending.removeFirst() }
                delay = 0.25
                failing = nil
            } catch let invalid as InvalidSegmentManifest {
                // Permanent: the same template gives the same manifest however often it is tried.
                switch next {
                case .segment(let segment, _):
                    report(.notice("segment \(segment.index): not enqueued: the template gives an invalid manifest for \(segment.path): \(invalid.reason)"))
                case .assembly(let assembly):
                    report(.notice("the assembly of \(assembly.captureID) (segments \(assembly.first)-\(assembly.last)) was not enqueued: "
                                      + "the --assemble template gives an invalid manifest: \(invalid.reason)"))
                }
                state.withLock { s in
                    _ = s.pending.removeFirst()
                    s.rejected += 1
                    if s.firstRejection == nil { s.firstRejection = invalid.reason }
                }
            } catch {
                if failing != what {
                    failing = what
                    let why = error is ObjectsNotThere ? "its job names what is not there" : "the queue did not take it"
                    report(.notice("\(what): \(why) (\(error)); journaled in \(journalPath), trying again"))
                }
                if !more { break }
                try? await Task.sleep(for: .seconds(delay))  // cancelled: the retry loop ends at its next check
                delay = min(delay * 2, 5)
            }
        }
        let store = state.withLock { s in
            defer { s.store = nil }
            return s.store
        }
        await store?.close()
        return state.withLock { s in
            var outcome = Outcome(rejected: s.rejected, firstRejection: s.firstRejection)
            for item in s.pending {
                switch item {
                case .segment(let segment, _): outcome.waiting.append(segment)
                case .assembly(let assembly): outcome.waitingAssemblies.append(assembly)
                }
            }
            outcome.assembled = s.assembled
            return outcome
        }
    }

    struct InvalidSegmentManifest: Error {
        var reason: String
    }

    /// A job that names objects that are not there (an output's bucket).
    struct ObjectsNotThere: Error, CustomStringConvertible {
        var description: String
    }

    private func enqueue(_ segment: SegmentReport, captureID: String) async throws {
        let started = Date()
        let text = template.manifest(values: [
            "input": segment.path, "index": String(segment.index), "captureID": captureID,
            "date": IngestTemplate.day(segment.wallClock),
        ], file: segment.path)
        let roots = outputRoots ?? [template.folder]
        let manifest = try await checked(text, name: "\(captureID)-\(segment.index)", base: template.folder, roots: roots)
        let options = JobOptions(outputRoots: roots, uniqueKey: .captureSegment(captureID, index: segment.index))
        guard let (first, store) = try await submit(options.job(manifest, text: text)) else { return }
        state.withLock { $0.segmentJobs["\(captureID)-\(segment.index)"] = first.id }
        journal(Entry(captureID: captureID, index: segment.index, path: segment.path, job: first.id))
        report(.enqueued(captureID: captureID, index: segment.index, job: first.id, queued: first.inserted,
                         latencyMs: (Date().timeIntervalSince(segment.closedAt ?? started) * 1000 * 10).rounded() / 10))
        // The asset library learns the segment and its job (after the enqueue: it never delays it).
        do {
            let library = try AssetLibrary(store: store, host: libraryHost, inspector: .media)
            let hash = try await ContentHash.reading(segment.path)
            let added = try await library.register(segment.path, hash: hash)
            if first.inserted, let id = added.id { try await library.recordJobInputs(first.id, [id]) }
        } catch {
            report(.notice("segment \(segment.index): not registered in the asset library: \(error)"))
        }
    }

    /// Queues an assembly after the jobs of its segments (those that have one: a segment the segment
    /// template was invalid for has none).
    private func enqueue(_ assembly: CaptureAssembly) async throws {
        let manifest = try await checked(assembly.manifest, name: assembly.name, base: assembly.baseDirectory, roots: assembly.outputRoots)
        var known = state.withLock { $0.segmentJobs }
        if assembly.segments.contains(where: { known["\(assembly.captureID)-\($0.index)"] == nil }) {
            do {
                known.merge(try Self.journaled(in: folder).segmentJobs) { a, _ in a }
            } catch {
                // Read whole when the capture started; damaged since. The assembly waits for the jobs this run knows.
                report(.notice("the assembly of \(assembly.captureID) waits only for the segments' jobs this capture queued: \(error)"))
            }
        }
        let after = assembly.segments.compactMap { known["\(assembly.captureID)-\($0.index)"] }.map(JobReference.id)
        let options = JobOptions(outputRoots: assembly.outputRoots, uniqueKey: assembly.uniqueKey, after: after)
        guard let (first, _) = try await submit(options.job(manifest, text: assembly.manifest)) else { return }
        state.withLock { $0.assembled.append((first.id, assembly)) }
        journal(Entry(captureID: assembly.captureID, index: assembly.first, path: "", job: first.id, assembly: assembly))
        report(.assembly(assembly, job: first.id, queued: first.inserted, after: after.count))
    }

    /// The filled-in manifest, validated, and the objects it names checked as `submit` checks them (an
    /// output's bucket that is not there): an invalid manifest is a permanent refusal, a missing bucket is
    /// tried again.
    private func checked(_ text: String, name: String, base: String, roots: [String]) async throws -> JobManifest {
        let offer = ManifestOffer(text: text, file: name, name: name, baseDirectory: base)
        let submitter = Submitter.capture(outputRoots: roots)
        switch Submission.validate(offer, as: submitter) {
        case .success(let valid):
            if let issues = await Submission.objectIssues([(offer, valid)], as: submitter)[name] {
                // Not the template's fault: tried again as a queue that does not answer is (a bucket made meanwhile takes it).
                throw ObjectsNotThere(description: IngestError(invalid: ManifestValidationError(file: name, issues: issues)).description)
            }
            return valid
        case .failure(let problem):
            throw InvalidSegmentManifest(reason: IngestError(invalid: problem).description)
        }
    }

    /// Enqueues `job`, opening the queue when it is not open; a queue that fails is closed, to be opened
    /// afresh on the next attempt.
    private func submit(_ job: NewJob) async throws -> (Enqueued, any JobStore)? {
        let store: any JobStore
        if let open = state.withLock({ $0.store }) {
            store = open
        } else {
            store = try await JobStores.open(location, create: true)
            state.withLock { $0.store = store }
        }
        do {
            // The one way into the queue; the library learns the segment and its job once it is registered.
            return try await Submission(store: store, library: nil).enqueue([job], sources: []).jobs.first.map { ($0, store) }
        } catch {
            await store.close()
            state.withLock { $0.store = nil }
            throw error
        }
    }

    /// A journal that cannot be read whole: its file, and the line when one is damaged. Nothing is queued
    /// again from it: what it would say is unknown.
    public struct JournalReadError: Error, CustomStringConvertible, Sendable {
        public var file: String
        public var line: Int?
        public var problem: String
        public var description: String {
            "\(file)\(line.map { ", line \($0)" } ?? ""): \(problem); the capture stops rather than queue its segments again blindly "
                + "(repair or remove the line, or move the journal aside once its segments' jobs are known, then capture again)"
        }
    }

    /// What the journals in `folder` record: each segment's job (by "captureID-index"), and the
    /// assemblies they journaled with the queue's job where it took them. A journal that cannot be read,
    /// or one with a line that is not an entry, is an error naming the file and the line.
    static func journaled(in folder: String) throws(JournalReadError) -> (segmentJobs: [String: Int64], assemblies: [(assembly: CaptureAssembly, job: Int64?)]) {
        guard FileManager.default.fileExists(atPath: folder) else { return ([:], []) }   // not made yet: no journal
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch {
            throw JournalReadError(file: folder, line: nil, problem: "the folder cannot be listed (\(error.localizedDescription))")
        }
        var jobs: [String: Int64] = [:]
        var assemblies: [String: (assembly: CaptureAssembly, job: Int64?)] = [:]
        var order: [String] = []
        for journal in names.sorted() where journal.hasPrefix(".") && journal.hasSuffix(".journal") {
            let path = folder + "/" + journal
            let data: Data
            do {
                // A capture writes its journal as a regular file. A folder in its place is damage; a device
                // (a full disk simulated by /dev/full) holds no entry, and reading one might never end.
                var info = stat()
                if stat(path, &info) == 0 {
                    if info.st_mode & S_IFMT == S_IFDIR { throw JournalReadError(file: path, line: nil, problem: "cannot be read (a folder, not a journal)") }
                    if info.st_mode & S_IFMT != S_IFREG { continue }
                }
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch let error as JournalReadError {
                throw error
            } catch {
                throw JournalReadError(file: path, line: nil, problem: "cannot be read (\(error.localizedDescription))")
            }
            for (number, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
                let entry: Entry
                do {
                    entry = try JSONDecoder().decode(Entry.self, from: Data(line))
                } catch {
                    throw JournalReadError(file: path, line: number + 1, problem: "not a journal entry (\(Self.reason(error)))")
                }
                if let assembly = entry.assembly {
                    let key = assembly.uniqueKey.stored
                    if assemblies[key] == nil { order.append(key) }
                    assemblies[key] = (assembly, entry.job ?? assemblies[key]?.job)
                } else if let job = entry.job {
                    jobs["\(entry.captureID)-\(entry.index)"] = job
                }
            }
        }
        return (jobs, order.compactMap { assemblies[$0] })
    }

    static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): context.debugDescription
        case DecodingError.keyNotFound(let key, _): "no \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default: "\(error)"
        }
    }

    /// What earlier recordings into `folder` left for the queue, read from its journals before a capture
    /// starts: segments whose job no journal records (a recording that died between finishing a segment
    /// and queueing it), in name order, and assemblies the queue never took (a capture that died, or
    /// ended while the queue did not answer), in the order they were journaled.
    public static func leftOver(in folder: String) throws(JournalReadError)
        -> (segments: [(path: String, captureID: String, index: Int)], assemblies: [CaptureAssembly]) {
        let journals = try journaled(in: folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []   // listed just above: a folder gone since holds nothing
        let queued = journals.segmentJobs
        let segments: [(path: String, captureID: String, index: Int)] = names.sorted().compactMap { name in
            guard !name.hasPrefix("."), name.hasSuffix(".mp4") else { return nil }
            let stem = name.dropLast(4)
            guard let dash = stem.lastIndex(of: "-"), let index = Int(stem[stem.index(after: dash)...]) else { return nil }
            let id = String(stem[..<dash])
            return queued["\(id)-\(index)"] != nil ? nil : (folder + "/" + name, id, index)
        }
        return (segments, journals.assemblies.filter { $0.job == nil }.map(\.assembly))
    }

    /// Appends one line to the journal and syncs it; a failure is reported once, as an error event, and
    /// kept for `journalProblem`. A line cut short by a full disk is taken back.
    private func journal(_ entry: Entry) {
        do {
            try append(entry)
        } catch {
            let first = state.withLock { s in
                defer { if s.journalError == nil { s.journalError = error.description } }
                return s.journalError == nil
            }
            if first {
                report(.error("\(journalPath): the journal cannot be kept (\(error.description)); segment \(entry.index) and later ones "
                                 + "are enqueued while this capture runs, but would not be found again if it died first; the capture will exit 1"))
            }
        }
    }

    struct JournalError: Error, CustomStringConvertible {
        var description: String
    }

    private func append(_ entry: Entry) throws(JournalError) {
        var line: Data
        do { line = try JSONEncoder().encode(entry) } catch { throw JournalError(description: "the entry cannot be encoded: \(error)") }
        line.append(UInt8(ascii: "\n"))
        let fd = open(journalPath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw JournalError(description: String(cString: strerror(errno))) }
        defer { close(fd) }
        let before = lseek(fd, 0, SEEK_END)
        let failure: Int32? = line.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += n
            }
            return fsync(fd) == 0 || errno == EINVAL ? nil : errno
        }
        if let failure {
            if before >= 0 { _ = ftruncate(fd, before) }
            throw JournalError(description: String(cString: strerror(failure)))
        }
    }
}
