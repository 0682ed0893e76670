import Foundation
import MediaCore
import MediaTime

/// A package made without encoding, as `ffmpeg -c copy -f hls` makes one: the source's H.264 video and AAC
/// audio, from MP4, MOV, Matroska or MPEG-TS (reframed as MP4 carries them, `TransportFraming`), copied packet
/// for packet into CMAF tracks. Each segment begins at the source keyframe nearest each
/// multiple of the segment duration (chosen from the container's index before anything is written); the
/// audio is cut before its first AAC frame at or after each video cut. A source whose keyframes are further
/// apart than the segment duration is refused before any work, naming its longest GOP.
struct PackageCopier {
    let writer: PackageWriter
    var settings: StreamSettings { writer.settings }

    func run(started: Date) throws -> StreamReport {
        try settings.check()
        let composition = writer.composition
        guard composition.segments.count == 1, let segment = composition.segments.first, segment.sourceRange.start == .zero else {
            throw ExportError("a passthrough package copies one whole source: edits and scaled ranges need its frames encoded (leave out \"mode\")")
        }
        let sources = try ExportSource.open([segment.source], limits: settings.limits, interrupter: writer.interrupter)
        let input = try sources[0].file, path = segment.source
        guard let video = sources[0].video else { throw ExportError("\(path) has no video to package") }
        let transport = input.container.formatName.contains("mpegts")
        guard video.codecName == "h264", transport || video.extradata.first == 1 else {
            throw ExportError("\(path): its video is \(video.codecName)\(video.codecName == "h264" ? " without an avcC record" : ""); "
                              + "a passthrough package copies H.264 from MP4, MOV, Matroska or MPEG-TS only: leave out \"mode\" to encode a ladder")
        }
        let audio = try writer.audioChoices(sources).map { choice -> (name: String, language: String?, stream: StreamInfo) in
            let index = choice.streams[0]?.index ?? choice.format.index
            guard let stream = input.streams.first(where: { $0.index == index }), stream.codecName == "aac" else {
                throw ExportError("\(path): its audio \(choice.language.map { "in \"\($0)\" " } ?? "")is \(choice.format.codecName); a passthrough package copies AAC only: "
                                  + "leave out \"mode\" to encode it")
            }
            return (choice.name, choice.language ?? stream.language, stream)
        }
        // Read before any packet is copied: a language the source lacks, or pictures, refuse the package first.
        let subtitles = try settings.subtitleLanguages.map {
            try SubtitleRendition(language: $0, sources: sources, mapping: composition.timeMapping, limits: settings.limits, interrupter: writer.interrupter)
        }
        let (index, timing, framing) = try videoIndex(input: input, video: video, audio: audio.map(\.stream.index), path: path)
        // An MP4's edit list may hide what comes before the movie's start (a trim without encoding): the copy begins
        // at the first picture shown, which must then be a keyframe. Pictures hidden before one would be shown by
        // players that do not read edit lists (GStreamer's among them), and the first segment would be longer.
        if let shown = index.timestamps.first, shown != index.keyframes.first {
            throw ExportError("\(path): its first picture shown is not a keyframe"
                              + (index.hiddenLeadKeyframe != nil ? " (its edit list starts the movie after one: a trim without encoding)" : "")
                              + ", and a copied package begins at a keyframe: leave out \"mode\" to encode a ladder, or trim it at a keyframe")
        }
        guard let videoCodecs = framing.map({ CodecsName.of("h264", extradata: $0.record) }) ?? video.codecsName else {
            throw ExportError("\(path): its video's avcC record names no profile and level: leave out \"mode\" to encode a ladder")
        }
        // The asset's span begins at its earliest stream (a transport stream's AAC priming frame, presented just
        // before its video); the package's at its video's first picture, what comes before hidden by each edit.
        let earliest = input.streams.map(\.startTime).filter(\.isNumeric).min() ?? video.startTime
        let programme = composition.timeMapping.duration - max(.zero, video.startTime - earliest)
        let cuts = try keyframeCuts(index, video: video, duration: programme, path: path)
        var report = try write(input: input, video: video, codecs: videoCodecs, audio: audio, cuts: cuts, packets: index.entries, timing: timing,
                               framing: framing, programme: programme)
        try writer.addSubtitles(subtitles, to: &report)
        writer.progress(ExportProgress(fraction: 1, phase: "finishing", framesPerSecond: nil, eta: 0))
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// The decode times (video ticks) of the keyframes each segment after the first begins at: the keyframe
    /// nearest each multiple of the segment duration from the first (the first picture shown), while more than
    /// a segment is left. Refuses a source whose longest GOP is longer.
    private func keyframeCuts(_ index: InputFile.StreamIndex, video: StreamInfo, duration: MediaTime, path: String) throws -> Set<Int64> {
        let keyframes = index.keyframes
        guard let first = keyframes.first else { throw ExportError("\(path): its video has no keyframe to begin a segment at") }
        let tb = video.timeBase
        let seconds = { (ticks: Int64) in Double(ticks - first) * Double(tb.numerator) / Double(tb.denominator) }
        let times = keyframes.map(seconds)
        let target = settings.segmentDuration.seconds
        let frame = video.averageFrameRate.map { Double($0.denominator) / Double(max($0.numerator, 1)) } ?? 0
        // The video's own end (its last decode time and a frame), not the composition's: audio that runs on
        // past the video is no gap between keyframes.
        let videoEnd = index.timestamps.max().map { seconds($0) + frame }
        let end = min(duration.seconds, videoEnd ?? duration.seconds)
        var longest = (seconds: 0.0, at: 0.0)
        for (a, b) in zip(times, times.dropFirst() + [end]) where b - a > longest.seconds { longest = (b - a, a) }
        guard longest.seconds <= target + frame / 2 else {
            // The path is text, never a format: a "%" in it is its own.
            throw ExportError("\(path): " + String(format: "its keyframes are up to %.3f s apart (the GOP from %.3f s), longer than the %@ s segments, and a copied "
                                                    + "segment starts at a keyframe: give \"segmentSeconds\" of at least %.0f, or leave out \"mode\" to encode",
                                                    longest.seconds, longest.at, MediaTime.formatSeconds(target), longest.seconds.rounded(.up)))
        }
        var cuts = Set<Int64>(), last = 0
        var nominal = target
        // The rest is one segment once it fits in one: a cut just before the end would leave two short ones.
        while nominal < end - frame / 2, end - times[last] > target + frame / 2 {
            // The keyframe nearest the nominal time, after the last cut.
            var best: Int?
            for i in (last + 1)..<times.count where best == nil || abs(times[i] - nominal) < abs(times[best!] - nominal) { best = i }
            guard let chosen = best else { break }
            cuts.insert(keyframes[chosen])
            last = chosen
            nominal = max(nominal + target, times[chosen] + target / 2)
        }
        return cuts
    }

    /// The video's index (every packet's decode time, its keyframes' in order). An MP4 or MOV holds every one.
    /// A Matroska file or a transport stream is read through once for it (cues may not list every keyframe, and
    /// a transport stream has none), returned with its times: a transport stream's own decode times, Matroska's
    /// made from its presentation times (`DecodeTimes`), as it stores none. A transport stream's framing in
    /// MP4's terms comes with them (its parameter sets as an avcC record, each of `audio`'s AudioSpecificConfig).
    /// Other containers are refused.
    private func videoIndex(input: InputFile, video: StreamInfo, audio: [Int], path: String) throws
        -> (InputFile.StreamIndex, timing: PacketTimes?, framing: TransportSource?) {
        let format = input.container.formatName
        let mp4 = format.contains("mov")
        if mp4, !MP4EditLists.isFragmented(path: path), let index = input.index(of: video.index), index.covers(video) {
            guard !index.keyframes.isEmpty else {
                throw ExportError("\(path): its index lists no keyframe of its video: remux it (ffmpeg -c copy), or leave out \"mode\" to encode a ladder")
            }
            return (index, nil, nil)
        }
        // A fragmented MP4's index holds the fragments read so far (with a `sidx`, the first one only): it is
        // read through, as a container without an index is, its decode times as stored.
        let transport = format.contains("mpegts"), storesDecodeTimes = transport || mp4
        guard format.contains("matroska") || transport || mp4 else {
            throw ExportError("\(path): a passthrough package copies from MP4, MOV, Matroska or MPEG-TS (this is \(format)): remux it to MP4 (ffmpeg -c copy), "
                              + "or leave out \"mode\" to encode a ladder")
        }
        let scan = try InputFile(path: path, limits: settings.limits, interrupter: writer.interrupter)
        scan.discardAll(except: Set([video.index] + (transport ? audio : [])))
        var presentation: [Int64] = [], stored: [Int64] = [], keys: [Bool] = []
        var record = transport ? TransportFraming.avcC(annexB: video.extradata) : nil
        var configs: [Int: [UInt8]] = [:]
        var packet = Packet()
        while try scan.read(into: &packet) == .packet {
            if transport, packet.streamIndex != video.index {
                // Every frame ADTS of one configuration, checked before the copy begins.
                guard let header = packet.withBytes(TransportFraming.ADTSHeader.init), configs[packet.streamIndex].map({ $0 == header.config }) ?? true else {
                    throw ExportError("\(path): its AAC in stream \(packet.streamIndex) is not in single-block ADTS frames of one configuration with a channel "
                                      + "configuration (frame at \(String(format: "%.3f", MediaTime(count: packet.pts ?? 0, timeBase: input.streams[packet.streamIndex].timeBase).seconds)) s): "
                                      + "leave out \"mode\" to encode it")
                }
                configs[packet.streamIndex] = header.config
                continue
            }
            guard packet.streamIndex == video.index else { continue }
            // What an MP4's edit list hides before its first picture shown (a trim without encoding) is not
            // indexed: the copy leaves it out.
            if packet.isDiscarded, presentation.isEmpty { continue }
            guard let pts = packet.pts, !storesDecodeTimes || packet.dts != nil else {
                throw ExportError("\(path): its video packet \(presentation.count + 1) has no time: remux it to MP4 (ffmpeg -c copy), or leave out \"mode\" to encode")
            }
            var key = packet.isKeyframe
            if storesDecodeTimes { stored.append(packet.dts!) }
            if transport {
                if record == nil, packet.isKeyframe { record = packet.withBytes { TransportFraming.avcC(annexB: Array($0)) } }
                // A recovery point's I picture, which a transport stream flags too, is no place to cut: only IDR
                // pictures are; and every picture reframes under the one record, before the copy begins.
                key = key && packet.withBytes(TransportFraming.holdsIDR)
                if let record, packet.withBytes({ TransportFraming.sample(annexB: $0, record: record) }) == nil {
                    throw ExportError("\(path): its video's parameter sets change, or a packet holds no picture, at "
                                      + "\(String(format: "%.3f", (MediaTime(count: pts, timeBase: video.timeBase) - video.startTime).seconds)) s, and a copied "
                                      + "track has one format: leave out \"mode\" to encode a ladder")
                }
            }
            presentation.append(pts)
            keys.append(key)
            if presentation.count % 4096 == 0 {
                writer.progress(ExportProgress(fraction: 0, phase: "indexing", framesPerSecond: nil, eta: nil))
                writer.interrupter.progressed()
                if let reason = writer.interrupter.reason { throw MediaFileError.interrupted(path: settings.folder, reason) }
            }
        }
        var framing: TransportSource?
        if transport {
            guard let record else { throw ExportError("\(path): its video carries no sequence and picture parameter sets: leave out \"mode\" to encode a ladder") }
            framing = TransportSource(record: record, audio: configs)
        }
        if storesDecodeTimes, !zip(stored, stored.dropFirst()).allSatisfy({ $0 < $1 }) {
            throw ExportError("\(path): its video's decode times repeat or go back: leave out \"mode\" to encode a ladder")
        }
        guard let decode = storesDecodeTimes ? stored : DecodeTimes.make(presentation) else {
            throw ExportError("\(path): its video's presentation times repeat, or are reordered by more than \(DecodeTimes.deepest) pictures: "
                              + "leave out \"mode\" to encode a ladder")
        }
        var index = InputFile.StreamIndex(entries: decode.count, endOffset: 0, bytes: 0, timestamps: decode)
        index.keyframes = zip(decode, keys).filter(\.1).map(\.0)
        guard !index.keyframes.isEmpty else { throw ExportError("\(path): its video has no keyframe to begin a segment at") }
        return (index, PacketTimes(presentation: presentation, decode: decode), framing)
    }

    /// A transport stream's framing in MP4's terms: its video's avcC record (from its parameter sets), and each
    /// AAC stream's AudioSpecificConfig (from its first ADTS header), by stream index.
    struct TransportSource {
        var record: [UInt8]
        var audio: [Int: [UInt8]]
    }

    /// The video packets' presentation times as indexed, in the order they are read, and the decode times made
    /// from them (a container that stores none).
    struct PacketTimes {
        var presentation: [Int64]
        var decode: [Int64]
    }

    /// `timing`: the video's times when the container stores no decode times.
    private func write(input: InputFile, video: StreamInfo, codecs: String, audio: [(name: String, language: String?, stream: StreamInfo)],
                       cuts: Set<Int64>, packets total: Int, timing: PacketTimes?, framing: TransportSource?, programme duration: MediaTime) throws -> StreamReport {
        let videoTrack = try SegmentedTrack(kind: .video, name: "video-1", settings: settings)
        let videoStream = try videoTrack.file.addStream(copying: video.index, of: input, timeBase: video.timeBase)
        if let framing { try videoTrack.file.setCodecHeader(videoStream, framing.record) }
        try videoTrack.begin(stream: videoStream, codecs: codecs)
        let audioTracks = try audio.map { a -> SegmentedTrack in
            let track = try SegmentedTrack(kind: .audio, name: a.name, settings: settings)
            let stream = try track.file.addStream(copying: a.stream.index, of: input, timeBase: a.stream.timeBase)
            var codecs = a.stream.codecsName
            if let framing {
                guard let config = framing.audio[a.stream.index] else { throw ExportError("\(input.path): its audio stream \(a.stream.index) has no packet to copy") }
                try track.file.setCodecHeader(stream, config)
                codecs = CodecsName.of("aac", extradata: config)
            }
            try track.begin(stream: stream, codecs: codecs ?? "mp4a.40.2")
            return track
        }
        let audioIndex = Dictionary(uniqueKeysWithValues: audio.enumerated().map { ($1.stream.index, $0) })
        let lengthSize = framing != nil ? 4 : NALUnits.lengthSize(codec: "h264", extradata: video.extradata) ?? 4
        // A frame's length in the video's ticks, for the last packet of a container that gives none.
        let frameTicks = video.averageFrameRate.flatMap { MediaTime(value: Int64($0.denominator), timescale: max($0.numerator, 1)).count(in: video.timeBase) } ?? 0
        input.discardAll(except: Set([video.index] + audio.map(\.stream.index)))
        // Times from the video's first presentation; audio waits until the video has been read past it, so that
        // every cut before it is known.
        let zero = video.startTime
        var boundaries: [MediaTime] = [], applied = Array(repeating: 0, count: audio.count)
        var pending: [PacketBox] = []
        var videoRead = MediaTime(value: Int64.min / 4, timescale: 1)
        // Where each audio track's next frame goes, in its samples, when the container's times are coarser than them.
        var nextFrame = [Int64?](repeating: nil, count: audio.count)
        // Audio before the video's first picture is never shown: of what starts before it, only the last frame is
        // copied, when the next follows it without a gap (the frame whose decode the first sound shown overlaps; an
        // MP4's priming frame), held until the next frame shows that it was the last.
        var held = [PacketBox?](repeating: nil, count: audio.count)
        func writeAudio(_ box: PacketBox) throws {
            let i = audioIndex[box.packet.streamIndex]!, stream = audio[i].stream
            if let t = box.packet.pts ?? box.packet.dts, MediaTime(count: t, timeBase: stream.timeBase) < zero {
                held[i] = box
                return
            }
            if let first = held[i] {
                held[i] = nil
                // In Double: a hostile file's times and durations could overflow Int64's arithmetic.
                let frame = first.packet.duration > 0 ? Double(first.packet.duration)
                    : stream.sampleRate > 0 ? Double(stream.frameSize) / Double(stream.sampleRate) / (Double(stream.timeBase.numerator) / Double(stream.timeBase.denominator)) : 0
                if let a = first.packet.pts ?? first.packet.dts, let b = box.packet.pts ?? box.packet.dts, Double(b) - Double(a) <= frame * 1.5 { try copyAudio(first) }
            }
            try copyAudio(box)
        }
        func copyAudio(_ box: PacketBox) throws {
            let i = audioIndex[box.packet.streamIndex]!, stream = audio[i].stream, track = audioTracks[i]
            if let config = framing?.audio[stream.index] {
                // ADTS to a raw frame, under the configuration its headers gave (checked when indexed: this is the file changed since).
                guard let raw = box.packet.withBytes({ data in TransportFraming.ADTSHeader(data).flatMap { $0.config == config ? Array(data[$0.length...]) : nil } }) else {
                    throw ExportError("\(input.path) changed while it was copied: its audio stream \(stream.index) holds a frame that is not the ADTS it held when indexed")
                }
                box.packet.replaceData(with: raw)
            }
            let pts = MediaTime(count: box.packet.pts ?? box.packet.dts ?? 0, timeBase: stream.timeBase) - zero
            while applied[i] < boundaries.count, pts >= boundaries[applied[i]] {
                try track.cut(at: nil)
                applied[i] += 1
            }
            if timing != nil, stream.frameSize > 0, stream.sampleRate > 0 {
                // Matroska's milliseconds (and a transport stream's 90 kHz clock) put an AAC frame 21 or 22 ms after the
                // last, not 1024 samples: each frame follows the last whole (counted in samples), unless the source's
                // time is more than half a frame away from there (a gap), or it gives none.
                let rate = Rational(1, Int32(clamping: stream.sampleRate)), size = Int64(stream.frameSize)
                let given = box.packet.pts.flatMap { (MediaTime(count: $0, timeBase: stream.timeBase) - zero).count(in: rate) }
                let placed = nextFrame[i].flatMap { next in given.map { abs(next - $0) < size / 2 } ?? true ? next : nil } ?? given ?? 0
                nextFrame[i] = placed + size
                let at = { (samples: Int64) in MediaTime(count: samples, timeBase: rate).count(in: track.timeBase) }
                box.packet.retime(pts: at(placed), dts: at(placed), duration: (at(placed + size) ?? 0) - (at(placed) ?? 0), streamIndex: track.stream)
            } else {
                try retime(&box.packet, from: stream.timeBase, zero: zero, into: track)
            }
            try track.write(&box.packet)
        }
        var packet = Packet()
        var count = 0, begun = false
        while try input.read(into: &packet) == .packet {
            if packet.streamIndex == video.index {
                // Pictures an MP4's edit list hides before the first shown, the keyframe the copy begins at (left out
                // of the index too). Those it hides at the end stay: pictures shown before may refer to them.
                if packet.isDiscarded, !begun { continue }
                begun = true
                if let decodeTimes = timing?.decode, let presentation = timing?.presentation {
                    // The file read again holds the packets it held when it was indexed, unless it changed meanwhile.
                    guard count < decodeTimes.count, packet.pts == presentation[count] else {
                        throw ExportError("\(input.path) changed while it was copied: its video packet \(count + 1) is not the one indexed")
                    }
                    let next = count + 1 < decodeTimes.count ? decodeTimes[count + 1] - decodeTimes[count] : nil
                    // From the decode times, not the container's rounded durations (Matroska: 33 ms for 33.3).
                    let duration = next ?? (packet.duration > 0 ? packet.duration : frameTicks)
                    packet.retime(pts: packet.pts, dts: decodeTimes[count], duration: duration, streamIndex: packet.streamIndex)
                }
                let pts = MediaTime(count: packet.pts ?? packet.dts ?? 0, timeBase: video.timeBase) - zero
                if let framing {
                    // Checked when indexed: this is the file changed since.
                    guard let sample = packet.withBytes({ TransportFraming.sample(annexB: $0, record: framing.record) }) else {
                        throw ExportError("\(input.path) changed while it was copied: its video packet \(count + 1) does not reframe as it did when indexed")
                    }
                    packet.replaceData(with: sample)
                }
                if count == 0 || (packet.isKeyframe && packet.dts.map(cuts.contains) == true) {
                    // A sync sample may be an open GOP's I picture (a recovery point): no segment can begin there.
                    guard packet.withBytes({ NALUnits.holdsIDR($0, lengthSize: lengthSize) }) else {
                        throw ExportError("\(input.path): its keyframe at \(String(format: "%.3f", pts.seconds)) s is an I picture of an open GOP, not an IDR "
                                          + "picture, and a copied segment must begin with one: leave out \"mode\" to encode a ladder")
                    }
                    if count > 0 {
                        try videoTrack.cut(at: pts.count(in: videoTrack.timeBase))
                        boundaries.append(pts)
                    }
                }
                videoRead = MediaTime(count: packet.dts ?? packet.pts ?? 0, timeBase: video.timeBase) - zero
                try retime(&packet, from: video.timeBase, zero: zero, into: videoTrack)
                try videoTrack.write(&packet)
                count += 1
                while let box = pending.first, MediaTime(count: box.packet.pts ?? 0, timeBase: input.streams[box.packet.streamIndex].timeBase) - zero < videoRead {
                    try writeAudio(pending.removeFirst())
                }
                if count % 240 == 0 {
                    writer.progress(ExportProgress(fraction: Double(count) / Double(max(total, 1)), phase: "copying", framesPerSecond: nil, eta: nil))
                    writer.interrupter.progressed()
                    if let reason = writer.interrupter.reason { throw MediaFileError.interrupted(path: settings.folder, reason) }
                }
            } else if audioIndex[packet.streamIndex] != nil {
                let box = PacketBox()
                box.packet.take(from: &packet)
                pending.append(box)
            }
        }
        for box in pending { try writeAudio(box) }
        for case let box? in held { try copyAudio(box) }
        if let timing, count != timing.decode.count {
            throw ExportError("\(input.path) changed while it was copied: \(count) video packets read, \(timing.decode.count) when it was indexed")
        }
        try videoTrack.finish()
        for (i, track) in audioTracks.enumerated() {
            try track.finish()
            // A track the container declares but that holds no frame would be a rendition without segments.
            guard !track.segments.isEmpty else {
                throw ExportError("\(input.path): its audio stream \(audio[i].stream.index)\(audio[i].language.map { " (\"\($0)\")" } ?? "") holds no sound to copy: "
                                  + "leave out \"mode\" to encode it (as silence), or give \"audio\": {\"tracks\": \"none\"} for a package of video only")
            }
        }
        var tracks = [videoTrack.report(width: video.width, height: video.height, frameRate: video.averageFrameRate)]
        for (i, track) in audioTracks.enumerated() {
            tracks.append(track.report(sampleRate: audio[i].stream.sampleRate, channels: audio[i].stream.channelCount, language: audio[i].language))
        }
        let longest = videoTrack.segments.map(\.duration).max() ?? 0
        return StreamReport(duration: duration, segmentDuration: MediaTime(count: longest, timeBase: videoTrack.timeBase), tracks: tracks,
                            framesDecoded: 0, seconds: 0, sourcePicture: StreamReport.Picture(width: video.width, height: video.height, quarterTurns: 0))
    }

    /// A copied packet's times from the source's time base, less `zero`, in the track's.
    private func retime(_ packet: inout Packet, from tb: Rational, zero: MediaTime, into track: SegmentedTrack) throws {
        let out = track.timeBase
        func moved(_ t: Int64?) -> Int64? { t.flatMap { (MediaTime(count: $0, timeBase: tb) - zero).count(in: out) } }
        let duration = MediaTime(count: packet.duration, timeBase: tb).count(in: out) ?? 0
        packet.retime(pts: moved(packet.pts), dts: moved(packet.dts), duration: duration, streamIndex: track.stream)
    }
}
