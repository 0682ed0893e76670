import FarmLibrary
import FarmModel
import FarmStore
import Foundation
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
/// cannot be written is reported at once and makes `journalProblem` say why.
public final class CaptureQueue: @unchecked Sendable {
    struct Entry: Codable {
        var captureID: String
        var index: Int
        var path: String
        var job: Int64?
    }

    /// What `run` left undone when feeding ended.
    public struct Outcome: Sendable {
        /// Segments still waiting for the queue (journaled: the next capture into the folder enqueues them).
        public var waiting: [SegmentReport] = []
        /// How many segments the template gave an invalid manifest for, and the first one's reason (each
        /// was reported as it came).
        public var rejected = 0
        public var firstRejection: String?
    }

    let template: IngestTemplate
    let captureID: String
    public let journalPath: String
    let outputRoots: [String]?
    let location: QueueLocation
    let libraryHost: String
    /// Checks a filled-in manifest (text, default name, base folder, output roots): the job's name, or
    /// what is wrong.
    let validate: @Sendable (String, String, String, [String]) -> Result<JobManifest, IngestError>
    /// Segments not yet enqueued, in order, and whether more may come; `wake` tells `run` of a change.
    private let lock = NSLock()
    private var pending: [(segment: SegmentReport, captureID: String)] = []
    private var feeding = true
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let report: @Sendable (String, [String: Any]) -> Void
    private var store: (any JobStore)?
    private var rejected = 0
    private var firstRejection: String?
    private var journalError: String?

    public static let placeholders = ["input", "stem", "ext", "index", "captureID", "date"]

