import Foundation
import MediaCore
import MediaTime

/// The packet copying of a passthrough export (see `PassthroughExporter`): reads each segment's
/// packets, retimes them through the mapping and writes them, keeping per output track the running
/// timeline and, when cuts are exact, the edit list that hides what is only there to be decoded.
/// Thread-confined.
struct PassthroughCopier {
    let exporter: PassthroughExporter
    let sources: [ExportSource]
    let mapping: TimeMapping
    let keyframes: [PassthroughExporter.Keyframe?]
    /// The audio tracks kept, each copied or encoded as `audioHandling` says ("copied", "encoded").
    let audio: [AudioChoice]
    let audioHandling: String
    /// Edit lists hide what is copied only to be decoded (MP4/QuickTime); otherwise packets are placed
    /// at their mapped times and what precedes a cut or follows its end is not copied.
    let editLists: Bool
    /// Exact cuts without edit lists (Matroska, `cuts: smart`): the frames before a keyframe are re-encoded.
    var smartCutter: SmartCutter?

    private var settings: ExportSettings { exporter.settings }
    private var interrupter: Interrupter { exporter.interrupter }

    /// One output track's timeline across edits, in its own time base.
    private struct Track {
        let index: Int
        var timeBase: Rational
        var firstDTS: Int64?
        var lastDTS: Int64?
        /// The latest presentation end written (pts + duration), in output time.
        var end: MediaTime?
        var times = MonotonicTimestamps()
        /// The current edit's placement after the previous edits' media, in ticks.
        var shift: Int64 = 0
        var entries: [EditListEntry] = []
        var packets = 0

        init(index: Int, timeBase: Rational) { self.index = index; self.timeBase = timeBase }

        /// Writes a packet at output times `pts`/`dts` (ticks, before the shift) lasting `duration` ticks.
        mutating func write(_ packet: inout Packet, pts: Int64, dts: Int64, duration: Int64, to file: OutputFile) throws {
            let fixed = times.fix(pts: pts + shift, dts: dts + shift)
            packet.retime(pts: fixed.pts, dts: fixed.dts, duration: duration, streamIndex: index)
            try file.write(&packet)
            if firstDTS == nil { firstDTS = fixed.dts }
            lastDTS = fixed.dts
            let e = MediaTime(count: fixed.pts + max(duration, 1), timeBase: timeBase)
            end = end.map { MediaTime.max($0, e) } ?? e
            packets += 1
        }

        /// The entry that plays target range [start, start + duration) of the current edit.
        mutating func addEntry(start: MediaTime, duration: MediaTime) {
            let media = (start.count(in: timeBase) ?? 0) + shift - (firstDTS ?? 0)
            let entry = EditListEntry(duration: duration, mediaTime: MediaTime(count: media, timeBase: timeBase))
            // An edit that continues the previous one's media extends it.
            if let last = entries.last, let lastMedia = last.mediaTime, lastMedia + last.duration == entry.mediaTime! {
                entries[entries.count - 1].duration = last.duration + duration
            } else {
                entries.append(entry)
            }
        }
    }

    /// The output being written: its file, its tracks, the audio rendered into it, and where the next
    /// edit's packets go.
    private struct Output {
        let file: OutputFile
        let chapters: Int
        var video: Track?
        /// The copied audio tracks, in the kept tracks' order.
        var audio: [Track]
        /// The encoded audio tracks, in the kept tracks' order.
        let rendered: [RenderedAudioWriter]
        /// Per segment, how much earlier its decoding times are written (see `open`).
        let leads: [MediaTime]
        /// The placement of the current edit after everything already written, in output time.
        var shift = MediaTime.zero
        let clock = Date()
    }

    /// One edit being copied: its source range, its place in the output, and what it has written so far.
    private struct Edit {
        let segment: Int
        let source: ExportSource
        let mapping: TimeMapping
        /// The keyframe decoding starts from, when edit lists hide what precedes the cut.
        let key: PassthroughExporter.Keyframe?
        let start: MediaTime, end: MediaTime
        let targetStart: MediaTime, targetDuration: MediaTime
        /// How much later than the cut the source's video starts (moved earlier to show from the edit's start).
        let late: MediaTime
        /// How much earlier this edit's decoding times are written.
        let lead: MediaTime
        let snapped: Bool
        var cut: ExportReport.Cut
        var firstVideoPacket = true
        var firstOfEdit = true
        /// Audio copied outside the edit, hidden by its entry.
        var audioTrimmed = false

