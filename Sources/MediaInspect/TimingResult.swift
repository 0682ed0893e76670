import MediaCore
import MediaTime

/// Timing measured from packets: the `.timing` stage.
struct TimingResult: Sendable {
    enum Source: String, Sendable, Codable {
        /// Every packet's timestamps were read.
        case measured
        /// MP4/MOV: the complete sample index, checked against the header and the file size, gave the
        /// timing without reading the media data.
        case index
        /// The container header's durations were used (large file with plausible header).
        case header
    }

    struct Track: Sendable {
        var timeRange: TimeRange = .invalid
        var packetCount: Int = 0
        var byteCount: Int64 = 0
        /// Smallest positive interval between consecutive presentation times (video only).
        var minFrameDuration: MediaTime = .invalid
    }

    var source: Source
    var tracks: [Int: Track]
    /// Set when a full scan found the media ending well before the header's durations.
    var truncation: MediaFileError?

    /// Span from the earliest track start to the latest track end; `.invalid` when nothing is known.
    var duration: MediaTime {
        let ranges = tracks.values.map(\.timeRange).filter(\.isValid)
        guard let first = ranges.first else { return .invalid }
        let span = ranges.dropFirst().reduce(first) { $0.union($1) }
        return span.duration
    }
}

extension TimingResult {
    /// Measures `file`: every packet when the file is small enough or its header cannot be trusted,
    /// otherwise header durations plus a bounded scan of the first packets.
    static func measure(_ file: InputFile, probe: ProbeResult, options: AssetOptions) throws(MediaFileError) -> TimingResult {
        let result: TimingResult
        if let indexed = fromIndex(file, probe: probe) { result = indexed } else { result = try scanned(file, probe: probe, options: options) }
        let duration = result.duration
        if duration.isNumeric, duration > file.limits.maxDuration {
            throw MediaFileError(path: file.path, reason: .tooLong(duration: duration, limit: file.limits.maxDuration))
        }
        return result
    }

    /// Timing from packets: all of them, or header durations plus the first packets of a large file.
    private static func scanned(_ file: InputFile, probe: ProbeResult, options: AssetOptions) throws(MediaFileError) -> TimingResult {
        let full = file.container.fileSize <= options.fullScanLimitBytes || !headerIsPlausible(probe)
        var result = try scan(file, probe: probe, packetLimit: full ? nil : options.prefixScanPackets)
        if !full {
            result.source = .header
            for s in probe.timedStreams {
                guard s.startTime.isNumeric, s.headerDuration.isNumeric else { continue }
                var t = result.tracks[s.index] ?? Track()
                t.timeRange = TimeRange(start: s.startTime, duration: s.headerDuration)
                t.byteCount = s.bitRate > 0 ? Int64(Double(s.bitRate) / 8 * s.headerDuration.seconds) : t.byteCount
                t.packetCount = s.headerFrameCount > 0 ? s.headerFrameCount : t.packetCount
                result.tracks[s.index] = t
            }
        }
        if full { result.truncation = truncation(of: result, probe: probe, path: file.path) }
        return result
    }

    /// Timing from the sample index of an index-based container (MP4, MOV), when it can be trusted:
    /// every timed stream has a complete index (one entry per sample the header counts), every entry
    /// lies inside the file, and the header declares a start and duration. The header's durations come
    /// from the same sample tables the index was built from (edit lists applied), so this is what a
    /// packet scan would measure, without reading the media data. A fragmented or truncated file fails
    /// the check and is scanned packet by packet.
    static func fromIndex(_ file: InputFile, probe: ProbeResult) -> TimingResult? {
        guard probe.container.formatName.hasPrefix("mov,mp4") else { return nil }
        let streams = probe.timedStreams
        guard !streams.isEmpty else { return nil }
        var tracks: [Int: Track] = [:]
        for s in streams {
            guard s.headerDuration.isNumeric, s.startTime.isNumeric, s.headerFrameCount > 0, s.timeBase.numerator > 0,
                  let index = file.index(of: s.index), index.entries == s.headerFrameCount,
                  index.endOffset <= file.container.fileSize else { return nil }
            var t = Track(timeRange: TimeRange(start: s.startTime, duration: s.headerDuration),
                          packetCount: index.entries, byteCount: index.bytes)
            if s.mediaType == .video {
                let sorted = index.timestamps.sorted()
                var minStep: Int64 = .max
                for k in sorted.indices.dropFirst() {
                    let step = sorted[k] - sorted[k - 1]
                    if step > 0 { minStep = min(minStep, step) }
                }
                if minStep != .max { t.minFrameDuration = MediaTime(count: minStep, timeBase: s.timeBase).reduced }
            }
            tracks[s.index] = t
        }
        return TimingResult(source: .index, tracks: tracks)
    }

