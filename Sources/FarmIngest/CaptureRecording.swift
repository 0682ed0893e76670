import FarmSubmit
import Foundation
import MediaCapture
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A capture from start to end, as `mediafarm capture` runs it: what earlier recordings into the folder
/// left for the queue (journaled segments and assemblies, then what a dead recording left, salvaged or
/// quarantined), the recording itself (SIGINT and SIGTERM stop it, its last segment finished), each
/// finished segment fed to the queue, the recording's assembly, and what the queue could not take.
/// The command parses options and prints; this decides what happens.
public struct CaptureRecording: Sendable {
    public var configuration: CaptureConfiguration
    /// Feeds finished segments to the queue (`--enqueue`); nil records only.
    public var feeder: CaptureQueue?
    /// Joins the recording's segments when it ends (`--assemble`), with the roots its outputs go under.
    public var assembly: (template: IngestTemplate, outputRoots: [String])?

    public init(configuration: CaptureConfiguration, feeder: CaptureQueue?, assembly: (template: IngestTemplate, outputRoots: [String])?) {
        self.configuration = configuration
        self.feeder = feeder
        self.assembly = assembly
    }

    /// The segments a recording finished, in order (they come from the recording's thread).
    final class RecordedSegments: Sendable {
        private let segments = Mutex<[SegmentReport]>([])
        func append(_ segment: SegmentReport) { segments.withLock { $0.append(segment) } }
        var all: [SegmentReport] { segments.withLock { $0 } }
    }

    /// Records until the session ends. `report` gets the lines besides the session's own events
    /// (`salvaged`, `quarantined`, `notice`, `error`); `events` the session's. The summary, and whether
    /// everything the recording should have queued was (false: the command exits 1). A journal of an
    /// earlier recording that cannot be read stops it before anything is queued or recorded.
    public func run(report: @escaping @Sendable (CaptureFeedEvent) -> Void,
                    events: @escaping @Sendable (CaptureEvent) -> Void) async throws(CaptureQueue.JournalReadError) -> (summary: CaptureSummary, queued: Bool) {
        let folder = configuration.outputDirectory
        let left = feeder == nil ? (segments: [], assemblies: []) : try CaptureQueue.leftOver(in: folder)
        let feeder = self.feeder
        let queueTask = feeder.map { feeder in Task { await feeder.run() } }
        if let feeder {
            // Segments an earlier recording finished but did not get queued, then its assemblies (after their segments).
            for segment in left.segments {
                feeder.segmentFinished(SegmentReport(index: segment.index, path: segment.path, start: 0, wallClock: Date(), duration: 0, bytes: 0,
                                                     packets: 0), captureID: segment.captureID)
            }
            for assembly in left.assemblies { feeder.assemble(assembly) }
        }
        await salvage(folder, report: report)
        let recorded = RecordedSegments()
        let session = CaptureSession(configuration: configuration) { event in
            events(event)
            if case .segment(let segment) = event {
                feeder?.segmentFinished(segment)
                recorded.append(segment)
            }
        }
        let sources = Self.signalSources(for: session, report: report)
        defer { for source in sources { source.cancel() } }
        let summary = await withCheckedContinuation { (done: CheckedContinuation<CaptureSummary, Never>) in
            Thread { done.resume(returning: session.run()) }.start()
        }
        if let assembly, let feeder {
            let segments = recorded.all
            if segments.isEmpty {
                report(.notice("no assembly: the recording has no segment"))
            } else {
                feeder.assemble(CaptureAssembly.make(template: assembly.template, captureID: configuration.captureID, segments: segments,
                                                     outputRoots: assembly.outputRoots))
            }
        }
        feeder?.finishFeeding()
        guard let outcome = await queueTask?.value, let feeder else { return (summary, true) }
        return (summary, Self.queued(outcome, by: feeder, report: report))
    }

    /// What a recording into this folder left when it died: salvaged (and enqueued) or quarantined.
    /// Remuxing what was left reads and writes whole files: on a thread of its own, off the task pool.
    func salvage(_ folder: String, report: @escaping @Sendable (CaptureFeedEvent) -> Void) async {
        let leftovers = await withCheckedContinuation { (done: CheckedContinuation<[Salvage.Result], Never>) in
            DispatchQueue.global().async { done.resume(returning: Salvage.run(folder: folder)) }
        }
        for salvaged in leftovers {
            if let path = salvaged.path {
                report(.salvaged(captureID: salvaged.captureID, index: salvaged.index, path: path, duration: salvaged.duration,
                                 packets: salvaged.packets))
                feeder?.segmentFinished(SegmentReport(index: salvaged.index, path: path, start: 0, wallClock: salvaged.wallClock,
                                                      duration: salvaged.duration, bytes: 0, packets: salvaged.packets),
                                        captureID: salvaged.captureID)
            } else {
                report(.quarantined(captureID: salvaged.captureID, index: salvaged.index, path: salvaged.quarantined ?? "",
                                    message: "segment \(salvaged.index) of \(salvaged.captureID) could not be salvaged: \(salvaged.reason ?? "")"))
            }
        }
    }

    /// SIGINT and SIGTERM stop the session (the segment being written is finished); SIGUSR1 asks for a still
    /// of the next picture. The sources, to cancel when the recording ends.
    static func signalSources(for session: CaptureSession, report: @escaping @Sendable (CaptureFeedEvent) -> Void) -> [any DispatchSourceSignal] {
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { session.stop() }
            source.resume()
            sources.append(source)
        }
        signal(SIGUSR1, SIG_IGN)
        let still = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
        still.setEventHandler {
            if !session.requestStill() { report(.notice("SIGUSR1: this recording takes no stills (give --still-every or --stills-on-request)")) }
        }
        still.resume()
        sources.append(still)
        return sources
    }

    /// Whether the feed queued everything; what it could not, said.
    static func queued(_ outcome: CaptureQueue.Outcome, by feeder: CaptureQueue, report: @Sendable (CaptureFeedEvent) -> Void) -> Bool {
        var queued = true
        func counted(_ n: Int) -> String { n == 1 ? "1 segment was" : "\(n) segments were" }
        if !outcome.waiting.isEmpty {
            report(.notice("\(counted(outcome.waiting.count)) not enqueued (the queue did not answer); "
                              + "they are listed in \(feeder.journalPath), and the next capture into this folder enqueues them"))
            queued = false
        }
        if !outcome.waitingAssemblies.isEmpty {
            report(.notice("the assembly was not enqueued (the queue did not answer); it is in \(feeder.journalPath), "
                              + "and the next capture into this folder enqueues it"))
            queued = false
        }
        if outcome.rejected > 0 {
            report(.notice("\(counted(outcome.rejected)) not enqueued: the template gives an invalid manifest "
                              + "(\(outcome.firstRejection ?? "")); fix the --enqueue template, then `mediafarm submit` them"))
            queued = false
        }
        if let problem = feeder.journalProblem {
            report(.error("\(feeder.journalPath): the journal could not be kept: \(problem)"))
            queued = false
        }
        return queued
    }
}