        func target(_ s: MediaTime) -> MediaTime { mapping.targetTime(segment: segment, source: s) ?? .zero }
    }

    /// Writes the export: the output opened, each edit copied in turn, then finished and reported.
    mutating func write(to temporary: String, usedPaths: inout Set<String>, started: Date) throws -> ExportReport {
        var output = try open(temporary)
        var cuts: [ExportReport.Cut] = []
        cuts.reserveCapacity(sources.count)
        let closing = ExportSource.closesBetweenUses(sources)
        for segment in sources.indices {
            let source = sources[segment]
            defer {
                if closing, segment + 1 == sources.count || sources[segment + 1] !== source {
                    source.release()
                    usedPaths.remove(source.path)
                }
            }
            if let cut = try copy(segment: segment, into: &output, usedPaths: &usedPaths) { cuts.append(cut) }
        }
        for track in output.rendered { try track.write(until: nil) }
        progress(fraction: 1, phase: "finishing")
        // With edit lists the file is rewritten (and synced) once more: no sync now.
        try output.file.finish(sync: !editLists)
        if editLists {
            var lists: [UInt32: [EditListEntry]] = [:]
            for track in [output.video].compactMap({ $0 }) + output.audio { lists[UInt32(track.index + 1)] = track.entries }
            try MP4EditLists.rewrite(path: temporary, lists: lists, faststart: settings.faststart)
        }
        let audio = try audioReports(output)
        return ExportReport(
            mode: .passthrough, output: settings.outputPath, container: settings.muxer, duration: mapping.duration,
            video: sources[0].video.map { .init(codec: $0.codecName, frames: output.video?.packets ?? 0, framesDecoded: 0, frameDuration: nil,
                                                width: $0.width, height: $0.height) },
            audio: audio.first, additionalAudio: audio.more, snappedCuts: [], cuts: cuts, chapters: output.chapters, seconds: Date().timeIntervalSince(started))
    }

