import FarmLibrary
import FarmModel
import FarmStore
import FarmSubmit
import Foundation

/// One attempt of a job, from its claim to its end: its inputs put in, an earlier result reused or a
/// worker run, and what the attempt comes to; and what the worker says while it runs.
struct JobSupervisor: CoordinatorPart {
    let context: CoordinatorContext
    let preparer: InputPreparer
    let reuse: ResultReuse
    let joiner: ChunkJoiner
    let publisher: Publisher
    let recorder: AttemptRecorder
    let library: LibraryRecorder
    let kept: KeptWorkers

    /// Ends an attempt whose inputs could not be put in before its worker started.
    private func inputsFailed(_ job: Job, token: String, _ failure: InputFailure) async {
        jobs.remove(job.id)
        await recorder.finish(job, token: token, outcome: failure.retry ? .crashed(message: failure.message) : .failed(message: failure.message, result: nil),
                              seconds: 0)
    }

    func supervise(_ job: Job, token: String, standby: StandbyWorker?) async {
        let began = now()
        // A kept worker given to a job that ends before a worker runs it (its inputs failed, an earlier
        // result answered it) waits for the next job.
        var unused = standby
        defer { if let unused { kept.handBack(unused) } }
        let claimed: ClaimedJob
        switch await preparer.prepare(job, token: token) {
        case .success(let prepared): claimed = prepared
        case .failure(let failure):
            await inputsFailed(job, token: token, failure)
            return
        }
        // Results reused by content: a chunked export's joining run is not answered (its chunks ran) but recorded.
        var key: String?
        if configuration.reuseResults { key = await reuse.resultKey(job, claimed.manifest) }
        if let key, job.chunkPlan == nil, await reuse.answerFromEarlier(claimed, key: key, began: began) {
            return
        }
        let resume = await earlierUploads(job, claimed.manifest)
        let started = now()
        let id = job.id
        defer { jobs.slotFreed.signal() }
        let exit: WorkerExit
        do {
            unused = nil
            exit = try await runWorker(claimed, resume: resume, standby: standby)
        } catch {
            jobs.remove(id)
            await recorder.finish(job, token: token, outcome: .crashed(message: "\(error)"), seconds: 0)
            return
        }
        let seconds = now().timeIntervalSince(started)
        guard let entry = jobs.state.withLock({ s -> Running? in
            s.recentAttemptSeconds = s.recentAttemptSeconds.map { 0.8 * $0 + 0.2 * seconds } ?? seconds
            return s.running.removeValue(forKey: id)
        }) else { return }
        defer { StagedOutput.discard(claimed.manifest, token: token, numbered: entry.result?.numbered) }
        for recording in entry.recordings { await recording.value }

        await settle(claimed, entry: entry, exit: exit, key: key, seconds: seconds)
    }

    /// Uploads an earlier attempt began for the outputs bound for objects: this attempt goes on with them.
    private func earlierUploads(_ job: Job, _ manifest: JobManifest) async -> [String: String] {
        guard StagedOutput.writesObjects(manifest) else { return [:] }
        var resume: [String: String] = [:]
        do {
            for upload in try await store.recordedUploads(of: job.id) { resume[upload.address] = upload.uploadID }
        } catch {
            events(.notice("job \(job.id): cannot read the uploads an earlier attempt began (\(error)); beginning new ones"))
        }
        return resume
    }

    /// Runs the attempt on a kept worker (the one handed over, or a new one when workers are kept), else
    /// on a worker process of its own.
    private func runWorker(_ claimed: ClaimedJob, resume: [String: String], standby: StandbyWorker?) async throws -> WorkerExit {
        let (job, id) = (claimed.job, claimed.job.id)
        let assignment = WorkerAssignment(name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots, stageToken: claimed.token,
                                          manifest: claimed.document, resumeUploads: resume.isEmpty ? nil : resume)
        let onStart: @Sendable (ChildProcess) -> Void = { child in self.workerStarted(id, child: child) }
        let onLine: @Sendable (Substring) -> Void = { line in self.workerSaid(id, line) }
        let worker = standby ?? (configuration.standbyWorkers ? jobs.state.withLock { kept.newKeptWorker(&$0) } : nil)
        if let worker, let ran = try await Self.run(assignment, on: worker, onStart: onStart, onLine: onLine,
                                                    onEnd: { self.workerReturned(id, end: $0, worker: worker) }) {
            return ran
        }
        var command = configuration.workerCommand + ["--name", job.name, "--base-dir", job.baseDirectory, "--stage-token", claimed.token]
        for root in job.outputRoots { command += ["--output-root", root] }
        for (address, uploadID) in resume.sorted(by: { $0.key < $1.key }) { command += ["--resume-upload", "\(address)=\(uploadID)"] }
        return try await WorkerProcess.run(command: command, input: Data(claimed.document.text.utf8), limits: configuration.limits, folders: workerFolders,
                                           onStart: onStart, onLine: onLine)
    }

