import CodeScan
import FarmModel
import Foundation
import MediaCore
import MediaEdit
import MediaImage
import MediaInspect
import MediaTime
import QualityModel
import S3Client
#if canImport(Glibc)
import Glibc
#endif

/// Runs one validated manifest with the media modules: inspect the sources, build the composition,
/// export, and write the report. Where the farm meets the media code. Never throws: a failure is a
/// `JobResult` with the error in words.
public struct JobRunner: Sendable {
    public let manifest: JobManifest
    public var limits: SafetyLimits = .default
    public var pool: BlockingWorkPool = .shared
    /// When set (a worker started by a coordinator), finished outputs are left under their staged names
    /// (`StagedOutput`) for the coordinator to publish under this lease token. When nil (`mediafarm run`),
    /// each output is renamed into place as it is finished, after the same checks as a publication
    /// (`publicationCheck`): nothing is left under a staged name for anyone to clean.
    public var stagingToken: String?
    /// Under a coordinator: uploads an earlier attempt began for outputs bound for objects (address ->
    /// upload id), gone on with instead of begun again.
    public var resumeUploads: [String: String] = [:]
    /// What the job's quality checks found, kept for its result whether it succeeds or not.
    let checks = JobChecks()

    /// Without a coordinator, the name under which outputs bound for objects are staged before this
    /// runner uploads them.
    let runToken = "run-" + UUID().uuidString.lowercased()

    public init(manifest: JobManifest, stagingToken: String? = nil) {
        self.manifest = manifest
        self.stagingToken = stagingToken
    }

    /// What makes the job's pictures, through this runner's staging.
    var pictureMaker: JobPictures { JobPictures(runner: self) }

    /// What sends the job's outputs bound for objects.
    var objects: JobObjects { JobObjects(runner: self) }

    /// Where a finished file is written: its staged name, or its final path (an object's is staged in
    /// the spool folder either way).
    func writePath(_ finalPath: String) -> String {
        if let stagingToken { return StagedOutput.path(for: finalPath, token: stagingToken) }
        return PathRules.isObject(finalPath) ? ObjectOutput.stagedPath(for: finalPath, token: runToken) : finalPath
    }

    /// Without a coordinator, the last check before an output is renamed into place: it is not an
    /// input (by identity) and exists only if the manifest allows overwriting.
    var publicationCheck: (@Sendable (String) throws -> Void)? {
        guard stagingToken == nil else { return nil }
        let manifest = self.manifest
        return { final in try StagedOutput.checkBeforePublishing(final, of: manifest, allowExisting: manifest.overwrite) }
    }

    public func run(events: @escaping @Sendable (JobEvent) -> Void = { _ in }) async -> JobResult {
        let started = Date()
        do {
            if StagedOutput.writesObjects(manifest) {
                try ObjectOutput.ensureSpool()
                // Before the work: an output's bucket that is not there fails the job now, not after the encode.
                try await ObjectOutput.checkBuckets(StagedOutput.finalPaths(of: manifest) + StagedOutput.numberedPatterns(of: manifest))
            }
            var result = try await execute(events: events, started: started)
            if let report = checks.report { JobChecks.tell(report, in: &result) }
            // A chunked export's first run only plans its chunks: it wrote nothing to upload.
            let wrote = result.succeeded && result.split == nil
            try await objects.publish(wrote, numbered: result.numbered, events: events)
            let uploads = try await objects.uploadParts(wrote, numbered: result.numbered, events: events)
            if !uploads.isEmpty { result.uploads = uploads }
            return result
        } catch is CancellationError {
            // Cleaning up after the job ended: what went wrong with the job is what is reported.
            try? await objects.publish(false, numbered: nil)
            _ = try? await objects.uploadParts(false, numbered: nil, events: events)  // as above
            return JobResult(name: manifest.name, succeeded: false, error: "cancelled", seconds: Date().timeIntervalSince(started))
        } catch {
            // As above: the job's error is the one reported.
            try? await objects.publish(false, numbered: nil)
            _ = try? await objects.uploadParts(false, numbered: nil, events: events)  // as above
            let retryable = Self.isRetryable(error)
            var message = Self.describe(error)
            if let verdict = Self.storageVerdict(error, retryable: retryable) { message += verdict }
            var result = JobResult(name: manifest.name, succeeded: false, error: message, seconds: Date().timeIntervalSince(started))
            if retryable { result.retryable = true }
            result.checks = checks.report
            return result
        }
    }

