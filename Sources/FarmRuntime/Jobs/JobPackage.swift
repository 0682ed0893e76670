import FarmModel
import Foundation
import MediaEdit
import MediaTime

/// A job's streaming package, made through its runner's staging.
struct JobPackage {
    let runner: JobRunner
    var manifest: JobManifest { runner.manifest }
    var stagingToken: String? { runner.stagingToken }

    /// The job's package, then its report and its result.
    func run(_ stream: JobManifest.StreamSettings, of composition: Composition, made: JobSoFar, events: @escaping @Sendable (JobEvent) -> Void)
        async throws -> JobResult {
        let (package, seconds) = try await self.package(stream, of: composition, events: events)
        let (joined, chunks) = (!stream.chunking.join.isEmpty, stream.chunking.join)
        let reportPath = try runner.writeReport(inspections: made.inspections, composition: composition, export: nil, stream: package, scan: made.scan,
                                                pictures: made.pictures, chunks: joined ? chunks : nil, timings: made.timings([joined ? "join" : "stream": seconds]))
        events(.progress(JobProgress(fraction: 1, phase: "done")))
        return result(package, of: stream, report: reportPath, numbered: JobPictures.numbered(made.pictures, made.scan), started: made.started)
    }

    /// The package: its media and presentations written into a staged folder, then published whole (by the
    /// coordinator under the lease, or here without one, after the same checks). A chunk of a package made
    /// in chunks (`chunking.frames`) is a folder too: its rungs' segments and what it reported
    /// (`PackageFolder.chunkReport`), no presentations; the join (`chunking.join`) links the chunks' segments.
    func package(_ stream: JobManifest.StreamSettings, of composition: Composition, events: @escaping @Sendable (JobEvent) -> Void)
        async throws -> (report: StreamReport, seconds: Double) {
        let started = Date()
        let token = stagingToken ?? runner.runToken
        let staged = StagedOutput.path(for: stream.output, token: token)
        let isChunk = stream.chunking.frames != nil
        if isChunk {
            // A chunk is written only into the folder its split made (`ChunkFiles.checkFolder`).
            if stagingToken == nil { try ChunkFiles.makeFolder(of: stream.output) } else { try ChunkFiles.checkFolder(of: stream.output) }
        }
        // Refused before any work: what is in the way stays in the way after an hour of encoding. Under a
        // coordinator a package there may be replaced by a retried attempt: only what is never replaced is refused.
        // The key file is read, never written: a package is never published over it.
        let inputs = manifest.readPaths
        let toObjects = PathRules.isObject(stream.output)
        if toObjects, stagingToken == nil, !stream.chunking.join.isEmpty {
            throw JobError("$.stream.join: a package at a prefix joins its chunks by copies its coordinator makes as it publishes: submit the job to a "
                           + "queue (chunks are made under a coordinator)")
        }
        if toObjects {
            _ = try await PackageObjects.checkBeforePublishing(stream.output, allowExisting: manifest.overwrite || stagingToken != nil)
            PackageWriting.sweepAbandoned(beside: staged)  // in the spool: what killed writers left there
        } else {
            try PackageFolder.checkBeforePublishing(stream.output, allowExisting: manifest.overwrite || stagingToken != nil, inputs: inputs)
            PackageWriting.sweepAbandoned(beside: stream.output)
        }
        // A package at a prefix made in chunks joins chunks at prefixes: their segments become its objects by copies on the server.
        var chunks: [StreamChunk] = []
        for joined in stream.chunking.join {
            chunks.append(toObjects ? try await PackageChunkObjects.chunk(joined, of: stream.output) : try PackageFolder.chunk(joined, of: stream.output))
        }
        let writing = try PackageFolder.create(staged)
        defer { writing.end() }
        do {
            var packager = StreamPackager(composition: composition, settings: try settings(stream, folder: staged))
            packager.pool = runner.pool
            let progress: @Sendable (ExportProgress) -> Void = { p in
                writing.touch()
                events(.progress(JobProgress(fraction: 0.02 + 0.96 * p.fraction, phase: p.phase, framesPerSecond: p.framesPerSecond, eta: p.eta)))
            }
            var objectChunks: PackageChunkObjects?
            if toObjects, !chunks.isEmpty {
                let store = try PackageChunkObjects(folder: staged)
                try await store.prefetch(chunks)
                objectChunks = store
            }
            let report = chunks.isEmpty ? try await packager.package(progress: progress)
                : try await packager.join(chunks, files: objectChunks ?? LocalChunkFiles(), progress: progress)
            try objectChunks?.writeCopies()
            events(.progress(JobProgress(fraction: 0.98, phase: "presentations")))
            if isChunk {
                try PackageFolder.writeChunk(report, token: token, into: staged)
            } else {
                try PackageFolder.writePresentations(report, of: stream, token: token, into: staged)
            }
            writing.end()  // whole: its marker says so, and the writer's file is not part of it
            // Bound for objects: uploaded with the job's other objects (`JobObjects`).
            if stagingToken == nil && !toObjects {
                try PackageFolder.publish(staged, to: stream.output, token: token, allowExisting: manifest.overwrite, inputs: inputs)
            }
            return (report, Date().timeIntervalSince(started))
        } catch let error as ExportError {
            PackageFolder.remove(staged)
            throw JobError("$.stream: \(error.description)")
        } catch {
            PackageFolder.remove(staged)
            throw error
        }
    }