    /// The output file with its tracks added and its header written.
    private func open(_ temporary: String) throws -> Output {
        let file = try OutputFile(path: temporary, format: settings.muxer)
        let first = try sources[0].file
        var videoTrack: Track?
        var headerOptions: [String: String] = [:]
        if let video = sources[0].video {
            let tb = outputTimeBase(video.timeBase, mapping: mapping, ending: editLists ? nil : mapping.duration)
            videoTrack = Track(index: try file.addStream(copying: video.index, of: first, timeBase: tb), timeBase: tb)
            // Edit durations are in the movie's timescale: make it the video track's, as the muxer
            // will choose it (at least 10,000 Hz), so that cuts on frame times stay exact.
            var scale = Int(tb.denominator)
            while scale < 10_000 { scale *= 2 }
            headerOptions["movie_timescale"] = String(scale)
        }
        var audioTracks: [Track] = []
        var rendered: [RenderedAudioWriter] = []
        if audioHandling == "copied" {
            // One output track per kept track, in order (each is the first source's: `audioCopyProblem` refuses copying otherwise).
            for (j, choice) in audio.enumerated() {
                guard let stream = choice.streams[0] else { throw ExportError("\(sources[0].path) has no audio track \(j + 1) to copy") }
                let index = try file.addStream(copying: stream.index, of: first, timeBase: stream.timeBase)
                file.setDefault(index, j == 0)  // the first kept track is the one players choose, whatever the source flagged
                audioTracks.append(Track(index: index, timeBase: stream.timeBase))
            }
            if videoTrack == nil, let audio = self.audio.first?.format, audio.sampleRate > 0 { headerOptions["movie_timescale"] = String(audio.sampleRate) }
        } else if audioHandling == "encoded" {
            rendered = try RenderedAudioWriter.tracks(audio, mapping: mapping, sources: sources, totalDuration: mapping.duration,
                                                      file: file, settings: settings, interrupter: interrupter, progress: exporter.progress)
            // Each encoded track's edit (its priming hidden) lasts the composition to the sample: a timescale the
            // video's and each track's sample rate divide, taking the tracks in order while one is small enough.
            if let movie = headerOptions["movie_timescale"].flatMap(Int.init) {
                let scale = rendered.map(\.renderer.sampleRate).filter { $0 > 0 }.reduce(Int64(movie)) { scale, rate in
                    let both = lcm(scale, Int64(rate))
                    return both <= 1_000_000 ? both : scale
                }
                headerOptions["movie_timescale"] = String(scale)
            }
        }
        if !["mp4", "mov"].contains(settings.muxer) { headerOptions = [:] }
        if editLists && settings.faststart {
            // Space for the index at the front, so that it need not be moved there afterwards (a pass
            // over the whole file): what the muxer's index takes, and the edit lists, with room to spare.
            headerOptions["moov_size"] = String(reservedIndexSize())
        }
        // With edit lists the movie box is rewritten at the end, and moved to the front then if asked.
        let chapters = try file.writeHeader(sources: sources, mapping: mapping, settings: settings,
                                            options: headerOptions, faststart: settings.faststart && !editLists)
        if videoTrack != nil { videoTrack!.timeBase = file.timeBase(of: videoTrack!.index) }
        for j in audioTracks.indices { audioTracks[j].timeBase = file.timeBase(of: audioTracks[j].index) }

        // Readers that honour multi-entry edit lists by re-deriving decoding times (FFmpeg's) place an
        // edit's frames right only when, in every edit, the first packet shown has its decoding time
        // the same distance before the edit's first presentation time. Give every edit the largest
        // distance found, by moving the decoding times of the edits with less earlier (presentation
        // times are kept; decoding order, and so the stream, is unchanged).
        let decodeLeads = self.decodeLeads
        let reorder = decodeLeads.compactMap { $0 }.max() ?? .zero
        return Output(file: file, chapters: chapters, video: videoTrack, audio: audioTracks, rendered: rendered,
                      leads: decodeLeads.map { $0.map { reorder - $0 } ?? .zero })
    }

    /// One edit's source range and place; nil for a segment the mapping gives no time.
    private func edit(_ segment: Int, lead: MediaTime) -> Edit? {
        let own = mapping.pieces(of: segment)
        guard let firstPiece = own.first, let lastPiece = own.last else { return nil }
        let start = firstPiece.source.start
        // A source whose video starts after the cut (WebM with Opus: 14 ms after the file's time
        // zero) has its first frame shown from the edit's start, as a composition shows it (and
        // with no empty edit, which FFmpeg honours only at a file's start): it is moved earlier.
        let late = keyframes[segment].map { $0.pts > start ? $0.pts - start : .zero } ?? .zero
        let snapped = exporter.settings.cuts == .keyframe && keyframes[segment].map { $0.pts < composition(segment).start } == true
        return Edit(segment: segment, source: sources[segment], mapping: mapping, key: editLists ? keyframes[segment] : nil,
                    start: start, end: lastPiece.source.end,
                    targetStart: firstPiece.target.start, targetDuration: lastPiece.target.end - firstPiece.target.start,
                    late: late, lead: lead, snapped: snapped,
                    cut: ExportReport.Cut(segment: segment, method: snapped ? .snapped : .copied,
                                          start: composition(segment).start, end: composition(segment).end,
                                          decodeFrom: keyframes[segment]?.pts, hiddenFrames: 0))
    }