    public init(template: IngestTemplate, captureID: String, outputDirectory: String, outputRoots: [String]?, location: QueueLocation,
                libraryHost: String, validate: @escaping @Sendable (String, String, String, [String]) -> Result<JobManifest, IngestError>,
                report: @escaping @Sendable (String, [String: Any]) -> Void) {
        self.template = template
        self.captureID = captureID
        self.outputRoots = outputRoots
        self.location = location
        self.libraryHost = libraryHost
        self.validate = validate
        self.report = report
        journalPath = outputDirectory + "/." + captureID + ".journal"
        ProtectedFiles.shared.protect(journalPath, role: "this capture's journal")
        (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Why the journal could not be kept (the first failure), or nil: the capture then exits 1, since a
    /// segment it did not record could be lost to the queue if this process died before enqueueing it.
    public var journalProblem: String? { lock.withLock { journalError } }

    /// Called on the capture thread as each segment is finished: journaled at once, enqueued by `run`.
    /// `captureID`: the recording it belongs to (a salvaged segment's may be an earlier one's).
    public func segmentFinished(_ segment: SegmentReport, captureID: String? = nil) {
        let id = captureID ?? self.captureID
        journal(Entry(captureID: id, index: segment.index, path: segment.path, job: nil))
        lock.withLock { pending.append((segment, id)) }
        wake.yield()
    }

    /// No more segments will come.
    public func finishFeeding() {
        lock.withLock { feeding = false }
        wake.yield()
    }

    /// Enqueues segments as they come, retrying a queue that does not answer with backoff (up to 5 s
    /// apart); when feeding has finished, one last attempt, then returns what is still waiting and what
    /// the template could not make a job of.
    public func run() async -> Outcome {
        var wakeUps = self.wakeUps.makeAsyncIterator()
        var delay = 0.25
        var failing: Int?
        while true {
            let (next, more) = lock.withLock { (pending.first, feeding) }
            guard let (segment, id) = next else {
                if !more { break }
                _ = await wakeUps.next()
                continue
            }
            do {
                try await enqueue(segment, captureID: id)
                lock.withLock { _ = pending.removeFirst() }
                delay = 0.25
                failing = nil
            } catch let invalid as InvalidSegmentManifest {
                // Permanent: the same template gives the same manifest however often it is tried.
                report("notice", ["message": "segment \(segment.index): not enqueued: the template gives an invalid manifest for \(segment.path): \(invalid.reason)"])
                lock.withLock {
                    _ = pending.removeFirst()
                    rejected += 1
                    if firstRejection == nil { firstRejection = invalid.reason }
                }
            } catch {
                if failing != segment.index {
                    failing = segment.index
                    report("notice", ["message": "segment \(segment.index): the queue did not take it (\(error)); journaled in \(journalPath), trying again"])
                }
                if !more { break }
                try? await Task.sleep(for: .seconds(delay))
                delay = min(delay * 2, 5)
            }
        }
        await store?.close()
        return lock.withLock { Outcome(waiting: pending.map(\.segment), rejected: rejected, firstRejection: firstRejection) }
    }

    struct InvalidSegmentManifest: Error {
        var reason: String
    }

    private func enqueue(_ segment: SegmentReport, captureID: String) async throws {
        let started = Date()
        let text = template.manifest(values: [
            "input": segment.path, "index": String(segment.index), "captureID": captureID,
            "date": IngestTemplate.day(segment.wallClock),
        ], file: segment.path)
        let name = "\(captureID)-\(segment.index)"
        let roots = outputRoots ?? [template.folder]
        let manifest: JobManifest
        switch validate(text, name, template.folder, roots) {
        case .success(let valid): manifest = valid
        case .failure(let problem): throw InvalidSegmentManifest(reason: problem.description)
        }
        if store == nil { store = try await JobStores.open(location, create: true) }
        guard let store else { return }
        let job = NewJob(name: manifest.name, manifest: text, baseDirectory: template.folder, outputRoots: roots,
                         uniqueKey: "capture:\(captureID):\(segment.index)", after: manifest.after, afterPolicy: manifest.afterPolicy,
                         requires: manifest.requires)
        let queued: [Enqueued]
        do {
            queued = try await store.enqueue([job], at: Date())
        } catch {
            await store.close()
            self.store = nil
            throw error
        }
        guard let first = queued.first else { return }
        journal(Entry(captureID: captureID, index: segment.index, path: segment.path, job: first.id))
        report("enqueued", ["captureID": captureID, "index": segment.index, "job": first.id, "queued": first.inserted,
                            "latencyMs": (Date().timeIntervalSince(segment.closedAt ?? started) * 1000 * 10).rounded() / 10])
        // The asset library learns the segment and its job (after the enqueue: it never delays it).
        do {
            let library = AssetLibrary(database: try store.database, host: libraryHost)
            let hash = try await ContentHash.reading(segment.path)
            let added = try await library.register(segment.path, hash: hash)
            if first.inserted, let id = added.id { try await library.recordJobInputs(first.id, [id]) }
        } catch {
            report("notice", ["message": "segment \(segment.index): not registered in the asset library: \(error)"])
        }
    }

    /// Segments in `folder` whose job no journal there records (a recording that died between finishing
    /// a segment and queueing it), in name order: (path, capture id, index).
    public static func notEnqueued(in folder: String) -> [(path: String, captureID: String, index: Int)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var queued = Set<String>()
        for journal in names where journal.hasPrefix(".") && journal.hasSuffix(".journal") {
            let text = (try? String(contentsOfFile: folder + "/" + journal, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                if let entry = try? JSONDecoder().decode(Entry.self, from: Data(line.utf8)), entry.job != nil {
                    queued.insert("\(entry.captureID)-\(entry.index)")
                }
            }
        }
        return names.sorted().compactMap { name in
            guard !name.hasPrefix("."), name.hasSuffix(".mp4") else { return nil }
            let stem = name.dropLast(4)
            guard let dash = stem.lastIndex(of: "-"), let index = Int(stem[stem.index(after: dash)...]) else { return nil }
            let id = String(stem[..<dash])
            return queued.contains("\(id)-\(index)") ? nil : (folder + "/" + name, id, index)
        }
    }

    /// Appends one line to the journal and syncs it; a failure is reported once, as an error event, and
    /// kept for `journalProblem`. A line cut short by a full disk is taken back.
    private func journal(_ entry: Entry) {
        do {
            try append(entry)
        } catch {
            let first = lock.withLock {
                defer { if journalError == nil { journalError = error.description } }
                return journalError == nil
            }
            if first {
                report("error", ["message": "\(journalPath): the journal cannot be kept (\(error.description)); segment \(entry.index) and later ones "
                                 + "are enqueued while this capture runs, but would not be found again if it died first; the capture will exit 1"])
            }
        }
    }

    struct JournalError: Error, CustomStringConvertible {
        var description: String
    }

    private func append(_ entry: Entry) throws(JournalError) {
        guard var line = try? JSONEncoder().encode(entry) else { throw JournalError(description: "the entry cannot be encoded") }
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