    /// Whether another attempt may not meet `error`: object storage that did not answer, for an input or
    /// an output.
    static func isRetryable(_ error: any Error) -> Bool {
        if let e = error as? JobError { return e.retryable }
        if let e = error as? MediaFileError, case .objectStorage(let s3) = e.reason { return s3.mayPass }
        return false
    }

    /// What an object-storage failure means, said after its error: a passing one (unreachable, a 5xx,
    /// throttling, a broken connection) may not be met again (a queued job is tried again after a backoff);
    /// another (no such object, access denied) would be (it is not).
    static func storageVerdict(_ error: any Error, retryable: Bool) -> String? {
        guard let e = error as? MediaFileError, case .objectStorage = e.reason else { return nil }
        return retryable ? " (a passing failure of the object store: another attempt may succeed)"
            : " (the object store's answer will not change: another attempt would fail too)"
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? MediaFileError { return e.description }
        if let e = error as? ExportError { return e.description }
        if let e = error as? CompositionError { return e.description }
        if let e = error as? JobError { return e.description }
        if let e = error as? ChecksFailed { return e.description }
        return String(describing: error)
    }

    /// Every distinct source, opened once; inspected (side by side, one per core) unless pictures alone need
    /// no report. The first that cannot be read, in the manifest's order, fails the job.
    private func inspectSources() async throws -> (assets: [String: Asset], inspections: [AssetReport]) {
        var options = AssetOptions()
        options.limits = limits
        options.pool = pool
        var assets: [String: Asset] = [:]
        var distinct: [Asset] = []
        for edit in manifest.edits where assets[edit.source] == nil {
            let asset = Asset(path: edit.source, options: options)
            assets[edit.source] = asset
            distinct.append(asset)
        }
        // Pictures alone, with no report to hold an inspection: their reader opens the file itself and
        // says what is wrong with it (an opening less: a poster in a kept worker costs little more
        // than its frame).
        guard !(manifest.makesPictures && manifest.export == nil && manifest.scan == nil && manifest.report == nil) else { return (assets, []) }
        // An export reads every packet anyway and fails clearly on damaged data: it skips the
        // decode check (isPlayable, isDecodable), which costs an extra opening and decoding.
        // So do pictures: they decode what they show, and say which frame could not be.
        let decodes = manifest.export != nil || manifest.stream != nil || manifest.makesPictures
        let keys = decodes ? AssetKey.standard.subtracting([.isPlayable]) : AssetKey.standard
        let trackKeys = decodes ? Set(TrackKey.allCases).subtracting([.isDecodable]) : Set(TrackKey.allCases)
        // Many sources (a day's recording in 1,440 segments) are inspected side by side, one per core;
        // the first to fail, in the manifest's order, fails the job.
        let width = max(1, min(distinct.count, ProcessInfo.processInfo.activeProcessorCount))
        let inspections = await concurrentMap(distinct, limit: width) { asset in
            await AssetReport.inspect(asset, keys: keys, trackKeys: trackKeys)
        }
        if let failed = inspections.first(where: { $0.error != nil }) {
            if let failure = failed.failure { throw failure }  // its verdict kept (`isRetryable`)
            throw JobError(failed.error ?? "\(failed.path): cannot be read")
        }
        return (assets, inspections)
    }