    /// Copies one edit's packets (or smart-cuts it); its cut, or nil when it has nothing to copy.
    private mutating func copy(segment: Int, into output: inout Output, usedPaths: inout Set<String>) throws -> ExportReport.Cut? {
        guard var edit = edit(segment, lead: output.leads[segment]) else { return nil }
        if editLists { place(edit, in: &output) }
        guard let input = try input(for: edit, copyingAudio: !output.audio.isEmpty, usedPaths: &usedPaths) else { return nil }
        let source = edit.source
        if var cutter = smartCutter, output.audio.isEmpty, let v = source.video, let k = keyframes[segment] {
            let r: SmartCutter.Result
            do {
                r = try cutter.cut(input: input, source: source, key: k, start: edit.start, end: edit.end) { packet in
                    try writeVideo(&packet, v, edit: &edit, into: &output)
                }
            } catch let error as ExportError {
                throw ExportError("edit \(segment + 1) (\(Composition.seconds(edit.start)) s of \(source.path)): \(error.description)")
            }
            smartCutter = cutter
            edit.cut.method = r.reencoded > 0 ? .smartRendered : .copied
            edit.cut.reencodedFrames = r.reencoded
            return edit.cut
        }
        try copyPackets(from: input, edit: &edit, into: &output)
        if editLists {
            output.video?.addEntry(start: edit.targetStart, duration: edit.targetDuration)
            for j in output.audio.indices { output.audio[j].addEntry(start: edit.targetStart, duration: edit.targetDuration) }
            if (edit.cut.hiddenFrames > 0 || edit.audioTrimmed) && !edit.snapped { edit.cut.method = .editList }
        }
        return edit.cut
    }

    /// With edit lists: this edit's packets go after everything already written, in every track.
    private func place(_ edit: Edit, in output: inout Output) {
        if let key = edit.key, let v = output.video {
            if let end = v.end { output.shift = MediaTime.max(output.shift, end - edit.target(key.pts - edit.late)) }
            let lastDTS = v.lastDTS.map { MediaTime(count: $0 + 1, timeBase: v.timeBase) } ?? .zero
            output.shift = MediaTime.max(output.shift, lastDTS - (edit.target(key.dts - edit.late) - edit.lead))
        }
        for (a, choice) in zip(output.audio, audio) {
            guard let stream = choice.streams[edit.segment] else { continue }
            // The audio's pre-roll starts at most two packets before the cut.
            let packet = MediaTime(value: Int64(max(stream.frameSize, 2048)), timescale: Int32(max(stream.sampleRate, 1)))
            let earliest = edit.target(edit.start) - packet.multiplied(by: 2)
            output.shift = MediaTime.max(output.shift, (a.end ?? .zero) - earliest)
        }
        if output.video != nil { output.video!.shift = output.shift.count(in: output.video!.timeBase, rounding: .up) ?? 0 }
        for j in output.audio.indices { output.audio[j].shift = output.shift.count(in: output.audio[j].timeBase, rounding: .up) ?? 0 }
    }

    /// The edit's source, read from where its packets start; nil when it has no stream the output takes.
    /// Each source's file is opened once and shared by its segments. A segment of a file already read
    /// seeks in it; one that starts near the beginning reads from a fresh opening instead (seeking back
    /// to the very start is unreliable in some containers), released after it.
    private func input(for edit: Edit, copyingAudio: Bool, usedPaths: inout Set<String>) throws -> InputFile? {
        let source = edit.source
        // Where reading starts. With a keyframe found by seeking to the cut (`keyframe(atOrBefore:)`),
        // a seek to a little before the cut (the audio's lead-in) lands on it or earlier; otherwise
        // two seconds earlier, as some demuxers seek imprecisely.
        let readFrom = edit.key == nil ? edit.start : edit.start - MediaTime(value: 1, timescale: 4)
        let used = usedPaths.contains(source.path)
        let nearStart = !(readFrom > MediaTime(value: 2, timescale: 1))
        let input = used && nearStart ? try InputFile(path: source.path, limits: settings.limits, interrupter: interrupter) : try source.file
        usedPaths.insert(source.path)
        var wanted: Set<Int> = []
        if let v = source.video { wanted.insert(v.index) }
        let audioStreams = copyingAudio ? audio.compactMap { $0.streams[edit.segment] } : []
        wanted.formUnion(audioStreams.map(\.index))
        guard !wanted.isEmpty else { return nil }
        input.discardAll(except: wanted)
        if !nearStart {
            let seekStream = source.video ?? audioStreams[0]
            let from = MediaTime.max(edit.key == nil ? readFrom - MediaTime(value: 2, timescale: 1) : readFrom, MediaTime(value: -1, timescale: 1))
            try input.seek(stream: seekStream.index, toKeyframeBefore: source.ticks(from, in: seekStream))
        }
        return input
    }