    /// What an ended attempt comes to: lost or cancelled, timed out, drained back, split into chunks,
    /// published, failed, or crashed.
    private func settle(_ claimed: ClaimedJob, entry: Running, exit: WorkerExit, key: String?, seconds: Double) async {
        let (job, token, manifest) = (claimed.job, claimed.token, claimed.manifest)
        switch entry.stop {
        case .lost(let state):
            metrics.attemptEnded(state == .cancelled ? "cancelled" : "lost", seconds: seconds)
            events(.finished(id: job.id, name: job.name, state: state == .cancelled ? "cancelled" : "lost", attempt: job.attempt,
                             message: state == .cancelled ? "cancelled: worker stopped, temporary files removed"
                                 : "lease lost: worker stopped, nothing published", seconds: seconds))
            if state == .cancelled { await recorder.abortUnfinishedUploads(job) }
        case .timeout(let limit):
            await recorder.finish(job, token: token, outcome: .crashed(message: "timed out after \(Self.format(limit)) s: worker killed"), seconds: seconds,
                                  reason: "timed_out")
        case .drain:
            await recorder.finish(job, token: token, outcome: .released, seconds: seconds)
        case nil:
            let resultJSON = entry.result.flatMap { try? String(decoding: JSONEncoder().encode($0), as: UTF8.self) }  // a JobResult always encodes
            if exit.status == 0, let result = entry.result, result.succeeded, let ranges = result.split {
                await joiner.split(claimed, ranges: ranges, seconds: seconds)
            } else if exit.status == 0, let result = entry.result, result.succeeded {
                await publisher.publish(job, token: token, manifest: manifest, resultJSON: resultJSON, uploads: result.uploads ?? [],
                                        numbered: result.numbered, seconds: seconds) { publication in
                    // The output is read back once: for the result's record, and the library takes its hash from there.
                    var outputHash: ContentHash?
                    if let key {
                        outputHash = await reuse.recordResult(job, token: token, manifest: manifest, key: key, numbered: result.numbered, package: result.package,
                                                              uploads: result.uploads ?? [], etags: publication.etags)
                    }
                    await library.registerInLibrary(claimed, outputHash: outputHash, package: result.package, checks: result.checks)
                }
            } else if let result = entry.result, !result.succeeded, exit.status == 1 || exit.status == 2 {
                // Object storage that did not answer may answer the next attempt.
                let message = result.error ?? "failed"
                if let checks = result.checks { await library.recordFailedChecks(claimed, checks: checks) }
                await recorder.finish(job, token: token, outcome: result.retryable == true ? .crashed(message: message) : .failed(message: message, result: resultJSON),
                                      seconds: seconds)
            } else {
                // The attempt's error keeps the worker's last words (at most 10 lines): a crash's only log.
                var message = "worker \(exit.description)"
                let lines = exit.stderrTail.split(separator: "\n", omittingEmptySubsequences: true).suffix(10)
                if lines.count == 1, let last = lines.last { message += ": \(last)" }
                if lines.count > 1 { message += "; its last output:\n" + lines.joined(separator: "\n") }
                await recorder.finish(job, token: token, outcome: .crashed(message: message), seconds: seconds)
            }
        }
    }

