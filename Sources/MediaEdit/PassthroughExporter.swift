import Foundation
import MediaCore
import MediaTime

/// Passthrough export: video packets copied, never decoded, their timestamps rewritten through the
/// time mapping (scaled ranges come out variable-frame-rate). Cuts not on a keyframe snap back to the
/// keyframe before them. Audio is copied, re-encoded through the time-pitch algorithm, or dropped.
struct PassthroughExporter {
    let composition: Composition
    let settings: ExportSettings
    let interrupter: Interrupter
    let progress: @Sendable (ExportProgress) -> Void

    func run() throws -> ExportReport {
        let started = Date()
        let limits = settings.limits
        let sources = try ExportSource.open(composition.segments.map(\.source), limits: limits, interrupter: interrupter)
        // Paths whose shared file has been read from (a later reader must seek, or open afresh).
        var usedPaths: Set<String> = []
        try checkJoinable(sources)

        // Snap every cut that is not on a keyframe back to the keyframe before it.
        var starts: [MediaTime] = []
        var snapped: [ExportReport.SnappedCut] = []
        for (i, segment) in composition.segments.enumerated() {
            let requested = segment.sourceRange.start
            var start = requested
            if let video = sources[i].video, requested > .zero {
                start = try keyframe(atOrBefore: requested, in: sources[i], video: video)
                usedPaths.insert(sources[i].path)
                if start != requested { snapped.append(.init(segment: i, requested: requested, snappedTo: start)) }
            }
            starts.append(start)
        }
        let final = snapped.isEmpty ? composition : try composition.withSegmentStarts(starts)
        let mapping = final.timeMapping

        // Decide what happens to the audio.
        let hasAudio = sources.contains { $0.audio != nil }
        var handling = "none"
        if hasAudio {
            switch settings.audioPolicy {
            case .drop: handling = "dropped"
            case .reencode: handling = "encoded"
            case .copy:
                if mapping.isScaled {
                    throw ExportError("audio policy \"copy\" cannot keep retimed audio: $.scale changes its speed; use \"auto\" or \"reencode\"")
                }
                if let why = audioCopyProblem(sources) { throw ExportError("audio policy \"copy\" is impossible: \(why); use \"auto\" or \"reencode\"") }
                handling = "copied"
            case .auto:
                handling = mapping.isScaled || audioCopyProblem(sources) != nil ? "encoded" : "copied"
            }
        }

        let output = try AtomicOutput(finalPath: settings.outputPath)
        output.beforeCommit = settings.beforeCommit
        return try output.write { temporary in
            try write(to: temporary, sources: sources, usedPaths: &usedPaths, mapping: mapping, audioHandling: handling, snapped: snapped, started: started)
        }
    }