    /// Reads the edit's packets and writes those it keeps, until both its streams pass its end.
    private func copyPackets(from input: InputFile, edit: inout Edit, into output: inout Output) throws {
        let source = edit.source
        var videoDone = source.video == nil
        // Per copied audio track: this edit's stream of it, whether it has passed the edit's end, and the
        // packet before the first one that overlaps the edit (its pre-roll).
        let audioStreams = output.audio.isEmpty ? [] : audio.map { $0.streams[edit.segment] }
        var audioDone = audioStreams.map { $0 == nil }
        var audioPreroll = [PacketBox?](repeating: nil, count: audioStreams.count)
        var videoStarted = false
        // Video packets past the edit's end kept until a packet shown before the end needs them.
        var heldVideo: [PacketBox] = []
        var packet = Packet()
        while !(videoDone && !audioDone.contains(false)) {
            guard try input.read(into: &packet) == .packet else { break }
            if packet.isEncrypted {
                throw MediaFileError(path: source.path, reason: .protectedContent(track: packet.streamIndex))
            }
            if let v = source.video, packet.streamIndex == v.index, output.video != nil {
                guard let rawPTS = packet.pts ?? packet.dts else { continue }
                let s = source.time(rawPTS, in: v)
                let sd = packet.dts.map { source.time($0, in: v) } ?? s
                if !(sd < edit.end) { videoDone = true }
                if let key = edit.key {
                    // Decode order from the keyframe; whatever is shown before the end, and what it
                    // references after the end (B-frames), hidden outside the edit by its entry.
                    if !videoStarted { guard !(sd < key.dts) else { continue }; videoStarted = true }
                    if videoDone { continue }
                    if !(s < edit.end) {
                        let box = PacketBox()
                        box.packet.take(from: &packet)
                        heldVideo.append(box)
                        continue
                    }
                    for box in heldVideo { try writeVideo(&box.packet, v, edit: &edit, into: &output) }
                    heldVideo.removeAll()
                    try writeVideo(&packet, v, edit: &edit, into: &output)
                } else {
                    guard !(s < edit.start), s < edit.end else { continue }
                    try writeVideo(&packet, v, edit: &edit, into: &output)
                }
            } else if let j = audioStreams.firstIndex(where: { $0?.index == packet.streamIndex }), let a = audioStreams[j] {
                guard let rawPTS = packet.pts ?? packet.dts else { continue }
                let s = source.time(rawPTS, in: a)
                if !(s < edit.end) { audioDone[j] = true; continue }
                if editLists {
                    let end = s + MediaTime(count: max(packet.duration, 1), timeBase: a.timeBase)
                    if !(edit.start < end) {
                        let box = audioPreroll[j] ?? PacketBox()
                        box.packet.take(from: &packet)
                        audioPreroll[j] = box
                        continue
                    }
                    if let box = audioPreroll[j] { try writeAudio(&box.packet, a, track: j, edit: &edit, into: &output); audioPreroll[j] = nil }
                    try writeAudio(&packet, a, track: j, edit: &edit, into: &output)
                } else {
                    // Encoder priming (packets an edit list discards) is kept at the very start of the
                    // output, where the muxer can discard it again with an edit list of its own.
                    let priming = packet.isDiscarded && edit.segment == 0 && edit.start == .zero
                    guard !(s < edit.start) || priming, !packet.isDiscarded || priming else { continue }
                    try writeAudio(&packet, a, track: j, edit: &edit, into: &output)
                }
            }
        }
    }

