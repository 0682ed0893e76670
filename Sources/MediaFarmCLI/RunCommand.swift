import ArgumentParser
import FarmLibrary
import FarmModel
import FarmRuntime
import FarmSubmit
import Foundation
import MediaInspect
import QueueCLI

/// `mediafarm run`: execute manifests inline, without a queue.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run job manifests now, in this process (no queue).",
        discussion: """
        Every manifest is validated first: if any is invalid, every error is listed with its JSON path and \
        nothing runs (exit 2). Then the jobs run one after another, with a progress bar on a terminal, or \
        JSON-line events on stdout with --json. Exit status: 0 when every job succeeded, 1 when any failed.

        Outputs may only be written under the output roots: --output-root (repeatable), else \
        MEDIAFARM_OUTPUT_ROOTS (colon-separated), else each manifest's own folder. A manifest that names \
        library assets (asset:ID) has them resolved to this host's paths in the queue's library (--queue).
        """)

    @OptionGroup var queue: QueueOptions
    @OptionGroup var library: LibraryOptions

    @Flag(name: .long, help: "Print one JSON event per line (progress, result) instead of a progress bar.")
    var json = false

    @Option(name: .customLong("output-root"), help: "A folder outputs may be written under (repeatable).")
    var outputRoots: [String] = []

    @Argument(help: "Manifest files, or folders whose *.json files are manifests.")
    var manifests: [String]

    @OptionGroup var stall: StallOptions

    func run() async throws {
        stall.apply()
        let (loaded, invalid) = try await load(OutputRoots.chosen(outputRoots))
        if !invalid.isEmpty {
            for e in invalid { FileHandle.standardError.write(Data((e.description + "\n").utf8)) }
            if json {
                let lines = invalid.map { e in
                    JobEvent.result(JobResult(name: e.file ?? "manifest", succeeded: false,
                                              error: e.issues.map(\.description).joined(separator: "; "), seconds: 0))
                }
                for line in lines { WorkerLoop.print(line) }
            }
            throw ExitCode(ExitStatus.usage)
        }
        var failed = false
        let stop = SignalStop()
        for manifest in loaded {
            let bar = json ? nil : TerminalProgress(label: manifest.name, total: 1000)
            let json = self.json
            var result = try await stop.run {
                await JobRunner(manifest: manifest).run { event in
                    if json { WorkerLoop.print(event) }
                    if case .progress(let p) = event { bar?.update(Int(p.fraction * 1000), detail: p.detail) }
                    if !json, case .log(let level, let message) = event, level != "debug" {
                        FileHandle.standardError.write(Data("\(manifest.name): \(message)\n".utf8))
                    }
                }
            }
            bar?.finish()
            if let signal = stop.signal, !result.succeeded {
                result.error = "stopped by \(SignalStop.name(signal)); temporary outputs removed, nothing published"
            }
            say(result, of: manifest)
            failed = failed || !result.succeeded
            if let signal = stop.signal { throw SignalStop.exitCode(signal) }
        }
        if failed { throw ExitCode(ExitStatus.failure) }
    }

    /// The manifests, checked as the worker checks them; library assets resolved on this host. Another
    /// job's result is refused: only a coordinator puts it in.
    func load(_ roots: [String]?) async throws -> (loaded: [JobManifest], invalid: [ManifestValidationError]) {
        var loaded: [JobManifest] = []
        var invalid: [ManifestValidationError] = []
        var assets: AssetLibrary?
        for path in try SubmitCommand.expand(manifests) {
            switch ManifestLoader.loadWithText(path, outputRoots: roots) {
            case .success(let (m, _)) where m.edits.contains(where: { JobOutputReference.parse($0.source) != nil }):
                let source = m.edits.first { JobOutputReference.parse($0.source) != nil }!.source
                invalid.append(ManifestValidationError(file: path, issues: [ManifestIssue(path: "$", message: """
                    \(source) is another job's result, put in by the coordinator that runs this job when it is due: \
                    queue it with `mediafarm submit` instead of running it here
                    """)]))
            case .success(let (m, text)) where m.edits.contains(where: { AssetID.reference($0.source) != nil }):
                // Library assets, resolved on this host.
                do {
                    if assets == nil { assets = try await library.open(try await queue.open()) }
                    let resolved = try await LibraryOptions.run { try await assets!.resolveManifest(text) }.text
                    switch ManifestLoader.validate(bytes: Array(resolved.utf8), file: path, name: m.name, baseDirectory: m.baseDirectory,
                                                   outputRoots: roots, refuseExistingOutputs: true) {
                    case .success(let resolvedManifest): loaded.append(resolvedManifest)
                    case .failure(let e): invalid.append(e)
                    }
                } catch {
                    invalid.append(ManifestValidationError(file: path, issues: [ManifestIssue(path: "$", message: "\(error)")]))
                }
            case .success(let (m, _)): loaded.append(m)
            case .failure(let e): invalid.append(e)
            }
        }
        return (loaded, invalid)
    }

    /// One job's result, as a line (or JSON).
    func say(_ result: JobResult, of manifest: JobManifest) {
        if json {
            WorkerLoop.print(.result(result))
        } else if result.succeeded {
            var line = "\(manifest.name): succeeded in \(String(format: "%.1f", result.seconds)) s"
            if let output = result.output { line += " -> \(output)" }
            if let d = result.duration { line += " (\(String(format: "%.3f", d)) s)" }
            if let report = result.report { line += ", report \(report)" }
            print(line)
            if let loudness = result.loudness { print("  loudness: " + loudness.summary) }
            for warning in result.warnings ?? [] { FileHandle.standardError.write(Data("\(manifest.name): warning: \(warning)\n".utf8)) }
        } else {
            FileHandle.standardError.write(Data("\(manifest.name): failed: \(result.error ?? "unknown error")\n".utf8))
        }
    }
}

extension JobProgress {
    var detail: String {
        var parts = [phase]
        if let fps = framesPerSecond { parts.append(String(format: "%.0f fps", fps)) }
        if let eta { parts.append(String(format: "ETA %.0f s", eta)) }
        return parts.joined(separator: ", ")
    }
}
