import Foundation
import MediaCore
import MediaTime

/// Exports a composition to a movie file, as AVAssetExportSession: passthrough (packets copied and
/// retimed) or constant frame rate (decoded and re-encoded). The output appears at its path only
/// when complete (written beside it under a temporary name, fsynced, renamed). Runs on the blocking
/// pool; cancelling the calling task stops it and leaves no output. `progress` is called from the
/// pool thread.
public struct ExportSession: Sendable {
    public let composition: Composition
    public let settings: ExportSettings
    public var pool: BlockingWorkPool = .shared

    public init(composition: Composition, settings: ExportSettings) {
        self.composition = composition
        self.settings = settings
    }

    public func export(progress: @escaping @Sendable (ExportProgress) -> Void = { _ in }) async throws -> ExportReport {
        try await export(progress: progress, observingDecodedFrames: nil)
    }

    /// Joins the chunks of a chunked constant-frame-rate export (each exported with `frameRange` and these
    /// settings otherwise; in order, every frame once) into `settings.outputPath`: video packets copied and
    /// retimed, the audio rendered once over the whole composition (`ChunkJoiner`).
    public func join(_ chunks: [ExportChunk], progress: @escaping @Sendable (ExportProgress) -> Void = { _ in }) async throws -> ExportReport {
        let composition = self.composition, settings = self.settings
        guard settings.mode == .constantFrameRate, settings.frameRange == nil else {
            throw ExportError("only the chunks of a whole constant-frame-rate export are joined")
        }
        guard !chunks.isEmpty else { throw ExportError("no chunks to join") }
        return try await pool.run(stallLimit: settings.limits.stallTimeout) { interrupter in
            try ChunkJoiner(composition: composition, settings: settings, chunks: chunks, interrupter: interrupter, progress: progress).run()
        }
    }

    /// As `export`, also handing every decoded source frame of a constant-frame-rate export to
    /// `observer` (to scan it without decoding it again). `makeObserver` runs on the export's thread.
    public func export(progress: @escaping @Sendable (ExportProgress) -> Void,
                       observingDecodedFrames makeObserver: (@Sendable () -> DecodedFrameObserver)?) async throws -> ExportReport {
        let composition = self.composition, settings = self.settings
        return try await pool.run(stallLimit: settings.limits.stallTimeout) { interrupter in
            switch settings.mode {
            case .passthrough:
                return try PassthroughExporter(composition: composition, settings: settings, interrupter: interrupter, progress: progress).run()
            case .constantFrameRate:
                var exporter = ConstantFrameRateExporter(composition: composition, settings: settings, interrupter: interrupter, progress: progress)
                exporter.observer = makeObserver?()
                return try exporter.run()
            }
        }
    }
}
