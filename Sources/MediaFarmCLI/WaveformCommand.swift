import ArgumentParser
import FarmModel
import FarmRuntime
import Foundation
import MediaCore
import MediaImage
import QueueCLI

/// `mediafarm waveform`: a picture of a recording's sound, as a job's `"waveform"` makes it.
struct WaveformCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "waveform",
        abstract: "A picture of the levels of a movie's or a recording's first audio track (PNG or SVG), and its peaks as JSON.",
        discussion: """
        Each column is the lowest and highest sample (all channels together) of its part of the track, drawn \
        blue on white. --peaks writes the same columns in audiowaveform's JSON format (version 2, 16 bits), \
        which peaks.js reads and wavesurfer.js takes as its peaks. Exit status: 0 when made, 1 when not, 2 \
        for bad usage.
        """)

    @Argument(help: "The movie or recording.")
    var input: String

    @Option(name: .long, help: "Columns \(UserNumbers.waveformWidth.inHelp).", transform: UserNumbers.waveformWidth.option)
    var width: Int = 1800

    @Option(name: .long, help: "Rows \(UserNumbers.waveformHeight.inHelp).", transform: UserNumbers.waveformHeight.option)
    var height: Int = 140

    @Option(name: .shortAndLong, help: "The picture, .png or .svg; default NAME-waveform.png in the current folder.")
    var output: String?

    @Option(name: .long, help: "Where the peaks go as JSON (audiowaveform's format).")
    var peaks: String?

    @Flag(help: "Replace files that exist.")
    var overwrite = false

    @Flag(help: "Print what was made as JSON.")
    var json = false

    func validate() throws {
        if let output, !output.lowercased().hasSuffix(".png") && !output.lowercased().hasSuffix(".svg") {
            throw ValidationError("--output \(output): name a .png or an .svg file")
        }
    }

    func run() async throws {
        let path = output ?? (URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent + "-waveform.png")
        var settings = JobManifest.WaveformSettings(output: path)
        (settings.width, settings.height, settings.peaks) = (width, height, peaks)
        let made: ([UInt8], Waveform)
        do {
            made = try JobPictures.waveformPicture(of: input, settings, limits: .default)
        } catch {
            throw CLIError("waveform: \(error)")
        }
        do { try ImagesCommand.write(made.0, to: path, overwrite: overwrite) } catch { throw CLIError("waveform: \(path): \(error)") }
        if let peaks {
            do { try ImagesCommand.write(Array(made.1.peaksJSON.utf8), to: peaks, overwrite: overwrite) } catch { throw CLIError("waveform: \(peaks): \(error)") }
        }
        let record = JobPictures.WaveformRecord(made.1, output: path, peaks: peaks)
        if json {
            print(String(decoding: try JSONEncoder.farm(pretty: true).encode(record), as: UTF8.self))
        } else {
            let loudest = record.peakDBFS.map { String(format: "%.1f dBFS", $0) } ?? "silence"
            print("\(path) (\(record.width)x\(record.height), \(String(format: "%.3f", record.duration)) s, loudest sample \(loudest))")
        }
    }
}
