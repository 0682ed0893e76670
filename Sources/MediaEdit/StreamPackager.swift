import Foundation
import MediaCore
import MediaTime

/// Makes a streaming package's media, as AVAssetWriter does with `.mpeg4AppleHLS` and a preferred
/// segment interval: the composition is decoded once, at a constant frame rate, and every rung's scaler
/// and encoder is fed each frame; each rung starts every segment with an IDR at the same frame, so the
/// rungs' segments line up exactly, and the audio (AAC) is cut at the first AAC frame at or after each
/// video boundary, so it never drifts. Each track is CMAF (one track per file, fragmented MPEG-4) in a
/// folder of its own under `settings.folder`: `video-1`, `video-2`, … and `audio` (`audio-en`, `audio-fr`, …
/// when tracks are chosen by language). The playlists are
/// written from the report (`StreamPlaylists`).
public struct StreamPackager: Sendable {
    public let composition: Composition
    public let settings: StreamSettings
    public var pool: BlockingWorkPool = .shared

    public init(composition: Composition, settings: StreamSettings) {
        self.composition = composition
        self.settings = settings
    }

    /// Writes the package's media and returns what it wrote. Cancelling the calling task stops it.
    public func package(progress: @escaping @Sendable (ExportProgress) -> Void = { _ in }) async throws -> StreamReport {
        let composition = self.composition, settings = self.settings
        return try await pool.run(stallLimit: settings.limits.stallTimeout) { interrupter in
            try PackageWriter(composition: composition, settings: settings, interrupter: interrupter, progress: progress).run()
        }
    }
}

/// A video rung being made: its scaler, encoder and track.
private final class Rung {
    let scaler: VideoScaler
    let encoder: Encoder
    let track: SegmentedTrack
    var picture = Frame()
    var packet = Packet()

    init(_ rung: StreamRung, index: Int, settings: StreamSettings, frameDuration: MediaTime, quarterTurns: Int) throws {
        scaler = VideoScaler(outputFormat: "yuv420p", width: rung.width, height: rung.height, quarterTurns: quarterTurns)
        do {
            encoder = try Encoder.h264Rung(width: rung.width, height: rung.height, frameDuration: frameDuration,
                                           bitRate: rung.bitRate, maxBitRate: rung.maxBitRate, bufferSize: rung.bufferSize,
                                           profile: rung.profile, level: rung.level ?? 40, gop: settings.framesPerSegment,
                                           preset: settings.preset, threads: settings.threads)
        } catch {
            throw ExportError("rung \(index) (\(rung.width)x\(rung.height)): cannot set up the H.264 encoder: \(error)")
        }
        track = try SegmentedTrack(kind: .video, name: "video-\(index)", root: settings.folder)
        try track.begin(with: encoder, language: nil)
    }
}

struct PackageWriter {
    let composition: Composition
    let settings: StreamSettings
    let interrupter: Interrupter
    let progress: @Sendable (ExportProgress) -> Void

    func run() throws -> StreamReport {
        let started = Date()
        try settings.check()
        let sources = try ExportSource.open(composition.segments.map(\.source), limits: settings.limits, interrupter: interrupter)
        for (i, s) in sources.enumerated() where s.video == nil {
            throw ExportError("\(s.path) (segment \(i + 1)) has no video, and every rung of a package needs it")
        }
        // The ladder is fitted to the first source's picture as shown, and made at its rate unless asked.
        guard let first = sources.first?.video else { throw ExportError("the composition is empty: nothing to package") }
        let ladder = try StreamLadder(settings.rungs, source: first, larger: settings.larger)
        // One ladder, fitted and turned once: every source must show its picture the same way.
        for (i, s) in sources.enumerated() {
            guard let v = s.video, v.shown() == ladder.picture else {
                throw ExportError("\(s.path) (segment \(i + 1)) is shown \(s.video.map { "\($0.shown())" } ?? "without video"), not as the first "
                                  + "source is (\(ladder.picture)): one package's sources must "
                                  + "share a picture size, sample aspect and rotation; package them apart")
            }
        }
        var made = settings
        let fd = (settings.frameDuration ?? StreamSettings.frameDuration(of: first)).reduced
        made.frameDuration = fd
        made.rungs = try ladder.rungs.enumerated().map { i, rung in
            guard rung.level == nil else { return rung }
            var rung = rung
            let fps = Double(fd.timescale) / Double(fd.value)
            guard let level = H264Level.lowest(width: rung.width, height: rung.height, framesPerSecond: fps, maxBitRate: rung.maxBitRate,
                                               profile: rung.profile) else {
                throw ExportError("rung \(i + 1) (\(rung.width)x\(rung.height) at \(MediaTime.formatSeconds(fps)) fps, peak \(rung.maxBitRate) bit/s): "
                                  + "no H.264 level holds it; make it smaller or its peak lower")
            }
            rung.level = level
            return rung
        }
        // Subtitles are read before any encoding: a language a source lacks, or pictures that cannot become
        // text, refuse the package before the work.
        let subtitles = try settings.subtitleLanguages.map {
            try SubtitleRendition(language: $0, sources: sources, mapping: composition.timeMapping, limits: settings.limits, interrupter: interrupter)
        }
        var report = try write(sources, ladder: ladder, settings: made, started: started)
        if !subtitles.isEmpty, let rung = report.tracks.first(where: { $0.kind == .video }) {
            // The video's boundaries, presented from 0.
            let scale = Rational(1, Int32(clamping: rung.timescale))
            let boundaries = rung.segments.map { MediaTime(count: $0.start - rung.presentationOffset, timeBase: scale) } + [report.duration]
            for subtitle in subtitles {
                report.tracks.append(try subtitle.write(into: settings.folder, name: "subtitles-" + LanguageMatch.primary(subtitle.language),
                                                        boundaries: boundaries))
            }
        }
        return report
    }

