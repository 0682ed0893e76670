import Foundation
import MediaCore
import MediaTime

/// Constant-frame-rate export: decode, then emit exactly one frame every frameDuration
/// (k x frameDuration for k = 0..<ceil(D / frameDuration)), each the source frame on screen at the
/// mapped time (sample and hold); H.264 through libx264 and AAC audio through the time-pitch
/// algorithm, padded with silence to end with the last frame.
struct ConstantFrameRateExporter {
    let composition: Composition
    let settings: ExportSettings
    let interrupter: Interrupter
    let progress: @Sendable (ExportProgress) -> Void
    var observer: DecodedFrameObserver? = nil

    func run() throws -> ExportReport {
        let started = Date()
        let sources = try ExportSource.open(composition.segments.map(\.source), limits: settings.limits, interrupter: interrupter)
        guard let firstVideo = sources.first(where: { $0.video != nil })?.video else {
            throw ExportError("\(sources[0].path): a constant-frame-rate export needs video, and no source has any")
        }
        for (i, s) in sources.enumerated() where s.video == nil {
            throw ExportError("\(s.path) (segment \(i + 1)) has no video to fill its part of a constant-frame-rate export")
        }
        let output = try AtomicOutput(finalPath: settings.outputPath)
        output.take(settings, interrupter: interrupter)
        do {
            return try output.write { temporary in
                try write(to: temporary, sources: sources, width: firstVideo.width, height: firstVideo.height, started: started)
            }
        } catch {
            settings.watch?.abandon()
            throw error
        }
    }

    /// The export's checks as it encodes, their failure said as the output's.
    private func watching(_ body: () throws -> Void) throws {
        do { try body() } catch { throw ExportError("\(settings.outputPath): checking the export as it encodes: \(error)") }
    }

    /// What the report says when an odd size lost its last column or row (nil when nothing was cropped).
    static func croppedNote(width: Int, height: Int) -> String? {
        let lost = [width & 1 == 1 ? "column" : nil, height & 1 == 1 ? "row" : nil].compactMap { $0 }
        guard !lost.isEmpty else { return nil }
        return "the source is \(width)x\(height); H.264 4:2:0 needs even sizes, so the last \(lost.joined(separator: " and ")) of pixels were cropped"
    }