    /// Where to cut a package made in chunks, under a coordinator, when it is long enough (whole segments of
    /// about `chunkSeconds`; `StreamPackager.chunkRanges`, after everything that would refuse it was checked);
    /// nil for a package made whole, a chunk or a join.
    func chunkRanges(of composition: Composition) async throws -> (ranges: [Range<Int>], every: MediaTime)? {
        guard let stream = manifest.stream, let every = stream.chunking.duration, stream.chunking.isWhole, stagingToken != nil,
              stream.chunking.above.map({ composition.duration > $0 }) ?? true else { return nil }
        var packager = StreamPackager(composition: composition, settings: try settings(stream, folder: stream.output))
        packager.pool = runner.pool
        do { return (try await packager.chunkRanges(every: every), every) } catch let error as ExportError { throw JobError("$.stream: \(error.description)") }
    }

    /// The engine's settings of the manifest's package, written into `folder`; its key read from its file.
    private func settings(_ stream: JobManifest.StreamSettings, folder: String) throws -> StreamSettings {
        var settings = StreamSettings(folder: folder, rungs: stream.video.rungs.map(MediaEdit.StreamRung.init), segmentDuration: stream.segmentDuration,
                                      frameDuration: stream.frameDuration, larger: LargerRungs(stream.video.larger), audioBitRate: stream.audio.bitrate,
                                      preset: stream.video.preset, threads: stream.video.threads, timePitch: AudioTimePitchAlgorithm(manifest.audio.timePitch),
                                      audioLanguage: stream.audio.language, limits: runner.limits)
        settings.audioTracks = AudioSelection(stream.audio.tracks)
        settings.audioChannels = stream.audio.channels
        settings.subtitleLanguages = stream.subtitleLanguages
        settings.frames = stream.chunking.frames
        settings.passthrough = stream.mode == .passthrough
        settings.container = stream.container == .ts ? .transportStream : .cmaf
        settings.singleFile = stream.singleFile
        if let encryption = stream.encryption { settings.encryption = try Self.encryption(encryption) }
        return settings
    }

    /// The key of `encryption`, read from its file: exactly 16 bytes, a regular file.
    static func encryption(_ encryption: JobManifest.StreamEncryption) throws -> SegmentEncryption {
        let path = encryption.keyFile
        // One descriptor: opened without waiting (a FIFO put there), its type and size read off it, then read.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw JobError("$.stream.encryption.keyFile: \(path): cannot read it: \(String(cString: strerror(errno))) (make one with: openssl rand 16 > \(path))")
        }
        defer { close(fd) }
        var info = stat()
        var key = [UInt8](repeating: 0, count: 17)
        let regular = fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        let got = regular ? key.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 17, 0) } : -1
        guard got == 16 else {
            throw JobError("$.stream.encryption.keyFile: \(path): an AES-128 key file holds exactly 16 bytes (this one is "
                           + (regular ? "\(info.st_size) bytes" : "not a regular file") + "; make one with: openssl rand 16 > KEYFILE)")
        }
        do { return try SegmentEncryption(key: Array(key.prefix(16)), keyURI: encryption.keyURI) } catch {
            throw JobError("$.stream.encryption: \(error.description)")
        }
    }

    /// The result of a job that made a package: rungs left out as larger than the source are a warning.
    func result(_ package: StreamReport, of stream: JobManifest.StreamSettings, report: String?, numbered: NumberedOutputs?,
                  started: Date) -> JobResult {
        var result = JobResult(name: manifest.name, succeeded: true, output: stream.output, report: report,
                               duration: package.duration.seconds, seconds: Date().timeIntervalSince(started))
        result.numbered = numbered
        if stream.chunking.frames == nil { result.package = Self.summary(package, of: stream) }
        if let skipped = package.skippedRungs, !skipped.isEmpty {
            result.warnings = ["$.stream.video.rungs: left out as larger than the source's picture: " + skipped.map { "rung \($0)" }.joined(separator: ", ")]
        }
        return result
    }

    /// The package as its players see it (a chunk's folder is no package: it has none).
    static func summary(_ package: StreamReport, of stream: JobManifest.StreamSettings) -> PackageSummary {
        PackageSummary(duration: package.duration, entryPoints: stream.entryPoints, container: stream.container,
                       renditions: package.tracks.map { track in
            let kind: PackageSummary.Rendition.Kind = switch track.kind { case .video: .video; case .audio: .audio; case .text: .text }
            var rendition = PackageSummary.Rendition(kind: kind, folder: track.folder, codecs: track.codecs, peakBitRate: track.peakBitRate,
                                                     averageBitRate: track.averageBitRate, bytes: track.segments.reduce(Int64(0)) { $0 + Int64($1.bytes) })
            (rendition.width, rendition.height, rendition.frameRate) = (track.width, track.height, track.frameRate?.doubleValue)
            (rendition.channels, rendition.language) = (track.channels, track.language)
            return rendition
        })
    }
}