    /// The composition: edits end to end, then the scaled ranges (latest first, so that each range is in
    /// the composition time the manifest means: after edits, before any scaling). Pictures alone need
    /// none: they are of the input as it is.
    private func compose(_ assets: [String: Asset]) async throws -> Composition {
        var composition = Composition()
        guard manifest.export != nil || manifest.stream != nil || manifest.scan != nil || !manifest.makesPictures else { return composition }
        for (i, edit) in manifest.edits.enumerated() {
            guard let asset = assets[edit.source] else { throw JobError("\(edit.source): not opened") }
            let length = try await asset.load(.duration)
            guard length.isNumeric, length > .zero else { throw JobError("\(edit.source): the file has no measurable duration") }
            guard edit.start < length else {
                throw JobError("$.edits[\(i)]: starts at \(Self.seconds(edit.start)) s, but \(edit.source) is only \(Self.seconds(length)) s long")
            }
            let duration = edit.duration ?? (length - edit.start)
            if length < edit.start + duration {
                throw JobError("$.edits[\(i)]: \(Self.seconds(edit.start)) s + \(Self.seconds(duration)) s extends past the end of \(edit.source) (\(Self.seconds(length)) s)")
            }
            try composition.insert(TimeRange(start: edit.start, duration: duration), of: edit.source)
        }
        for range in manifest.scale.reversed() {
            do {
                try composition.scale(range.range, toDuration: range.toDuration)
            } catch {
                throw JobError("$.scale: \(error.description)")
            }
        }
        return composition
    }

    /// The engine's settings of the manifest's export.
    private func exportSettings(_ export: JobManifest.ExportSettings, events: @escaping @Sendable (JobEvent) -> Void = { _ in }) -> ExportSettings {
        var settings = ExportSettings(
            mode: ExportSettings.Mode(export.mode),
            outputPath: writePath(export.output), muxer: export.fileType.muxerName, faststart: export.faststart,
            frameDuration: export.frameDuration ?? MediaTime(value: 1, timescale: 30),
            crf: export.video.crf, preset: export.video.preset, threads: export.video.threads,
            audioPolicy: ExportSettings.AudioPolicy(export.audio.policy), cuts: ExportSettings.Cuts(export.cuts),
            audioBitRate: export.audio.bitrate,
            timePitch: AudioTimePitchAlgorithm(manifest.audio.timePitch),
            metadata: [:], limits: limits)
        settings.beforeCommit = publicationCheck
        if JobChecks.ofExport(manifest), let plan = manifest.checks?.plan, export.frames == nil {
            settings.fidelity = plan.fidelity != nil ? FidelityLog() : nil
            (settings.watch, settings.checkWritten) = checks.exportHook(plan: plan, fidelity: settings.fidelity, limits: limits, events: events)
        }
        settings.frameRange = export.frames
        settings.audioTracks = AudioSelection(export.audio.tracks)
        settings.subtitleLanguages = export.subtitleLanguages
        settings.loudness = export.audio.loudness.map { l in
            LoudnessGoal(measureOnly: l.measure, target: l.target ?? l.standard?.target, truePeak: l.truePeak ?? l.standard?.truePeak ?? -1,
                         standard: l.standard?.rawValue)
        }
        return settings
    }

