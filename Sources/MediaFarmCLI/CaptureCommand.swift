import ArgumentParser
import CodeScan
import Dispatch
import FarmModel
import FarmIngest
import FarmRuntime
import FarmSubmit
import Foundation
import MediaCapture
import QueueCLI
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
        srt://, rtmp://, rtsp://, http(s)://...m3u8 live stream (--list-devices shows this machine's devices). \
        Video and audio are copied when an MP4 holds their codecs (H.264, HEVC, AAC, ...), else encoded as \
        exports are (H.264 CRF 20 veryfast, AAC 128 kb/s, a keyframe every second and at each segment \
        boundary). Each segment is a fragmented MP4 written under a hidden .partial name and renamed <capture-id>-<index>.mp4 when \
        complete; segments are cut on video keyframes, each starting where the one before ended. A source \
        that drops is reopened with backoff for --reconnect-for seconds, the gap reported. --scan reads codes \
        in the pictures on threads of its own, never delaying the recording. SIGTERM or SIGINT ends the \
        recording with its last segment complete. --enqueue makes each segment a job; --assemble joins a \
        finished recording's segments into one movie, after their jobs. Every recording ends with one `finished` event giving its \
        reason: maximumDurationReached, maximumFileSizeReached, diskFull, deviceWasDisconnected, \
        sessionWasInterrupted or noDataCaptured. Exit 0 when it finished successfully (a limit or a signal, \
        with complete segments), 1 otherwise, 2 for bad usage.
        """)

    @Flag(name: .customLong("list-devices"), help: "List this machine's capture devices (V4L2 cameras with their formats, sizes and frame rates; X displays; ALSA capture devices) and exit.")
    var listDevices = false

    @Option(help: ArgumentHelp("The capture's settings as JSON (jobs/capture.schema.json); options given here win.", valueName: "file"))
    var config: String?

    @Option(help: "The live source.")
    var source: String?

    @Option(name: .customLong("output-dir"), help: "Where segments are written (created if missing).")
    var outputDir: String?

    @Option(name: .customLong("segment-duration"), parsing: .unconditional, help: "Seconds per segment (cut at the next keyframe; default 60) \(UserNumbers.wait.inHelp).", transform: UserNumbers.wait.option)
    var segmentDuration: Double?

    @Option(name: .customLong("max-duration"), parsing: .unconditional, help: "Stop after this many seconds of capture \(UserNumbers.positiveDuration.inHelp).", transform: UserNumbers.positiveDuration.option)
    var maxDuration: Double?

    @Option(name: .customLong("max-size"), parsing: .unconditional, help: "Stop before the recording exceeds this size (e.g. 2G) \(UserNumbers.bytes.inHelp).", transform: UserNumbers.bytes.option)
    var maxSize: UInt64?

    @Option(name: .customLong("segment-max-bytes"), parsing: .unconditional, help: "Cut a segment at the next keyframe once it reaches this size \(UserNumbers.bytes.inHelp).", transform: UserNumbers.bytes.option)
    var segmentMaxBytes: UInt64?

    @Option(name: .customLong("min-free-disk"), parsing: .unconditional, help: "Stop before the output's file system has less free space than this \(UserNumbers.bytes.inHelp).", transform: UserNumbers.bytes.option)
    var minFreeDisk: UInt64?

    @Option(name: .customLong("capture-id"), help: "Names the segments (default: cap-<date>-<time>).")
    var captureID: String?

    @Option(name: .customLong("input-format"), help: "The device's format (v4l2: mjpeg, h264, yuyv422, ...).")
    var inputFormat: String?

    @Option(name: .customLong("video-size"), help: "The device's frame size, WxH.")
    var videoSize: String?

    @Option(name: .customLong("frame-rate"), parsing: .unconditional, help: "The device's frame rate.")
    var frameRate: String?

    @Option(name: .customLong("read-timeout"), parsing: .unconditional, help: "Seconds a read may wait for data before the source counts as gone (default 10) \(UserNumbers.wait.inHelp).", transform: UserNumbers.wait.option)
    var readTimeout: Double?

    @Option(name: .customLong("reconnect-for"), parsing: .unconditional, help: "Seconds to keep reopening a source that dropped, with backoff, before the recording ends (default 0: no reconnection) \(UserNumbers.duration.inHelp).", transform: UserNumbers.duration.option)
    var reconnectFor: Double?

    @Option(help: ArgumentHelp("Scan the pictures for these symbologies while recording (e.g. qr,ean13): code and codeGone events, and each segment's codes.", valueName: "symbologies"))
    var scan: String?

    @Option(help: "With --scan: the region of interest x,y,width,height in normalized coordinates (0...1).")
    var roi: String?

    @Option(name: .customLong("still-every"), parsing: .unconditional,
            help: "Write a JPEG still of the picture every this many seconds of capture, beside the segments (<capture-id>-still-NNNN.jpg, its capture time in EXIF DateTimeOriginal) \(UserNumbers.stillInterval.inHelp).",
            transform: UserNumbers.stillInterval.option)
    var stillEvery: Double?

    @Flag(name: .customLong("stills-on-request"), help: "Write a still of the next picture on each SIGUSR1 (with --still-every too).")
    var stillsOnRequest = false

    @Option(name: .customLong("levels-every"), parsing: .unconditional,
            help: "A levels event (the sound's average and peak in dBFS, per channel) every this many seconds of capture \(UserNumbers.levelsInterval.inHelp).",
            transform: UserNumbers.levelsInterval.option)
    var levelsEvery: Double?

    @Flag(name: .customLong("segment-waveforms"), help: "Draw each finished segment's waveform beside it (SEGMENT-waveform.png, and its peaks as SEGMENT-waveform.json).")
    var segmentWaveforms = false

    @Flag(help: "Print one JSON event per line (started, segment, code, codeGone, still, levels, waveform, sourceLost, reconnected, enqueued, assembly, notice, finished).")
    var json = false

    @Option(help: ArgumentHelp("A manifest template: each finished segment becomes a job from it ({input}: the segment; also {stem}, {ext}, {index}, {captureID}, {date}).",
                               valueName: "template.json"))
    var enqueue: String?

    @Option(help: ArgumentHelp("With --enqueue: a manifest template without input or edits. When the recording ends (for any reason), one job from it joins the recording's segments end to end, exact at the joins, after all their jobs; gaps where the source dropped are reported ({captureID}, {date}, {first}, {last}, {segments}).",
                               valueName: "template.json"))
    var assemble: String?

    @OptionGroup var queue: QueueOptions

    @Option(name: .customLong("output-root"), help: "A folder the jobs' outputs may be written under (repeatable; default: MEDIAFARM_OUTPUT_ROOTS, else the template's folder).")
    var outputRoots: [String] = []

    /// The options merged with the config file's settings (options win), defaults applied.
    struct Settings {
        var source: String
        var outputDir: String
        var segmentDuration: Double
        var maxDuration: Double?
        var maxSize: UInt64?
        var segmentMaxBytes: UInt64?
        var minFreeDisk: UInt64?
        var captureID: String?
        var inputFormat: String?
        var videoSize: String?
        var frameRate: String?
        var readTimeout: Double
        var reconnectFor: Double
        var scan: CodeScanner.Configuration?
        var stillEvery: Double?
        var stillsOnRequest = false
        var levelsEvery: Double?
        var segmentWaveforms = false
        var enqueue: String?
        var assemble: String?
        var queue: QueueOptions
        var outputRoots: [String]
    }

    func validate() throws {
        if listDevices { return }
        if config == nil {
            guard source != nil else { throw ValidationError("give --source (or --config FILE, or --list-devices)") }
            guard outputDir != nil else { throw ValidationError("give --output-dir (or --config FILE)") }
        }
        if config == nil { _ = try settings(file: nil) }
    }

    func settings(file: CaptureConfigFile?) throws -> Settings {
        let from = config.map { "--config \($0): " } ?? ""
        guard let source = source ?? file?.source else { throw ValidationError("\(from)no source: give --source or \"source\"") }
        guard let outputDir = outputDir ?? file?.outputDir else { throw ValidationError("\(from)no output folder: give --output-dir or \"outputDir\"") }
        var queue = self.queue
        if queue.queue == nil { queue.queue = file?.queue }
        // The config file's numbers are held to the options' ranges.
        func seconds(_ option: Double?, _ key: String, _ value: Double?, _ rule: NumberRule<Double>) throws -> Double? {
            try option ?? value.map { try rule.checked($0, from + key) }
        }
        func size(_ option: UInt64?, _ key: String, _ value: CaptureConfigFile.ByteCount?) throws -> UInt64? {
            try option ?? value.map { try UserNumbers.bytes.parsed($0.text, from + key) }
        }
        var s = Settings(source: source, outputDir: outputDir,
                         segmentDuration: try seconds(segmentDuration, "segmentDuration", file?.segmentDuration, UserNumbers.wait) ?? 60,
                         maxDuration: try seconds(maxDuration, "maxDuration", file?.maxDuration, UserNumbers.positiveDuration),
                         maxSize: try size(maxSize, "maxSize", file?.maxSize),
                         segmentMaxBytes: try size(segmentMaxBytes, "segmentMaxBytes", file?.segmentMaxBytes),
                         minFreeDisk: try size(minFreeDisk, "minFreeDisk", file?.minFreeDisk),
                         captureID: captureID ?? file?.captureID, inputFormat: inputFormat ?? file?.inputFormat,
                         videoSize: videoSize ?? file?.videoSize, frameRate: frameRate ?? file?.frameRate,
                         readTimeout: try seconds(readTimeout, "readTimeout", file?.readTimeout, UserNumbers.wait) ?? 10,
                         reconnectFor: try seconds(reconnectFor, "reconnectFor", file?.reconnectFor, UserNumbers.duration) ?? 0,
                         scan: nil, enqueue: enqueue ?? file?.enqueue, assemble: assemble ?? file?.assemble, queue: queue,
                         outputRoots: outputRoots.isEmpty ? file?.outputRoots ?? [] : outputRoots)
        s.stillEvery = try seconds(stillEvery, "stillEvery", file?.stillEvery, UserNumbers.stillInterval)
        s.stillsOnRequest = stillsOnRequest || file?.stillsOnRequest == true
        s.levelsEvery = try seconds(levelsEvery, "levelsEvery", file?.levelsEvery, UserNumbers.levelsInterval)
        s.segmentWaveforms = segmentWaveforms || file?.segmentWaveforms == true
        if s.assemble != nil, s.enqueue == nil {
            throw ValidationError("\(from)--assemble needs --enqueue: the assembly waits for the segments' jobs "
                                  + "(a template as small as {\"version\": 1, \"input\": \"{input}\"} inspects each segment)")
        }
        if let captureID = s.captureID, captureID.isEmpty || captureID.contains("/") || captureID.hasPrefix(".") {
            throw ValidationError("\(from)capture id \(captureID): give a name without '/' that does not start with '.'")
        }
        if let list = scan ?? file?.scan {
            let symbologies: [Symbology]
            do { symbologies = try Symbology.parseList(list) } catch { throw ValidationError("\(from)--scan: \(ScanCommand.describe(error))") }
            guard !symbologies.isEmpty else { throw ValidationError("\(from)--scan names no symbology; symbologies are opt-in") }
            s.scan = CodeScanner.Configuration(symbologies: symbologies, regionOfInterest: try ScanCommand.region(roi ?? file?.roi))
        } else if roi ?? file?.roi != nil {
            throw ValidationError("\(from)--roi needs --scan")
        }
        return s
    }

    func run() async throws {
        if listDevices { return try printDevices() }
        let file = try config.map { try CaptureConfigFile.load($0) }
        let settings: Settings
        do { settings = try self.settings(file: file) } catch let error as ValidationError { throw CLIError(error.message, status: ExitStatus.usage) }
        let parsed: CaptureSource
        do {
            parsed = try CaptureSource.parse(settings.source, settings: .init(inputFormat: settings.inputFormat, videoSize: settings.videoSize,
                                                                              frameRate: settings.frameRate, readTimeout: settings.readTimeout))
        } catch {
            throw CLIError(error.description, status: ExitStatus.usage)
        }
        let outputDir = settings.outputDir
        do {
            try FileManager.default.createDirectory(atPath: outputDir, withIntermediateDirectories: true)
        } catch {
            throw CLIError("--output-dir \(outputDir): cannot create it: \(error.localizedDescription)")
        }
        let configuration = Self.configuration(settings, source: parsed)
        let outputRoots = settings.outputRoots
        let assembly = try settings.assemble.map { try Self.assembly($0, configuration: configuration, outputRoots: outputRoots) }
        let feeder: CaptureQueue? = try settings.enqueue.map { path throws in try self.feeder(path, configuration: configuration, settings: settings) }
        let recording = CaptureRecording(configuration: configuration, feeder: feeder,
                                         assembly: assembly.map { ($0, OutputRoots.chosen(outputRoots) ?? [$0.folder]) })
        let json = self.json
        let outcome: (summary: CaptureSummary, queued: Bool)
        do {
            outcome = try await recording.run(report: { event in CaptureCommand.writeLine(json ? event.json : event.line) },
                                              events: { event in CaptureCommand.printEvent(event, json: json) })
        } catch {
            // A journal that cannot be read stops the capture here, naming the file and the line, before anything is queued again.
            throw CLIError("capture: \(error)")
        }
        let failed = !outcome.summary.successfullyFinished || !outcome.queued
        if failed { throw ExitCode(ExitStatus.failure) }
    }

    /// `--list-devices`: the cameras, screens and microphones there are, with their formats.
    func printDevices() throws {
        let devices = CaptureDevices.list()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
            FileHandle.standardOutput.write(try encoder.encode(devices) + Data("\n".utf8))
        } else if devices.isEmpty {
            print("no capture devices found (no V4L2 camera in /dev, no X display in /tmp/.X11-unix, no ALSA capture device)")
        } else {
            for d in devices {
                print("\(d.source)  \(d.name)")
                for f in d.formats ?? [] {
                    let sizes = f.sizes.map { s in
                        "\(s.range ? "up to " : "")\(s.width)x\(s.height)" + (s.frameRates.isEmpty ? "" : "@" + s.frameRates.map { String(format: "%g", $0) }.joined(separator: "/"))
                    }
                    print("    --input-format \(f.inputFormat)  (\(f.description)\(f.compressed ? ", compressed" : "")): \(sizes.joined(separator: ", "))")
                }
            }
        }
    }

    /// The session's configuration from the settings.
    static func configuration(_ settings: Settings, source parsed: CaptureSource) -> CaptureConfiguration {
        let outputDir = settings.outputDir
        let id = settings.captureID ?? "cap-" + Self.stamp(Date())
        var configuration = CaptureConfiguration(source: parsed, outputDirectory: URL(fileURLWithPath: outputDir).standardizedFileURL.path,
                                                 captureID: id)
        configuration.segmentDuration = settings.segmentDuration
        configuration.maxDuration = settings.maxDuration
        configuration.maxSize = settings.maxSize.map { Int64($0) }
        configuration.segmentMaxBytes = settings.segmentMaxBytes.map { Int64($0) }
        configuration.minFreeDisk = settings.minFreeDisk.map { Int64($0) }
        configuration.readTimeout = settings.readTimeout
        configuration.reconnectFor = settings.reconnectFor
        configuration.scan = settings.scan
        configuration.stillEvery = settings.stillEvery
        configuration.stillsOnRequest = settings.stillsOnRequest || settings.stillEvery != nil
        configuration.levelsEvery = settings.levelsEvery
        configuration.segmentWaveforms = settings.segmentWaveforms
        return configuration
    }

    /// The `--assemble` template, checked now on a stand-in segment rather than after hours of recording.
    static func assembly(_ path: String, configuration: CaptureConfiguration, outputRoots: [String]) throws -> IngestTemplate {
        let id = configuration.captureID
        let template: IngestTemplate
        do {
            template = try IngestTemplate.load(path, placeholders: CaptureAssembly.placeholders, required: nil)
        } catch {
            throw CLIError("--assemble \(error)", status: ExitStatus.usage)
        }
        if let problem = CaptureAssembly.templateProblem(template) { throw CLIError("--assemble \(problem)", status: ExitStatus.usage) }
        // Checked now, on a stand-in segment, rather than after hours of recording.
        let sample = SegmentReport(index: 1, path: configuration.outputDirectory + "/\(id)-00001.mp4", start: 0, wallClock: Date(),
                                   duration: 1, bytes: 0, packets: 0)
        let trial = CaptureAssembly.make(template: template, captureID: id, segments: [sample],
                                         outputRoots: OutputRoots.chosen(outputRoots) ?? [template.folder])
        let offer = ManifestOffer(text: trial.manifest, file: trial.name, name: trial.name, baseDirectory: trial.baseDirectory)
        if case .failure(let problem) = Submission.validate(offer, as: .capture(outputRoots: trial.outputRoots)) {
            throw CLIError("--assemble \(path): the template gives an invalid manifest: \(IngestError(invalid: problem))", status: ExitStatus.usage)
        }
        return template
    }

    /// The queue feed of `--enqueue`: each finished segment's job, made from the template.
    func feeder(_ path: String, configuration: CaptureConfiguration, settings: Settings) throws -> CaptureQueue {
        let json = self.json
        let template: IngestTemplate
        do {
            template = try IngestTemplate.load(path, placeholders: CaptureQueue.placeholders)
        } catch {
            throw CLIError("--enqueue \(error)", status: ExitStatus.usage)
        }
        return CaptureQueue(template: template, captureID: configuration.captureID, outputDirectory: configuration.outputDirectory,
                            outputRoots: OutputRoots.chosen(settings.outputRoots), location: try settings.queue.location(),
                            libraryHost: LibraryOptions.hostName(nil)) { event in
            CaptureCommand.writeLine(json ? event.json : event.line)
        }
    }

    static func stamp(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd-HHmmss"
        return f.string(from: date)
    }

    static func printEvent(_ event: CaptureEvent, json: Bool) {
        writeLine(json ? event.json : event.line)
    }

    /// Events come from the recording's thread, the scanner's and the queue feeder's: one line at a time.
    private static let output = NSLock()

    static func writeLine(_ line: String) {
        output.withLock { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    }
}
