import ArgumentParser
import Foundation
import MediaCore
import MediaInspect
import QueueCLI

/// `mediafarm loudness`: the loudness of files' audio (ITU-R BS.1770-4, EBU R128), measured by libebur128.
struct LoudnessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loudness",
        abstract: "Measure the loudness of files' audio: integrated (LUFS), range (LU), true peak (dBTP), short-term maximum.",
        discussion: """
        ITU-R BS.1770-4 as EBU R128 uses it, measured by libebur128, for each audio track and for the tracks \
        taken as one programme. \(LoudnessFigures.gating). Silence has no integrated loudness: the report says so. \
        Exit status: 0 when every file was measured, 1 when any could not be, 2 for bad usage.
        """)

    @Flag(name: .long, help: "Print a JSON array, one object per file, in the order given.")
    var json = false

    @Argument(help: "Movies or audio files.")
    var paths: [String]

    @OptionGroup var stall: StallOptions

    func run() async throws {
        stall.apply()
        let results = try await EachFile.read(paths, doing: "measuring", command: "loudness") { path, interrupter, progress in
            try LoudnessReport.measure(path: path, interrupter: interrupter, progress: progress)
        }.map { Measured(path: $0.path, report: $0.value, error: $0.error) }
        if json {
            FileHandle.standardOutput.write(try JSONEncoder.mediafarm().encode(results))
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            // A file that could not be measured is said once, on stderr below.
            for r in results where r.report != nil { print(Self.text(r)) }
        }
        for r in results { if let e = r.error { FileHandle.standardError.write(Data("error: \(e)\n".utf8)) } }
        if results.contains(where: { $0.error != nil }) { throw ExitCode(ExitStatus.failure) }
    }

    /// A file's measurement, as `loudness --json` prints it: the report, or the error.
    struct Measured: Encodable, Sendable {
        var path: String
        var report: LoudnessReport?
        var error: String?

        private enum Keys: String, CodingKey { case path, error, loudness }
        func encode(to encoder: any Swift.Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(path, forKey: .path)
            try c.encode(error, forKey: .error)
            try c.encodeIfPresent(report, forKey: .loudness)
        }
    }

    static func number(_ value: Double?, _ unit: String) -> String {
        value.map { String(format: "%.1f %@", $0, unit) } ?? "-"
    }

    static func text(_ r: Measured) -> String {
        guard let report = r.report else { return "\(r.path)\n  ERROR \(r.error ?? "")\n" }
        var lines = [r.path]
        for t in report.tracks {
            let f = t.loudness
            lines.append("  track \(t.trackID) (\(t.codec)\(t.language.map { ", \($0)" } ?? ""), \(f.channels.count) ch, \(f.sampleRate) Hz, "
                         + String(format: "%.1f s", f.seconds) + "):")
            lines.append("    integrated \(number(f.integrated, "LUFS"))  range \(number(f.range, "LU"))  true peak \(number(f.truePeak, "dBTP"))"
                         + "  short-term max \(number(f.shortTermMax, "LUFS"))")
            if let note = f.note { lines.append("    \(note)") }
        }
        if report.tracks.count > 1, let whole = report.asset {
            lines.append("  all tracks as one programme: integrated \(number(whole.integrated, "LUFS"))  range \(number(whole.range, "LU"))"
                         + "  true peak \(number(whole.truePeak, "dBTP"))")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
