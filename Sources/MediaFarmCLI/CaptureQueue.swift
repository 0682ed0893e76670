import FarmIngest
import FarmLibrary
import FarmModel
import FarmRuntime
import FarmStore
import Foundation
import MediaCapture
import SafeFiles

/// Feeds finished segments to the queue (`capture --enqueue TEMPLATE`): one job per segment from the
/// template, under the unique key `capture:<capture-id>:<index>`, so that a segment is enqueued once
/// however often it is retried. Every segment is first written to the journal beside the output folder
/// (`.<capture-id>.journal`, one JSON line per segment, then one per enqueued job); while the queue
/// cannot be reached, segments wait there and are enqueued, in order, when it answers again. The
/// recording never waits for the queue.
final class CaptureQueue: @unchecked Sendable {
    struct Entry: Codable {
        var captureID: String
        var index: Int
        var path: String
        var job: Int64?
    }

    let template: IngestTemplate
    let captureID: String
    let journalPath: String
    let outputRoots: [String]?
    let location: QueueLocation
    /// Segments not yet enqueued, in order, and whether more may come; `wake` tells `run` of a change.
    private let lock = NSLock()
    private var pending: [(segment: SegmentReport, captureID: String)] = []
    private var feeding = true
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let report: @Sendable (String, [String: Any]) -> Void
    private var store: (any JobStore)?

    static let placeholders = ["input", "stem", "ext", "index", "captureID", "date"]

    init(template: IngestTemplate, captureID: String, outputDirectory: String, outputRoots: [String]?, location: QueueLocation,
         report: @escaping @Sendable (String, [String: Any]) -> Void) {
        self.template = template
        self.captureID = captureID
        self.outputRoots = outputRoots
        self.location = location
        self.report = report
        journalPath = outputDirectory + "/." + captureID + ".journal"
        ProtectedFiles.shared.protect(journalPath, role: "this capture's journal")
        (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Called on the capture thread as each segment is finished: journaled at once, enqueued by `run`.
    /// `captureID`: the recording it belongs to (a salvaged segment's may be an earlier one's).
    func segmentFinished(_ segment: SegmentReport, captureID: String? = nil) {
        let id = captureID ?? self.captureID
        append(Entry(captureID: id, index: segment.index, path: segment.path, job: nil))
        lock.withLock { pending.append((segment, id)) }
        wake.yield()
    }

    /// No more segments will come.
    func finishFeeding() {
        lock.withLock { feeding = false }
        wake.yield()
    }

    /// Enqueues segments as they come, retrying a queue that does not answer with backoff (up to 5 s
    /// apart); when feeding has finished, one last attempt, then returns the segments still waiting.
    func run() async -> [SegmentReport] {
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
        return lock.withLock { pending.map(\.segment) }
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
        switch ManifestLoader.validate(text: text, name: name, baseDirectory: template.folder, outputRoots: roots) {
        case .success(let m): manifest = m
        case .failure(let e): throw CLIError("the --enqueue template gives an invalid manifest for \(segment.path): \(e.issues.map(\.description).joined(separator: "; "))")
        }
        if store == nil { store = try await JobStores.open(location, create: true) }
        guard let store else { return }
        let job = NewJob(name: manifest.name, manifest: text, baseDirectory: template.folder, outputRoots: roots,
                         uniqueKey: "capture:\(captureID):\(segment.index)")
        let queued: [Enqueued]
        do {
            queued = try await store.enqueue([job], at: Date())
        } catch {
            await store.close()
            self.store = nil
            throw error
        }
        guard let first = queued.first else { return }
        append(Entry(captureID: captureID, index: segment.index, path: segment.path, job: first.id))
        report("enqueued", ["captureID": captureID, "index": segment.index, "job": first.id, "queued": first.inserted,
                            "latencyMs": (Date().timeIntervalSince(segment.closedAt ?? started) * 1000 * 10).rounded() / 10])
        // The asset library learns the segment and its job (after the enqueue: it never delays it).
        do {
            let library = AssetLibrary(database: try store.database, host: LibraryOptions.hostName(nil))
            let hash = try await ContentHash.reading(segment.path)
            let added = try await library.register(segment.path, hash: hash)
            if first.inserted, let id = added.id { try await library.recordJobInputs(first.id, [id]) }
        } catch {
            report("notice", ["message": "segment \(segment.index): not registered in the asset library: \(error)"])
        }
    }

    /// Segments in `folder` whose job no journal there records (a recording that died between finishing
    /// a segment and queueing it), in name order: (path, capture id, index).
    static func notEnqueued(in folder: String) -> [(path: String, captureID: String, index: Int)] {
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

    private func append(_ entry: Entry) {
        guard var line = try? JSONEncoder().encode(entry) else { return }
        line.append(UInt8(ascii: "\n"))
        if !FileManager.default.fileExists(atPath: journalPath) { FileManager.default.createFile(atPath: journalPath, contents: nil) }
        guard let handle = FileHandle(forWritingAtPath: journalPath) else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: line)
        try? handle.synchronize()
    }
}
