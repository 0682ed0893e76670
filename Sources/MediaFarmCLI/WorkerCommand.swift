import ArgumentParser
import FarmModel
import FarmRuntime
import Foundation

/// `mediafarm worker`: runs the one manifest on stdin and reports JSON-line events on stdout. The
/// coordinator starts one per job; it is also usable by hand (`mediafarm worker < job.json`).
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Run the job manifest read from stdin; JSON-line events on stdout (started by the coordinator).",
        discussion: """
        Exit status: 0 the job succeeded, 1 it failed (the last event says why), 2 the manifest is invalid. \
        With --stage-token, finished outputs are left under staged names for the coordinator to publish.
        """)

    @Option(help: "The job's name when the manifest has none.")
    var name: String = "job"

    @Option(name: .customLong("base-dir"), help: "The folder relative paths in the manifest resolve against (default: the current folder).")
    var baseDirectory: String?

    @Option(name: .customLong("output-root"), help: "A folder outputs may be written under (repeatable; default: the base folder).")
    var outputRoots: [String] = []

    @Option(name: .customLong("stage-token"), help: "Leave finished outputs staged under this lease token.")
    var stageToken: String?

    @Flag(help: "Start ahead of the job: read its options as a JSON line on stdin, then the manifest (the coordinator's standby workers).")
    var standby = false

    @OptionGroup var stall: StallOptions

    func run() async throws {
        stall.apply()
        var input = (try? FileHandle.standardInput.read(upToCount: ManifestLoader.maxBytes + (1 << 16))) ?? Data()
        var name = self.name, baseDirectory = self.baseDirectory, outputRoots = self.outputRoots, stageToken = self.stageToken
        if standby {
            guard let newline = input.firstIndex(of: UInt8(ascii: "\n")),
                  let header = try? JSONDecoder().decode(WorkerHeader.self, from: input[..<newline]) else {
                report(invalid: "stdin: a standby worker expects a JSON line with the job's options, then the manifest", name: name)
            }
            (name, baseDirectory, outputRoots, stageToken) = (header.name, header.baseDirectory, header.outputRoots, header.stageToken)
            input = Data(input[input.index(after: newline)...])
        }
        let base = baseDirectory ?? FileManager.default.currentDirectoryPath
        let manifest: JobManifest
        if input.count > ManifestLoader.maxBytes {
            report(invalid: "stdin: the manifest is larger than \(ManifestLoader.maxBytes / 1024) KiB", name: name)
        }
        switch ManifestLoader.validate(text: String(decoding: input, as: UTF8.self), name: name, baseDirectory: base, outputRoots: outputRoots) {
        case .success(let m): manifest = m
        case .failure(let e): report(invalid: e.description, name: name)
        }
        let result = await JobRunner(manifest: manifest, stagingToken: stageToken).run { EventPrinter.print($0) }
        EventPrinter.print(.result(result))
        if !result.succeeded {
            FileHandle.standardError.write(Data("\(manifest.name): failed: \(result.error ?? "unknown error")\n".utf8))
            throw ExitCode(ExitStatus.failure)
        }
    }

    private func report(invalid message: String, name: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        EventPrinter.print(.result(JobResult(name: name, succeeded: false, error: message, seconds: 0)))
        Foundation.exit(ExitStatus.usage)
    }
}
