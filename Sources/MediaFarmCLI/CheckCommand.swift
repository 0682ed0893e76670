import ArgumentParser
import FarmModel
import Foundation
import MediaCore
import MediaInspect
import QualityModel
import QueueCLI

/// `mediafarm check`: quality checks of files (black, frozen, out-of-range pictures, silence, clipping,
/// channels, loudness, length), every check in one decode, as a job's `"checks"` section runs them.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check files' pictures and sound in one decode: black, frozen and out-of-range runs, silence, clipping, channels, loudness, length.",
        discussion: """
        Without --checks, every picture and sound check runs at its defaults (FFmpeg's blackdetect, freezedetect and \
        silencedetect thresholds; levels, cadence, clipping and channels as docs/checks.md gives them). --checks names a JSON \
        file holding what a manifest's "checks" section holds, e.g. {"black": true, "loudness": {"standard": "ebu-r128"}}. \
        Exit status: 0 when every file passed (warnings included), 1 when a check of severity "fail" found something or a \
        file could not be read, 2 for bad usage or an invalid --checks file.
        """)

    @Flag(name: .long, help: "Print a JSON array, one object per file, in the order given: its path and its checks (as a job's result holds them).")
    var json = false

    @Option(name: .long, help: ArgumentHelp("A JSON file of checks, as a manifest's \"checks\" section.", valueName: "file"))
    var checks: String?

    @Option(name: .long, help: ArgumentHelp("A movie to measure each file's pictures against, paired in order: the fidelity check (PSNR and SSIM of each picture, at its defaults unless --checks sets it).", valueName: "file"))
    var reference: String?

    @Argument(help: "Movies or audio files.")
    var paths: [String]

    @OptionGroup var stall: StallOptions

    func validate() throws {
        if paths.isEmpty { throw ValidationError("name at least one file to check") }
    }

    func run() async throws {
        stall.apply()
        let plan = try loadPlan()
        let results = try await EachFile.read(paths, doing: "checking", command: "check") { path, interrupter, progress in
            try CheckReport.check(path: path, plan: plan, reference: reference, interrupter: interrupter, progress: progress)
        }.map { Checked(path: $0.path, checks: $0.value, error: $0.error) }
        if json {
            FileHandle.standardOutput.write(try JSONEncoder.mediafarm().encode(results))
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            for r in results where r.checks != nil { print(Self.text(r)) }
        }
        for r in results { if let e = r.error { FileHandle.standardError.write(Data("error: \(e)\n".utf8)) } }
        if results.contains(where: { $0.error != nil || $0.checks?.verdict == .failed }) { throw ExitCode(ExitStatus.failure) }
    }

    private func loadPlan() throws -> CheckPlan {
        var plan = try readPlan()
        if reference != nil && plan.fidelity == nil { plan.fidelity = CheckPlan.Fidelity() }
        if reference == nil && plan.fidelity != nil {
            FileHandle.standardError.write(Data("error: the fidelity check measures pictures against a reference: give --reference FILE\n".utf8))
            throw ExitCode(ExitStatus.usage)
        }
        return plan
    }

    private func readPlan() throws -> CheckPlan {
        guard let checks else { return .standard }
        guard let data = FileManager.default.contents(atPath: checks) else {
            FileHandle.standardError.write(Data("error: \(checks): cannot be read (no such file, or not a file this user may read)\n".utf8))
            throw ExitCode(ExitStatus.usage)
        }
        switch ManifestValidator.checks(json: [UInt8](data), file: checks) {
        case .success(let settings):
            return settings.plan
        case .failure(let error):
            FileHandle.standardError.write(Data("error: \(error.description)\n".utf8))
            throw ExitCode(ExitStatus.usage)
        }
    }

    /// A file's checks, as `check --json` prints them: the report, or the error.
    struct Checked: Encodable, Sendable {
        var path: String
        var checks: CheckReport?
        var error: String?

        private enum Keys: String, CodingKey { case path, error, checks }
        func encode(to encoder: any Swift.Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(path, forKey: .path)
            try c.encode(error, forKey: .error)
            try c.encodeIfPresent(checks, forKey: .checks)
        }
    }

    static func text(_ r: Checked) -> String {
        guard let report = r.checks else { return "\(r.path)\n  ERROR \(r.error ?? "")\n" }
        var lines = ["\(r.path): \(report.verdict.rawValue.uppercased())" + String(format: " (%.1f s, %d pictures, checked in %.1f s)", report.duration, report.frames, report.seconds)]
        for c in report.checks {
            lines.append("  \(c.outcome.rawValue.padding(toLength: 14, withPad: " ", startingAt: 0)) \(c.check): \(c.summary)")
            for run in c.runs.prefix(10) {
                var where_ = String(format: "%.3f–%.3f s (%.3f s)", run.start, run.end, run.duration)
                if let track = run.track { where_ += " track \(track)" }
                if let channel = run.channel { where_ += " channel \(channel)" }
                if run.toEnd == true { where_ += " to the end" }
                lines.append("      \(where_)")
            }
            if c.runs.count > 10 { lines.append("      … \(c.runs.count - 10) more") }
            for p in c.pictures ?? [] {
                lines.append(String(format: "      worst: %.3f s PSNR %@ dB SSIM %.4f", p.time, p.psnr.map { String(format: "%.2f", $0) } ?? "inf", p.ssim))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
