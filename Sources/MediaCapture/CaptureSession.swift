import CodeScan
import Foundation
import MediaCore
import Synchronization
import MediaTime
#if canImport(Glibc)
import Glibc
#endif

/// How a recording runs (AVCaptureMovieFileOutput's settings).
public struct CaptureConfiguration: Sendable {
    public var source: CaptureSource
    public var outputDirectory: String
    /// Names the segments: `<captureID>-<index>.mp4`.
    public var captureID: String
    /// Each segment is cut at the first video keyframe at least this long after its start.
    public var segmentDuration: Double = 60
    /// maxRecordedDuration: capture time, from the first recorded packet.
    public var maxDuration: Double?
    /// maxRecordedFileSize: bytes of the whole recording.
    public var maxSize: Int64?
    /// A segment reaching this size is cut at the next keyframe.
    public var segmentMaxBytes: Int64?
    /// The recording stops before the output's file system has less free space than this.
    public var minFreeDisk: Int64?
    /// How long a read may wait for data before the source counts as gone.
    public var readTimeout: Double = 10
    /// A network source that drops is reopened with backoff for this long before the recording ends
    /// with `deviceWasDisconnected`; zero does not reconnect.
    public var reconnectFor: Double = 0
    /// Live code scanning (AVCaptureMetadataOutput); nil scans nothing.
    public var scan: CodeScanner.Configuration?
    /// A still every this many seconds of capture time (AVCaptureStillImageOutput); nil: none unless
    /// `stillsOnRequest`.
    public var stillEvery: Double?
    /// Stills may be asked for while recording (`CaptureSession.requestStill`).
    public var stillsOnRequest = false
    /// The sound's average and peak levels every this many seconds of capture time; nil: not measured.
    public var levelsEvery: Double?
    /// A waveform of each finished segment beside it (`<segment>-waveform.png` and `.json`).
    public var segmentWaveforms = false

    public init(source: CaptureSource, outputDirectory: String, captureID: String) {
        self.source = source
        self.outputDirectory = outputDirectory
        self.captureID = captureID
    }
}

/// Why a recording ended (AVError's recording reasons); every recording ends with exactly one.
public enum CaptureEndReason: String, Sendable, Codable {
    case maximumDurationReached, maximumFileSizeReached, diskFull, deviceWasDisconnected, sessionWasInterrupted, noDataCaptured
}

/// A finished segment.
public struct SegmentReport: Sendable, Encodable {
    public var index: Int
    public var path: String
    /// Where it starts in capture time (seconds from the recording's first packet), and when that was.
    public var start: Double
    public var wallClock: Date
    public var duration: Double
    public var bytes: Int64
    public var packets: Int
    /// The source was gone this many seconds before this segment (it reconnected).
    public var gapBefore: Double?
    /// With live scanning: the codes seen in this segment, merged (first and last time in capture time).
    public var codes: [ScannedCode]?
    /// When it was finished (renamed to its final name), for the latency of what follows.
    public var closedAt: Date?
    /// `duration` exactly (the cutting keyframes' times), for an assembly's edits; not in the JSON event.
    public var exactDuration: MediaTime?

    enum CodingKeys: String, CodingKey {
        case index, path, start, wallClock, duration, bytes, packets, gapBefore, codes, closedAt
    }

    public init(index: Int, path: String, start: Double, wallClock: Date, duration: Double, bytes: Int64, packets: Int) {
        self.index = index
        self.path = path
        self.start = start
        self.wallClock = wallClock
        self.duration = duration
        self.bytes = bytes
        self.packets = packets
    }
}

public struct CaptureSummary: Sendable, Encodable {
    public var captureID: String
    public var reason: CaptureEndReason
    public var successfullyFinished: Bool
    public var segments: Int
    public var duration: Double
    public var bytes: Int64
    public var message: String?
    /// How often the source dropped and came back.
    public var reconnections = 0
    public var scan: LiveScanSummary?
    /// Stills written (with `stillEvery` or on request).
    public var stills: Int?

    /// Adds a problem to what the message already says.
    mutating func add(message: String) {
        self.message = [self.message, message].compactMap { $0 }.joined(separator: "; ")
    }
}

