import Foundation
import MediaCore
import MediaTime

/// Joins the chunks of a chunked constant-frame-rate export into its one output. Each chunk was written
/// with `ExportSettings.frameRange` and the whole export's other settings; together, in order, they hold
/// every frame of the composition. Their video packets are copied (not encoded again) and retimed to their
/// frames' places; the audio is rendered once over the whole composition, as the unchunked export renders
/// it, so there is no join in it at all.
struct ChunkJoiner {
    let composition: Composition
    let settings: ExportSettings
    let chunks: [ExportChunk]
    let interrupter: Interrupter
    let progress: @Sendable (ExportProgress) -> Void

    func run() throws -> ExportReport {
        let started = Date()
        let sources = try ExportSource.open(composition.segments.map(\.source), limits: settings.limits, interrupter: interrupter)
        let output = try AtomicOutput(finalPath: settings.outputPath)
        output.take(settings, interrupter: interrupter)
        return try output.write { temporary in try write(to: temporary, sources: sources, started: started) }
    }

    private func write(to temporary: String, sources: [ExportSource], started: Date) throws -> ExportReport {
        let mapping = composition.timeMapping
        let fd = settings.frameDuration.reduced
        let frameTB = Rational(Int32(clamping: fd.value), fd.timescale)
        let frameCount = Int(mapping.duration.count(in: frameTB, rounding: .up) ?? 0)
        guard frameCount > 0 else { throw ExportError("the composition is empty: nothing to export") }
        // The chunks must hold every frame once, in order.
        var next = 0
        for chunk in chunks {
            guard chunk.frames.lowerBound == next, !chunk.frames.isEmpty else {
                throw ExportError("\(chunk.path): holds frames \(chunk.frames.lowerBound)..<\(chunk.frames.upperBound), but frame \(next) comes next")
            }
            next = chunk.frames.upperBound
        }
        guard next == frameCount else { throw ExportError("the chunks end at frame \(next); the composition has \(frameCount) frames") }
        let videoEnd = fd.multiplied(by: Int32(clamping: frameCount))

        let inputs = try chunks.map { chunk throws -> (InputFile, StreamInfo) in
            let input = try InputFile(path: chunk.path, limits: settings.limits, interrupter: interrupter)
            guard let video = input.streams.first(where: { $0.mediaType == .video }) else {
                throw ExportError("\(chunk.path): a chunk with no video")
            }
            return (input, video)
        }
        let (first, firstVideo) = inputs[0]
        for (i, (_, video)) in inputs.enumerated() where video.codecName != firstVideo.codecName || video.width != firstVideo.width
            || video.height != firstVideo.height || video.profile != firstVideo.profile || video.level != firstVideo.level {
            throw ExportError("\(chunks[i].path): encoded otherwise than the first chunk (\(video.codecName) \(video.width)x\(video.height), "
                              + "\(firstVideo.codecName) \(firstVideo.width)x\(firstVideo.height) there): the chunks cannot be joined")
        }
        let file = try OutputFile(path: temporary, format: settings.muxer)
        let videoOut = try file.addStream(copying: firstVideo.index, of: first, timeBase: frameTB)
        let keptAudio = settings.audioPolicy == .drop ? [] : try settings.audioTracks.choose(sources)
        let renderedAudio = try RenderedAudioWriter.tracks(keptAudio, mapping: mapping, sources: sources, totalDuration: videoEnd,
                                                           file: file, settings: settings, interrupter: interrupter, progress: progress)
        let subtitles = try TextTrackWriter.tracks(settings.subtitleLanguages, mapping: mapping, sources: sources, totalDuration: videoEnd,
                                                   file: file, settings: settings, interrupter: interrupter)
        let chapters = try file.writeHeader(sources: sources, mapping: mapping, settings: settings)
        let tb = file.timeBase(of: videoOut)

        var packet = Packet()
        var written = 0
        for (chunk, (input, video)) in zip(chunks, inputs) {
            input.discardAll(except: [video.index])
            var count = 0
            let start = fd.multiplied(by: Int32(clamping: chunk.frames.lowerBound))
            while try input.read(into: &packet) == .packet {
                guard packet.streamIndex == video.index else { continue }
                guard let pts = packet.pts else { throw ExportError("\(chunk.path): a video packet without a presentation time") }
                let shown = MediaTime(count: pts, timeBase: video.timeBase) - video.startTime
                let decoded = MediaTime(count: packet.dts ?? pts, timeBase: video.timeBase) - video.startTime
                let at = start + shown, decodeAt = start + decoded
                for track in renderedAudio { try track.write(until: decodeAt) }
                for track in subtitles { try track.write(until: decodeAt) }
                packet.retime(pts: at.count(in: tb), dts: decodeAt.count(in: tb), duration: fd.count(in: tb) ?? 0, streamIndex: videoOut)
                try file.write(&packet)
                count += 1
                written += 1
                if written % 60 == 0 {
                    progress(ExportProgress(fraction: Double(written) / Double(frameCount), phase: "joining", framesPerSecond: nil, eta: nil))
                }
                interrupter.progressed()
            }
            guard count == chunk.frames.count else {
                throw ExportError("\(chunk.path): holds \(count) frames, not the \(chunk.frames.count) of frames \(chunk.frames.lowerBound)..<\(chunk.frames.upperBound)")
            }
        }
        for track in renderedAudio { try track.write(until: nil) }
        for track in subtitles { try track.write(until: nil) }
        progress(ExportProgress(fraction: 1, phase: "finishing", framesPerSecond: nil, eta: 0))
        try file.finish()
        let audio = RenderedAudioWriter.reports(renderedAudio, sources: sources)
        return ExportReport(
            mode: .constantFrameRate, output: settings.outputPath, container: settings.muxer, duration: videoEnd,
            video: .init(codec: firstVideo.codecName, frames: frameCount, framesDecoded: 0, frameDuration: fd,
                         width: firstVideo.width, height: firstVideo.height,
                         cropped: sources.first { $0.video != nil }?.video.flatMap { ConstantFrameRateExporter.croppedNote(width: $0.width, height: $0.height) }),
            audio: audio.first, additionalAudio: audio.more, snappedCuts: [], subtitles: subtitles.isEmpty ? nil : subtitles.map(\.report),
            chapters: chapters, seconds: Date().timeIntervalSince(started))
    }
}

/// One chunk of a chunked constant-frame-rate export: its file and the output frames it holds.
public struct ExportChunk: Sendable, Hashable {
    public var path: String
    public var frames: Range<Int>

    public init(path: String, frames: Range<Int>) {
        self.path = path
        self.frames = frames
    }
}
