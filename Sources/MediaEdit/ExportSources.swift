import MediaCore
import MediaTime

/// The streams an export reads from each composition segment, and the file opened for them (reused for
/// stream set-up and packet copying, so that each source is probed once). Segments of one source file
/// share one `ExportSource` and so one opened `InputFile` (see `open(_:limits:interrupter:)`): a class,
/// so that the per-segment list holds a reference each (10,000 edits of one file: 80 KB, not the 7 MB
/// of as many copies of its stream descriptions). An export of many files (a day's recording in
/// 1,440 segments) keeps none of them open between uses: `release` closes one, and `file` opens it
/// again when it is next read (a descriptor and about 300 KB each would otherwise run into a service's
/// 1,024-descriptor limit, and gigabytes). Thread-confined.
final class ExportSource {
    let path: String
    let video: StreamInfo?
    /// The default audio track (`AudioSelection.defaultTrack`).
    let audio: StreamInfo?
    /// Every audio track, in the file's order (read once: a source closed between uses is not opened again
    /// to choose among them).
    let audioTracks: [StreamInfo]
    /// Source time zero: the container's start time.
    let origin: MediaTime
    let displayMatrix: [Int32]?
    let tags: [String: String]
    let chapters: [ChapterInfo]
    private var opened: InputFile?
    private let limits: SafetyLimits
    private let interrupter: Interrupter

    /// More distinct files than this in one export and each is closed between its uses.
    static let keptOpen = 32

    /// The opened file; opened again, read from its start, after `release`.
    var file: InputFile {
        get throws(MediaFileError) {
            if let opened { return opened }
            let file = try InputFile(path: path, limits: limits, interrupter: interrupter)
            opened = file
            return file
        }
    }

    /// Whether the file is open now (a released one reads from its start when opened again).
    var isOpen: Bool { opened != nil }

    /// Closes the file until it is read again.
    func release() { opened = nil }

    init(path: String, limits: SafetyLimits, interrupter: Interrupter) throws(MediaFileError) {
        let file = try InputFile(path: path, limits: limits, interrupter: interrupter)
        opened = file
        self.path = path
        self.limits = limits
        self.interrupter = interrupter
        video = file.streams.first { $0.mediaType == .video && !$0.isAttachedPicture }
        if let v = video, v.width <= 0 || v.height <= 0 {
            // Declared (a transport stream's program table) but never carried: nothing to copy or decode.
            throw MediaFileError(path: path, reason: .undecodable(track: v.index, codec: v.codecName, FFmpegError(
                code: FFmpegError.endOfFile.code, operation: nil, detail: "the video track has no packets, so its picture size is unknown")))
        }
        audioTracks = file.streams.filter { $0.mediaType == .audio }
        audio = file.streams.defaultAudio
        origin = file.container.startTime.isNumeric ? file.container.startTime : .zero
        displayMatrix = video?.displayMatrix
        tags = file.container.tags
        chapters = file.container.chapters
    }

    /// One source per segment, opened once per distinct path and shared by every segment of it. With
    /// more than `keptOpen` distinct paths, each is closed once its streams are known.
    static func open(_ paths: [String], limits: SafetyLimits, interrupter: Interrupter) throws(MediaFileError) -> [ExportSource] {
        var opened: [String: ExportSource] = [:]
        var result: [ExportSource] = []
        result.reserveCapacity(paths.count)
        let closing = Set(paths).count > keptOpen
        for path in paths {
            if let source = opened[path] { result.append(source); continue }
            let source = try ExportSource(path: path, limits: limits, interrupter: interrupter)
            if closing { source.release() }
            opened[path] = source
            result.append(source)
        }
        return result
    }

    /// Whether an export of `sources` closes each file between its uses.
    static func closesBetweenUses(_ sources: [ExportSource]) -> Bool {
        Set(sources.map(\.path)).count > keptOpen
    }

    /// Source time (relative to the origin) of a timestamp in `stream`'s time base.
    func time(_ ticks: Int64, in stream: StreamInfo) -> MediaTime {
        MediaTime(count: ticks, timeBase: stream.timeBase) - origin
    }

    /// Ticks of `stream` for a source time.
    func ticks(_ time: MediaTime, in stream: StreamInfo, rounding: TimeRounding = .down) -> Int64 {
        (time + origin).count(in: stream.timeBase, rounding: rounding) ?? 0
    }
}

extension ExportSource {
    /// Tags worth carrying into an output: not the ones that describe the old file's encoding.
    var carriedTags: [String: String] {
        tags.filter { !["major_brand", "minor_version", "compatible_brands", "encoder", "creation_time", "duration"].contains($0.key) }
    }

    /// Chapters of all segments placed on the output timeline through the mapping, clipped to it.
    static func remappedChapters(_ sources: [ExportSource], mapping: TimeMapping) -> [ChapterInfo] {
        var result: [ChapterInfo] = []
        for (segment, source) in sources.enumerated() {
            let own = mapping.pieces(of: segment)
            guard let first = own.first, let last = own.last else { continue }
            for ch in source.chapters {
                let s = MediaTime.max(ch.start - source.origin, first.source.start)
                let e = MediaTime.min(ch.end - source.origin, last.source.end)
                guard s < e, let ts = mapping.targetTime(segment: segment, source: s),
                      let te = mapping.targetTime(segment: segment, source: e) else { continue }
                result.append(ChapterInfo(id: Int64(result.count + 1), start: ts, end: te, title: ch.title, tags: ch.tags))
            }
        }
        return result
    }
}

extension OutputFile {
    /// Carries the first source's tags (and the settings' own) and every source's chapters, remapped,
    /// into the file, then writes its header. Returns how many chapters were written.
    /// `options` are further muxer options; `faststart` overrides the settings' (for a caller that moves
    /// the index itself).
    func writeHeader(sources: [ExportSource], mapping: TimeMapping, settings: ExportSettings,
                     options: [String: String] = [:], faststart: Bool? = nil) throws -> Int {
        setMetadata(sources[0].carriedTags.merging(settings.metadata) { _, new in new })
        let chapters = ExportSource.remappedChapters(sources, mapping: mapping)
        setChapters(chapters)
        var all = options
        if faststart ?? settings.faststart, settings.muxer != "matroska" { all["movflags"] = "+faststart" }
        try writeHeader(options: all)
        return chapters.count
    }
}

/// Keeps decoding timestamps strictly increasing after rounding to an output time base.
struct MonotonicTimestamps {
    private var lastDTS: Int64?

    mutating func fix(pts: Int64, dts: Int64) -> (pts: Int64, dts: Int64) {
        var d = dts
        if let last = lastDTS, d <= last { d = last + 1 }
        lastDTS = d
        return (max(pts, d), d)
    }
}
