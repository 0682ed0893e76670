import Foundation
import MediaCore
import MediaTime

/// Routes a live source's packets into segments: cuts on video keyframes (any packet for audio alone),
/// keeps the segment before a cut open until every stream has passed the cut (late audio still lands in
/// the segment it belongs to), and enforces the duration and size limits.
struct Recorder {
    enum Outcome {
        case recorded
        case limit(CaptureEndReason)
    }

    let configuration: CaptureConfiguration
    let input: InputFile
    let streams: [StreamInfo]
    let video: Int?
    let events: @Sendable (CaptureEvent) -> Void
    private let timeBases: [Int: Rational]
    /// Capture time zero: the first recorded keyframe.
    private var origin: MediaTime?
    private var current: SegmentWriter?
    /// The segment before the last cut, until every stream has passed the cut.
    private var previous: SegmentWriter?
    private var latest: [Int: MediaTime] = [:]
    private var nextIndex = 1
    private(set) var finished: [SegmentReport] = []

    init(configuration: CaptureConfiguration, input: InputFile, streams: [StreamInfo], video: Int?, events: @escaping @Sendable (CaptureEvent) -> Void) {
        self.configuration = configuration
        self.input = input
        self.streams = streams
        self.video = video
        self.events = events
        timeBases = Dictionary(uniqueKeysWithValues: streams.map { ($0.index, $0.timeBase) })
        nextIndex = Self.nextIndex(for: configuration.captureID, in: configuration.outputDirectory)
    }

    /// After the highest index a recording with this id already left in the folder (finished, unfinished
    /// or quarantined), so that a capture restarted with the same id never replaces a segment.
    static func nextIndex(for captureID: String, in folder: String) -> Int {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            + ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/quarantine")) ?? [])
        let prefix = captureID + "-"
        let used = names.compactMap { name -> Int? in
            let bare = name.hasPrefix(".") ? String(name.dropFirst()) : name
            guard bare.hasPrefix(prefix) else { return nil }
            return Int(bare.dropFirst(prefix.count).prefix { $0.isNumber })
        }
        return (used.max() ?? 0) + 1
    }

    private var recordedBytes: Int64 {
        finished.reduce(0) { $0 + $1.bytes } + (current?.bytes ?? 0) + (previous?.bytes ?? 0)
    }

    mutating func take(_ packet: inout Packet) throws(MediaFileError) -> Outcome {
        let stream = packet.streamIndex
        guard let timeBase = timeBases[stream], let ticks = packet.pts ?? packet.dts else { return .recorded }
        let time = MediaTime(count: ticks, timeBase: timeBase)
        let isVideo = stream == video
        let canCut = video == nil || (isVideo && packet.isKeyframe)
        guard let origin else {
            guard canCut else { return .recorded }   // nothing before the first keyframe is decodable
            self.origin = time
            current = try open(at: time)
            return try take(&packet)
        }
        if let limit = configuration.maxDuration, (time - origin).seconds >= limit { return .limit(.maximumDurationReached) }
        if let limit = configuration.maxSize, recordedBytes + Int64(packet.size) > limit { return .limit(.maximumFileSizeReached) }
        guard var segment = current else { return .recorded }
        if canCut, time > segment.start,
           (time - segment.start).seconds >= configuration.segmentDuration || configuration.segmentMaxBytes.map({ segment.bytes >= $0 }) == true {
            try finishPrevious()
            segment.cutAt = time
            previous = segment
            segment = try open(at: time)
            current = segment
        }
        latest[stream] = time
        if let previous, time < segment.start {
            try previous.write(&packet, isVideo: isVideo)
        } else if time >= origin {
            try segment.write(&packet, isVideo: isVideo)
        }
        if let previous, streams.allSatisfy({ (latest[$0.index] ?? origin) >= segment.start }) || (time - previous.start).seconds > configuration.segmentDuration + 2 {
            try finishPrevious()
        }
        return .recorded
    }

    private mutating func open(at time: MediaTime) throws(MediaFileError) -> SegmentWriter {
        defer { nextIndex += 1 }
        return try SegmentWriter(index: nextIndex, folder: configuration.outputDirectory, captureID: configuration.captureID,
                                 start: time, input: input, streams: streams)
    }

    private mutating func finishPrevious() throws(MediaFileError) {
        guard let segment = previous else { return }
        previous = nil
        try close(segment)
    }

    private mutating func close(_ segment: SegmentWriter) throws(MediaFileError) {
        try segment.finish()
        let end = segment.cutAt ?? segment.end
        let report = SegmentReport(index: segment.index, path: segment.finalPath, start: (segment.start - (origin ?? segment.start)).seconds,
                                   wallClock: segment.startWallClock, duration: max(0, (end - segment.start).seconds),
                                   bytes: segment.bytes, packets: segment.packets)
        finished.append(report)
        events(.segment(report))
    }

    /// Finishes whatever is open, in order.
    mutating func finishAll() throws(MediaFileError) {
        try finishPrevious()
        if let segment = current {
            current = nil
            if segment.packets > 0 { try close(segment) } else { try? segment.discard() }
        }
    }
}
