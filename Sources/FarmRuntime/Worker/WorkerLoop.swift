import FarmModel
import FarmSubmit
import Foundation
import MediaInspect

/// The worker's end of the coordinator-worker protocol (the coordinator's end is `WorkerProcess` and
/// `StandbyWorker`): one job run from its assignment, or a kept worker's loop of jobs read from stdin,
/// JSON-line events and an "ended" line each on stdout. `mediafarm worker` parses its options and calls
/// these.
public enum WorkerLoop {
    /// How one job ended, as the worker's exit status says it.
    public enum Outcome: Sendable {
        case succeeded, failed, invalid
    }

    /// Writes one event as a JSON line to stdout (also `mediafarm run --json`'s).
    public static func print(_ event: JobEvent) {
        guard var data = try? JSONEncoder.mediafarm(compact: true).encode(event) else { return }   // a JobEvent always encodes
        data.append(UInt8(ascii: "\n"))
        FileHandle.standardOutput.write(data)
    }

    /// Runs one job: its events and result on stdout, a failure's reason on stderr. `checked`: its
    /// coordinator checked the manifest against this host's files just before (a kept worker's job), and
    /// only its shape is read again; otherwise (a worker run by hand, or for one job) it is checked here.
    public static func run(_ job: WorkerAssignment, checked: Bool, tooLarge: Bool = false, misbehaviour: WorkerMisbehaviour? = nil) async -> Outcome {
        if tooLarge {
            return report(invalid: "stdin: the manifest is larger than \(ManifestLoader.maxBytes / 1024) KiB", name: job.name)
        }
        let manifest: JobManifest
        switch checked ? ManifestLoader.checked(document: job.manifest, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots)
            : ManifestLoader.validate(document: job.manifest, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
        case .success(let m): manifest = m
        case .failure(let e): return report(invalid: e.description, name: job.name)
        }
        var runner = JobRunner(manifest: manifest, stagingToken: job.stageToken)
        runner.resumeUploads = job.resumeUploads ?? [:]
        let result = await runner.run { print($0) }
        misbehaviour?.leaveState()
        print(.result(result))
        if !result.succeeded {
            FileHandle.standardError.write(Data("\(manifest.name): failed: \(result.error ?? "unknown error")\n".utf8))
            return .failed
        }
        return .succeeded
    }

    /// A kept worker: job after job from stdin until it ends, or until the worker must retire (`jobs`
    /// jobs, resident memory above `recycleAbove` after one, something a job left that cannot be put
    /// right). Before each job the process is as it was before the first (`WorkerHygiene`). Each job is
    /// answered by its events and a `WorkerJobEnd` line whose status is the exit status a worker of its
    /// own would have ended with.
    public static func serve(name: String, jobs: Int, recycleAbove: UInt64, misbehaviour: WorkerMisbehaviour?,
                             exitStatus: (Outcome) -> Int32) async {
        var hygiene = WorkerHygiene()
        var served = 0
        while let line = readLine(strippingNewline: true) {
            if line.isEmpty { continue }
            served += 1
            hygiene.prepareJob()
            if misbehaviour?.kinds.contains("report") == true {
                print(.log(level: "debug", message: WorkerMisbehaviour.describeState()))
            }
            let outcome: Outcome
            do {
                outcome = await run(try WorkerAssignment(line: line), checked: true, misbehaviour: misbehaviour)
            } catch {
                outcome = report(invalid: "stdin: a kept worker expects one JSON line per job (its options and manifest): \(error)", name: name)
            }
            let (restored, unfixable) = hygiene.cleanUp()
            let resident = WorkerHygiene.residentBytes(limit: recycleAbove)
            var retiring: WorkerRetirement?
            if !unfixable.isEmpty {
                retiring = WorkerRetirement(kind: "unclean", message: unfixable.joined(separator: "; "))
            } else if recycleAbove > 0 && resident > recycleAbove {
                retiring = WorkerRetirement(kind: "memory", message: "resident memory after a job \(resident >> 20) MiB is above the limit of \(recycleAbove >> 20) MiB")
            } else if served >= jobs {
                retiring = WorkerRetirement(kind: "jobs", message: "ran \(served) job(s), its limit")
            }
            let end = WorkerJobEnd(status: exitStatus(outcome), retiring: retiring, residentBytes: resident, restored: restored)
            if var data = try? JSONEncoder.mediafarm(compact: true).encode(end) {   // a WorkerJobEnd always encodes
                data.append(UInt8(ascii: "\n"))
                FileHandle.standardOutput.write(data)
            }
            if retiring != nil { return }
        }
    }

    public static func report(invalid message: String, name: String) -> Outcome {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        print(.result(JobResult(name: name, succeeded: false, error: message, seconds: 0)))
        return .invalid
    }
}
