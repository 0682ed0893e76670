import ArgumentParser
import FarmModel
import FarmRuntime
import FarmSubmit
import Foundation

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
            await serve()
            return
        }
        let input = (try? FileHandle.standardInput.read(upToCount: ManifestLoader.maxBytes + 1)) ?? Data()
        var resume: [String: String] = [:]
        for pair in resumeUploads {
            guard let equals = pair.lastIndex(of: "="), equals != pair.startIndex else {
                throw ValidationError("--resume-upload: expected s3://bucket/key=upload-id, not \(pair)")
            }
            resume[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        let assignment = WorkerAssignment(name: name, baseDirectory: baseDirectory ?? FileManager.default.currentDirectoryPath,
                                          outputRoots: outputRoots, stageToken: stageToken, manifest: String(decoding: input, as: UTF8.self),
                                          resumeUploads: resume.isEmpty ? nil : resume)
        let status = await Self.runJob(assignment, tooLarge: input.count > ManifestLoader.maxBytes)
        if status != ExitStatus.success { throw ExitCode(status) }
    }

    /// Runs one job: its events and result on stdout, a failure's reason on stderr. Returns the exit
    /// status a worker of its own would end with.
    static func runJob(_ job: WorkerAssignment, tooLarge: Bool = false, misbehaviour: WorkerMisbehaviour? = nil) async -> Int32 {
        if tooLarge || job.manifest.utf8.count > ManifestLoader.maxBytes {
            return report(invalid: "stdin: the manifest is larger than \(ManifestLoader.maxBytes / 1024) KiB", name: job.name)
        }
        let manifest: JobManifest
        switch ManifestLoader.validate(text: job.manifest, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
        case .success(let m): manifest = m
        case .failure(let e): return report(invalid: e.description, name: job.name)
        }
        var runner = JobRunner(manifest: manifest, stagingToken: job.stageToken)
        runner.resumeUploads = job.resumeUploads ?? [:]
        let result = await runner.run { EventPrinter.print($0) }
        misbehaviour?.leaveState()
        EventPrinter.print(.result(result))
        if !result.succeeded {
            FileHandle.standardError.write(Data("\(manifest.name): failed: \(result.error ?? "unknown error")\n".utf8))
            return ExitStatus.failure
        }
        return ExitStatus.success
    }

    /// A kept worker: job after job from stdin until it ends, or until the worker must retire (enough
    /// jobs, too much memory, something a job left that cannot be put right). Before each job the
    /// process is as it was before the first (`WorkerHygiene`).
    private func serve() async {
        var hygiene = WorkerHygiene()
        let misbehaviour = misbehave.map { WorkerMisbehaviour(Set($0.split(separator: ",").map(String.init))) }
        var served = 0
        while let line = readLine(strippingNewline: true) {
            if line.isEmpty { continue }
            served += 1
            hygiene.prepareJob()
            if misbehaviour?.kinds.contains("report") == true {
                EventPrinter.print(.log(level: "debug", message: WorkerMisbehaviour.describeState()))
            }
            let status: Int32
            if let job = try? JSONDecoder().decode(WorkerAssignment.self, from: Data(line.utf8)) {
                status = await Self.runJob(job, misbehaviour: misbehaviour)
            } else {
                status = Self.report(invalid: "stdin: a kept worker expects one JSON line per job (its options and manifest)", name: name)
            }
            let (restored, unfixable) = hygiene.cleanUp()
            let resident = WorkerHygiene.residentBytes()
            var retiring: WorkerRetirement?
            if !unfixable.isEmpty {
                retiring = WorkerRetirement(kind: "unclean", message: unfixable.joined(separator: "; "))
            } else if recycleAbove > 0 && resident > recycleAbove {
                retiring = WorkerRetirement(kind: "memory", message: "resident memory after a job \(resident >> 20) MiB is above the limit of \(recycleAbove >> 20) MiB")
            } else if served >= jobsPerWorker {
                retiring = WorkerRetirement(kind: "jobs", message: "ran \(served) job(s), its limit")
            }
            let end = WorkerJobEnd(status: status, retiring: retiring, residentBytes: resident, restored: restored)
            if var data = try? JSONEncoder.mediafarm(compact: true).encode(end) {
                data.append(UInt8(ascii: "\n"))
                FileHandle.standardOutput.write(data)
            }
            if retiring != nil { return }
        }
    }

    private static func report(invalid message: String, name: String) -> Int32 {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        EventPrinter.print(.result(JobResult(name: name, succeeded: false, error: message, seconds: 0)))
        return ExitStatus.usage
    }
}
