import ArgumentParser
import Dispatch
import FarmIngest
import Foundation
import MediaCapture
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm capture`: records a live source into segments (AVCaptureMovieFileOutput).
struct CaptureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Record a live source into complete, playable segments.",
        discussion: """
        Sources: v4l2:/dev/videoN, x11grab::DISPLAY, alsa:DEVICE, pulse:DEVICE, lavfi:GRAPH, or a udp://, tcp://, \
        srt://, rtmp://, rtsp://, http(s)://...m3u8 live stream. Packets are copied: the source must carry \
        H.264/HEVC (or another codec MP4 holds) with AAC (or similar). Each segment is a fragmented MP4 written \
        under a hidden .partial name and renamed <capture-id>-<index>.mp4 when complete; segments are cut on \
        video keyframes, each starting where the one before ended. SIGTERM or SIGINT ends the recording with \
        its last segment complete. Every recording ends with one `finished` event giving its reason: \
        maximumDurationReached, maximumFileSizeReached, diskFull, deviceWasDisconnected, sessionWasInterrupted \
        or noDataCaptured. Exit 0 when it finished successfully (a limit or a signal, with complete segments), \
        1 otherwise, 2 for bad usage.
        """)

    @Option(help: "The live source.")
    var source: String

    @Option(name: .customLong("output-dir"), help: "Where segments are written (created if missing).")
    var outputDir: String

    @Option(name: .customLong("segment-duration"), parsing: .unconditional, help: "Seconds per segment (cut at the next keyframe).")
    var segmentDuration: Double = 60

    @Option(name: .customLong("max-duration"), parsing: .unconditional, help: "Stop after this many seconds of capture.")
    var maxDuration: Double?

    @Option(name: .customLong("max-size"), help: "Stop before the recording exceeds this size (e.g. 2G).")
    var maxSize: String?

    @Option(name: .customLong("segment-max-bytes"), help: "Cut a segment at the next keyframe once it reaches this size.")
    var segmentMaxBytes: String?

    @Option(name: .customLong("min-free-disk"), help: "Stop before the output's file system has less free space than this.")
    var minFreeDisk: String?

    @Option(name: .customLong("capture-id"), help: "Names the segments (default: cap-<date>-<time>).")
    var captureID: String?

    @Option(name: .customLong("input-format"), help: "The device's format (v4l2: mjpeg, h264, yuyv422, ...).")
    var inputFormat: String?

    @Option(name: .customLong("video-size"), help: "The device's frame size, WxH.")
    var videoSize: String?

    @Option(name: .customLong("frame-rate"), help: "The device's frame rate.")
    var frameRate: String?

    @Option(name: .customLong("read-timeout"), parsing: .unconditional, help: "Seconds a read may wait for data before the source counts as gone.")
    var readTimeout: Double = 10

    @Flag(help: "Print one JSON event per line (started, segment, enqueued, notice, finished).")
    var json = false

    @Option(help: ArgumentHelp("A manifest template: each finished segment becomes a job from it ({input}: the segment; also {stem}, {ext}, {index}, {captureID}, {date}).",
                               valueName: "template.json"))
    var enqueue: String?

    @OptionGroup var queue: QueueOptions

    @Option(name: .customLong("output-root"), help: "A folder the jobs' outputs may be written under (repeatable; default: MEDIAFARM_OUTPUT_ROOTS, else the template's folder).")
    var outputRoots: [String] = []

    func validate() throws {
        guard segmentDuration > 0 else { throw ValidationError("--segment-duration must be positive") }
        if let maxDuration, maxDuration <= 0 { throw ValidationError("--max-duration must be positive") }
        guard readTimeout > 0 else { throw ValidationError("--read-timeout must be positive") }
        if let captureID, captureID.isEmpty || captureID.contains("/") || captureID.hasPrefix(".") {
            throw ValidationError("--capture-id \(captureID): give a name without '/' that does not start with '.'")
        }
        for (name, value) in [("--max-size", maxSize), ("--segment-max-bytes", segmentMaxBytes), ("--min-free-disk", minFreeDisk)] {
            if let value { _ = try CoordinatorCommand.bytes(value, name) }
        }
    }

    func run() async throws {
        let parsed: CaptureSource
        do {
            parsed = try CaptureSource.parse(source, settings: .init(inputFormat: inputFormat, videoSize: videoSize, frameRate: frameRate,
                                                                     readTimeout: readTimeout))
        } catch {
            throw CLIError(error.description, status: ExitStatus.usage)
        }
        do {
            try FileManager.default.createDirectory(atPath: outputDir, withIntermediateDirectories: true)
        } catch {
            throw CLIError("--output-dir \(outputDir): cannot create it: \(error.localizedDescription)")
        }
        let id = captureID ?? "cap-" + Self.stamp(Date())
        var configuration = CaptureConfiguration(source: parsed, outputDirectory: URL(fileURLWithPath: outputDir).standardizedFileURL.path,
                                                 captureID: id)
        configuration.segmentDuration = segmentDuration
        configuration.maxDuration = maxDuration
        configuration.maxSize = try maxSize.map { Int64(try CoordinatorCommand.bytes($0, "--max-size")) }
        configuration.segmentMaxBytes = try segmentMaxBytes.map { Int64(try CoordinatorCommand.bytes($0, "--segment-max-bytes")) }
        configuration.minFreeDisk = try minFreeDisk.map { Int64(try CoordinatorCommand.bytes($0, "--min-free-disk")) }
        configuration.readTimeout = readTimeout

        let json = self.json
        let feeder: CaptureQueue? = try enqueue.map { path in
            let template: IngestTemplate
            do {
                template = try IngestTemplate.load(path, placeholders: CaptureQueue.placeholders)
            } catch {
                throw CLIError("--enqueue \(error)", status: ExitStatus.usage)
            }
            return CaptureQueue(template: template, captureID: id, outputDirectory: configuration.outputDirectory,
                                outputRoots: OutputRoots.chosen(outputRoots), location: try queue.location()) { event, fields in
                CaptureCommand.printLine(event, fields, json: json)
            }
        }
        let queueTask = feeder.map { feeder in Task { await feeder.run() } }
        // Segments an earlier recording into this folder finished but did not get queued.
        if let feeder {
            for left in CaptureQueue.notEnqueued(in: configuration.outputDirectory) {
                feeder.segmentFinished(SegmentReport(index: left.index, path: left.path, start: 0, wallClock: Date(), duration: 0, bytes: 0, packets: 0),
                                       captureID: left.captureID)
            }
        }
        // What a recording into this folder left when it died: salvaged (and enqueued) or quarantined.
        for salvaged in Salvage.run(folder: configuration.outputDirectory) {
            if let path = salvaged.path {
                Self.printLine("salvaged", ["captureID": salvaged.captureID, "index": salvaged.index, "path": path,
                                            "duration": salvaged.duration, "packets": salvaged.packets], json: json)
                feeder?.segmentFinished(SegmentReport(index: salvaged.index, path: path, start: 0, wallClock: salvaged.wallClock,
                                                      duration: salvaged.duration, bytes: 0, packets: salvaged.packets),
                                        captureID: salvaged.captureID)
            } else {
                Self.printLine("quarantined", ["captureID": salvaged.captureID, "index": salvaged.index, "path": salvaged.quarantined ?? "",
                                               "message": "segment \(salvaged.index) of \(salvaged.captureID) could not be salvaged: \(salvaged.reason ?? "")"],
                               json: json)
            }
        }
        let session = CaptureSession(configuration: configuration) { event in
            CaptureCommand.print(event, json: json)
            if case .segment(let report) = event { feeder?.segmentFinished(report) }
        }
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: number, queue: .global())
            s.setEventHandler { session.stop() }
            s.resume()
            sources.append(s)
        }
        defer { for s in sources { s.cancel() } }
        let summary = await withCheckedContinuation { (done: CheckedContinuation<CaptureSummary, Never>) in
            Thread { done.resume(returning: session.run()) }.start()
        }
        feeder?.finishFeeding()
        if let waiting = await queueTask?.value, !waiting.isEmpty, let feeder {
            Self.printLine("notice", ["message": "\(waiting.count) segments were not enqueued (the queue did not answer); they are listed in \(feeder.journalPath)"], json: json)
            throw ExitCode(ExitStatus.failure)
        }
        if !summary.successfullyFinished { throw ExitCode(ExitStatus.failure) }
    }

    static func stamp(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd-HHmmss"
        return f.string(from: date)
    }

    static func print(_ event: CaptureEvent, json: Bool) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        var line: String
        switch event {
        case let .started(id, source, streams):
            line = json ? Self.object(["event": "started", "captureID": id, "source": source, "streams": streams])
                        : "capture \(id): recording \(source) (\(streams.joined(separator: ", ")))"
        case .segment(let report):
            if json, let data = try? encoder.encode(report) {
                line = "{\"event\":\"segment\"," + String(decoding: data, as: UTF8.self).dropFirst()
            } else {
                line = String(format: "segment %d: %@ (%.3f s from %.3f s, %lld bytes)", report.index, report.path, report.duration, report.start, report.bytes)
            }
        case .finished(let summary):
            if json, let data = try? encoder.encode(summary) {
                line = "{\"event\":\"finished\"," + String(decoding: data, as: UTF8.self).dropFirst()
            } else {
                line = "capture \(summary.captureID) finished: \(summary.reason.rawValue), \(summary.segments) segments, "
                    + String(format: "%.1f s", summary.duration) + (summary.message.map { ": \($0)" } ?? "")
            }
        }
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// An event line from the queue feeder: JSON, or "event: key value, ...".
    static func printLine(_ event: String, _ fields: [String: Any], json: Bool) {
        let line = json ? object(fields.merging(["event": event]) { a, _ in a })
            : event == "enqueued" ? "segment \(fields["index"] ?? "?"): job \(fields["job"] ?? "?")\(fields["queued"] as? Bool == false ? " (already queued)" : "")"
            : event == "salvaged" ? "salvaged segment \(fields["index"] ?? "?") of \(fields["captureID"] ?? "?"): \(fields["path"] ?? "")"
            : "\(fields["message"] ?? event)"
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func object(_ value: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]))
            .map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
