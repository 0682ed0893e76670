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
    let tracks: [RecordedTrack]
    let video: Int?
    /// Where this recorder's first keyframe lies in capture time, and what the recording held before it
    /// (a recorder starts again after a reconnection).
    private(set) var before: Progress
    /// Called with each finished segment.
    let closed: (SegmentReport) -> Void
    /// Called when recording resumes after a reconnection, with the gap in seconds.
    let resumed: (Double) -> Void
    private let timeBases: [Int: Rational]
    /// The source time of this recorder's first recorded keyframe.
    private(set) var origin: MediaTime?
    private var current: SegmentWriter?
    /// The segment before the last cut, until every stream has passed the cut.
    private var previous: SegmentWriter?
    private var latest: [Int: MediaTime] = [:]
    private var nextIndex = 1
    /// How many segments this connection finished and how long they are together (a recording of days
    /// keeps a count, not every segment's report).
    private(set) var finishedCount = 0
    private(set) var finishedDuration = 0.0

    /// How far a recording has come: capture time, recorded seconds and bytes.
    struct Progress {
        var captureTime: MediaTime = .zero
        var recorded: MediaTime = .zero
        var bytes: Int64 = 0
        /// The source was gone this long before the next segment (a reconnection).
        var gap: Double?
        /// After a reconnection: when the last packet before the drop arrived. The gap runs from there to
        /// the first keyframe recorded again.
        var lostAt: Date?
        /// The gap so far, for pictures seen before recording resumes.
        var pendingGap: MediaTime { lostAt.map { MediaTime(value: Int64(Date().timeIntervalSince($0) * 1_000_000), timescale: 1_000_000) } ?? .zero }
    }

    init(configuration: CaptureConfiguration, tracks: [RecordedTrack], before: Progress = .init(), resumed: @escaping (Double) -> Void = { _ in },
         closed: @escaping (SegmentReport) -> Void) {
        self.configuration = configuration
        self.tracks = tracks
        let video = tracks.first { $0.isVideo }
        self.video = video?.index
        if case .encoded = video?.origin { holdsAudio = true } else { holdsAudio = false }
        self.before = before
        self.closed = closed
        self.resumed = resumed
        timeBases = Dictionary(uniqueKeysWithValues: tracks.map { ($0.index, $0.timeBase) })
        nextIndex = Self.nextIndex(for: configuration.captureID, in: configuration.outputDirectory)
    }

    /// Capture time (from the recording's first keyframe, gaps included) of a source time.
    func captureTime(_ time: MediaTime) -> MediaTime {
        before.captureTime + (time - (origin ?? time))
    }

    /// Where the recording stands after this recorder's segments.
    var progress: Progress {
        Progress(captureTime: before.captureTime + recordedHere, recorded: before.recorded + recordedHere,
                 bytes: before.bytes + finishedBytes)
    }

    private var recordedHere: MediaTime = .zero
    /// The finished segments' bytes, kept as they finish (asked for each packet under --max-size).
    private(set) var finishedBytes: Int64 = 0

    /// After the highest index a recording with this id already left in the folder (finished, unfinished
    /// or quarantined), so that a capture restarted with the same id never replaces a segment.
    static func nextIndex(for captureID: String, in folder: String) -> Int {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])  // the folder was made by this capture
            + ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/quarantine")) ?? [])  // no quarantine yet: nothing in it
        let prefix = captureID + "-"
        let used = names.compactMap { name -> Int? in
            let bare = name.hasPrefix(".") ? String(name.dropFirst()) : name
            guard bare.hasPrefix(prefix) else { return nil }
            return Int(bare.dropFirst(prefix.count).prefix { $0.isNumber })
        }
        return (used.max() ?? 0) + 1
    }

    private var recordedBytes: Int64 {
        finishedBytes + (current?.bytes ?? 0) + (previous?.bytes ?? 0)
    }

    /// Audio packets waiting for an encoded video stream to catch up (see `take`).
    private var held: [(time: MediaTime, box: PacketBox)] = []
    /// The video is encoded: audio is held back (see `take`).
    private let holdsAudio: Bool

    /// Records a packet (consumed). The video encoder holds pictures back for a while (its lookahead)
    /// while audio flows at once; so with encoded video, audio waits until the video has reached its
    /// time, and each lands in the segment it belongs to.
    mutating func take(_ packet: inout Packet) throws(MediaFileError) -> Outcome {
        guard holdsAudio, let timeBase = timeBases[packet.streamIndex], let ticks = packet.dts ?? packet.pts else { return try record(&packet) }
        let time = MediaTime(count: ticks, timeBase: timeBase)
        if packet.streamIndex != video {
            let box = PacketBox()
            box.packet.reference(packet)
            packet.reset()
            held.append((time, box))
            return .recorded
        }
        if case .limit(let reason) = try record(&packet) { return .limit(reason) }
        return try release(upTo: time)
    }

    private mutating func release(upTo time: MediaTime?) throws(MediaFileError) -> Outcome {
        while let first = held.first, time.map({ first.time <= $0 }) ?? true {
            held.removeFirst()
            if case .limit(let reason) = try record(&first.box.packet) { held.removeAll(); return .limit(reason) }
        }
        return .recorded
    }

    private mutating func record(_ packet: inout Packet) throws(MediaFileError) -> Outcome {
        let stream = packet.streamIndex
        guard let timeBase = timeBases[stream], let ticks = packet.pts ?? packet.dts else { return .recorded }
        let time = MediaTime(count: ticks, timeBase: timeBase)
        let isVideo = stream == video
        let canCut = video == nil || (isVideo && packet.isKeyframe)
        guard let origin else {
            guard canCut else { return .recorded }   // nothing before the first keyframe is decodable
            self.origin = time
            if let lostAt = before.lostAt {
                let gap = Date().timeIntervalSince(lostAt)
                before.gap = gap
                before.captureTime += MediaTime(value: Int64(gap * 1_000_000), timescale: 1_000_000)
                before.lostAt = nil
                resumed(gap)
            }
            current = try open(at: time)
            return try record(&packet)
        }
        if let limit = configuration.maxDuration, (before.recorded + (time - origin)).seconds >= limit { return .limit(.maximumDurationReached) }
        if let limit = configuration.maxSize, before.bytes + recordedBytes + Int64(packet.size) > limit { return .limit(.maximumFileSizeReached) }
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
        if let previous, tracks.allSatisfy({ (latest[$0.index] ?? origin) >= segment.start }) || (time - previous.start).seconds > configuration.segmentDuration + 2 {
            try finishPrevious()
        }
        return .recorded
    }

    private mutating func open(at time: MediaTime) throws(MediaFileError) -> SegmentWriter {
        defer { nextIndex += 1 }
        return try SegmentWriter(index: nextIndex, folder: configuration.outputDirectory, captureID: configuration.captureID,
                                 start: time, tracks: tracks)
    }

    private mutating func finishPrevious() throws(MediaFileError) {
        guard let segment = previous else { return }
        previous = nil
        try close(segment)
    }

    private mutating func close(_ segment: SegmentWriter) throws(MediaFileError) {
        try segment.finish()
        let end = segment.cutAt ?? segment.end
        let duration = MediaTime.max(.zero, end - segment.start)
        recordedHere += duration
        var report = SegmentReport(index: segment.index, path: segment.finalPath, start: captureTime(segment.start).seconds,
                                   wallClock: segment.startWallClock, duration: duration.seconds,
                                   bytes: segment.bytes, packets: segment.packets)
        if finishedCount == 0 { report.gapBefore = before.gap }
        report.exactDuration = duration
        report.closedAt = Date()
        finishedBytes += report.bytes
        finishedCount += 1
        finishedDuration += report.duration
        closed(report)
    }

    /// Finishes whatever is open, in order.
    mutating func finishAll() throws(MediaFileError) {
        _ = try release(upTo: nil)
        try finishPrevious()
        if let segment = current {
            current = nil
            if segment.packets > 0 { try close(segment) } else { try? segment.discard() }  // an empty segment: nothing to lose
        }
    }
}