public enum CaptureEvent: Sendable {
    case started(captureID: String, source: String, streams: [String])
    case segment(SegmentReport)
    /// The source dropped; it is reopened until `until`.
    case sourceLost(message: String, until: Date)
    /// The source is back after `gap` seconds.
    case reconnected(gap: Double)
    case code(CodeSighting)
    case codeGone(CodeSighting)
    /// A still was written beside the segments (`stillEvery`, or on request).
    case still(StillReport)
    /// A still could not be written; the recording goes on.
    case stillFailed(message: String)
    /// The sound's levels over an interval (`levelsEvery`).
    case levels(LevelsReport)
    /// A finished segment's waveform was drawn (`segmentWaveforms`).
    case waveform(SegmentWaveform)
    /// A finished segment's waveform could not be drawn (no sound in it, say); the recording goes on.
    case waveformFailed(message: String)
    case finished(CaptureSummary)
}

/// Records a live source into segments (AVCaptureSession + AVCaptureMovieFileOutput). Packets are copied
/// when an MP4 segment can hold their codec, else encoded (H.264 + AAC); a segment is cut on a video
/// keyframe, so that each one starts exactly where the one before ended in source time. A source that
/// drops is reopened within `reconnectFor`, the gap reported; live scanning runs beside the recording. Blocking: run it on a thread of its own; `stop` ends it from anywhere.
public final class CaptureSession: Sendable {
    public let configuration: CaptureConfiguration
    private let events: @Sendable (CaptureEvent) -> Void
    private let interrupter: Interrupter
    private let stopped = Mutex(false)
    /// The stills of the recording running now, for `requestStill`.
    private let stillTaker = Mutex<LiveStills?>(nil)
    private let freeSpaceHook = Mutex<@Sendable (String) -> Int64?>(CaptureSession.statvfsFree)
    /// Free bytes of the output's file system (a hook for tests; default statvfs).
    var freeSpace: @Sendable (String) -> Int64? {
        get { freeSpaceHook.withLock { $0 } }
        set { freeSpaceHook.withLock { $0 = newValue } }
    }

    public init(configuration: CaptureConfiguration, events: @escaping @Sendable (CaptureEvent) -> Void) {
        self.configuration = configuration
        self.events = events
        self.interrupter = Interrupter(stallLimit: .milliseconds(Int64(configuration.readTimeout * 1000)))
    }

    /// Ends the recording (SIGTERM, SIGINT): the segment being written is finished.
    public func stop() {
        stopped.withLock { $0 = true }
        interrupter.cancel()
    }

    private var isStopped: Bool { stopped.withLock { $0 } }

    /// The next picture becomes a still (SIGUSR1 to `mediafarm capture`); false when the recording takes
    /// no stills (`stillEvery` nil and not `stillsOnRequest`) or is not running.
    @discardableResult
    public func requestStill() -> Bool {
        guard let stills = stillTaker.withLock({ $0 }) else { return false }
        stills.request()
        return true
    }

    /// What lasts across the session's connections.
    private struct Session {
        var summary: CaptureSummary
        var finished = (segments: 0, bytes: Int64(0), duration: 0.0)
        var progress = Recorder.Progress()
        /// When the source dropped, while it is being reconnected (and, with a reconnection budget, the
        /// session's start until the source first opens: a source not up yet is waited for as long).
        var lostAt: Date?
        let started = Date()
        var connected = false
        var lastArrival = Date()
        var backoff = 0.5
    }

    /// Where decoded pictures go besides the recording, and decoded sound.
    private struct Taps {
        let scanner: LiveScanner?
        let stills: LiveStills?
        let pictures: (any LivePictureSink)?
        let levels: LiveLevels?
        let waveforms: SegmentWaveforms?
    }

    /// One connection's recording: the recorder, the feeds of the taps, and how it ended.
    private struct Reading {
        var recorder: Recorder
        let byIndex: [Int: RecordedTrack]
        /// The session's progress when this connection began.
        let before: Recorder.Progress
        var feed: LiveScanner.Feed?
        var soundFeed: LiveScanner.Feed?
        var soundOrigin: MediaTime?
        var soundBase: MediaTime?
        /// The first picture's source time and capture time (encoded video: pictures reach the scanner
        /// before the encoder hands their packets to the recorder).
        var pictureOrigin: MediaTime?
        var pictureBase: MediaTime?
        var ended: CaptureEndReason?
        var sourceDropped = false
        var lastDiskCheck = Date.distantPast
        var bytesSinceDiskCheck = 0
    }

    /// Records until a limit, the end of the source (after any reconnection budget), or `stop`;
    /// returns the summary it also sent.
    @discardableResult
    public func run() -> CaptureSummary {
        var session = Session(summary: CaptureSummary(captureID: configuration.captureID, reason: .noDataCaptured, successfullyFinished: false,
                                                      segments: 0, duration: 0, bytes: 0, message: nil))
        let taps = makeTaps()
        while let (input, tracks) = connect(&session) {
            let reading = record(input, tracks: tracks, taps: taps, session: &session)
            if reading.sourceDropped, !isStopped, configuration.reconnectFor > 0 {
                let now = Date()
                session.lostAt = now
                events(.sourceLost(message: session.summary.message ?? "\(configuration.source): the source dropped",
                                   until: now.addingTimeInterval(configuration.reconnectFor)))
                continue
            }
            session.summary.reason = reading.ended ?? (isStopped ? .sessionWasInterrupted : .deviceWasDisconnected)
            break
        }
        return finish(session, taps: taps)
    }