    /// Writes one video packet of the edit at its output time.
    private func writeVideo(_ packet: inout Packet, _ v: StreamInfo, edit: inout Edit, into output: inout Output) throws {
        guard let rawPTS = packet.pts ?? packet.dts else { return }
        if edit.firstVideoPacket, edit.segment > 0, editLists, let lengthSize = hevcLengthSize {
            // An open-GOP keyframe (CRA) after another edit's frames becomes a broken-link
            // picture (BLA), as splicers do: decoders start a new sequence there, skip its
            // leading pictures that reference the previous GOP (hidden anyway) and still output
            // the previous edit's last frames (a CRA starting a sequence would drop them).
            packet.withMutableData { NALUnits.markBrokenLinks($0, lengthSize: lengthSize) }
        }
        edit.firstVideoPacket = false
        let s = edit.source.time(rawPTS, in: v)
        let sd = packet.dts.map { edit.source.time($0, in: v) } ?? s
        var t = edit.target(s), td = edit.target(sd) - edit.lead
        if edit.late > .zero, edit.firstOfEdit {
            // (The keyframe: the first packet, and the first shown, of a source's video.)
            t = edit.target(s - edit.late)
            td = edit.target(sd - edit.late) - edit.lead
        } else if smartCutter != nil, output.video!.packets == 0, t > .zero {
            // Without edit lists the output's first frame is shown from its start (never an
            // empty edit, which some readers ignore).
            td = td - t
            t = .zero
        }
        edit.firstOfEdit = false
        for track in output.rendered { try track.write(until: t + output.shift) }
        let tb = output.video!.timeBase
        let rate = mapping.rate(segment: edit.segment, source: s)
        var duration = MediaTime(count: packet.duration, timeBase: v.timeBase).multiplied(by: rate.inverted)
        // Without edit lists a frame is shown at most until its edit ends (the last one sets the
        // track's duration).
        if !editLists { duration = MediaTime.max(.zero, MediaTime.min(duration, edit.targetStart + edit.targetDuration - t)) }
        if s < edit.start || !(s < edit.end) { edit.cut.hiddenFrames += 1 }
        try output.video!.write(&packet, pts: t.count(in: tb) ?? 0, dts: td.count(in: tb) ?? 0,
                                duration: duration.count(in: tb) ?? 0, to: output.file)
        if output.video!.packets % 64 == 0 { report(t, total: mapping.duration, frames: output.video!.packets, since: output.clock) }
    }

    /// Writes one audio packet of the edit at its output time, in copied track `j`.
    private func writeAudio(_ packet: inout Packet, _ a: StreamInfo, track j: Int, edit: inout Edit, into output: inout Output) throws {
        guard let rawPTS = packet.pts ?? packet.dts else { return }
        let s = edit.source.time(rawPTS, in: a)
        if s < edit.start || edit.end < s + MediaTime(count: packet.duration, timeBase: a.timeBase) { edit.audioTrimmed = true }
        let tb = output.audio[j].timeBase
        let ticks = edit.target(s).count(in: tb) ?? 0
        let duration = MediaTime(count: packet.duration, timeBase: a.timeBase).count(in: tb) ?? 0
        try output.audio[j].write(&packet, pts: ticks, dts: ticks, duration: duration, to: output.file)
    }

    /// The audio's part of the report, per kept track: what was rendered, or what was copied (with its
    /// loudness measured when asked).
    private func audioReports(_ output: Output) throws -> (first: ExportReport.Audio, more: [ExportReport.Audio]?) {
        if !output.rendered.isEmpty || audio.isEmpty { return RenderedAudioWriter.reports(output.rendered, sources: sources) }
        var reports: [ExportReport.Audio] = []
        for (j, choice) in audio.enumerated() {
            let a = choice.streams[0]
            let copied = audioHandling == "copied"
            var report = ExportReport.Audio(handling: audioHandling, language: choice.format.knownLanguage, codec: copied ? a?.codecName : nil,
                                            sampleRate: copied ? a?.sampleRate : nil, channels: copied ? a?.channelCount : nil, samples: nil,
                                            packets: copied ? output.audio[j].packets : 0, pieces: nil, decodeErrors: nil)
            if copied, let goal = settings.loudness, let a {
                // Measure only (a target was refused for copied audio): the composition's audio, decoded.
                let decoded = CompositionAudio(mapping: mapping, sources: zip(sources, choice.indexes).map { .init(path: $0.path, streamIndex: $1) },
                                               sampleRate: a.sampleRate, channels: min(max(a.channelCount, 1), 8), algorithm: settings.timePitch,
                                               totalDuration: mapping.duration, limits: settings.limits, interrupter: exporter.interrupter)
                progress(fraction: 1, phase: "measuring loudness")
                report.loudness = LoudnessDelivery(measuredOnly: goal, before: try decoded.measure(), after: nil)
            }
            reports.append(report)
        }
        return (reports[0], reports.count > 1 ? Array(reports.dropFirst()) : nil)
    }