    private func write(to temporary: String, sources: [ExportSource], usedPaths: inout Set<String>, mapping: TimeMapping, audioHandling: String,
                       snapped: [ExportReport.SnappedCut], started: Date) throws -> ExportReport {
        let file = try OutputFile(path: temporary, format: settings.muxer)
        let first = sources[0].file
        let video = sources[0].video
        var videoOut: Int?
        if let video {
            videoOut = try file.addStream(copying: video.index, of: first, timeBase: outputTimeBase(video.timeBase, mapping: mapping))
        }
        var audioOut: Int?
        var rendered: RenderedAudioWriter?
        let audioSource = sources.first { $0.audio != nil }?.audio
        if audioHandling == "copied", let audio = sources[0].audio {
            audioOut = try file.addStream(copying: audio.index, of: first, timeBase: audio.timeBase)
        } else if audioHandling == "encoded", let audio = audioSource {
            rendered = try RenderedAudioWriter(mapping: mapping, sources: sources, audio: audio, totalDuration: mapping.duration,
                                               file: file, settings: settings, interrupter: interrupter)
        }
        let chapters = try file.writeHeader(sources: sources, mapping: mapping, settings: settings)

        var videoPackets = 0, copiedAudioPackets = 0
        var videoTimes = MonotonicTimestamps(), copiedAudioTimes = MonotonicTimestamps()
        let total = mapping.duration
        let clock = Date()

        for segment in sources.indices {
            let source = sources[segment]
            let own = mapping.pieces(of: segment)
            guard let firstPiece = own.first, let lastPiece = own.last else { continue }
            let segStart = firstPiece.source.start, segEnd = lastPiece.source.end
            // Each source's file is opened once and shared by its segments. A segment of a file already
            // read seeks in it; one that starts near the beginning reads from a fresh opening instead
            // (seeking back to the very start is unreliable in some containers), released after it.
            let used = usedPaths.contains(source.path)
            let input = used && !(segStart > MediaTime(value: 2, timescale: 1))
                ? try InputFile(path: source.path, limits: settings.limits, interrupter: interrupter) : source.file
            usedPaths.insert(source.path)
            var wanted: Set<Int> = []
            if let v = source.video { wanted.insert(v.index) }
            if audioHandling == "copied", let a = source.audio { wanted.insert(a.index) }
            guard !wanted.isEmpty else { continue }
            input.discardAll(except: wanted)
            if segStart > MediaTime(value: 2, timescale: 1) || used {
                let seekStream = source.video ?? source.audio!
                let from = MediaTime.max(segStart - MediaTime(value: 2, timescale: 1), MediaTime(value: -1, timescale: 1))
                try input.seek(stream: seekStream.index, toKeyframeBefore: source.ticks(from, in: seekStream))
            }
            var videoDone = source.video == nil
            var audioDone = !(audioHandling == "copied" && source.audio != nil)
            var packet = Packet()
            while !(videoDone && audioDone) {
                guard try input.read(into: &packet) == .packet else { break }
                if packet.isEncrypted {
                    throw MediaFileError(path: source.path, reason: .protectedContent(track: packet.streamIndex))
                }
                if let v = source.video, packet.streamIndex == v.index, let videoOut {
                    guard let rawPTS = packet.pts ?? packet.dts else { continue }
                    let s = source.time(rawPTS, in: v)
                    let sd = packet.dts.map { source.time($0, in: v) } ?? s
                    if !(sd < segEnd) { videoDone = true }
                    guard !(s < segStart), s < segEnd else { continue }
                    guard let t = mapping.targetTime(segment: segment, source: s),
                          let td = mapping.targetTime(segment: segment, source: sd) else { continue }
                    try rendered?.write(until: t)
                    let tb = file.timeBase(of: videoOut)
                    let rate = mapping.rate(segment: segment, source: s)
                    let duration = MediaTime(count: packet.duration, timeBase: v.timeBase).multiplied(by: rate.inverted)
                    let fixed = videoTimes.fix(pts: t.count(in: tb) ?? 0, dts: td.count(in: tb) ?? 0)
                    packet.retime(pts: fixed.pts, dts: fixed.dts, duration: duration.count(in: tb) ?? 0, streamIndex: videoOut)
                    try file.write(&packet)
                    videoPackets += 1
                    if videoPackets % 64 == 0 { report(t, total: total, frames: videoPackets, since: clock) }
                } else if let a = source.audio, packet.streamIndex == a.index, let audioOut {
                    guard let rawPTS = packet.pts ?? packet.dts else { continue }
                    let s = source.time(rawPTS, in: a)
                    if !(s < segEnd) { audioDone = true; continue }
                    // Encoder priming (packets an edit list discards) is kept at the very start of the
                    // output, where the muxer can discard it again with an edit list of its own.
                    let priming = packet.isDiscarded && segment == 0 && segStart == .zero
                    guard !(s < segStart) || priming, !packet.isDiscarded || priming,
                          let t = mapping.targetTime(segment: segment, source: s) else { continue }
                    let tb = file.timeBase(of: audioOut)
                    let ticks = t.count(in: tb) ?? 0
                    let fixed = copiedAudioTimes.fix(pts: ticks, dts: ticks)
                    let duration = MediaTime(count: packet.duration, timeBase: a.timeBase).count(in: tb) ?? 0
                    packet.retime(pts: fixed.pts, dts: fixed.dts, duration: duration, streamIndex: audioOut)
                    try file.write(&packet)
                    copiedAudioPackets += 1
                }
            }
        }
        try rendered?.write(until: nil)
        progress(ExportProgress(fraction: 1, phase: "finishing", framesPerSecond: nil, eta: 0))
        try file.finish()

        let audioReport: ExportReport.Audio
        if let rendered {
            audioReport = rendered.report
        } else {
            let a = sources[0].audio
            audioReport = .init(handling: audioHandling, codec: audioHandling == "copied" ? a?.codecName : nil,
                                sampleRate: audioHandling == "copied" ? a?.sampleRate : nil,
                                channels: audioHandling == "copied" ? a?.channelCount : nil,
                                samples: nil, packets: copiedAudioPackets, pieces: nil, decodeErrors: nil)
        }
        return ExportReport(
            mode: .passthrough, output: settings.outputPath, container: settings.muxer, duration: mapping.duration,
            video: video.map { .init(codec: $0.codecName, frames: videoPackets, framesDecoded: 0, frameDuration: nil,
                                     width: $0.width, height: $0.height) },
            audio: audioReport, snappedCuts: snapped, chapters: chapters, seconds: Date().timeIntervalSince(started))
    }