    /// The job's stages: inspect, compose, then split (a long storyboard or export under a coordinator),
    /// pictures, scan and export as the manifest asks.
    private func execute(events: @escaping @Sendable (JobEvent) -> Void, started: Date) async throws -> JobResult {
        events(.progress(JobProgress(fraction: 0, phase: "inspecting")))
        let (assets, inspections) = try await inspectSources()
        var made = JobSoFar(started: started, inspections: inspections)
        made.inspectSeconds = Date().timeIntervalSince(started)
        let composition = try await compose(assets)
        if let board = manifest.storyboard, let every = board.chunkSeconds, board.join.isEmpty, board.part == nil, stagingToken != nil {
            // A storyboard made in parts, under a coordinator: where to cut it, when it is long enough (`mediafarm run` makes it whole).
            let ranges = try await pictureMaker.storyboardParts(of: manifest.edits[0].source, board, every: every)
            if ranges.count > 1 { return split(into: ranges, of: "parts", every: every, started: started, events: events) }
        }
        if let (ranges, every) = try await JobPackage(runner: self).chunkRanges(of: composition), ranges.count > 1 {
            return split(into: ranges, of: "chunks", every: every, started: started, events: events)
        }
        if manifest.export == nil {
            try await checks.checkInput(of: self, events: events)
            try await makeInputPictures(&made, events: events)
        }
        // A constant-frame-rate export decodes every frame anyway: scan them there, decoding once.
        let scanWhileExporting = manifest.scan != nil && manifest.export?.mode == .constantFrameRate
        if let settings = manifest.scan, !scanWhileExporting {
            events(.progress(JobProgress(fraction: 0.02, phase: "scanning")))
            let scanStarted = Date()
            made.scan = try await scanCodes(settings, composition: composition)
            let codes = made.scan?.codes ?? []
            made.scan?.images = try await pictureMaker.codePictures(settings.images, codes: codes, composition: composition)
            made.scanSeconds = Date().timeIntervalSince(scanStarted)
        }
        if let stream = manifest.stream {
            return try await JobPackage(runner: self).run(stream, of: composition, made: made, events: events)
        }
        guard let export = manifest.export else {
            let reportPath = try writeReport(inspections: inspections, composition: manifest.isInspectionOnly || manifest.scan == nil ? nil : composition,
                                             export: nil, scan: made.scan, pictures: made.pictures, timings: made.timings())
            events(.progress(JobProgress(fraction: 1, phase: "done")))
            var result = JobResult(name: manifest.name, succeeded: true, output: made.pictures.flatMap(JobPictures.mainPicture), report: reportPath,
                                   seconds: Date().timeIntervalSince(started))
            result.numbered = JobPictures.numbered(made.pictures, made.scan)
            return result
        }
        return try await run(export, of: composition, made: made, scanning: scanWhileExporting, events: events)
    }

    /// Pictures of the one input, as it is (the validator allows nothing else); with an export, once it is
    /// known not to be only split into chunks.
    private func makeInputPictures(_ made: inout JobSoFar, events: @escaping @Sendable (JobEvent) -> Void) async throws {
        guard manifest.makesPictures else { return }
        let picturesStarted = Date()
        made.pictures = try await pictureMaker.makePictures(of: manifest.edits[0].source, from: 0.02,
                                               to: manifest.export == nil && manifest.stream == nil && manifest.scan == nil ? 0.99 : 0.2, events: events)
        made.pictureSeconds = Date().timeIntervalSince(picturesStarted)
    }