    /// The NAL unit length size of HEVC video in MP4/QuickTime framing (from its hvcC record); nil
    /// for other codecs.
    private var hevcLengthSize: Int? {
        guard let v = sources[0].video, v.codecName == "hevc" else { return nil }
        return NALUnits.lengthSize(codec: v.codecName, extradata: v.extradata)
    }

    /// Bytes to reserve for the movie box of an edit-listed MP4: about 40 bytes per packet (sample
    /// size, time, composition offset, chunk offset, sync sample) for the packets the edits will copy,
    /// lead-ins included, doubled, plus each track's edit list and headers. Zero (no reservation, the
    /// index is moved afterwards) when that would pass 64 MB.
    private func reservedIndexSize() -> Int {
        var seconds = 0.0
        for (segment, edit) in exporter.composition.segments.enumerated() {
            let lead = keyframes[segment].map { max(edit.sourceRange.start.seconds - $0.pts.seconds, 0) } ?? 0
            seconds += edit.sourceRange.duration.seconds + lead + 1
        }
        var rate = 0.0
        if let v = sources[0].video { rate += v.averageFrameRate?.doubleValue ?? 60 }
        for a in audio.map(\.format) where audioHandling != "none" && audioHandling != "dropped" {
            rate += Double(a.sampleRate) / Double(max(a.frameSize, 1024)) + 1
        }
        let bytes = 2 * 40 * seconds * max(rate, 1) + Double(sources.count * 2 * 24) + 65_536
        return bytes > 64 * 1024 * 1024 ? 0 : Int(bytes)
    }

    /// Per segment, in output time: how long before the edit's first presentation time the first
    /// packet shown is decoded (nil without edit lists, video or a known such packet).
    private var decodeLeads: [MediaTime?] {
        sources.indices.map { segment in
            guard editLists, let key = keyframes[segment], let first = key.firstShownDTS,
                  let own = mapping.pieces(of: segment).first,
                  let t = mapping.targetTime(segment: segment, source: first) else { return nil }
            return MediaTime.max(own.target.start - t, .zero)
        }
    }

    /// The requested source range of a segment.
    private func composition(_ segment: Int) -> TimeRange { exporter.composition.segments[segment].sourceRange }

    private func progress(fraction: Double, phase: String) {
        exporter.progress(ExportProgress(fraction: fraction, phase: phase, framesPerSecond: nil, eta: 0))
    }

    private func report(_ t: MediaTime, total: MediaTime, frames: Int, since clock: Date) {
        let fraction = total > .zero ? min(max(t.seconds / total.seconds, 0), 1) : 0
        let elapsed = Date().timeIntervalSince(clock)
        let fps = elapsed > 0 ? Double(frames) / elapsed : nil
        let eta = fraction > 0.01 ? elapsed / fraction * (1 - fraction) : nil
        exporter.progress(ExportProgress(fraction: fraction, phase: "copying", framesPerSecond: fps, eta: eta))
    }

    /// A time base in which every retimed timestamp is exact: the source's, divided by the numerators
    /// of the scaled rates (when that still fits 32 bits).
    /// Without edit lists (`ending`), also one in which the composition's end lies on a tick, for the
    /// last frame to end there, when it stays small (a millisecond source cut on 1/30 s: 1/3000).
    private func outputTimeBase(_ source: Rational, mapping: TimeMapping, ending: MediaTime?) -> Rational {
        var factor: Int64 = 1
        for r in mapping.rates where r.numerator > 1 {
            factor = lcm(factor, Int64(r.numerator))
            if factor > 1 << 20 { return source }
        }
        let den = Int64(source.denominator) * factor
        guard den <= Int64(Int32.max) else { return source }
        if source.numerator == 1, let end = ending?.reduced, end.timescale > 0 {
            let both = lcm(den, Int64(end.timescale))
            if both <= 1 << 20 { return Rational(1, Int32(both)) }
        }
        return Rational(source.numerator, Int32(den))
    }

    private func lcm(_ a: Int64, _ b: Int64) -> Int64 {
        var x = a, y = b
        while y != 0 { (x, y) = (y, x % y) }
        return a / x * b
    }
}
