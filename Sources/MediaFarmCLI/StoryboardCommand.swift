import ArgumentParser
import FarmModel
import Foundation
import MediaCore
import MediaImage
import QueueCLI

/// `mediafarm storyboard`: sprite sheets of a movie's tiles, a WebVTT file pointing into them, a JSON index.
struct StoryboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storyboard",
        abstract: "Sprite sheets of small pictures over a movie, with a WebVTT file and a JSON index (for scrubbing previews).",
        discussion: """
        Each tile is the keyframe nearest its time: one frame decoded per tile. By default 50 tiles for a movie \
        under 15 minutes and 100 above (as Mux makes them). Writes NAME-1.jpg (and on), NAME.vtt and NAME.json \
        into the --output folder. Exit status: 0 when made, 1 when not, 2 for bad usage.
        """)

    @Argument(help: "The movie.")
    var input: String

    @Option(name: .long, help: "A tile every this many seconds \(UserNumbers.positiveDuration.inHelp).", transform: UserNumbers.positiveDuration.option)
    var every: Double?

    @Option(name: .long, help: "This many tiles spread over the movie \(UserNumbers.pictureCount.inHelp); default 50 under 15 minutes, 100 above.",
            transform: UserNumbers.pictureCount.option)
    var tiles: Int?

    @Option(name: .customLong("tile-width"), help: "Tiles this wide, their height from the display's aspect \(UserNumbers.tileWidth.inHelp).",
            transform: UserNumbers.tileWidth.option)
    var tileWidth: Int = 160

    @Option(name: .long, help: "Tiles across a sheet \(UserNumbers.sheetTiles.inHelp).", transform: UserNumbers.sheetTiles.option)
    var columns: Int = 10

    @Option(name: .long, help: "Tiles down a sheet \(UserNumbers.sheetTiles.inHelp).", transform: UserNumbers.sheetTiles.option)
    var rows: Int = 10

    @Option(name: .long, help: "jpeg, webp or png.")
    var format: StillImageFormat = .jpeg

    @Option(name: .long, help: "Quality for JPEG and WebP \(UserNumbers.quality.inHelp).", transform: UserNumbers.quality.option)
    var quality: Double = 0.7

    @Option(name: .shortAndLong, help: "The folder the files go in (made when missing); default NAME-storyboard in the current folder.")
    var output: String?

    @Flag(help: "Replace files that exist (otherwise the storyboard is not written, naming the first).")
    var overwrite = false

    @Flag(help: "Print the JSON index.")
    var json = false

    func validate() throws {
        if every != nil && tiles != nil { throw ValidationError("--every and --tiles: give one") }
    }

    func run() async throws {
        var settings = StoryboardSettings()
        (settings.every, settings.tiles, settings.tileWidth, settings.columns, settings.rows) = (every, tiles, tileWidth, columns, rows)
        (settings.format, settings.quality) = (format, quality)
        let storyboard: Storyboard
        do {
            storyboard = try Storyboard.make(path: input, settings: settings)
        } catch {
            throw CLIError("storyboard: \(error)")
        }
        let name = URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent
        let folder = URL(fileURLWithPath: output ?? name + "-storyboard")
        let sheetName = { (i: Int) in "\(name)-\(i + 1).\(format.fileExtension)" }
        let index = storyboard.index(sheetName: sheetName)
        let indexData = try JSONEncoder.farm(pretty: true).encode(index)
        // Every name is checked before anything is written: a storyboard is written whole or not at all.
        let files = storyboard.sheets.indices.map { (sheetName($0), storyboard.sheets[$0]) }
            + [(name + ".vtt", Array(storyboard.webVTT(sheetName: sheetName).utf8)), (name + ".json", Array(indexData) + [0x0A])]
        if !overwrite, let taken = files.first(where: { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0.0).path) }) {
            throw CLIError("storyboard: \(folder.appendingPathComponent(taken.0).path): already exists; --overwrite replaces it")
        }
        for (file, data) in files {
            let path = folder.appendingPathComponent(file).path
            do { try ImagesCommand.write(data, to: path, overwrite: overwrite) } catch { throw CLIError("storyboard: \(path): \(error)") }
        }
        if json {
            print(String(decoding: indexData, as: UTF8.self))
        } else {
            print("\(storyboard.tiles.count) tiles of \(storyboard.tileWidth)x\(storyboard.tileHeight) in \(Spoken.count(storyboard.sheets.count, "sheet")): "
                  + "\(folder.appendingPathComponent(name + ".vtt").path)")
        }
    }
}