    private func makeTaps() -> Taps {
        let scanner = configuration.scan.map { LiveScanner(configuration: $0, events: events) }
        let stills = configuration.stillEvery != nil || configuration.stillsOnRequest
            ? LiveStills(every: configuration.stillEvery, folder: configuration.outputDirectory, captureID: configuration.captureID,
                         source: configuration.source.text, events: events) : nil
        stillTaker.withLock { $0 = stills }
        return Taps(scanner: scanner, stills: stills, pictures: LivePictureFan.of([scanner, stills]),
                    levels: configuration.levelsEvery.map { LiveLevels(every: $0, events: events) },
                    waveforms: configuration.segmentWaveforms ? SegmentWaveforms(events: events) : nil)
    }

    /// Opens the source and plans its tracks, trying again while the reconnection budget lasts; nil when it
    /// gives up (the summary says why).
    private func connect(_ session: inout Session) -> (InputFile, [RecordedTrack])? {
        while true {
            let input: InputFile
            let tracks: [RecordedTrack]
            let attempt = Date()
            do {
                input = try InputFile(live: configuration.source.url, format: configuration.source.format, options: configuration.source.options,
                                      limits: .live(stallTimeout: .milliseconds(Int64(configuration.readTimeout * 1000))), interrupter: interrupter)
                tracks = try RecordedTrack.plan(input, segmentDuration: configuration.segmentDuration)
            } catch {
                if isStopped { session.summary.reason = .sessionWasInterrupted; return nil }
                session.summary.message = describe(error)
                if let since = session.lostAt ?? (session.connected ? nil : session.started),
                   Date() < since.addingTimeInterval(configuration.reconnectFor) {
                    // An attempt that failed at once (refused) waits before the next, longer each time; one that
                    // waited for data (a listening UDP socket) already took its time, and waiting more with the
                    // socket closed would lose the start of a stream that comes back.
                    let spent = Date().timeIntervalSince(attempt)
                    if spent < session.backoff {
                        sleep(min(session.backoff - spent, since.addingTimeInterval(configuration.reconnectFor).timeIntervalSinceNow))
                        session.backoff = min(session.backoff * 2, 5)
                    }
                    continue
                }
                session.summary.reason = session.connected ? .deviceWasDisconnected : .noDataCaptured
                return nil
            }
            guard !tracks.isEmpty else {
                session.summary.message = "\(configuration.source): no video or audio stream"
                session.summary.reason = session.connected ? .deviceWasDisconnected : .noDataCaptured
                return nil
            }
            input.discardAll(except: Set(tracks.map(\.index)))
            if session.lostAt != nil {
                // The gap is known when recording resumes, at the first keyframe (see Recorder.resumed).
                session.progress.lostAt = session.lastArrival
                session.summary.reconnections += 1
                session.summary.message = nil
            } else {
                events(.started(captureID: configuration.captureID, source: configuration.source.text,
                                streams: tracks.map { "\($0.isVideo ? "video" : "audio") \($0.codecName)\(Self.isEncoded($0) ? " (encoded)" : "")" }))
            }
            session.lostAt = nil
            session.connected = true
            session.backoff = 0.5
            return (input, tracks)
        }
    }

