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
public final class CaptureSession: @unchecked Sendable {  // unchecked: runs on one thread; what `stop` and the sinks share is behind `lock`
    public let configuration: CaptureConfiguration
    private let events: @Sendable (CaptureEvent) -> Void
    private let interrupter: Interrupter
    private let stopRequested = NSLock()
    private var stopped = false
    /// The stills of the recording running now, for `requestStill`.
    private let stillTaker = Mutex<LiveStills?>(nil)
    /// Free bytes of the output's file system (a hook for tests; default statvfs).
    var freeSpace: @Sendable (String) -> Int64? = CaptureSession.statvfsFree

    public init(configuration: CaptureConfiguration, events: @escaping @Sendable (CaptureEvent) -> Void) {
        self.configuration = configuration
        self.events = events
        self.interrupter = Interrupter(stallLimit: .milliseconds(Int64(configuration.readTimeout * 1000)))
    }

    /// Ends the recording (SIGTERM, SIGINT): the segment being written is finished.
    public func stop() {
        stopRequested.withLock { stopped = true }
        interrupter.cancel()
    }

    private var isStopped: Bool { stopRequested.withLock { stopped } }

    /// The next picture becomes a still (SIGUSR1 to `mediafarm capture`); false when the recording takes
    /// no stills (`stillEvery` nil and not `stillsOnRequest`) or is not running.
    @discardableResult
    public func requestStill() -> Bool {
        guard let stills = stillTaker.withLock({ $0 }) else { return false }
        stills.request()
        return true
    }

