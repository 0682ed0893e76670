import ArgumentParser
import FarmModel
import Foundation
import MediaCore
import MediaImage
import MediaTime
import QueueCLI
import SafeFiles
import Synchronization

/// `mediafarm images`: pictures of a movie at given times, as AVAssetImageGenerator makes them.
struct ImagesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "images",
        abstract: "Pictures of a movie at given times (JPEG, PNG or WebP).",
        discussion: """
        By default each picture is the keyframe nearest its time (one frame decoded: fast); --exact gives the \
        frame shown at each time, and --tolerance how far from it a picture may be. Pictures keep the display \
        aspect (non-square pixels, the track's rotation) and fit --max-width and --max-height. Each time has \
        its own result: a time past the end fails alone. Exit status: 0 when every picture was made, 1 when \
        any failed, 2 for bad usage.
        """)

    @Argument(help: "The movie.")
    var input: String

    @Option(name: .long, parsing: .singleValue, help: "A time in seconds; repeat it for several \(UserNumbers.duration.inHelp).",
            transform: UserNumbers.duration.option)
    var at: [Double] = []

    @Option(name: .long, help: "A picture every this many seconds, from 0 \(UserNumbers.positiveDuration.inHelp).",
            transform: UserNumbers.positiveDuration.option)
    var every: Double?

    @Option(name: .long, help: "This many pictures spread over the movie, each in the middle of its part \(UserNumbers.pictureCount.inHelp).",
            transform: UserNumbers.pictureCount.option)
    var count: Int?

    @Flag(help: "The frame shown at each time exactly (tolerance 0 before and after).")
    var exact = false

    @Option(name: .long, help: "How far before or after each time its picture may be, in seconds \(UserNumbers.duration.inHelp); default: any (the nearest keyframe).",
            transform: UserNumbers.duration.option)
    var tolerance: Double?

    @OptionGroup var picture: PictureOptions

    @Option(name: .shortAndLong, help: "Where the pictures go: a path with {index} (1, 2, ...) or {time} (milliseconds) in its name; default NAME-{index}.EXT in the current folder.")
    var output: String?

    @Flag(help: "Replace pictures that exist (otherwise such a picture fails, naming it).")
    var overwrite = false

    @Flag(help: "Print a JSON array, one object per time, in the order asked.")
    var json = false

    func validate() throws {
        let ways = [!at.isEmpty, every != nil, count != nil].filter { $0 }.count
        guard ways == 1 else { throw ValidationError("give the times one way: --at (repeated), --every or --count") }
        if exact && tolerance != nil { throw ValidationError("--exact and --tolerance: give one (--exact is --tolerance 0)") }
        _ = try picture.format(output: output)
        if let output, !output.contains("{index}") && !output.contains("{time}") && (at.count > 1 || every != nil || (count ?? 1) > 1) {
            throw ValidationError("--output \(output): several pictures need {index} or {time} in the name")
        }
    }

    func run() async throws {
        let settings = try picture.settings(tolerance: exact ? 0 : tolerance, output: output)
        let generator: AssetImageGenerator
        do {
            generator = try AssetImageGenerator(path: input, settings: settings)
        } catch {
            throw CLIError("images: \(error)")
        }
        let times = try self.times(duration: generator.duration)
        let pattern = output ?? (URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent + "-{index}." + settings.format.fileExtension)
        // On every core: each stretch of the times with a reader of its own (this one the first's).
        let made = ImageRecords(count: times.count)
        let overwrite = self.overwrite
        do {
            try generator.images(at: times, workers: Self.workers) { i, result in
                switch result {
                case .success(let image):
                    let path = Self.path(pattern, index: i + 1, time: image.requestedTime)
                    do {
                        try Self.write(image.data, to: path, overwrite: overwrite)
                        made[i] = ImageRecord(image, path: path)
                    } catch {
                        made[i] = ImageRecord(requested: times[i], error: "\(path): \(error)")
                    }
                case .failure(let error):
                    made[i] = ImageRecord(requested: times[i], error: error.description)
                }
            }
        } catch {
            throw CLIError("images: \(error)")
        }
        let records = made.all.enumerated().map { $0.element ?? ImageRecord(requested: times[$0.offset], error: "not made") }
        if json {
            print(String(decoding: try JSONEncoder.farm(pretty: true).encode(records), as: UTF8.self))
        } else {
            for r in records {
                if let path = r.path {
                    print(String(format: "%.3f s: %@ (%dx%d, the frame at %.3f s)", r.requestedTime, path, r.width ?? 0, r.height ?? 0, r.actualTime ?? 0))
                } else {
                    FileHandle.standardError.write(Data(String(format: "%.3f s: %@\n", r.requestedTime, r.error ?? "failed").utf8))
                }
            }
        }
        if records.contains(where: { $0.error != nil }) { throw ExitCode(ExitStatus.failure) }
    }

    /// The times asked for: as given, every N seconds from 0 while inside the movie, or N spread over it.
    func times(duration: MediaTime?) throws -> [MediaTime] {
        if !at.isEmpty { return at.map(Self.time) }
        guard let duration, duration > .zero else {
            throw CLIError("images: \(input): the movie does not say how long it is; give the times with --at")
        }
        if let every {
            let n = Int((duration.seconds / every).rounded(.up))
            guard n <= UserNumbers.pictureCount.maximum else {
                throw CLIError("images: --every \(every) makes \(n) pictures of \(input); at most \(UserNumbers.pictureCount.maximum)", status: ExitStatus.usage)
            }
            return (0..<max(n, 1)).map { Self.time(Double($0) * every) }
        }
        let n = count ?? 1
        return (0..<n).map { Self.time(duration.seconds * (Double($0) + 0.5) / Double(n)) }
    }

    /// Pictures made at once: one reader per core, at most four.
    static var workers: Int { max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4)) }

    /// The records of pictures made on several threads (written one at a time, by index).
    final class ImageRecords: Sendable {
        let records: Mutex<[ImageRecord?]>
        init(count: Int) { records = Mutex(Array(repeating: nil, count: count)) }
        subscript(i: Int) -> ImageRecord? {
            get { records.withLock { $0[i] } }
            set { records.withLock { $0[i] = newValue } }
        }
        var all: [ImageRecord?] { records.withLock { $0 } }
    }

    static func path(_ pattern: String, index: Int, time: MediaTime) -> String {
        pattern.replacingOccurrences(of: "{index}", with: String(index))
            .replacingOccurrences(of: "{time}", with: String(Int64((time.seconds * 1000).rounded())))
    }

    /// Seconds (checked by the option's rule) as a time, to the microsecond.
    static func time(_ seconds: Double) -> MediaTime { MediaTime(value: Int64((seconds * 1_000_000).rounded()), timescale: 1_000_000) }

    /// Written whole under a temporary name beside it, synced, then moved into place: never over an
    /// existing file unless `overwrite`. Its folder is made when missing.
    static func write(_ data: [UInt8], to path: String, overwrite: Bool) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw CLIError("cannot make the folder \(folder.path): \(error.localizedDescription)")
        }
        guard overwrite else {
            do { try SafeFiles.create(path, contents: Data(data)) } catch {
                throw error.targetExists ? CLIError("already exists; --overwrite replaces it") : error
            }
            return
        }
        let temporary = SafeFiles.temporaryName(beside: path)
        try SafeFiles.create(temporary, contents: Data(data))
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw CLIError(reason)
        }
    }
}

extension StillImageFormat: ExpressibleByArgument {}