    private func write(to temporary: String, sources: [ExportSource], width: Int, height: Int, started: Date) throws -> ExportReport {
        let mapping = composition.timeMapping
        let fd = settings.frameDuration.reduced
        let frameTB = Rational(Int32(clamping: fd.value), fd.timescale)
        let frameCount = Int(mapping.duration.count(in: frameTB, rounding: .up) ?? 0)
        guard frameCount > 0 else { throw ExportError("the composition is empty: nothing to export") }
        // A chunk: some of the frames, video only, timed from its first.
        let frames = settings.frameRange ?? 0..<frameCount
        guard frames.lowerBound >= 0, frames.upperBound <= frameCount, !frames.isEmpty else {
            throw ExportError("frames \(frames.lowerBound)..<\(frames.upperBound): the composition has frames 0..<\(frameCount) only")
        }
        let isChunk = settings.frameRange != nil
        let videoEnd = fd.multiplied(by: Int32(clamping: frames.count))

        let file = try OutputFile(path: temporary, format: settings.muxer)
        // 4:2:0 H.264 needs even sizes: an odd width or height loses its last column or row (reported).
        let encodedWidth = width & ~1, encodedHeight = height & ~1
        let encoder: Encoder
        do {
            encoder = try Encoder.h264(width: encodedWidth, height: encodedHeight, frameDuration: fd, crf: settings.crf, preset: settings.preset,
                                       threads: settings.threads, globalHeader: file.needsGlobalHeader)
        } catch {
            throw ExportError("cannot set up the H.264 encoder: \(error)")
        }
        let videoOut = try file.addStream(for: encoder, displayMatrix: sources[0].displayMatrix, language: sources[0].video?.language)

        let keptAudio = settings.audioPolicy == .drop || isChunk ? [] : try settings.audioTracks.choose(sources)
        let renderedAudio = try RenderedAudioWriter.tracks(keptAudio, mapping: mapping, sources: sources, totalDuration: videoEnd,
                                                           file: file, settings: settings, interrupter: interrupter, progress: progress)
        let subtitles = isChunk ? [] : try TextTrackWriter.tracks(settings.subtitleLanguages, mapping: mapping, sources: sources, totalDuration: videoEnd,
                                                                  file: file, settings: settings, interrupter: interrupter)
        // A chunk's pictures are timed from its own first: only a whole export is watched.
        let watch = isChunk ? nil : settings.watch
        if let watch {
            try watching { try watch.begin(frameDuration: fd, audio: renderedAudio.map {
                WatchedAudio(stream: $0.stream, encoder: $0.renderer.encoder, sampleRate: $0.renderer.sampleRate, channels: $0.renderer.channels,
                             samples: Int64($0.renderer.samplesWritten))
            }) }
            for track in renderedAudio { track.watch = watch }
        }
        let chapters = try file.writeHeader(sources: sources, mapping: mapping, settings: settings)

        var videoPackets = 0
        var packet = Packet()
        let fidelity = try settings.fidelity.map { try ExportFidelity(encoder: encoder, log: $0, frameDuration: fd, output: settings.outputPath) }
        func drainVideo() throws {
            let tb = file.timeBase(of: videoOut)
            while try encoder.receive(into: &packet) == .packet {
                let pts = MediaTime(count: packet.pts ?? 0, timeBase: frameTB)
                let dts = MediaTime(count: packet.dts ?? packet.pts ?? 0, timeBase: frameTB)
                try fidelity?.read(packet)
                for track in renderedAudio { try track.write(until: dts) }
                for track in subtitles { try track.write(until: dts) }
                packet.retime(pts: pts.count(in: tb), dts: dts.count(in: tb), duration: fd.count(in: tb) ?? 0, streamIndex: videoOut)
                try file.write(&packet)
                videoPackets += 1
            }
        }

        let scaler = VideoScaler(outputFormat: "yuv420p", width: width, height: height)
        var converted = Frame()
        let video = SampledVideo(mapping: mapping, sources: sources, frameDuration: fd, threads: settings.threads,
                                 limits: settings.limits, interrupter: interrupter, observer: observer)
        let clock = Date()
        for k in frames {
            guard try video.withFrame(k, { frame in try scaler.prepare(frame, into: &converted) }) != nil else { break }
            if encodedWidth != width || encodedHeight != height { try converted.crop(toWidth: encodedWidth, height: encodedHeight) }
            converted.setPTS(Int64(k - frames.lowerBound))
            try fidelity?.hold(converted, pts: Int64(k - frames.lowerBound))
            if let watch { try watching { try watch.picture(converted, index: Int64(k - frames.lowerBound)) } }
            while try encoder.send(converted) == .full { try drainVideo() }
            try drainVideo()
            let done = k - frames.lowerBound
            if done % 30 == 0 {
                let elapsed = Date().timeIntervalSince(clock)
                let fraction = Double(done) / Double(frames.count)
                progress(ExportProgress(fraction: fraction, phase: "encoding", framesPerSecond: elapsed > 0 ? Double(done) / elapsed : nil,
                                        eta: fraction > 0.01 ? elapsed / fraction * (1 - fraction) : nil))
            }
            interrupter.progressed()   // a frame encoded
            if k % 16 == 0, let reason = interrupter.reason {
                throw MediaFileError.interrupted(path: settings.outputPath, reason)
            }
        }
        try encoder.sendEndOfStream()
        try drainVideo()
        try fidelity?.finish()
        for track in renderedAudio { try track.write(until: nil) }
        for track in subtitles { try track.write(until: nil) }
        progress(ExportProgress(fraction: 1, phase: "finishing", framesPerSecond: nil, eta: 0))
        try file.finish()

        let audio = RenderedAudioWriter.reports(renderedAudio, sources: sources)
        return ExportReport(
            mode: .constantFrameRate, output: settings.outputPath, container: settings.muxer, duration: videoEnd,
            video: .init(codec: "h264", frames: frames.count, framesDecoded: video.decoded, frameDuration: fd, width: encodedWidth, height: encodedHeight,
                         cropped: Self.croppedNote(width: width, height: height)),
            audio: audio.first, additionalAudio: audio.more, snappedCuts: [], subtitles: subtitles.isEmpty ? nil : subtitles.map(\.report),
            chapters: chapters, seconds: Date().timeIntervalSince(started))
    }
}
