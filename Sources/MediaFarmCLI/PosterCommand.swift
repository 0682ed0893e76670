import ArgumentParser
import FarmModel
import FarmRuntime
import Foundation
import MediaCore
import MediaImage
import MediaTime
import QueueCLI

/// `mediafarm poster`: one picture that stands for a movie, as a job's `"poster"` makes it.
struct PosterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "poster",
        abstract: "One picture that stands for a movie: a representative frame of its middle third, or the frame at a time.",
        discussion: """
        By default (--at auto) nine keyframes spread over the middle third are looked at and the one that shows \
        the most is taken: not black, not a fade, not a blank title card (--json lists them with their scores). \
        With --at SECONDS the picture is the keyframe nearest that time, or with --exact the frame shown at it. \
        Exit status: 0 when made, 1 when not, 2 for bad usage.
        """)

    @Argument(help: "The movie.")
    var input: String

    @Option(name: .long, help: "auto, or a time in seconds \(UserNumbers.duration.inHelp).")
    var at: String = "auto"

    @Flag(help: "With --at SECONDS: the frame shown at that time exactly.")
    var exact = false

    @OptionGroup var picture: PictureOptions

    @Option(name: .shortAndLong, help: "Where the picture goes; default NAME-poster.EXT in the current folder.")
    var output: String?

    @Flag(help: "Replace the picture if it exists.")
    var overwrite = false

    @Flag(help: "Print the picture's record (and, for auto, the frames looked at) as JSON.")
    var json = false

    /// The time asked for; nil for auto.
    func time() throws -> MediaTime? {
        guard at != "auto" else { return nil }
        switch UserNumbers.duration.parse(at) {
        case .success(let seconds): return ImagesCommand.time(seconds)
        case .failure(let error): throw ValidationError("--at \(at): give auto or \(error.expected)")
        }
    }

    func validate() throws {
        if try time() == nil && exact { throw ValidationError("--exact needs --at SECONDS: auto picks a keyframe") }
        _ = try picture.format(output: output)
    }

    func run() async throws {
        let settings = try picture.settings(tolerance: exact ? 0 : nil, output: output)
        let at = try time()
        let made: (AssetImageGenerator.Image, [RepresentativeFrame.Candidate]?)
        do {
            made = try JobPictures.posterImage(of: input, at: at, settings: settings, limits: .default)
        } catch {
            throw CLIError("poster: \(error)")
        }
        let path = output ?? (URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent + "-poster." + settings.format.fileExtension)
        do { try ImagesCommand.write(made.0.data, to: path, overwrite: overwrite) } catch { throw CLIError("poster: \(path): \(error)") }
        let record = JobPictures.PosterRecord(picture: ImageRecord(made.0, path: path), chosen: at == nil ? "auto" : "time", candidates: made.1)
        if json {
            print(String(decoding: try JSONEncoder.farm(pretty: true).encode(record), as: UTF8.self))
        } else {
            print(String(format: "%@ (%dx%d, the frame at %.3f s)", path, made.0.width, made.0.height, made.0.actualTime.seconds))
        }
    }
}
