import ArgumentParser
import FarmModel
import FarmRuntime
import MediaCore
import MediaImage
import QueueCLI

/// The size and encoding of pictures, as `images` and `poster` take them.
struct PictureOptions: ParsableArguments {
    @Option(name: .customLong("max-width"), help: "Pictures at most this wide, 0 for any \(UserNumbers.pictureSide.inHelp).",
            transform: UserNumbers.pictureSide.option)
    var maxWidth: Int = 0

    @Option(name: .customLong("max-height"), help: "Pictures at most this high, 0 for any \(UserNumbers.pictureSide.inHelp).",
            transform: UserNumbers.pictureSide.option)
    var maxHeight: Int = 0

    @Option(name: .long, help: "jpeg, png or webp; default: the output's extension (.jpg, .jpeg, .png, .webp), or jpeg.")
    var format: StillImageFormat?

    @Option(name: .long, help: "Quality for JPEG and WebP \(UserNumbers.quality.inHelp).", transform: UserNumbers.quality.option)
    var quality: Double = 0.85

    /// The pictures' format: the output's, from its extension; `--format` when no output is named.
    func format(output: String?) throws -> StillImageFormat {
        guard let output else { return format ?? .jpeg }
        guard let fromName = PictureFormat(fileName: output).map(StillImageFormat.init) else {
            throw ValidationError("--output \(output): name a .jpg, .jpeg, .png or .webp file (the picture's format comes from its name)")
        }
        if let format, format != fromName {
            throw ValidationError("--format \(format.rawValue) disagrees with --output \(output), a \(fromName.rawValue.uppercased()) file's name; leave --format out or make the two agree")
        }
        return fromName
    }

    /// The generator's settings for these pictures, at `tolerance` seconds either side (nil: any).
    func settings(tolerance: Double?, output: String?) throws -> AssetImageGenerator.Settings {
        var settings = AssetImageGenerator.Settings()
        if let tolerance { (settings.toleranceBefore, settings.toleranceAfter) = (ImagesCommand.time(tolerance), ImagesCommand.time(tolerance)) }
        (settings.maximumWidth, settings.maximumHeight, settings.format, settings.quality) = (maxWidth, maxHeight, try format(output: output), quality)
        return settings
    }
}