    /// Compares measured track ends with the ends the header declares (per stream when the streams
    /// declare durations, else for the container). Short by more than max(0.5 s, 5 %) is truncation.
    /// Only audio and video count: a text-only file is never called truncated for its sparse cues.
    static func truncation(of result: TimingResult, probe: ProbeResult, path: String) -> MediaFileError? {
        func short(measured: MediaTime, declared: MediaTime, length: MediaTime) -> Bool {
            let slack = MediaTime.max(MediaTime(value: 1, timescale: 2), length.multiplied(by: Rational(1, 20)))
            return measured + slack < declared
        }
        let declaring = probe.audiovisualStreams.filter { $0.headerDuration.isNumeric && $0.startTime.isNumeric }
        if !declaring.isEmpty {
            for s in declaring {
                guard let t = result.tracks[s.index], t.timeRange.isValid else { continue }
                let declaredEnd = s.startTime + s.headerDuration
                if short(measured: t.timeRange.end, declared: declaredEnd, length: s.headerDuration) {
                    return MediaFileError(path: path, reason: .truncated(endsAt: t.timeRange.end, declared: declaredEnd))
                }
            }
            return nil
        }
        // Text tracks are sparse: their last cue may end long before the movie does. A file of text
        // alone cannot be judged by where its packets end.
        guard !probe.audiovisualStreams.isEmpty else { return nil }
        let declared = probe.container.headerDuration
        let measured = result.duration
        guard declared.isNumeric, measured.isNumeric, short(measured: measured, declared: declared, length: declared) else { return nil }
        return MediaFileError(path: path, reason: .truncated(endsAt: measured, declared: declared))
    }

    /// A header is plausible when every timed stream declares a duration within limits and the file
    /// holds a believable number of bytes per second for it (a fragmented MP4 whose header claims
    /// 40 hours for 100 kB is not).
    static func headerIsPlausible(_ probe: ProbeResult) -> Bool {
        let streams = probe.audiovisualStreams
        guard !streams.isEmpty else { return false }
        for s in streams {
            guard s.headerDuration.isNumeric, s.startTime.isNumeric, s.headerDuration > .zero else { return false }
            let bytesPerSecond = Double(probe.container.fileSize) / s.headerDuration.seconds
            if bytesPerSecond < 64 { return false }
        }
        return true
    }

    /// Reads packets (all of them, or the first `packetLimit`) without decoding.
    static func scan(_ file: InputFile, probe: ProbeResult, packetLimit: Int?) throws(MediaFileError) -> TimingResult {
        struct Accumulator {
            var first: Int64 = .max
            var end: Int64 = .min
            var lastPTS: Int64 = .min
            var lastDuration: Int64 = 0
            var packets = 0
            var bytes: Int64 = 0
            var videoPTS: [Int64] = []
        }
        let streams = probe.streams
        var acc = [Accumulator](repeating: Accumulator(), count: streams.count)
        var packet = Packet()
        var read = 0
        while packetLimit.map({ read < $0 }) ?? true {
            if read & 255 == 0 { try file.checkInterrupt() }
            guard try file.read(into: &packet) == .packet else { break }
            read += 1
            let i = packet.streamIndex
            guard i >= 0, i < acc.count else { continue }
            acc[i].packets += 1
            acc[i].bytes += Int64(packet.size)
            guard !packet.isDiscarded, var pts = packet.pts ?? packet.dts else { continue }
            let skipped = streams[i].mediaType == .audio ? packet.skippedLeadingSamples : 0
            if skipped > 0, streams[i].sampleRate > 0 {
                let offset = MediaTime(value: Int64(skipped), timescale: Int32(streams[i].sampleRate))
                pts += offset.count(in: streams[i].timeBase) ?? 0
            }
            acc[i].first = min(acc[i].first, pts)
            acc[i].end = max(acc[i].end, pts + max(packet.duration, 0))
            if pts > acc[i].lastPTS { (acc[i].lastPTS, acc[i].lastDuration) = (pts, max(packet.duration, 0)) }
            if streams[i].mediaType == .video { acc[i].videoPTS.append(pts) }
        }

        var tracks: [Int: Track] = [:]
        for s in probe.timedStreams {
            let a = acc[s.index]
            var t = Track(packetCount: a.packets, byteCount: a.bytes)
            guard a.packets > 0, a.first != .max, s.timeBase.numerator > 0 else {
                tracks[s.index] = t
                continue
            }
            var endTicks = a.end
            var sorted = a.videoPTS
            if s.mediaType == .video {
                sorted.sort()
                var minStep: Int64 = .max
                for k in sorted.indices.dropFirst() {
                    let step = sorted[k] - sorted[k - 1]
                    if step > 0 { minStep = min(minStep, step) }
                }
                if minStep != .max { t.minFrameDuration = MediaTime(count: minStep, timeBase: s.timeBase).reduced }
                // The last frame shows for at least one frame interval, whatever (often bogus, as
                // Matroska's 1 ms) duration its packet declares.
                if minStep != .max { endTicks = max(endTicks, a.lastPTS + max(a.lastDuration, minStep)) }
            }
            var start = MediaTime(count: a.first, timeBase: s.timeBase)
            let end = MediaTime(count: endTicks, timeBase: s.timeBase)
            // Demuxers that apply an edit list inside a packet (MP4 priming) report the trimmed start
            // as the stream's start time; it lies within the measured span.
            if s.startTime.isNumeric, start < s.startTime, s.startTime < end { start = s.startTime }
            t.timeRange = TimeRange(start: start, end: end)
            tracks[s.index] = t
        }
        return TimingResult(source: .measured, tracks: tracks)
    }
}