    /// The export: split into chunks, joined from them, or made whole (scanning its decoded frames when
    /// asked), then its poster and the report.
    private func run(_ export: JobManifest.ExportSettings, of composition: Composition, made: JobSoFar, scanning: Bool,
                     events: @escaping @Sendable (JobEvent) -> Void) async throws -> JobResult {
        var made = made
        var session = ExportSession(composition: composition, settings: exportSettings(export, events: events))
        session.pool = pool
        if let every = export.chunkDuration, export.join.isEmpty, stagingToken != nil, export.chunkAbove.map({ composition.duration > $0 }) ?? true {
            // A chunked export's first run under a coordinator: where to cut it, when it is long enough to
            // cut (`mediafarm run` exports it whole).
            let ranges = try await session.chunkRanges(every: every)
            if ranges.count > 1 { return split(into: ranges, of: "chunks", every: every, started: made.started, events: events) }
        }
        try await checks.checkInput(of: self, events: events)
        // Without a coordinator pictures are renamed into place as they are made: after an export that is checked,
        // so that one that fails its checks leaves none.
        let picturesAfter = stagingToken == nil && JobChecks.ofExport(manifest)
        if !picturesAfter { try await makeInputPictures(&made, events: events) }
        if !export.join.isEmpty {
            return try await join(export, session: session, composition: composition, inspections: made.inspections,
                                  inspectSeconds: made.inspectSeconds, pictures: made.pictures, events: events, started: made.started)
        }
        if export.frames != nil {
            if stagingToken == nil { try ChunkFiles.makeFolder(of: export.output) } else { try ChunkFiles.checkFolder(of: export.output) }
        }
        let exportStarted = Date()
        let scanSession = try manifest.scan.flatMap { scanning ? FrameScanSession(configuration: try Self.scanConfiguration($0), workers: 1) : nil }
        var exported = try await session.export(progress: { p in
            events(.progress(JobProgress(fraction: 0.02 + 0.97 * p.fraction, phase: p.phase, framesPerSecond: p.framesPerSecond, eta: p.eta)))
        }, observingDecodedFrames: scanSession.map { $0.observer(of: composition) })
        exported.output = export.output
        if picturesAfter { try await makeInputPictures(&made, events: events) }
        if let scanSession, let settings = manifest.scan {
            made.scan = ScanSummary(decodedBy: "export", symbologies: settings.symbologies, framesScanned: scanSession.framesScanned,
                                    codes: try scanSession.finish())
            let codes = made.scan?.codes ?? []
            made.scan?.images = try await pictureMaker.codePictures(settings.images, codes: codes, composition: composition)
        }
        if let settings = export.poster {
            events(.progress(JobProgress(fraction: 0.99, phase: "poster")))
            let picturesStarted = Date()
            made.pictures = made.pictures ?? JobPictures.PicturesMade()
            made.pictures?.exportPoster = try await pictureMaker.poster(of: writePath(export.output), settings, at: "$.export.poster")
            made.pictureSeconds += Date().timeIntervalSince(picturesStarted)
        }
        let reportPath = try writeReport(inspections: made.inspections, composition: composition, export: exported, scan: made.scan,
                                         pictures: made.pictures, timings: made.timings(["export": Date().timeIntervalSince(exportStarted)]))
        events(.progress(JobProgress(fraction: 1, phase: "done")))
        var result = JobResult(name: manifest.name, succeeded: true, output: export.output, report: reportPath,
                               duration: exported.duration.seconds, seconds: Date().timeIntervalSince(made.started))
        result.numbered = JobPictures.numbered(made.pictures, made.scan)
        let tracks = [exported.audio] + (exported.additionalAudio ?? [])
        for audio in tracks { result.tell(audio, naming: tracks.count > 1) }
        return result
    }

    static func seconds(_ t: MediaTime) -> String { MediaTime.formatSeconds(t.seconds) }

    /// Writes the JSON report (atomically) when the manifest asks for one; returns its path.
    func writeReport(inspections: [AssetReport], composition: Composition?, export: ExportReport?, stream: StreamReport? = nil, scan: ScanSummary? = nil,
                     pictures: JobPictures.PicturesMade? = nil, chunks: [JobManifest.JoinedChunk]? = nil, timings: [String: Double]) throws -> String? {
        guard let path = manifest.report else { return nil }
        let report = JobReport(name: manifest.name, inspection: inspections,
                               composition: composition.map(JobReport.CompositionReport.init), scan: scan, export: export, stream: stream,
                               pictures: pictures, chunks: chunks?.map(JobReport.Chunk.init), checks: checks.report, timings: timings)
        let data = try JSONEncoder.mediafarm().encode(report)
        let output = try AtomicOutput(finalPath: writePath(path))
        output.beforeCommit = publicationCheck
        try output.write(contents: data)
        try output.commit()
        return path
    }
}

extension FrameScanSession {
    /// What the export's decoder hands the scanner: each frame shown in the composition, at its time there.
    fileprivate func observer(of composition: Composition) -> @Sendable () -> DecodedFrameObserver {
        { @Sendable in
            let mapping = composition.timeMapping
            return { segment, sourceTime, frame in
                guard composition.segments[segment].sourceRange.contains(sourceTime),
                      let t = mapping.targetTime(segment: segment, source: sourceTime) else { return }
                try self.submit(time: t, frame: frame)
            }
        }
    }
}