    /// Decodes the composition once and feeds every rung; `settings` are the ladder's, at a known rate.
    private func write(_ sources: [ExportSource], ladder: StreamLadder, settings: StreamSettings, started: Date) throws -> StreamReport {
        let fd = settings.frameDuration ?? MediaTime(value: 1, timescale: 30)
        let video = SampledVideo(mapping: composition.timeMapping, sources: sources, frameDuration: fd, threads: settings.threads,
                                 limits: settings.limits, interrupter: interrupter, observer: nil)
        let frameCount = video.frameCount
        guard frameCount > 0 else { throw ExportError("the composition is empty: nothing to package") }
        let rungs = try settings.rungs.enumerated().map {
            try Rung($1, index: $0 + 1, settings: settings, frameDuration: fd, quarterTurns: ladder.quarterTurns)
        }
        let audio = try audioWriters(sources: sources, duration: fd.multiplied(by: Int32(clamping: frameCount)), settings: settings)
        let gop = settings.framesPerSegment
        let frameTB = Rational(Int32(clamping: fd.value), fd.timescale)

        func drain(_ rung: Rung, first: Bool) throws {
            let tb = rung.track.timeBase
            while try rung.encoder.receive(into: &rung.packet) == .packet {
                let frame = rung.packet.pts ?? 0
                if rung.packet.isKeyframe, frame > 0, frame % Int64(gop) == 0 {
                    let boundary = MediaTime(count: frame, timeBase: frameTB)
                    try rung.track.cut(at: boundary.count(in: tb))
                    if first { for track in audio { try track.cut(before: boundary) } }
                }
                let pts = MediaTime(count: frame, timeBase: frameTB), dts = MediaTime(count: rung.packet.dts ?? frame, timeBase: frameTB)
                rung.packet.retime(pts: pts.count(in: tb), dts: dts.count(in: tb), duration: fd.count(in: tb) ?? 0, streamIndex: rung.track.stream)
                try rung.track.write(&rung.packet)
            }
        }

        let clock = Date()
        for k in 0..<frameCount {
            let fed: Void? = try video.withFrame(k) { frame in
                for (i, rung) in rungs.enumerated() {
                    try rung.scaler.prepare(frame, into: &rung.picture)
                    rung.picture.setPTS(Int64(k))
                    rung.picture.requestKeyframe(k % gop == 0)
                    while try rung.encoder.send(rung.picture) == .full { try drain(rung, first: i == 0) }
                    try drain(rung, first: i == 0)
                }
            }
            guard fed != nil else { break }
            report(done: k, of: frameCount, since: clock)
            interrupter.progressed()   // a frame encoded on every rung
            if k % 16 == 0, let reason = interrupter.reason {
                throw MediaFileError.interrupted(path: settings.folder, reason)
            }
        }
        for (i, rung) in rungs.enumerated() {
            try rung.encoder.sendEndOfStream()
            try drain(rung, first: i == 0)
            try rung.track.finish()
        }
        for track in audio { try track.finish() }
        progress(ExportProgress(fraction: 1, phase: "finishing", framesPerSecond: nil, eta: 0))
        let tracks = rungs.enumerated().map { i, rung in
            StreamTrack(kind: .video, folder: rung.track.name, initialization: "init.mp4", codecs: rung.track.codecs,
                        timescale: Int(rung.track.timeBase.denominator), presentationOffset: rung.track.presentationOffset ?? 0, width: settings.rungs[i].width, height: settings.rungs[i].height,
                        frameRate: frameTB.inverted, segments: rung.track.segments)
        } + audio.map { $0.report() }
        return StreamReport(duration: fd.multiplied(by: Int32(clamping: frameCount)), segmentDuration: fd.multiplied(by: Int32(clamping: gop)),
                            tracks: tracks, framesDecoded: video.decoded, seconds: Date().timeIntervalSince(started),
                            sourcePicture: StreamReport.Picture(width: ladder.displayWidth, height: ladder.displayHeight, quarterTurns: ladder.quarterTurns),
                            skippedRungs: ladder.skipped.map { $0 + 1 })
    }

