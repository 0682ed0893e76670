import Foundation
import MediaCore
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
public struct SegmentReport: Sendable, Codable {
    public var index: Int
    public var path: String
    /// Where it starts in capture time (seconds from the recording's first packet), and when that was.
    public var start: Double
    public var wallClock: Date
    public var duration: Double
    public var bytes: Int64
    public var packets: Int

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

public struct CaptureSummary: Sendable, Codable {
    public var captureID: String
    public var reason: CaptureEndReason
    public var successfullyFinished: Bool
    public var segments: Int
    public var duration: Double
    public var bytes: Int64
    public var message: String?
}

public enum CaptureEvent: Sendable {
    case started(captureID: String, source: String, streams: [String])
    case segment(SegmentReport)
    case finished(CaptureSummary)
}

/// Records a live source into segments (AVCaptureSession + AVCaptureMovieFileOutput). Packets are copied
/// (passthrough); a segment is cut on a video keyframe, so that each one starts exactly where the one
/// before ended in source time. Blocking: run it on a thread of its own; `stop` ends it from anywhere.
public final class CaptureSession: @unchecked Sendable {
    public let configuration: CaptureConfiguration
    private let events: @Sendable (CaptureEvent) -> Void
    private let interrupter: Interrupter
    private let stopRequested = NSLock()
    private var stopped = false
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

    /// Codecs an MP4 segment can hold as they come.
    static let copyable: Set<String> = ["h264", "hevc", "av1", "vp9", "mpeg4", "mjpeg", "aac", "mp3", "opus", "ac3", "eac3", "alac", "flac"]

    /// Records until a limit, the end of the source, or `stop`; returns the summary it also sent.
    @discardableResult
    public func run() -> CaptureSummary {
        var summary = CaptureSummary(captureID: configuration.captureID, reason: .noDataCaptured, successfullyFinished: false,
                                     segments: 0, duration: 0, bytes: 0, message: nil)
        defer { events(.finished(summary)) }
        let input: InputFile
        do {
            input = try InputFile(live: configuration.source.url, format: configuration.source.format, options: configuration.source.options,
                                  limits: .live(stallTimeout: .milliseconds(Int64(configuration.readTimeout * 1000))), interrupter: interrupter)
        } catch {
            summary.reason = isStopped ? .sessionWasInterrupted : .noDataCaptured
            summary.message = "\(configuration.source): \(error)"
            return summary
        }
        let streams = input.streams.filter { $0.mediaType == .video || $0.mediaType == .audio }
        if let unfit = streams.first(where: { !Self.copyable.contains($0.codecName) }) {
            summary.message = "\(configuration.source): its \(unfit.mediaType) is \(unfit.codecName), which an MP4 segment cannot hold as it comes; "
                + "encoding live sources is not supported yet: send H.264/HEVC with AAC"
            return summary
        }
        guard !streams.isEmpty else {
            summary.message = "\(configuration.source): no video or audio stream"
            return summary
        }
        input.discardAll(except: Set(streams.map(\.index)))
        let video = streams.first { $0.mediaType == .video }?.index
        events(.started(captureID: configuration.captureID, source: configuration.source.text,
                        streams: streams.map { "\($0.mediaType) \($0.codecName)" }))

        var recorder = Recorder(configuration: configuration, input: input, streams: streams, video: video, events: events)
        var packet = Packet()
        var lastDiskCheck = Date.distantPast
        loop: while true {
            if isStopped { summary.reason = .sessionWasInterrupted; break }
            let read: InputFile.ReadResult
            do {
                read = try input.read(into: &packet)
            } catch {
                summary.reason = isStopped ? .sessionWasInterrupted : .deviceWasDisconnected
                if !isStopped { summary.message = "\(configuration.source): \(error)" }
                break
            }
            guard read == .packet else {
                summary.reason = .deviceWasDisconnected
                summary.message = "\(configuration.source): the stream ended"
                break
            }
            if let minFree = configuration.minFreeDisk, Date().timeIntervalSince(lastDiskCheck) >= 0.5 {
                lastDiskCheck = Date()
                if let free = freeSpace(configuration.outputDirectory), free < minFree {
                    summary.reason = .diskFull
                    summary.message = "\(configuration.outputDirectory): \(free) bytes free, below --min-free-disk \(minFree)"
                    break
                }
            }
            do {
                switch try recorder.take(&packet) {
                case .recorded: continue loop
                case .limit(let reason): summary.reason = reason; break loop
                }
            } catch {
                summary.reason = .deviceWasDisconnected
                summary.message = "\(error)"
                break
            }
        }
        do {
            try recorder.finishAll()
        } catch {
            summary.message = [summary.message, "\(error)"].compactMap { $0 }.joined(separator: "; ")
        }
        summary.segments = recorder.finished.count
        summary.bytes = recorder.finished.reduce(0) { $0 + $1.bytes }
        summary.duration = recorder.finished.reduce(0) { $0 + $1.duration }
        if summary.segments == 0 && summary.reason != .diskFull { summary.reason = summary.reason == .sessionWasInterrupted ? .sessionWasInterrupted : .noDataCaptured }
        summary.successfullyFinished = summary.segments > 0
            && [.maximumDurationReached, .maximumFileSizeReached, .sessionWasInterrupted, .diskFull].contains(summary.reason)
        return summary
    }

    static func statvfsFree(_ path: String) -> Int64? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }
}
