import Foundation
import MediaCore
import MediaTime

/// Passthrough export: video packets copied, never decoded, their timestamps rewritten through the
/// time mapping (scaled ranges come out variable-frame-rate). Audio is copied, re-encoded through the
/// time-pitch algorithm, or dropped.
///
/// A cut that is not on a keyframe is made exact (`cuts: exact`, the default) by copying from the
/// keyframe before it and hiding the frames before the cut with the track's edit list (MP4 and
/// QuickTime); each edit's packets are placed after the previous edit's in the track's media time
/// (a gap of `shift`), and one edit-list entry per edit plays exactly its range. Frames after an
/// edit's end that its B-frames reference are copied and hidden the same way. With `cuts: keyframe`
/// the cut snaps back to the keyframe instead and the extra frames are shown. Without edit lists
/// (Matroska, or `cuts: smart` in MP4 and QuickTime, for readers that ignore them) a cut between
/// keyframes is smart-rendered (`SmartCutter`) and the audio encoded.
struct PassthroughExporter {
    let composition: Composition
    let settings: ExportSettings
    let interrupter: Interrupter
    let progress: @Sendable (ExportProgress) -> Void

    /// Where one segment's video decoding starts: the latest keyframe at or before its start.
    struct Keyframe {
        var pts: MediaTime
        var dts: MediaTime
        /// The decoding time of the first packet from the keyframe on (in decoding order) that is shown
        /// in the segment: with B-frames it may be a later frame than the one at the start. Nil when
        /// none was read.
        var firstShownDTS: MediaTime? = nil
    }

    func run() throws -> ExportReport {
        guard settings.subtitleLanguages.isEmpty else {
            throw ExportError("a passthrough export keeps no subtitles: use the constantFrameRate mode to keep text subtitles by language, "
                              + "or leave out \"subtitles\"")
        }
        let started = Date()
        let limits = settings.limits
        let sources = try ExportSource.open(composition.segments.map(\.source), limits: limits, interrupter: interrupter)
        // Paths whose shared file has been read from (a later reader must seek, or open afresh).
        var usedPaths: Set<String> = []
        try checkJoinable(sources)
        let exact = settings.cuts != .keyframe
        let editLists = ["mp4", "mov"].contains(settings.muxer) && settings.cuts != .smart
        // Without edit lists exact cuts re-encode from a cut to the next keyframe (H.264 and HEVC). For
        // other codecs every edit must start on a keyframe: found out before anything is written.
        var smartCutter: SmartCutter?
        var cannotReencode: ExportError?
        if exact && !editLists, let video = sources[0].video {
            do {
                smartCutter = try SmartCutter.make(for: video, settings: settings)
            } catch let error as ExportError {
                cannotReencode = error
            }
        }
        // Nor can copied audio be cut inside a packet without edit lists: exact cuts there encode the audio.
        let cutsInsideAudio = exact && !editLists && !isWholeFiles(sources)

        var keyframes: [Keyframe?] = []
        var snapped: [ExportReport.SnappedCut] = []
        let closing = ExportSource.closesBetweenUses(sources)
        for (i, segment) in composition.segments.enumerated() {
            let requested = segment.sourceRange.start
            guard let video = sources[i].video else { keyframes.append(nil); continue }
            let k = try keyframe(atOrBefore: requested, in: sources[i], video: video, until: segment.sourceRange.end)
            usedPaths.insert(sources[i].path)
            if closing, i + 1 == sources.count || sources[i + 1] !== sources[i] {
                // Opened again, from its start, when its packets are copied.
                sources[i].release()
                usedPaths.remove(sources[i].path)
            }
            if !exact && k.pts < requested && requested > .zero {
                snapped.append(.init(segment: i, requested: requested, snappedTo: k.pts))
            }
            keyframes.append(k)
        }
        if let cannotReencode { try refuseInexactCuts(keyframes, because: cannotReencode) }
        let final = snapped.isEmpty || exact ? composition
            : try composition.withSegmentStarts(keyframes.enumerated().map { i, k in
                k.map { MediaTime.max(MediaTime.min($0.pts, composition.segments[i].sourceRange.start), .zero) } ?? composition.segments[i].sourceRange.start
            })
        let mapping = final.timeMapping

        // Decide what happens to the audio: every kept track alike.
        let hasAudio = sources.contains { $0.audio != nil }
        let kept = settings.audioPolicy == .drop ? [] : try settings.audioTracks.choose(sources)
        var handling = "none"
        let normalizing = settings.loudness.map { !$0.measureOnly } ?? false
        if hasAudio {
            switch settings.audioPolicy {
            case .drop: handling = "dropped"
            case .reencode: handling = "encoded"
            case .copy:
                if normalizing { throw ExportError(Self.copiedAudioCannotBeNormalized) }
                if mapping.isScaled {
                    throw ExportError("audio policy \"copy\" cannot keep retimed audio: $.scale changes its speed; use \"auto\" or \"reencode\"")
                }
                if let why = audioCopyProblem(kept) { throw ExportError("audio policy \"copy\" is impossible: \(why); use \"auto\" or \"reencode\"") }
                if cutsInsideAudio {
                    let (why, otherwise) = settings.cuts == .smart
                        ? ("with \"cuts\": \"smart\", which writes no edit lists", "or set \"cuts\": \"exact\" (copied audio cut by an edit list) or \"keyframe\"")
                        : ("in \(settings.muxer), which has no edit lists", "export to mp4 or mov, or set \"cuts\": \"keyframe\"")
                    throw ExportError("audio policy \"copy\" cannot cut audio to the sample \(why): use \"auto\" or \"reencode\" (the audio is encoded), \(otherwise)")
                }
                handling = "copied"
            case .auto:
                handling = normalizing || mapping.isScaled || cutsInsideAudio || audioCopyProblem(kept) != nil ? "encoded" : "copied"
            }
        }

        let output = try AtomicOutput(finalPath: settings.outputPath)
        output.take(settings, interrupter: interrupter)
        var copier = PassthroughCopier(exporter: self, sources: sources, mapping: mapping, keyframes: keyframes,
                                       audio: handling == "dropped" ? [] : kept, audioHandling: handling, editLists: editLists, smartCutter: smartCutter)
        return try output.write { temporary in
            var report = try copier.write(to: temporary, usedPaths: &usedPaths, started: started)
            report.snappedCuts = snapped
            return report
        }
    }