    /// Runs the job on a kept worker: one line with the job's options and manifest. nil when the process
    /// is not up (or died waiting): the caller starts one. `onEnd` runs on the worker's thread as soon as
    /// the job ended, the process ready for another job if it may run one: whether it was taken back.
    static func run(_ assignment: WorkerAssignment, on standby: StandbyWorker, onStart: @escaping @Sendable (ChildProcess) -> Void,
                    onLine: @escaping @Sendable (Substring) -> Void, onEnd: @escaping @Sendable (WorkerJobEnd?) -> Bool) async throws -> WorkerExit? {
        let input = Data((assignment.line + "\n").utf8)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<WorkerExit?, any Error>) in
            let assigned = standby.assign(StandbyWorker.Assignment(input: input, onStart: onStart, onLine: onLine, onEnd: onEnd, done: { result in
                continuation.resume(with: result.map { Optional($0) })
            }))
            if !assigned { continuation.resume(returning: nil) }
        }
    }

    /// A kept worker ended this job: it no longer runs it, so stopping the job must not touch the process.
    /// Whether the process was taken back for the next job (not when it was being stopped for this one,
    /// nor when it retires), in the same step that frees the job's slot: a claim in between would
    /// otherwise start a process of its own and this one would be retired as one too many.
    private func workerReturned(_ id: Int64, end: WorkerJobEnd?, worker: StandbyWorker) -> Bool {
        if let end, !end.restored.isEmpty {
            events(.notice("job \(id): the worker put back what the job left: \(end.restored.joined(separator: "; "))"))
        }
        let taken = jobs.state.withLock { s in
            s.running[id]?.child = nil
            s.running[id]?.phase = .finishing
            guard s.running[id]?.stop == nil, let end, end.retiring == nil else { return false }
            return kept.takeBack(worker, &s)
        }
        if taken { jobs.slotFreed.signal() }
        return taken
    }

    private func workerStarted(_ id: Int64, child: ChildProcess) {
        let pid = child.pid
        let (entry, stopNow) = jobs.state.withLock { s -> (Running?, Bool) in
            s.running[id]?.child = child
            return (s.running[id], s.running[id]?.stop != nil)
        }
        if stopNow { child.kill() }
        if let entry {
            // Recorded at the lease check's next pass (not its next renewal), so that `status` soon
            // shows which process runs the job.
            jobs.state.withLock { $0.renewSoon = true }
            let handed = now()
            let due = entry.job.runAt > entry.job.createdAt ? entry.job.runAt : entry.job.createdAt
            events(.started(id: id, name: entry.job.name, attempt: entry.job.attempt, pid: pid, queuedFor: handed.timeIntervalSince(due),
                            hops: PickupHops(woke: entry.woke, claimed: entry.claimed, handed: handed).event(due: due), at: handed))
        }
    }

    private func workerSaid(_ id: Int64, _ line: Substring) {
        // a line that is no event (a library writing to stdout) is not the protocol's
        guard let event = try? JSONDecoder().decode(JobEvent.self, from: Data(line.utf8)) else { return }
        switch event {
        case .progress(let p):
            let name = jobs.state.withLock { s -> String? in
                s.running[id]?.progress = p
                return s.running[id]?.job.name
            }
            if let name { events(.progress(id: id, name: name, fraction: p.fraction, phase: p.phase)) }
        case .result(var r):
            // A worker runs the job: only the coordinator answers one from an earlier result, and names what its copies come from.
            r.reused = nil
            jobs.state.withLock { $0.running[id]?.result = r }
        case .log(let level, let message):
            events(.notice("job \(id): \(level): \(message)"))
        case let .upload(address, uploadID):
            // Recorded with the job at once (the worker sends its parts meanwhile); the attempt's end waits for it.
            jobs.state.withLock { s in
                guard let entry = s.running[id] else { return }
                let upload = RecordedUpload(jobID: id, address: address, uploadID: uploadID, attempt: entry.job.attempt)
                let token = entry.token
                s.running[id]?.recordings.append(Task {
                    do {
                        if try await self.store.recordUpload(upload, token: token, at: self.now()) == false {
                            self.events(.notice("job \(id): the upload \(uploadID) of \(address) was not recorded: the lease is lost"))
                        }
                    } catch {
                        self.events(.notice("job \(id): cannot record the upload \(uploadID) of \(address): \(error)"))
                    }
                })
            }
        }
    }
}