    /// Records one connection until the source drops, a limit is reached, the disk fills or `stop`.
    private func record(_ input: InputFile, tracks: [RecordedTrack], taps: Taps, session: inout Session) -> Reading {
        let events = self.events
        let recorder = Recorder(configuration: configuration, tracks: tracks, before: session.progress,
                                resumed: { events(.reconnected(gap: $0)) }) { report in
            taps.waveforms?.segmentClosed(report)
            if let scanner = taps.scanner { scanner.segmentClosed(report) { events(.segment($0)) } } else { events(.segment(report)) }
        }
        var reading = Reading(recorder: recorder, byIndex: Dictionary(uniqueKeysWithValues: tracks.map { ($0.index, $0) }), before: session.progress)
        var packet = Packet()
        // A synthetic source (lavfi) makes its frames as fast as they are read: it is paced to real time,
        // as `ffmpeg -re` does, so that a recording of N seconds takes N seconds and events carry the
        // times a live source would give them.
        let pace = configuration.source.kind == .synthetic
            ? RealTimePace(timeBases: Dictionary(uniqueKeysWithValues: input.streams.map { ($0.index, $0.timeBase) })) : nil
        while reading.ended == nil {
            if isStopped { reading.ended = .sessionWasInterrupted; break }
            let read: InputFile.ReadResult
            do {
                read = try input.read(into: &packet)
            } catch {
                if isStopped { reading.ended = .sessionWasInterrupted } else { reading.sourceDropped = true; session.summary.message = describe(error) }
                break
            }
            guard read == .packet else {
                reading.sourceDropped = true
                session.summary.message = "\(configuration.source): the stream ended"
                break
            }
            if let wait = pace?.wait(for: packet) { sleep(wait) }
            let arrival = Date()
            session.lastArrival = arrival
            if let message = diskIsFull(&reading, adding: packet.size, at: arrival) {
                reading.ended = .diskFull
                session.summary.message = message
                break
            }
            guard let track = reading.byIndex[packet.streamIndex] else { continue }
            do {
                switch track.origin {
                case .copied(let file): try takeCopied(&packet, of: track, file: file, arrival: arrival, taps: taps, reading: &reading)
                case .encoded(let live): try takeEncoded(packet, of: track, live: live, arrival: arrival, taps: taps, reading: &reading)
                }
            } catch {
                // A write the disk had no room for ends the recording as the free-space floor would.
                if case .ffmpeg(let code, _) = error.reason, code.code == -ENOSPC { reading.ended = .diskFull } else { reading.ended = .deviceWasDisconnected }
                session.summary.message = "\(error)"
                break
            }
        }
        // What the encoders still hold belongs to the recording (packets past a limit are not written).
        for track in tracks {
            guard case .encoded(let live) = track.origin else { continue }
            do {
                try live.flush(emit: { out throws(MediaFileError) in _ = try reading.recorder.take(&out) })
            } catch {
                session.summary.add(message: "\(error)")
            }
        }
        reading.feed?.finish()
        reading.soundFeed?.finish()
        do {
            try reading.recorder.finishAll()
        } catch {
            session.summary.add(message: "\(error)")
        }
        session.finished.segments += reading.recorder.finishedCount
        session.finished.bytes += reading.recorder.finishedBytes
        session.finished.duration += reading.recorder.finishedDuration
        session.progress = reading.recorder.progress
        return reading
    }

    /// Below `--min-free-disk`, checked every half second or `diskCheckBytes`: what to say, or nil.
    private func diskIsFull(_ reading: inout Reading, adding bytes: Int, at arrival: Date) -> String? {
        reading.bytesSinceDiskCheck += bytes
        guard let minFree = configuration.minFreeDisk,
              arrival.timeIntervalSince(reading.lastDiskCheck) >= 0.5 || reading.bytesSinceDiskCheck >= Self.diskCheckBytes else { return nil }
        reading.lastDiskCheck = arrival
        reading.bytesSinceDiskCheck = 0
        guard let free = freeSpace(configuration.outputDirectory), free < minFree else { return nil }
        return "\(configuration.outputDirectory): \(free) bytes free, below --min-free-disk \(minFree)"
    }

    /// A packet recorded as it came; scanning and levels decode their own references to it, from the first
    /// recorded keyframe on.
    private func takeCopied(_ packet: inout Packet, of track: RecordedTrack, file: InputFile, arrival: Date, taps: Taps,
                            reading: inout Reading) throws(MediaFileError) {
        let toScan: PacketBox? = taps.pictures != nil && track.isVideo ? PacketBox() : nil
        toScan?.packet.reference(packet)
        let toMeasure: PacketBox? = taps.levels != nil && !track.isVideo ? PacketBox() : nil
        toMeasure?.packet.reference(packet)
        if case .limit(let reason) = try reading.recorder.take(&packet) {
            reading.ended = reason
            return
        }
        if let pictures = taps.pictures, let toScan, let origin = reading.recorder.origin {
            if reading.feed == nil {
                reading.feed = try LiveScanner.Feed(scanner: pictures, input: file, stream: track.index, origin: origin,
                                                    offset: reading.recorder.before.captureTime)
            }
            reading.feed?.submit(toScan.packet, arrival: arrival)
        }
        if let levels = taps.levels, !track.isVideo, let toMeasure, let origin = reading.recorder.origin {
            if reading.soundFeed == nil {
                reading.soundFeed = try LiveScanner.Feed(scanner: levels, input: file, stream: track.index, origin: origin,
                                                         offset: reading.recorder.before.captureTime)
            }
            reading.soundFeed?.submit(toMeasure.packet, arrival: arrival)
        }
    }