    /// Why audio policy "copy" and a loudness target cannot go together, and the ways out.
    static let copiedAudioCannotBeNormalized = "copied audio cannot be brought to a loudness target: its samples are not touched. "
        + "Let the audio be encoded (\"policy\": \"auto\" or \"reencode\"), or measure only (\"loudness\": {\"measure\": true})"

    /// True when the composition is one whole source file (nothing is cut).
    private func isWholeFiles(_ sources: [ExportSource]) -> Bool {
        guard composition.segments.count == 1, let s = composition.segments.first, s.sourceRange.start == .zero else { return false }
        guard let duration = (try? sources[0].file)?.container.headerDuration else { return false }  // an unreadable source is reported where it is read
        return duration.isNumeric && !(s.sourceRange.end < duration)
    }

    /// Throws unless every edit can be copied exactly without edit lists: each starts on its keyframe
    /// (or at the very start) of its source. `because` says why the frames before a keyframe cannot be
    /// re-encoded instead.
    private func refuseInexactCuts(_ keyframes: [Keyframe?], because: ExportError) throws {
        for (i, segment) in composition.segments.enumerated() {
            let start = segment.sourceRange.start
            guard let k = keyframes[i], start > .zero, k.pts < start else { continue }
            throw ExportError("edit \(i + 1) starts at \(Composition.seconds(start)) s of \(segment.source), between keyframes (the one before it is at \(Composition.seconds(k.pts)) s): \(because.description)")
        }
    }

    /// The latest keyframe at or before `time` (source time) of the video stream.
    func keyframe(atOrBefore time: MediaTime, in source: ExportSource, video: StreamInfo, until end: MediaTime? = nil) throws -> Keyframe {
        let input = try source.file
        input.discardAll(except: [video.index])
        // `orFirst`: when none is at or before `time` (the video starts after it: WebM with Opus, 14 ms
        // after the file's time zero), the first keyframe read, after the cut, where its pictures start.
        func scan(orFirst: Bool) throws -> Keyframe? {
            var packet = Packet()
            var found: Keyframe?
            var first: Keyframe?
            while try input.read(into: &packet) == .packet {
                guard let pts = packet.pts ?? packet.dts else { continue }
                let s = source.time(pts, in: video)
                let d = packet.dts.map { source.time($0, in: video) } ?? s
                if packet.isKeyframe && !(time < s) { found = Keyframe(pts: s, dts: d) }
                if packet.isKeyframe, first == nil { first = Keyframe(pts: s, dts: d); first?.firstShownDTS = d }
                if found != nil, found?.firstShownDTS == nil, !(s < time), end.map({ s < $0 }) ?? true { found?.firstShownDTS = d }
                if time < d, found != nil || !orFirst || first != nil { break }
            }
            return found ?? (orFirst ? first : nil)
        }
        try input.seek(stream: video.index, toKeyframeBefore: source.ticks(time, in: video))
        if let k = try scan(orFirst: false) { return k }
        // The seek overshot (some demuxers index sparsely): scan from the start.
        try input.seek(stream: video.index, toKeyframeBefore: Int64.min / 2)
        if let k = try scan(orFirst: true) { return k }
        throw MediaFileError(path: source.path, reason: .undecodable(track: video.index, codec: video.codecName, FFmpegError(
            code: FFmpegError.endOfFile.code, operation: nil, detail: "the video track has no keyframe")))
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

    /// Why the kept tracks cannot be copied (nil when they can): a source without the track, a track that
    /// differs from the first source's, or a codec the container cannot hold.
    private func audioCopyProblem(_ kept: [AudioChoice]) -> String? {
        for choice in kept {
            let named = choice.language.map { " in \"\($0)\"" } ?? ""
            guard let a = choice.streams[0] else { return "the first source has no audio\(named)" }
            for (s, b) in zip(composition.segments.map(\.source), choice.streams).dropFirst() {
                guard let b else { return "\(s) has no audio\(named)" }
                if a.codecName != b.codecName || a.sampleRate != b.sampleRate || a.channelCount != b.channelCount || a.extradata != b.extradata {
                    return "the audio\(named) of \(s) differs from that of \(composition.segments[0].source)"
                }
            }
            if !a.passthroughContainers.contains(settings.muxer) && !(settings.muxer == "mov" && a.passthroughContainers.contains("mp4")) {
                return "\(a.codecName) audio cannot be stored in \(settings.muxer)"
            }
        }
        return nil
    }
}
