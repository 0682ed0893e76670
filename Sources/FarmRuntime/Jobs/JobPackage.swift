import FarmModel
import Foundation
import MediaEdit
import MediaTime

/// A job's streaming package, made through its runner's staging.
struct JobPackage {
    let runner: JobRunner
    var manifest: JobManifest { runner.manifest }
    var stagingToken: String? { runner.stagingToken }

    /// The package: its media and presentations written into a staged folder, then published whole (by the
    /// coordinator under the lease, or here without one, after the same checks).
    func package(_ stream: JobManifest.StreamSettings, of composition: Composition, events: @escaping @Sendable (JobEvent) -> Void)
        async throws -> (report: StreamReport, seconds: Double) {
        let started = Date()
        let token = stagingToken ?? runner.runToken
        let staged = StagedOutput.path(for: stream.output, token: token)
        // Refused before any work: what is in the way stays in the way after an hour of encoding. Under a
        // coordinator a package there may be replaced by a retried attempt: only what is never replaced is refused.
        let inputs = manifest.edits.map(\.source)
        try PackageFolder.checkBeforePublishing(stream.output, allowExisting: manifest.overwrite || stagingToken != nil, inputs: inputs)
        PackageWriting.sweepAbandoned(beside: stream.output)
        let writing = try PackageFolder.create(staged)
        defer { writing.end() }
        do {
            var settings = StreamSettings(folder: staged, rungs: stream.video.rungs.map(MediaEdit.StreamRung.init), segmentDuration: stream.segmentDuration,
                                          frameDuration: stream.frameDuration, larger: LargerRungs(stream.video.larger), audioBitRate: stream.audio.bitrate,
                                          preset: stream.video.preset, threads: stream.video.threads, timePitch: AudioTimePitchAlgorithm(manifest.audio.timePitch),
                                          audioLanguage: stream.audio.language, limits: runner.limits)
            settings.audioLanguages = stream.audio.languages
            settings.audioChannels = stream.audio.channels
            settings.subtitleLanguages = stream.subtitleLanguages
            var packager = StreamPackager(composition: composition, settings: settings)
            packager.pool = runner.pool
            let report = try await packager.package(progress: { p in
                writing.touch()
                events(.progress(JobProgress(fraction: 0.02 + 0.96 * p.fraction, phase: p.phase, framesPerSecond: p.framesPerSecond, eta: p.eta)))
            })
            events(.progress(JobProgress(fraction: 0.98, phase: "presentations")))
            try PackageFolder.writePresentations(report, formats: stream.formats, token: token, into: staged)
            writing.end()  // whole: its marker says so, and the writer's file is not part of it
            if stagingToken == nil {
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

    /// The result of a job that made a package: rungs left out as larger than the source are a warning.
    func result(_ package: StreamReport, of stream: JobManifest.StreamSettings, report: String?, numbered: NumberedOutputs?,
                  started: Date) -> JobResult {
        var result = JobResult(name: manifest.name, succeeded: true, output: stream.output, report: report,
                               duration: package.duration.seconds, seconds: Date().timeIntervalSince(started))
        result.numbered = numbered
        if let skipped = package.skippedRungs, !skipped.isEmpty {
            result.warnings = ["$.stream.video.rungs: left out as larger than the source's picture: " + skipped.map { "rung \($0)" }.joined(separator: ", ")]
        }
        return result
    }
}