    /// A packet decoded and encoded again: its pictures and sound go to the taps as they are decoded, the
    /// encoder's packets to the recorder.
    private func takeEncoded(_ packet: borrowing Packet, of track: RecordedTrack, live: LiveEncoder, arrival: Date, taps: Taps,
                             reading: inout Reading) throws(MediaFileError) {
        let progress = reading.before
        try live.encode(packet, picture: { frame, time in
            if !track.isVideo, let levels = taps.levels {
                let origin = reading.soundOrigin ?? time
                reading.soundOrigin = origin
                let base = reading.soundBase ?? progress.captureTime + progress.pendingGap
                reading.soundBase = base
                levels.submit(frame, time: base + (time - origin), arrival: arrival)
                return
            }
            guard let pictures = taps.pictures, track.isVideo else { return }
            let origin = reading.pictureOrigin ?? time
            reading.pictureOrigin = origin
            // The encoder holds pictures back: one past the duration limit is never recorded.
            if let limit = configuration.maxDuration, (progress.recorded + (time - origin)).seconds >= limit { return }
            let base = reading.pictureBase ?? progress.captureTime + progress.pendingGap
            reading.pictureBase = base
            pictures.submit(frame, time: base + (time - origin), arrival: arrival)
        }, emit: { out throws(MediaFileError) in
            if case .limit(let reason) = try reading.recorder.take(&out) { reading.ended = reason }
        })
    }

    /// The summary of the whole session, sent and returned.
    private func finish(_ session: Session, taps: Taps) -> CaptureSummary {
        var summary = session.summary
        if let scanner = taps.scanner { summary.scan = scanner.finish() }
        stillTaker.withLock { $0 = nil }
        if let stills = taps.stills { summary.stills = stills.finish() }
        taps.levels?.finish()
        taps.waveforms?.finish()
        summary.segments = session.finished.segments
        summary.bytes = session.finished.bytes
        summary.duration = session.finished.duration
        if summary.segments == 0 && summary.reason != .diskFull && summary.reason != .sessionWasInterrupted { summary.reason = .noDataCaptured }
        summary.successfullyFinished = summary.segments > 0
            && [.maximumDurationReached, .maximumFileSizeReached, .sessionWasInterrupted, .diskFull].contains(summary.reason)
        if summary.successfullyFinished && summary.reason != .diskFull { summary.message = nil }
        events(.finished(summary))
        return summary
    }

    /// A read or open failure in a live source's words: a stall is the read timeout (the source went
    /// quiet), not a slow file.
    private func describe(_ error: any Error) -> String {
        if let error = error as? MediaFileError {
            switch error.reason {
            case .stalled, .cancelled:
                return "\(configuration.source): no data for \(String(format: "%g", configuration.readTimeout)) s (--read-timeout)"
            case .ffmpeg(let ffmpeg, _) where ffmpeg.code == FFmpegError.exit.code:
                return "\(configuration.source): no data for \(String(format: "%g", configuration.readTimeout)) s (--read-timeout)"
            default:
                return error.path == configuration.source.url ? "\(configuration.source): \(error.problem)" : "\(configuration.source): \(error)"
            }
        }
        return "\(configuration.source): \(error)"
    }

    /// Free space is checked twice a second, and after each this many bytes read from the source.
    static let diskCheckBytes = 1 << 20

    private static func isEncoded(_ track: RecordedTrack) -> Bool {
        if case .encoded = track.origin { return true }
        return false
    }

    /// Real time for a source that has none: how long to wait before a packet is due, its time measured
    /// from the first packet's, on the clock started when that packet was read.
    final class RealTimePace {
        let timeBases: [Int: Rational]
        var origin: (time: Double, clock: Date)?

        init(timeBases: [Int: Rational]) { self.timeBases = timeBases }

        func wait(for packet: borrowing Packet) -> Double? {
            guard let base = timeBases[packet.streamIndex], let ticks = packet.pts ?? packet.dts else { return nil }
            let time = MediaTime(count: ticks, timeBase: base).seconds
            guard let origin else {
                self.origin = (time, Date())
                return nil
            }
            let due = origin.clock.addingTimeInterval(time - origin.time).timeIntervalSinceNow
            return due > 0.001 ? due : nil
        }
    }

    /// Waits `seconds`, or less when the session is stopped.
    private func sleep(_ seconds: Double) {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until && !isStopped { Thread.sleep(forTimeInterval: min(0.1, until.timeIntervalSinceNow)) }
    }

    static func statvfsFree(_ path: String) -> Int64? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }
}