    private func report(_ t: MediaTime, total: MediaTime, frames: Int, since clock: Date) {
        let fraction = total > .zero ? min(max(t.seconds / total.seconds, 0), 1) : 0
        let elapsed = Date().timeIntervalSince(clock)
        let fps = elapsed > 0 ? Double(frames) / elapsed : nil
        let eta = fraction > 0.01 ? elapsed / fraction * (1 - fraction) : nil
        progress(ExportProgress(fraction: fraction, phase: "copying", framesPerSecond: fps, eta: eta))
    }

    /// A time base in which every retimed timestamp is exact: the source's, divided by the numerators
    /// of the scaled rates (when that still fits 32 bits).
    private func outputTimeBase(_ source: Rational, mapping: TimeMapping) -> Rational {
        var factor: Int64 = 1
        for r in mapping.rates where r.numerator > 1 {
            factor = lcm(factor, Int64(r.numerator))
            if factor > 1 << 20 { return source }
        }
        let den = Int64(source.denominator) * factor
        guard den <= Int64(Int32.max) else { return source }
        return Rational(source.numerator, Int32(den))
    }

    private func lcm(_ a: Int64, _ b: Int64) -> Int64 {
        var x = a, y = b
        while y != 0 { (x, y) = (y, x % y) }
        return a / x * b
    }

    /// The latest keyframe at or before `time` (source time) of the video stream.
    private func keyframe(atOrBefore time: MediaTime, in source: ExportSource, video: StreamInfo) throws -> MediaTime {
        let input = source.file
        input.discardAll(except: [video.index])
        func scan() throws -> MediaTime? {
            var packet = Packet()
            var found: MediaTime?
            while try input.read(into: &packet) == .packet {
                guard let pts = packet.pts ?? packet.dts else { continue }
                let s = source.time(pts, in: video)
                let d = packet.dts.map { source.time($0, in: video) } ?? s
                if packet.isKeyframe && !(time < s) { found = s }
                if time < d { break }
            }
            return found
        }
        try input.seek(stream: video.index, toKeyframeBefore: source.ticks(time, in: video))
        if let k = try scan() { return k }
        // The seek overshot (some demuxers index sparsely): scan from the start.
        try input.seek(stream: video.index, toKeyframeBefore: Int64.min / 2)
        return try scan() ?? .zero
    }

    private func checkJoinable(_ sources: [ExportSource]) throws {
        guard let first = sources.first else { throw ExportError("the composition is empty") }
        for (i, s) in sources.enumerated().dropFirst() {
            switch (first.video, s.video) {
            case (nil, nil): break
            case let (a?, b?):
                if a.codecName != b.codecName || a.width != b.width || a.height != b.height || a.extradata != b.extradata {
                    throw ExportError("passthrough cannot join \(s.path) (segment \(i + 1)) to \(first.path): their video differs (\(a.codecName) \(a.width)x\(a.height) vs \(b.codecName) \(b.width)x\(b.height), or different encoder settings); use the constantFrameRate mode to re-encode")
                }
            default:
                throw ExportError("passthrough cannot join \(s.path) (segment \(i + 1)): one source has video and the other has none")
            }
        }
        if first.video == nil && !sources.contains(where: { $0.audio != nil }) {
            throw ExportError("\(first.path): nothing to export: no video or audio stream")
        }
    }

    private func audioCopyProblem(_ sources: [ExportSource]) -> String? {
        guard let a = sources[0].audio else { return "the first source has no audio" }
        for s in sources.dropFirst() {
            guard let b = s.audio else { return "\(s.path) has no audio" }
            if a.codecName != b.codecName || a.sampleRate != b.sampleRate || a.channelCount != b.channelCount || a.extradata != b.extradata {
                return "the audio of \(s.path) differs from that of \(sources[0].path)"
            }
        }
        if !a.passthroughContainers.contains(settings.muxer) && !(settings.muxer == "mov" && a.passthroughContainers.contains("mp4")) {
            return "\(a.codecName) audio cannot be stored in \(settings.muxer)"
        }
        return nil
    }
}