    private func report(done k: Int, of count: Int, since clock: Date) {
        guard k % 30 == 0 else { return }
        let elapsed = Date().timeIntervalSince(clock)
        let fraction = Double(k) / Double(count)
        progress(ExportProgress(fraction: fraction, phase: "encoding", framesPerSecond: elapsed > 0 ? Double(k) / elapsed : nil,
                                eta: fraction > 0.01 ? elapsed / fraction * (1 - fraction) : nil))
    }

    /// The audio tracks: one per language asked for (each source's track in it), or the first source's
    /// first audio track; none when no source has audio and no language is asked for.
    private func audioWriters(sources: [ExportSource], duration: MediaTime, settings: StreamSettings) throws -> [PackageAudio] {
        guard !settings.audioLanguages.isEmpty else {
            guard let audio = sources.first(where: { $0.audio != nil })?.audio else { return [] }
            return [try audioWriter(sources: sources, audio: audio, streams: nil, name: "audio", language: settings.audioLanguage,
                                    duration: duration, settings: settings)]
        }
        return try settings.audioLanguages.map { language in
            var streams: [Int?] = []
            var format: StreamInfo?
            for source in sources {
                let all = try source.file.streams
                guard let stream = LanguageMatch.audio(all, in: language).first else {
                    let has = Set(all.filter { $0.mediaType == .audio }.map { $0.language ?? "und" }).sorted()
                    throw ExportError("\(source.path) has no audio in \"\(language)\" (its audio: \(has.isEmpty ? "none" : has.joined(separator: ", "))); "
                                      + "ask only for languages every source has")
                }
                streams.append(stream.index)
                format = format ?? stream
            }
            return try audioWriter(sources: sources, audio: format!, streams: streams, name: "audio-" + LanguageMatch.primary(language),
                                   language: language, duration: duration, settings: settings)
        }
    }

    private func audioWriter(sources: [ExportSource], audio: StreamInfo, streams: [Int?]?, name: String, language: String?,
                             duration: MediaTime, settings: StreamSettings) throws -> PackageAudio {
        let track = try SegmentedTrack(kind: .audio, name: name, root: settings.folder)
        var rendering = ExportSettings(mode: .constantFrameRate, outputPath: settings.folder, muxer: "mp4", audioBitRate: settings.audioBitRate,
                                       timePitch: settings.timePitch, limits: settings.limits)
        rendering.threads = settings.threads
        let writer = try RenderedAudioWriter(mapping: composition.timeMapping, sources: sources, audio: audio, streams: streams,
                                             channels: settings.audioChannels == 0 ? nil : settings.audioChannels, totalDuration: duration,
                                             file: track.file, settings: rendering, interrupter: interrupter)
        try track.begin(with: writer.renderer.encoder, language: language, added: 0)
        writer.sink = { packet in try track.write(&packet) }
        return PackageAudio(writer: writer, track: track, language: language)
    }
}

/// The package's audio: its rendering and its track, cut where the first rung's segments are.
private struct PackageAudio {
    let writer: RenderedAudioWriter
    let track: SegmentedTrack
    let language: String?

    /// Ends the audio segment before `boundary`: every AAC frame that starts before it is in.
    func cut(before boundary: MediaTime) throws {
        try writer.write(until: boundary, inclusive: false)
        try track.cut(at: nil)
    }

    func finish() throws {
        try writer.write(until: nil)
        try track.finish()
    }

    func report() -> StreamTrack {
        StreamTrack(kind: .audio, folder: track.name, initialization: "init.mp4", codecs: track.codecs, timescale: Int(track.timeBase.denominator),
                    presentationOffset: track.presentationOffset ?? 0, sampleRate: writer.renderer.sampleRate, channels: writer.renderer.channels, language: language, segments: track.segments)
    }
}