/// What a job has made so far besides its export, and how long each part took.
struct JobSoFar {
    let started: Date
    let inspections: [AssetReport]
    var inspectSeconds = 0.0
    var pictures: JobPictures.PicturesMade?
    var pictureSeconds = 0.0
    var scan: ScanSummary?
    var scanSeconds = 0.0

    /// The report's timings: `more` (the export's) with the parts', and the total.
    func timings(_ more: [String: Double] = [:]) -> [String: Double] {
        var timings = ["inspect": inspectSeconds, "scan": scanSeconds, "total": Date().timeIntervalSince(started)].merging(more) { a, _ in a }
        if pictures != nil { timings["pictures"] = pictureSeconds }
        return timings
    }
}

/// What a job's scan found, in composition time.
struct ScanSummary: Encodable {
    /// "export": frames the constant-frame-rate export decoded were scanned (decoded once);
    /// "scan": a pass of its own decoded them.
    var decodedBy: String
    var symbologies: [String]
    var framesScanned: Int
    var codes: [ScannedCode]
    /// `scan.images`: the picture of the frame where each code was first seen, `images[i]` of `codes[i]`.
    var images: [ImageRecord]?
}

/// A job failure that is not about one media file.
public struct JobError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// Another attempt may not meet it (a server that did not answer): the job is retried, not failed.
    public var retryable = false
    public init(_ description: String, retryable: Bool = false) {
        self.description = description
        self.retryable = retryable
    }

    /// `error` at `where` (a manifest's JSON path, and what was being made): a file's error that an object
    /// store's passing failure caused is retryable, and each object-storage failure says which it was.
    static func at(_ place: String, _ error: any Error) -> JobError {
        var cause: any Error = error
        if case .file(let file)? = error as? ImageGenerationError { cause = file }
        let retryable = JobRunner.isRetryable(cause)
        return JobError("\(place): \(cause)" + (JobRunner.storageVerdict(cause, retryable: retryable) ?? ""), retryable: retryable)
    }
}

/// The report a manifest's `report` path receives.
struct JobReport: Encodable {
    struct CompositionReport: Encodable {
        struct Piece: Encodable {
            var segment: Int
            var source: String
            var sourceRange: TimeRange
            var targetRange: TimeRange
            var rate: Double
        }
        var duration: MediaTime
        var pieces: [Piece]

        init(_ c: Composition) {
            duration = c.duration
            pieces = c.timeMapping.pieces.map {
                Piece(segment: $0.segment, source: c.segments[$0.segment].source, sourceRange: $0.source,
                      targetRange: $0.target, rate: $0.rate?.doubleValue ?? 1)
            }
        }
    }

    var name: String
    var inspection: [AssetReport]
    var composition: CompositionReport?
    var scan: ScanSummary?
    var export: ExportReport?
    /// The streaming package: every track's segments with their measured durations and sizes.
    var stream: StreamReport?
    /// The pictures of the input: each with the frame it is of.
    var pictures: JobPictures.PicturesMade?
    /// A chunked export's chunks: their frames, jobs and attempts.
    var chunks: [Chunk]?
    /// What the quality checks found.
    var checks: CheckReport?
    var timings: [String: Double]

    /// A chunk as the report tells it: its file is named as one that was (`joinedFrom`): it was joined into
    /// the output and removed with the folder of the chunks once the output was published.
    struct Chunk: Encodable {
        var frames: Range<Int>
        var job: Int64?
        var attempts: Int?
        var joinedFrom: String

        init(_ chunk: JobManifest.JoinedChunk) {
            frames = chunk.frames
            job = chunk.job
            attempts = chunk.attempts
            joinedFrom = chunk.output
        }
    }
}