    /// Records until a limit, the end of the source (after any reconnection budget), or `stop`;
    /// returns the summary it also sent.
    @discardableResult
    public func run() -> CaptureSummary {
        var summary = CaptureSummary(captureID: configuration.captureID, reason: .noDataCaptured, successfullyFinished: false,
                                     segments: 0, duration: 0, bytes: 0, message: nil)
        let scanner = configuration.scan.map { LiveScanner(configuration: $0, events: events) }
        let stills = configuration.stillEvery != nil || configuration.stillsOnRequest
            ? LiveStills(every: configuration.stillEvery, folder: configuration.outputDirectory, captureID: configuration.captureID,
                         source: configuration.source.text, events: events) : nil
        stillTaker.withLock { $0 = stills }
        // Where decoded pictures go besides the recording, and decoded sound.
        let pictures = LivePictureFan.of([scanner, stills])
        let levels = configuration.levelsEvery.map { LiveLevels(every: $0, events: events) }
        let waveforms = configuration.segmentWaveforms ? SegmentWaveforms(events: events) : nil
        var finished = (segments: 0, bytes: Int64(0), duration: 0.0)
        var progress = Recorder.Progress()
        /// When the source dropped, while it is being reconnected (and, with a reconnection budget, the
        /// session's start until the source first opens: a source not up yet is waited for as long).
        var lostAt: Date?
        let started = Date()
        var connected = false
        var lastArrival = Date()
        var backoff = 0.5
        connection: while true {
            let input: InputFile
            let tracks: [RecordedTrack]
            let attempt = Date()
            do {
                input = try InputFile(live: configuration.source.url, format: configuration.source.format, options: configuration.source.options,
                                      limits: .live(stallTimeout: .milliseconds(Int64(configuration.readTimeout * 1000))), interrupter: interrupter)
                tracks = try RecordedTrack.plan(input, segmentDuration: configuration.segmentDuration)
            } catch {
                if isStopped { summary.reason = .sessionWasInterrupted; break }
                summary.message = describe(error)
                if let since = lostAt ?? (connected ? nil : started), Date() < since.addingTimeInterval(configuration.reconnectFor) {
                    // An attempt that failed at once (refused) waits before the next, longer each time; one that
                    // waited for data (a listening UDP socket) already took its time, and waiting more with the
                    // socket closed would lose the start of a stream that comes back.
                    let spent = Date().timeIntervalSince(attempt)
                    if spent < backoff {
                        sleep(min(backoff - spent, since.addingTimeInterval(configuration.reconnectFor).timeIntervalSinceNow))
                        backoff = min(backoff * 2, 5)
                    }
                    continue
                }
                summary.reason = connected ? .deviceWasDisconnected : .noDataCaptured
                break
            }
            guard !tracks.isEmpty else {
                summary.message = "\(configuration.source): no video or audio stream"
                summary.reason = connected ? .deviceWasDisconnected : .noDataCaptured
                break
            }
            input.discardAll(except: Set(tracks.map(\.index)))
            if lostAt != nil {
                // The gap is known when recording resumes, at the first keyframe (see Recorder.resumed).
                progress.lostAt = lastArrival
                summary.reconnections += 1
                summary.message = nil
            } else {
                events(.started(captureID: configuration.captureID, source: configuration.source.text,
                                streams: tracks.map { "\($0.isVideo ? "video" : "audio") \($0.codecName)\(Self.isEncoded($0) ? " (encoded)" : "")" }))
            }
            lostAt = nil
            connected = true
            backoff = 0.5

            let events = self.events
            var recorder = Recorder(configuration: configuration, tracks: tracks, before: progress, resumed: { events(.reconnected(gap: $0)) }) { report in
                waveforms?.segmentClosed(report)
                if let scanner { scanner.segmentClosed(report) { events(.segment($0)) } } else { events(.segment(report)) }
            }
            let byIndex = Dictionary(uniqueKeysWithValues: tracks.map { ($0.index, $0) })
            var feed: LiveScanner.Feed?
            var soundFeed: LiveScanner.Feed?
            var soundOrigin: MediaTime?
            var soundBase: MediaTime?
            /// The first picture's source time and capture time (encoded video: pictures reach the scanner
            /// before the encoder hands their packets to the recorder).
            var pictureOrigin: MediaTime?
            var pictureBase: MediaTime?
            var packet = Packet()
            var ended: CaptureEndReason?
            var sourceDropped = false
            var lastDiskCheck = Date.distantPast
            var bytesSinceDiskCheck = 0
            // A synthetic source (lavfi) makes its frames as fast as they are read: it is paced to real time,
            // as `ffmpeg -re` does, so that a recording of N seconds takes N seconds and events carry the
            // times a live source would give them.
            let pace = configuration.source.kind == .synthetic
                ? RealTimePace(timeBases: Dictionary(uniqueKeysWithValues: input.streams.map { ($0.index, $0.timeBase) })) : nil
            reading: while true {
                if isStopped { ended = .sessionWasInterrupted; break }
                let read: InputFile.ReadResult
                do {
                    read = try input.read(into: &packet)
                } catch {
                    if isStopped { ended = .sessionWasInterrupted } else { sourceDropped = true; summary.message = describe(error) }
                    break
                }
                guard read == .packet else {
                    sourceDropped = true
                    summary.message = "\(configuration.source): the stream ended"
                    break
                }
                if let wait = pace?.wait(for: packet) { sleep(wait) }
                let arrival = Date()
                lastArrival = arrival
                bytesSinceDiskCheck += packet.size
                if let minFree = configuration.minFreeDisk,
                   arrival.timeIntervalSince(lastDiskCheck) >= 0.5 || bytesSinceDiskCheck >= Self.diskCheckBytes {
                    lastDiskCheck = arrival
                    bytesSinceDiskCheck = 0
                    if let free = freeSpace(configuration.outputDirectory), free < minFree {
                        ended = .diskFull
                        summary.message = "\(configuration.outputDirectory): \(free) bytes free, below --min-free-disk \(minFree)"
                        break
                    }
                }
                guard let track = byIndex[packet.streamIndex] else { continue }
                do {
                    switch track.origin {
                    case .copied(let file):
                        // Scanning decodes its own reference to the packet, from the first recorded keyframe on.
                        let toScan: PacketBox? = pictures != nil && track.isVideo ? PacketBox() : nil
                        toScan?.packet.reference(packet)
                        let toMeasure: PacketBox? = levels != nil && !track.isVideo ? PacketBox() : nil
                        toMeasure?.packet.reference(packet)
                        if case .limit(let reason) = try recorder.take(&packet) { ended = reason; break reading }
                        if let pictures, let toScan, let origin = recorder.origin {
                            if feed == nil {
                                feed = try LiveScanner.Feed(scanner: pictures, input: file, stream: track.index, origin: origin,
                                                            offset: recorder.before.captureTime)
                            }
                            feed?.submit(toScan.packet, arrival: arrival)
                        }
                        if let levels, !track.isVideo, let toMeasure, let origin = recorder.origin {
                            if soundFeed == nil {
                                soundFeed = try LiveScanner.Feed(scanner: levels, input: file, stream: track.index, origin: origin,
                                                                 offset: recorder.before.captureTime)
                            }
                            soundFeed?.submit(toMeasure.packet, arrival: arrival)
                        }
                    case .encoded(let live):
                        var limit: CaptureEndReason?
                        try live.encode(packet, picture: { frame, time in
                            if !track.isVideo, let levels {
                                let origin = soundOrigin ?? time
                                soundOrigin = origin
                                let base = soundBase ?? progress.captureTime + progress.pendingGap
                                soundBase = base
                                levels.submit(frame, time: base + (time - origin), arrival: arrival)
                                return
                            }
                            guard let pictures, track.isVideo else { return }
                            let origin = pictureOrigin ?? time
                            pictureOrigin = origin
                            // The encoder holds pictures back: one past the duration limit is never recorded.
                            if let limit = configuration.maxDuration, (progress.recorded + (time - origin)).seconds >= limit { return }
                            let base = pictureBase ?? progress.captureTime + progress.pendingGap
                            pictureBase = base
                            pictures.submit(frame, time: base + (time - origin), arrival: arrival)
                        }, emit: { out throws(MediaFileError) in
                            if case .limit(let reason) = try recorder.take(&out) { limit = reason }
                        })
                        if let limit { ended = limit; break reading }
                    }
                } catch {
                    // A write the disk had no room for ends the recording as the free-space floor would.
                    if case .ffmpeg(let code, _) = error.reason, code.code == -ENOSPC { ended = .diskFull } else { ended = .deviceWasDisconnected }
                    summary.message = "\(error)"
                    break
                }
            }
            // What the encoders still hold belongs to the recording (packets past a limit are not written).
            for track in tracks {
                guard case .encoded(let live) = track.origin else { continue }
                do {
                    try live.flush(emit: { out throws(MediaFileError) in _ = try recorder.take(&out) })
                } catch {
                    summary.add(message: "\(error)")
                }
            }
            feed?.finish()
            soundFeed?.finish()
            do {
                try recorder.finishAll()
            } catch {
                summary.add(message: "\(error)")
            }
            finished.segments += recorder.finishedCount
            finished.bytes += recorder.finishedBytes
            finished.duration += recorder.finishedDuration
            progress = recorder.progress
            if sourceDropped, !isStopped, configuration.reconnectFor > 0 {
                let now = Date()
                lostAt = now
                events(.sourceLost(message: summary.message ?? "\(configuration.source): the source dropped",
                                   until: now.addingTimeInterval(configuration.reconnectFor)))
                continue connection
            }
            summary.reason = ended ?? (isStopped ? .sessionWasInterrupted : .deviceWasDisconnected)
            break
        }
        if let scanner { summary.scan = scanner.finish() }
        stillTaker.withLock { $0 = nil }
        if let stills { summary.stills = stills.finish() }
        levels?.finish()
        waveforms?.finish()
        summary.segments = finished.segments
        summary.bytes = finished.bytes
        summary.duration = finished.duration
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
