import FarmLibrary
import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import Metrics
import ServiceLifecycle
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm coordinator`: claims jobs for free worker slots, runs each in its own worker process
/// (`mediafarm worker`, manifest on stdin, JSON-line events on stdout), renews the leases while they run,
/// rescues jobs whose lease expired, enforces timeouts and cancellation, publishes outputs under the
/// lease token, and drains on SIGTERM. A swift-service-lifecycle `Service`.
///
/// Structure (as River splits producer, executor and rescuer): three loops run as child tasks of
/// `run()`: the claimer (claims for free slots, starts a supervising task per job), the lease
/// heartbeat (renewals, lost leases, cancellation, timeouts) and the rescuer (expired leases of dead
/// coordinators). Each sleeps through `pause`, which ends at once when the task is cancelled.
/// Cancelling `run()` stops claiming and stops running workers at once (their jobs are released).
///
/// Threading: the claimer and the heartbeat run where the store's blocking work does (SQLite: its writer
/// thread, so that their store calls pay no hop). The rescuer and each job's supervision run on
/// `JobWorkExecutor` instead: their file work
/// (validation's checks, publication's renames and fsyncs, reuse's hashes and copies) never holds up a
/// queue write, the HTTP face's submissions included. Each worker process is supervised by a thread of
/// its own (`WorkerProcess`). Every mutable field is in `state`, a `Mutex`. Workers are signalled through
/// `ChildProcess` (pidfds), never by a pid that may have been reaped. Store calls are short transactions.
public final class Coordinator: Service, Sendable {
    public let store: any JobStore
    public let configuration: CoordinatorConfiguration
    /// Its workers' folders, in its queue's folder on this host.
    let workerFolders: WorkerFolders
    let events: @Sendable (CoordinatorEvent) -> Void
    let now: @Sendable () -> Date

    /// Every mutable field (the claimer's, in Coordinator+Claiming.swift, too).
    struct State: Sendable {
        var running: [Int64: Running] = [:]
        var draining = false
        /// When `beginDrain` was first called: the grace period's start.
        var drainBegan: Date?
        /// What became of the jobs this coordinator finished: a count, and the ids of those that failed.
        var tally = FinishedTally()
        /// A worker started: renew the leases (recording its process id) at the next check.
        var renewSoon = false
        /// Kept worker processes waiting for a job.
        var standbys: [StandbyWorker] = []
        /// Kept worker processes started and not yet reaped (waiting or running a job).
        var keptWorkersAlive = 0
        /// Claimed ahead of a free slot, in claim order: started the moment a worker is free.
        var ahead: [Int64] = []
        /// Whether the claimer still runs (a worker offered back after it ended is retired).
        var claiming = true
        /// How long recent attempts took (a moving average): jobs are claimed ahead only while they are short.
        var recentAttemptSeconds: Double?
        /// Inputs' SHA-256 by path, while their identity and modification time stay those hashed (results reuse).
        var contentHashes: [String: (stamp: FileStamp, sha256: String)] = [:]
        /// When each loop (claimer, heartbeat, rescuer) last began a turn: the HTTP face's liveness.
        var loopTurns: [String: Date] = [:]
        /// The pause that stops this coordinator's claims, as the claimer last found it (`queue pause`).
        var pause: QueuePause?
        /// The minute (since 1970) whose queue depth this coordinator last sampled.
        var sampledMinute: Double?

        /// Jobs holding a worker slot now.
        var workingCount: Int { running.values.count { $0.phase == .working } }
    }
    let state = Mutex(State())
    /// Rung when a worker slot frees: the claimer starts the next job at once.
    let slotFreed = WorkSignal()
    private let startedAt = Date()
    let metrics: CoordinatorMetrics

    /// Why the coordinator stopped a worker itself.
    enum StopReason: Equatable, Sendable {
        case lost(JobState?)
        case timeout(Double)
        case drain
    }

    struct Running: Sendable {
        /// Claimed ahead, waiting for a slot; holding a worker slot; or done with its worker (publishing,
        /// recording the end).
        enum Phase: Sendable { case ahead, working, finishing }
        var phase: Phase = .working
        var job: Job
        var token: String
        var child: ChildProcess?
        var pid: Int32? { child?.pid }
        var progress: JobProgress?
        var result: JobResult?
        var started: Date
        var timeout: Double
        var stop: StopReason?
        /// Uploads the worker began, being recorded with the job: awaited before the attempt ends.
        var recordings: [Task<Void, Never>] = []
        /// The claimer's turn that claimed it began; the claim returned.
        var woke = Date.distantPast
        var claimed = Date.distantPast
    }

    public init(store: any JobStore, configuration: CoordinatorConfiguration = .init(),
                now: @escaping @Sendable () -> Date = { Date() },
                events: @escaping @Sendable (CoordinatorEvent) -> Void = { _ in }) {
        self.store = store
        self.configuration = configuration
        self.now = now
        self.events = events
        self.metrics = CoordinatorMetrics(factory: configuration.metricsFactory ?? MetricsSystem.factory)
        self.workerFolders = WorkerFolders(queue: store.location, owner: configuration.owner, environment: ProcessInfo.processInfo.environment)
    }

    /// Slots, running jobs with their latest progress, and the loops' last turns.
    public var snapshot: CoordinatorSnapshot {
        state.withLock { s in
            CoordinatorSnapshot(
                owner: configuration.owner, workers: configuration.workers, draining: s.draining, startedAt: startedAt,
                running: s.running.map { id, r in
                    CoordinatorSnapshot.RunningJob(id: id, name: r.job.name, attempt: r.job.attempt, pid: r.pid, started: r.started,
                                                   fraction: r.progress?.fraction, phase: r.phase == .ahead ? Self.waitingPhase : r.progress?.phase,
                                                   eta: r.progress?.eta)
                }.sorted { $0.id < $1.id },
                loops: s.loopTurns)
        }
    }

    /// The loops' last turns and whether it drains, without the running jobs (what `/healthz` needs).
    public var loopsSnapshot: (draining: Bool, loops: [String: Date]) {
        state.withLock { ($0.draining, $0.loopTurns) }
    }

    /// Whether the coordinator is draining (SIGTERM): it claims nothing more.
    public var isDraining: Bool { state.withLock { $0.draining } }

    func turned(_ loop: String) {
        let t = now()
        state.withLock { $0.loopTurns[loop] = t }
    }

    /// Jobs this coordinator saw end failed or dead (and not succeed later).
    public var failedJobs: [Int64] { state.withLock { $0.tally.failed.sorted() } }

    /// How many jobs this coordinator saw succeed.
    public var succeededCount: Int { state.withLock { $0.tally.succeeded } }

    /// Counts a job's end (a finished attempt, or a rescue that ended it dead).
    func recordEnd(_ id: Int64, _ state: JobState) {
        self.state.withLock { $0.tally.record(id, state) }
    }

    /// Stops claiming; running jobs get the grace period, then are stopped and given back.
    /// The grace counts from this call (the signal), not from when the claimer next looks.
    public func beginDrain() {
        let t = now()
        state.withLock { s in
            if s.drainBegan == nil { s.drainBegan = t }
            s.draining = true
        }
        slotFreed.signal()
    }

    public func run() async throws {
        signal(SIGPIPE, SIG_IGN)
        // What a coordinator of this queue that was killed on this host left: its workers' TMPDIR and spool
        // folders, and its running jobs, taken back now rather than when their leases expire.
        let leftovers = workerFolders.sweep()
        if leftovers.removed > 0 { events(.notice("removed \(leftovers.removed) folder(s) that the workers of a coordinator that is gone left")) }
        defer { workerFolders.release() }
        await takeBackJobs(of: leftovers.owners)
        // The loops run where the store's blocking work does (SQLite: its writer thread), so that no
        // transaction runs on the cooperative pool that the HTTP face shares, and none pays a hop.
        await withTaskExecutorPreference(store.executor) { await self.runLoops() }
    }

    private func runLoops() async {
        await withGracefulShutdownHandler {
            // A discarding group: a finished job's task is freed at once (a plain task group keeps every
            // child's result until it is awaited, which grew the coordinator by ~16 KB a job).
            await withDiscardingTaskGroup { group in
                group.addTask { await self.checkLoop() }
                // The rescuer's file work (completing publications: renames and fsyncs; removing chunk
                // folders; validation's checks) blocks: off the writer thread, where it held up every commit.
                group.addTask(executorPreference: JobWorkExecutor.shared) { await self.rescueLoop() }
                group.addTask { await self.presenceLoop() }
                await self.claimLoop(group: &group)
                await self.drain()
                state.withLock { $0.draining = true }
                // The group ends when its loops and jobs have.
            }
            await self.waitForKeptWorkers()
            // The folders of chunked exports that ended last (a coordinator run until idle ends with them).
            await withTaskExecutorPreference(JobWorkExecutor.shared) { await self.tendChunks() }
            await self.leaveRegistry()
        } onGracefulShutdown: { [weak self] in
            self?.events(.notice("draining: no new jobs; running jobs have \(Int(self?.configuration.grace ?? 0)) s to finish"))
            self?.beginDrain()
        }
    }

    /// Waits (up to 5 s) until every kept worker process has been reaped and its temporary folder removed:
    /// their threads would otherwise be ended with this process, leaving the folders behind.
    private func waitForKeptWorkers() async {
        for _ in 0..<250 where state.withLock({ $0.keptWorkersAlive }) > 0 {
            await Self.waitWhileStopping(0.02)
        }
    }

    /// Waits `seconds` even when the task is cancelled, without holding a thread: for the short waits
    /// of a cancelled coordinator while its stopped workers are reaped (a cancelled `Task.sleep` would
    /// return at once and spin).
    static func waitWhileStopping(_ seconds: Double) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { done.resume() }
        }
    }

    /// Sleeps `seconds`; false when the task was cancelled (the caller's loop should end).
    func pause(_ seconds: Double) async -> Bool {
        do {
            try await Task.sleep(for: .seconds(seconds))
            return true
        } catch {
            return false
        }
    }

    // MARK: - One job

    /// Ends an attempt whose inputs could not be put in before its worker started.
    private func inputsFailed(_ job: Job, token: String, _ failure: InputFailure) async {
        _ = state.withLock { $0.running.removeValue(forKey: job.id) }
        await finish(job, token: token, outcome: failure.retry ? .crashed(message: failure.message) : .failed(message: failure.message, result: nil),
                     seconds: 0)
    }

    /// The manifest a job's worker runs, and its text: other jobs' results and the library's assets put in
    /// (the assets' lineage recorded), renamed inputs followed, checked against the file system, then a
    /// coordinator's chunking or a split job's join derived from it. The assets it reads beside.
    private func prepare(_ job: Job) async -> Result<(JobManifest, String, [AssetID]), InputFailure> {
        var sources: [AssetID] = []
        // The manifest is parsed once; each step below rewrites that value, and the worker gets its text once.
        var document: JSONValue
        do {
            document = try JSONParser.parse(job.manifest)
        } catch {
            return .failure(InputFailure(message: "the queued manifest is no JSON: \(error)", retry: false))
        }
        if !job.after.isEmpty, job.manifest.contains(JobOutputReference.scheme) {
            switch await resolveJobResults(job, document) {
            case .success(let resolved): document = resolved
            case .failure(let failure): return .failure(failure)
            }
        }
        if job.manifest.contains(AssetID.scheme) {
            switch await resolveAssets(document) {
            case .success(let resolved):
                (document, sources) = resolved
                if !sources.isEmpty {
                    do { try await configuration.library?.recordJobInputs(job.id, sources) } catch {
                        events(.notice("job \(job.id): the library did not record the assets it reads (\(error)); its lineage is recorded when it succeeds"))
                    }
                }
            case .failure(let failure): return .failure(failure)
            }
        }
        document = await followRenamedInputs(job, document)
        var manifest: JobManifest
        switch ManifestLoader.validate(document: document, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
        case .success(let m): manifest = m
        case .failure(let e): return .failure(InputFailure(message: e.description, retry: false))
        }
        // A coordinator's chunking, and the last run of a job made in parts: manifests derived from the value.
        var derived = false
        if job.chunkOf == nil, let chunked = configuration.defaultChunking?.applied(to: manifest) { (manifest, derived) = (chunked, true) }
        if let plan = job.chunkPlan {
            switch await joinManifest(job, manifest, plan: plan) {
            case .success(let joining): (manifest, derived) = (joining, true)
            case .failure(let failure): return .failure(failure)
            }
        }
        // What the worker runs: the text of the value validated, or of the one derived from it.
        return .success((manifest, derived ? manifest.document.text : document.text, sources))
    }

    func supervise(_ job: Job, token: String, standby: StandbyWorker?) async {
        let began = now()
        // A kept worker given to a job that ends before a worker runs it (its inputs failed, an earlier
        // result answered it) waits for the next job.
        var unused = standby
        defer { if let unused { handBack(unused) } }
        let submitted = job.manifest
        var job = job
        let manifest: JobManifest, sources: [AssetID]
        switch await prepare(job) {
        case .success(let prepared): (manifest, job.manifest, sources) = prepared
        case .failure(let failure):
            await inputsFailed(job, token: token, failure)
            return
        }
        // Results reused by content: a chunked export's joining run is not answered (its chunks ran) but recorded.
        var key: String?
        if configuration.reuseResults { key = await resultKey(job, manifest) }
        if let key, job.chunkPlan == nil,
           await answerFromEarlier(job, token: token, manifest: manifest, key: key, submitted: submitted, sources: sources, began: began) {
            return
        }
        // Uploads an earlier attempt began for the outputs bound for objects: this attempt goes on with them.
        var resume: [String: String] = [:]
        if StagedOutput.writesObjects(manifest) {
            do {
                for upload in try await store.recordedUploads(of: job.id) { resume[upload.address] = upload.uploadID }
            } catch {
                events(.notice("job \(job.id): cannot read the uploads an earlier attempt began (\(error)); beginning new ones"))
            }
        }
        let started = now()
        let id = job.id
        let onStart: @Sendable (ChildProcess) -> Void = { child in self.workerStarted(id, child: child) }
        defer { slotFreed.signal() }
        let onLine: @Sendable (Substring) -> Void = { line in self.workerSaid(id, line) }
        let exit: WorkerExit
        do {
            unused = nil
            let kept = standby ?? (configuration.standbyWorkers ? state.withLock { newKeptWorker(&$0) } : nil)
            if let kept, let ran = try await Self.run(job, token: token, resume: resume, on: kept, onStart: onStart, onLine: onLine,
                                                      onEnd: { self.workerReturned(id, end: $0) }) {
                exit = ran
            } else {
                var command = configuration.workerCommand + ["--name", job.name, "--base-dir", job.baseDirectory, "--stage-token", token]
                for root in job.outputRoots { command += ["--output-root", root] }
                for (address, uploadID) in resume.sorted(by: { $0.key < $1.key }) { command += ["--resume-upload", "\(address)=\(uploadID)"] }
                exit = try await WorkerProcess.run(command: command, input: Data(job.manifest.utf8), limits: configuration.limits, folders: workerFolders,
                                                   onStart: onStart, onLine: onLine)
            }
        } catch {
            _ = state.withLock { $0.running.removeValue(forKey: id) }
            await finish(job, token: token, outcome: .crashed(message: "\(error)"), seconds: 0)
            return
        }
        let seconds = now().timeIntervalSince(started)
        guard let entry = state.withLock({ s -> Running? in
            s.recentAttemptSeconds = s.recentAttemptSeconds.map { 0.8 * $0 + 0.2 * seconds } ?? seconds
            return s.running.removeValue(forKey: id)
        }) else { return }
        defer { StagedOutput.discard(manifest, token: token, numbered: entry.result?.numbered) }
        for recording in entry.recordings { await recording.value }

        switch entry.stop {
        case .lost(let state):
            metrics.attemptEnded(state == .cancelled ? "cancelled" : "lost", seconds: seconds)
            events(.finished(id: id, name: job.name, state: state == .cancelled ? "cancelled" : "lost", attempt: job.attempt,
                             message: state == .cancelled ? "cancelled: worker stopped, temporary files removed"
                                 : "lease lost: worker stopped, nothing published", seconds: seconds))
            if state == .cancelled { await abortUnfinishedUploads(job) }
        case .timeout(let limit):
            await finish(job, token: token, outcome: .crashed(message: "timed out after \(Self.format(limit)) s: worker killed"), seconds: seconds,
                         reason: "timed_out")
        case .drain:
            await finish(job, token: token, outcome: .released, seconds: seconds)
        case nil:
            let resultJSON = entry.result.flatMap { try? String(decoding: JSONEncoder().encode($0), as: UTF8.self) }  // a JobResult always encodes
            if exit.status == 0, let result = entry.result, result.succeeded, let ranges = result.split {
                await split(job, token: token, submitted: submitted, manifest: manifest, ranges: ranges, seconds: seconds)
            } else if exit.status == 0, let result = entry.result, result.succeeded {
                await publish(job, token: token, manifest: manifest, resultJSON: resultJSON, uploads: result.uploads ?? [],
                              numbered: result.numbered, seconds: seconds) {
                    // The output is read back once: for the result's record, and the library takes its hash from there.
                    var outputHash: ContentHash?
                    if let key { outputHash = await recordResult(job, manifest: manifest, key: key, numbered: result.numbered) }
                    await registerInLibrary(job, manifest: manifest, submitted: submitted, sources: sources, outputHash: outputHash)
                }
            } else if let result = entry.result, !result.succeeded, exit.status == 1 || exit.status == 2 {
                // Object storage that did not answer may answer the next attempt.
                let message = result.error ?? "failed"
                await finish(job, token: token, outcome: result.retryable == true ? .crashed(message: message) : .failed(message: message, result: resultJSON),
                             seconds: seconds)
            } else {
                // The attempt's error keeps the worker's last words (at most 10 lines): a crash's only log.
                var message = "worker \(exit.description)"
                let lines = exit.stderrTail.split(separator: "\n", omittingEmptySubsequences: true).suffix(10)
                if lines.count == 1, let last = lines.last { message += ": \(last)" }
                if lines.count > 1 { message += "; its last output:\n" + lines.joined(separator: "\n") }
                await finish(job, token: token, outcome: .crashed(message: message), seconds: seconds)
            }
        }
    }

    /// Runs the job on a kept worker: one line with the job's options and manifest. nil when the process
    /// is not up (or died waiting): the caller starts one. `onEnd` runs on the worker's thread as soon as
    /// the job ended, before the process is offered to another job: whether it may be.
    static func run(_ job: Job, token: String, resume: [String: String], on standby: StandbyWorker, onStart: @escaping @Sendable (ChildProcess) -> Void,
                    onLine: @escaping @Sendable (Substring) -> Void, onEnd: @escaping @Sendable (WorkerJobEnd?) -> Bool) async throws -> WorkerExit? {
        let assignment = WorkerAssignment(name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots, stageToken: token,
                                          manifest: job.manifest, resumeUploads: resume.isEmpty ? nil : resume)
        var input = try JSONEncoder().encode(assignment)
        input.append(UInt8(ascii: "\n"))
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<WorkerExit?, any Error>) in
            let assigned = standby.assign(StandbyWorker.Assignment(input: input, onStart: onStart, onLine: onLine, onEnd: onEnd, done: { result in
                continuation.resume(with: result.map { Optional($0) })
            }))
            if !assigned { continuation.resume(returning: nil) }
        }
    }

    /// A kept worker ended this job: it no longer runs it, so stopping the job must not touch the process.
    /// Whether the process may run another job (not when it was being stopped for this one).
    private func workerReturned(_ id: Int64, end: WorkerJobEnd?) -> Bool {
        if let end, !end.restored.isEmpty {
            events(.notice("job \(id): the worker put back what the job left: \(end.restored.joined(separator: "; "))"))
        }
        return state.withLock { s in
            s.running[id]?.child = nil
            s.running[id]?.phase = .finishing
            return s.running[id]?.stop == nil
        }
    }

    private func workerStarted(_ id: Int64, child: ChildProcess) {
        let pid = child.pid
        let (entry, stopNow) = state.withLock { s -> (Running?, Bool) in
            s.running[id]?.child = child
            return (s.running[id], s.running[id]?.stop != nil)
        }
        if stopNow { child.kill() }
        if let entry {
            // Recorded at the lease check's next pass (not its next renewal), so that `status` soon
            // shows which process runs the job.
            state.withLock { $0.renewSoon = true }
            let handed = now()
            events(.started(id: id, name: entry.job.name, attempt: entry.job.attempt, pid: pid,
                            queuedFor: handed.timeIntervalSince(entry.job.runAt > entry.job.createdAt ? entry.job.runAt : entry.job.createdAt),
                            hops: PickupHops(woke: entry.woke, claimed: entry.claimed, handed: handed).event, at: handed))
        }
    }

    private func workerSaid(_ id: Int64, _ line: Substring) {
        // a line that is no event (a library writing to stdout) is not the protocol's
        guard let event = try? JSONDecoder().decode(JobEvent.self, from: Data(line.utf8)) else { return }
        switch event {
        case .progress(let p):
            let name = state.withLock { s -> String? in
                s.running[id]?.progress = p
                return s.running[id]?.job.name
            }
            if let name { events(.progress(id: id, name: name, fraction: p.fraction, phase: p.phase)) }
        case .result(let r):
            state.withLock { $0.running[id]?.result = r }
        case .log(let level, let message):
            events(.notice("job \(id): \(level): \(message)"))
        case let .upload(address, uploadID):
            // Recorded with the job at once (the worker sends its parts meanwhile); the attempt's end waits for it.
            state.withLock { s in
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

    // MARK: - Checks: cancellation, lost leases, timeouts, renewal

    /// The lease heartbeat. It runs until draining has ended every job; when cancelled, it stops every
    /// worker (their jobs are released) and waits for their supervisors to finish.
    private func checkLoop() async {
        var lastRenew = now()
        var due: Date?
        while true {
            turned("heartbeat")
            if let due { metrics.heartbeatLateness.recordSeconds(max(0, now().timeIntervalSince(due))) }
            let (entries, stop) = state.withLock { ($0.running, $0.draining && $0.running.isEmpty) }
            if stop { return }
            if Task.isCancelled {
                await releaseAhead()
                for id in entries.keys { stopWorker(id, reason: .drain) }
                while state.withLock({ !$0.running.isEmpty }) { await Self.waitWhileStopping(0.01) }
                return
            }
            let t = now()
            for (id, entry) in entries where entry.phase == .working && entry.stop == nil && t.timeIntervalSince(entry.started) > entry.timeout {
                stopWorker(id, reason: .timeout(entry.timeout))
            }
            let live = entries.filter { $0.value.stop == nil }
            do {
                var lost = try await store.lostLeases(live.mapValues(\.token), at: t)
                let soon = state.withLock { s -> Bool in defer { s.renewSoon = false }; return s.renewSoon }
                if soon || t.timeIntervalSince(lastRenew) >= configuration.renewInterval {
                    lastRenew = t
                    let renewals = live.map { id, e in
                        LeaseRenewal(id: id, token: e.token, progress: e.progress?.fraction,
                                     phase: e.phase == .ahead ? Self.waitingPhase : e.progress?.phase, workerPID: e.pid)
                    }
                    lost.formUnion(try await store.renew(renewals, leaseDuration: configuration.leaseDuration, at: t))
                    if !renewals.isEmpty { metrics.renewals.increment(by: renewals.count) }
                }
                for id in lost {
                    stopWorker(id, reason: .lost(try? await store.job(id: id)?.state))  // the state only words the notice (cancelled or lost)
                }
                await releaseStaleAhead(at: t)
            } catch {
                events(.notice("lease check: \(error)"))
            }
            due = now().addingTimeInterval(configuration.checkInterval)
            _ = await pause(configuration.checkInterval)
        }
    }

    private func stopWorker(_ id: Int64, reason: StopReason) {
        let dropped = state.withLock { s -> Running? in
            guard var entry = s.running[id], entry.stop == nil else { return nil }
            if entry.phase == .ahead {
                s.ahead.removeAll { $0 == id }
                return s.running.removeValue(forKey: id)
            }
            entry.stop = reason
            s.running[id] = entry
            // Under the lock, through the child's pidfd: a kept worker that has already ended this job
            // (`workerReturned`) is never killed for it, and a reaped one never signalled.
            entry.child?.kill()
            return nil
        }
        guard let dropped else { return }
        // Claimed ahead and never started: nothing ran.
        let cancelled = reason == .lost(.cancelled)
        metrics.attemptEnded(cancelled ? "cancelled" : "lost", seconds: 0)
        events(.finished(id: id, name: dropped.job.name, state: cancelled ? "cancelled" : "lost", attempt: dropped.job.attempt,
                         message: cancelled ? "cancelled before it started" : "lease lost before it started", seconds: 0))
    }

    // MARK: - Drain

    private func drain() async {
        await releaseAhead()
        let deadline = (state.withLock { $0.drainBegan } ?? now()).addingTimeInterval(configuration.grace)
        while state.withLock({ !$0.running.isEmpty }) {
            if now() >= deadline || Task.isCancelled {
                let ids = state.withLock { Array($0.running.keys) }
                events(.notice("grace period over: stopping \(ids.count) job(s) and giving them back to the queue"))
                for id in ids { stopWorker(id, reason: .drain) }
                while state.withLock({ !$0.running.isEmpty }) { await Self.waitWhileStopping(0.02) }
                return
            }
            if !(await pause(0.05)) { continue }
        }
    }

    /// The phase `status` and the status page show for a job claimed ahead of a free worker.
    static let waitingPhase = Job.claimedAheadPhase

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }
}

extension AttemptOutcome {
    /// The outcome label of `mediafarm_attempts_total`.
    var metricName: String {
        switch self {
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .crashed: "crashed"
        case .released: "released"
        }
    }

    /// A job claimed ahead given back, or an attempt stopped by a drain.
    var isRelease: Bool {
        if case .released = self { return true }
        return false
    }
}
