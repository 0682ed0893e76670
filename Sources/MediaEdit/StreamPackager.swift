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

    /// Writes the package's media and returns what it wrote; with `settings.frames`, one chunk of it: those
    /// frames' segments of every rung, numbered and timed as in the whole, and for the first chunk (from frame
    /// 0) the package's whole audio too (no subtitles: the join makes them). Cancelling the calling task stops it.
    public func package(progress: @escaping @Sendable (ExportProgress) -> Void = { _ in }) async throws -> StreamReport {
        let composition = self.composition, settings = self.settings
        return try await pool.run(stallLimit: settings.limits.stallTimeout) { interrupter in
            try PackageWriter(composition: composition, settings: settings, interrupter: interrupter, progress: progress).run()
        }
    }

    /// The frame ranges of a package made in chunks of about `every` (whole segments each; the last holds
    /// what is left, and a remainder shorter than half a chunk goes with the chunk before it). Everything that
    /// would refuse the package is checked first (the ladder, the languages, the subtitles), so that no chunk
    /// is encoded for a package its join would refuse. One range when the package is not longer than `every`.
    public func chunkRanges(every: MediaTime) async throws -> [Range<Int>] {
        let composition = self.composition, settings = self.settings
        return try await pool.run(stallLimit: settings.limits.stallTimeout) { interrupter in
            let writer = PackageWriter(composition: composition, settings: settings, interrupter: interrupter, progress: { _ in })
            let plan = try writer.prepare(readingSubtitles: true)
            _ = try writer.audioChoices(plan.sources)
            let gop = plan.settings.framesPerSegment
            let segments = (plan.frameCount + gop - 1) / gop
            let perChunk = max(1, Int((every.seconds / plan.settings.segmentDuration.seconds).rounded()))
            var starts = Array(stride(from: 0, to: segments, by: perChunk))
            // A short remainder (less than half a chunk, or than one whole segment) goes with the chunk before it.
            if starts.count > 1, segments - starts[starts.count - 1] < (perChunk + 1) / 2 || plan.frameCount - starts[starts.count - 1] * gop < gop {
                starts.removeLast()
            }
            let bounds = starts.map { $0 * gop } + [plan.frameCount]
            return zip(bounds, bounds.dropFirst()).map { $0..<$1 }
        }
    }

    /// Joins a package's chunks (each written with `settings.frames`, in order, tiling its frames): their
    /// segments, and the audio the first chunk made over the whole composition, are linked into `settings.folder`
    /// as they are (never muxed again), and the subtitles are made once over the whole, cut at the segments' boundaries.
    /// The chunks' files are read, and made the package's, through `files` (folders by default).
    public func join(_ chunks: [StreamChunk], files: any ChunkFileStore = LocalChunkFiles(),
                     progress: @escaping @Sendable (ExportProgress) -> Void = { _ in }) async throws -> StreamReport {
        let composition = self.composition, settings = self.settings
        return try await pool.run(stallLimit: settings.limits.stallTimeout) { interrupter in
            try PackageWriter(composition: composition, settings: settings, interrupter: interrupter, progress: progress).join(chunks, files: files)
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

    /// `first`: the frame the rung begins at (a chunk's first; a multiple of the segment's frames).
    init(_ rung: StreamRung, index: Int, settings: StreamSettings, frameDuration: MediaTime, quarterTurns: Int, first: Int) throws {
        scaler = VideoScaler(outputFormat: "yuv420p", width: rung.width, height: rung.height, quarterTurns: quarterTurns)
        do {
            encoder = try Encoder.rung(rung.codec, width: rung.width, height: rung.height, frameDuration: frameDuration,
                                       bitRate: rung.bitRate, maxBitRate: rung.maxBitRate, bufferSize: rung.bufferSize,
                                       profile: rung.profile, level: rung.level ?? 40, gop: settings.framesPerSegment,
                                       preset: settings.preset, threads: settings.threads)
        } catch {
            throw ExportError("rung \(index) (\(rung.width)x\(rung.height)): cannot set up the \(rung.codec.name) encoder: \(error)")
        }
        track = try SegmentedTrack(kind: .video, name: "video-\(index)", settings: settings)
        // Apple's players take HEVC tagged `hvc1` (parameter sets in the sample entry only), not FFmpeg's `hev1`.
        try track.begin(with: encoder, language: nil, codecTag: rung.codec == .hevc ? "hvc1" : nil)
        if first > 0 {
            try track.place(firstNumber: first / settings.framesPerSegment + 1, at: frameDuration.multiplied(by: Int32(clamping: first)))
        }
    }
}

/// What every way of making a package starts from: the sources opened, the ladder fitted to the first, the
/// frame rate and each rung's level chosen (`settings`), and the subtitles read.
struct PackagePlan {
    let sources: [ExportSource]
    let ladder: StreamLadder
    let settings: StreamSettings
    let subtitles: [SubtitleRendition]
    var frameDuration: MediaTime { settings.frameDuration ?? MediaTime(value: 1, timescale: 30) }
    /// The composition's frames at that rate (its duration rounded up).
    let frameCount: Int
}

struct PackageWriter {
    let composition: Composition
    let settings: StreamSettings
    let interrupter: Interrupter
    let progress: @Sendable (ExportProgress) -> Void

    func run() throws -> StreamReport {
        let started = Date()
        if settings.passthrough { return try PackageCopier(writer: self).run(started: started) }
        // A chunk is video (and the first, the audio): the join reads the subtitles.
        let plan = try prepare(readingSubtitles: settings.frames == nil)
        var report = try write(plan, frames: settings.frames, started: started)
        try addSubtitles(plan.subtitles, to: &report)
        return report
    }

    func prepare(readingSubtitles: Bool) throws -> PackagePlan {
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
            var rung = rung
            let fps = Double(fd.timescale) / Double(fd.value)
            let what = "rung \(i + 1) (\(rung.width)x\(rung.height) at \(MediaTime.formatSeconds(fps)) fps, peak \(rung.maxBitRate) bit/s"
                + (rung.codec == .hevc ? ", buffer \(rung.bufferSize) bits)" : ")")
            guard let level = RungLevel.lowest(rung.codec, width: rung.width, height: rung.height, framesPerSecond: fps, maxBitRate: rung.maxBitRate,
                                               bufferSize: rung.bufferSize, profile: rung.profile) else {
                throw ExportError("\(what): no \(rung.codec.name) level holds it; make it smaller or its peak\(rung.codec == .hevc ? " or buffer" : "") lower")
            }
            // A level asked for must hold the rung: a stream above its level is one players may refuse.
            if let asked = rung.level, asked < level {
                throw ExportError("\(what): \(rung.codec.name) level \(RungLevel.name(asked)) does not hold it; the lowest that does is "
                                  + "\(RungLevel.name(level)): ask for that, or leave out \"level\"")
            }
            rung.level = rung.level ?? level
            return rung
        }
        _ = try audioChoices(sources)  // a package that asks for audio a source lacks is refused before any work
        // Subtitles are read before any encoding: a language a source lacks, or pictures that cannot become
        // text, refuse the package before the work.
        let subtitles = readingSubtitles ? try settings.subtitleLanguages.map {
            try SubtitleRendition(language: $0, sources: sources, mapping: composition.timeMapping, limits: settings.limits, interrupter: interrupter)
        } : []
        let frameTB = Rational(Int32(clamping: fd.value), fd.timescale)
        let frameCount = Int(composition.timeMapping.duration.count(in: frameTB, rounding: .up) ?? 0)
        guard frameCount > 0 else { throw ExportError("the composition is empty: nothing to package") }
        return PackagePlan(sources: sources, ladder: ladder, settings: made, subtitles: subtitles, frameCount: frameCount)
    }

    /// The subtitle renditions, cut at the first rung's boundaries as presented from 0.
    func addSubtitles(_ subtitles: [SubtitleRendition], to report: inout StreamReport) throws {
        guard !subtitles.isEmpty, let rung = report.tracks.first(where: { $0.kind == .video }) else { return }
        let scale = Rational(1, Int32(clamping: rung.timescale))
        let boundaries = rung.segments.map { MediaTime(count: $0.start - rung.presentationOffset, timeBase: scale) } + [report.duration]
        for subtitle in subtitles {
            report.tracks.append(try subtitle.write(into: settings.folder, name: "subtitles-" + LanguageMatch.primary(subtitle.language),
                                                    boundaries: boundaries, container: settings.container))
        }
    }

    /// Decodes the composition once (`frames` of it: a chunk) and feeds every rung, and the audio when whole or
    /// the first chunk (the whole package's audio).
    private func write(_ plan: PackagePlan, frames: Range<Int>?, started: Date) throws -> StreamReport {
        let (settings, fd, gop) = (plan.settings, plan.frameDuration, plan.settings.framesPerSegment)
        let range = frames ?? 0..<plan.frameCount
        guard range.lowerBound % gop == 0, range.upperBound == plan.frameCount || range.upperBound % gop == 0,
              range.upperBound <= plan.frameCount, !range.isEmpty else {
            throw ExportError("frames \(range.lowerBound)..<\(range.upperBound) are not whole segments of \(gop) frames of the package's 0..<\(plan.frameCount)")
        }
        let video = SampledVideo(mapping: composition.timeMapping, sources: plan.sources, frameDuration: fd, threads: settings.threads,
                                 limits: settings.limits, interrupter: interrupter, observer: nil)
        let rungs = try settings.rungs.enumerated().map {
            try Rung($1, index: $0 + 1, settings: settings, frameDuration: fd, quarterTurns: plan.ladder.quarterTurns, first: range.lowerBound)
        }
        // The package's audio is made whole, over the whole composition, by the package made whole or by its first
        // chunk (on past its own frames, once its video is written): the join only links it.
        let audio = range.lowerBound == 0 ? try audioWriters(sources: plan.sources, duration: fd.multiplied(by: Int32(clamping: plan.frameCount)), settings: settings) : []
        let frameTB = Rational(Int32(clamping: fd.value), fd.timescale)

        // Packets are timed from the range's first frame (a multiple of `gop`, so segments start as in the whole).
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
        for k in range {
            let n = k - range.lowerBound
            let fed: Void? = try video.withFrame(k) { frame in
                for (i, rung) in rungs.enumerated() {
                    try rung.scaler.prepare(frame, into: &rung.picture)
                    rung.picture.setPTS(Int64(n))
                    rung.picture.requestKeyframe(n % gop == 0)
                    while try rung.encoder.send(rung.picture) == .full { try drain(rung, first: i == 0) }
                    try drain(rung, first: i == 0)
                }
            }
            guard fed != nil else { break }
            report(done: n, of: range.count, since: clock)
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
        // The first chunk's audio goes on to the package's end, cut where the package's segments begin.
        let rest = Array(stride(from: range.upperBound, to: audio.isEmpty ? range.upperBound : plan.frameCount, by: gop))
        for (i, k) in rest.enumerated() {
            for track in audio { try track.cut(before: MediaTime(count: Int64(k), timeBase: frameTB)) }
            progress(ExportProgress(fraction: 1, phase: "audio: segment \(k / gop + 1) of \((plan.frameCount + gop - 1) / gop)", framesPerSecond: nil, eta: nil))
            interrupter.progressed()
            if i % 16 == 0, let reason = interrupter.reason { throw MediaFileError.interrupted(path: settings.folder, reason) }
        }
        for track in audio { try track.finish() }
        progress(ExportProgress(fraction: 1, phase: "finishing", framesPerSecond: nil, eta: 0))
        let tracks = rungs.enumerated().map { i, rung in
            rung.track.report(width: settings.rungs[i].width, height: settings.rungs[i].height, frameRate: frameTB.inverted)
        } + audio.map { $0.report() }
        return StreamReport(duration: fd.multiplied(by: Int32(clamping: range.count)), segmentDuration: fd.multiplied(by: Int32(clamping: gop)),
                            tracks: tracks, framesDecoded: video.decoded, seconds: Date().timeIntervalSince(started),
                            sourcePicture: StreamReport.Picture(width: plan.ladder.displayWidth, height: plan.ladder.displayHeight, quarterTurns: plan.ladder.quarterTurns),
                            skippedRungs: plan.ladder.skipped.map { $0 + 1 })
    }

    func report(done k: Int, of count: Int, since clock: Date) {
        guard k % 30 == 0 else { return }
        let elapsed = Date().timeIntervalSince(clock)
        let fraction = Double(k) / Double(count)
        progress(ExportProgress(fraction: fraction, phase: "encoding", framesPerSecond: elapsed > 0 ? Double(k) / elapsed : nil,
                                eta: fraction > 0.01 ? elapsed / fraction * (1 - fraction) : nil))
    }

    /// The audio tracks to package (`StreamSettings.audioTracks`). A package asks for audio unless it says
    /// `none`: a composition with none is refused, with the way to a package of video only.
    func audioChoices(_ sources: [ExportSource]) throws -> [AudioChoice] {
        let choices = try settings.audioTracks.choose(sources, label: settings.audioLanguage)
        if choices.isEmpty && settings.audioTracks != .none {
            let which = sources.count == 1 ? "\(sources[0].path) has no audio" : "no source of the composition has audio"
            throw ExportError("\(which), and the package's audio rendition needs it: "
                              + "give \"audio\": {\"tracks\": \"none\"} for a package of video only")
        }
        return choices
    }

    func audioWriters(sources: [ExportSource], duration: MediaTime, settings: StreamSettings) throws -> [PackageAudio] {
        try audioChoices(sources).map {
            try audioWriter(sources: sources, audio: $0.format, streams: $0.indexes, name: $0.name, language: $0.language, duration: duration, settings: settings)
        }
    }

    private func audioWriter(sources: [ExportSource], audio: StreamInfo, streams: [Int?]?, name: String, language: String?,
                             duration: MediaTime, settings: StreamSettings) throws -> PackageAudio {
        let track = try SegmentedTrack(kind: .audio, name: name, settings: settings)
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
struct PackageAudio {
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
        track.report(sampleRate: writer.renderer.sampleRate, channels: writer.renderer.channels, language: language)
    }
}
