import ArgumentParser
import FarmModel
import FarmRuntime
import FarmSubmit
import Foundation
import QueueCLI

/// `mediafarm worker`: runs the one manifest on stdin and reports JSON-line events on stdout; usable by
/// hand (`mediafarm worker < job.json`). The coordinator keeps workers started with `--standby`, which
/// run job after job (`WorkerAssignment` lines in, events and `WorkerJobEnd` lines out).
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

    @Option(name: .customLong("resume-upload"), help: ArgumentHelp("With --stage-token: go on with this multipart upload an earlier attempt began for an output bound for an object (repeatable).",
                                                                    valueName: "s3://bucket/key=upload-id"))
    var resumeUploads: [String] = []

    @Flag(help: "Start ahead of the jobs and run one after another: each a JSON line on stdin (its options and manifest), answered by its events and an \"ended\" line (the coordinator's kept workers).")
    var standby = false

    @Option(name: .customLong("jobs-per-worker"), parsing: .unconditional,
            help: "With --standby: jobs to run before exiting (the coordinator then starts a new worker) \(UserNumbers.jobsPerWorker.inHelp).", transform: UserNumbers.jobsPerWorker.option)
    var jobsPerWorker: Int = WorkerRecycling.default.jobsPerWorker

    @Option(name: .customLong("recycle-above"), parsing: .unconditional,
            help: ArgumentHelp("With --standby: exit after a job that leaves the resident memory above this many bytes (0: no limit) \(UserNumbers.bytes.inHelp).", valueName: "bytes"), transform: UserNumbers.bytes.option)
    var recycleAbove: UInt64 = WorkerRecycling.default.residentLimit

    @Option(name: .customLong("test-misbehave"), help: .hidden)
    var misbehave: String?

    @OptionGroup var stall: StallOptions

    func validate() throws {
        guard jobsPerWorker >= 1 else { throw ValidationError("--jobs-per-worker must be at least 1, not \(jobsPerWorker)") }
        if let misbehave {
            let unknown = Set(misbehave.split(separator: ",").map(String.init)).subtracting(WorkerMisbehaviour.known)
            guard unknown.isEmpty else { throw ValidationError("--test-misbehave: unknown \(unknown.sorted().joined(separator: ", "))") }
        }
    }

    func run() async throws {
        stall.apply()
        if standby {
            await WorkerLoop.serve(name: name, jobs: jobsPerWorker, recycleAbove: recycleAbove,
                                   misbehaviour: misbehave.map { WorkerMisbehaviour(Set($0.split(separator: ",").map(String.init))) },
                                   exitStatus: Self.status)
            return
        }
        let input: Data
        do { input = try FileHandle.standardInput.read(upToCount: ManifestLoader.maxBytes + 1) ?? Data() } catch {
            throw CLIError("worker: cannot read the manifest from standard input: \(error)")
        }
        var resume: [String: String] = [:]
        for pair in resumeUploads {
            guard let equals = pair.lastIndex(of: "="), equals != pair.startIndex else {
                throw ValidationError("--resume-upload: expected s3://bucket/key=upload-id, not \(pair)")
            }
            resume[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        let tooLarge = input.count > ManifestLoader.maxBytes
        let document: JSONValue
        do { document = tooLarge ? .null : try JSONParser.parse(Array(input)) } catch {
            throw ExitCode(Self.status(WorkerLoop.report(invalid: "stdin: \(error)", name: name)))
        }
        let assignment = WorkerAssignment(name: name, baseDirectory: baseDirectory ?? FileManager.default.currentDirectoryPath,
                                          outputRoots: outputRoots, stageToken: stageToken, manifest: document, resumeUploads: resume.isEmpty ? nil : resume)
        // Run by hand or for one job: checked against the file system here, as `run` checks a manifest.
        let status = Self.status(await WorkerLoop.run(assignment, checked: false, tooLarge: tooLarge))
        if status != ExitStatus.success { throw ExitCode(status) }
    }

    /// The exit status of a worker that ran one job so.
    static func status(_ outcome: WorkerLoop.Outcome) -> Int32 {
        switch outcome {
        case .succeeded: ExitStatus.success
        case .failed: ExitStatus.failure
        case .invalid: ExitStatus.usage
        }
    }
}
