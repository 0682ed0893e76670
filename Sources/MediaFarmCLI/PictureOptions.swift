import ArgumentParser
import FarmModel
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

    @Option(name: .long, help: "jpeg, png or webp.")
    var format: StillImageFormat = .jpeg

    @Option(name: .long, help: "Quality for JPEG and WebP \(UserNumbers.quality.inHelp).", transform: UserNumbers.quality.option)
    var quality: Double = 0.85

    /// The generator's settings for these pictures, at `tolerance` seconds either side (nil: any).
    func settings(tolerance: Double?) -> AssetImageGenerator.Settings {
        var settings = AssetImageGenerator.Settings()
        if let tolerance { (settings.toleranceBefore, settings.toleranceAfter) = (ImagesCommand.time(tolerance), ImagesCommand.time(tolerance)) }
        (settings.maximumWidth, settings.maximumHeight, settings.format, settings.quality) = (maxWidth, maxHeight, format, quality)
        return settings
    }
}
