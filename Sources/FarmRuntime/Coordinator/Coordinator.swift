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
/// (`mediafarm worker --standby`, a job per line on stdin, JSON-line events on stdout), renews the leases while they run,
/// rescues jobs whose lease expired, enforces timeouts and cancellation, publishes outputs under the
/// lease token, and drains on SIGTERM. A swift-service-lifecycle `Service`.
///
/// Structure (as River splits producer, executor and rescuer): small parts, each a value holding the shared
/// `CoordinatorContext` (its one mutable state is `RunningJobs`, a `Mutex`) and the parts it calls. Four
/// loops run in `run()`'s task group: the `Claimer` (in the group's body: claims for free slots, starts a
/// `JobSupervisor` task per job in a group of its own), and as child tasks the `LeaseKeeper` (renewals, lost leases, cancellation, timeouts), the `Rescuer` (expired
/// leases of dead coordinators, chunk folders, pruning) and the `PresenceReporter`. A job's attempt goes
/// through the `InputPreparer`, `ResultReuse`, the `Publisher` or the `ChunkJoiner`, the `LibraryRecorder`
/// and the `AttemptRecorder`; `KeptWorkers` keeps worker processes waiting. Each loop sleeps through
/// `pause`, which ends at once when the task is cancelled. Cancelling `run()` stops claiming and stops
/// running workers at once (their jobs are released).
///
/// Threading: the claimer and the heartbeat run where the store's blocking work does (SQLite: its writer
/// thread, so that their store calls pay no hop). The rescuer and each job's supervision run on
/// `JobWorkExecutor` instead: their file work
/// (validation's checks, publication's renames and fsyncs, reuse's hashes and copies) never holds up a
/// queue write, the HTTP face's submissions included. Each worker process is supervised by a thread of
/// its own (`WorkerProcess`). Every mutable field is in `RunningJobs`, a `Mutex`. Workers are signalled through
/// `ChildProcess` (pidfds), never by a pid that may have been reaped. Store calls are short transactions.
public final class Coordinator: Service, CoordinatorPart {
    public var store: any JobStore { context.store }
    public var configuration: CoordinatorConfiguration { context.configuration }
    let context: CoordinatorContext
    private let startedAt = Date()
    private let claimer: Claimer
    private let leaseKeeper: LeaseKeeper
    private let rescuer: Rescuer

    public init(store: any JobStore, configuration: CoordinatorConfiguration = .init(),
                now: @escaping @Sendable () -> Date = { Date() },
                events: @escaping @Sendable (CoordinatorEvent) -> Void = { _ in }) {
        let context = CoordinatorContext(
            store: store, configuration: configuration,
            workerFolders: WorkerFolders(queue: store.location, owner: configuration.owner, environment: ProcessInfo.processInfo.environment),
            events: events, now: now, metrics: CoordinatorMetrics(factory: configuration.metricsFactory ?? MetricsSystem.factory),
            jobs: RunningJobs())
        let recorder = AttemptRecorder(context: context)
        let publisher = Publisher(context: context, recorder: recorder)
        let joiner = ChunkJoiner(context: context, recorder: recorder)
        let library = LibraryRecorder(context: context)
        let kept = KeptWorkers(context: context)
        let supervisor = JobSupervisor(context: context, preparer: InputPreparer(context: context, joiner: joiner),
                                       reuse: ResultReuse(context: context, publisher: publisher, recorder: recorder, library: library),
                                       joiner: joiner, publisher: publisher, recorder: recorder, library: library, kept: kept)
        self.context = context
        claimer = Claimer(context: context, kept: kept, supervisor: supervisor, recorder: recorder)
        leaseKeeper = LeaseKeeper(context: context, recorder: recorder)
        rescuer = Rescuer(context: context, publisher: publisher, recorder: recorder, joiner: joiner)
    }

    /// Slots, running jobs with their latest progress, and the loops' last turns.
    public var snapshot: CoordinatorSnapshot {
        jobs.state.withLock { s in
            CoordinatorSnapshot(
                owner: configuration.owner, workers: configuration.workers, draining: s.draining, startedAt: startedAt,
                running: s.running.map { id, r in
                    CoordinatorSnapshot.RunningJob(id: id, name: r.job.name, attempt: r.job.attempt, pid: r.pid, started: r.started,
                                                   fraction: r.progress?.fraction, phase: r.phase == .ahead ? Job.claimedAheadPhase : r.progress?.phase,
                                                   eta: r.progress?.eta)
                }.sorted { $0.id < $1.id },
                loops: s.loopTurns, provides: configuration.provides)
        }
    }

    /// The loops' last turns and whether it drains, without the running jobs (what `/healthz` needs).
    public var loopsSnapshot: (draining: Bool, loops: [String: Date]) {
        jobs.state.withLock { ($0.draining, $0.loopTurns) }
    }

    /// Whether the coordinator is draining (SIGTERM): it claims nothing more.
    public var isDraining: Bool { jobs.isDraining }

    /// Jobs this coordinator saw end failed or dead (and not succeed later).
    public var failedJobs: [Int64] { jobs.state.withLock { $0.tally.failed.sorted() } }

    /// How many jobs this coordinator saw succeed.
    public var succeededCount: Int { jobs.state.withLock { $0.tally.succeeded } }

    /// Stops claiming; running jobs get the grace period, then are stopped and given back.
    /// The grace counts from this call (the signal), not from when the claimer next looks.
    public func beginDrain() {
        let t = now()
        jobs.state.withLock { s in
            if s.drainBegan == nil { s.drainBegan = t }
            s.draining = true
        }
        jobs.slotFreed.signal()
    }

    public func run() async throws {
        signal(SIGPIPE, SIG_IGN)
        // What a coordinator of this queue that was killed on this host left: its workers' TMPDIR and spool
        // folders, and its running jobs, taken back now rather than when their leases expire.
        let leftovers = workerFolders.sweep()
        if leftovers.removed > 0 { events(.notice("removed \(leftovers.removed) folder(s) that the workers of a coordinator that is gone left")) }
        defer { workerFolders.release() }
        await rescuer.takeBackJobs(of: leftovers.owners)
        // The loops run where the store's blocking work does (SQLite: its writer thread), so that no
        // transaction runs on the cooperative pool that the HTTP face shares, and none pays a hop.
        await withTaskExecutorPreference(store.executor) { await self.runLoops() }
    }

    private func runLoops() async {
        let presence = PresenceReporter(store: store, configuration: configuration, events: events, now: now) { [unowned self] in self.snapshot }
        let (claimer, leaseKeeper, rescuer) = (self.claimer, self.leaseKeeper, self.rescuer)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await leaseKeeper.run() }
                // The rescuer's file work (completing publications: renames and fsyncs; removing chunk
                // folders; validation's checks) blocks: off the writer thread, where it held up every commit.
                group.addTask(executorPreference: JobWorkExecutor.shared) { await rescuer.run() }
                group.addTask { await presence.run() }
                await claimer.run()
                // The group ends when its loops have.
            }
            await claimer.kept.waitForKeptWorkers()
            // The folders of chunked exports that ended last (a coordinator run until idle ends with them).
            await withTaskExecutorPreference(JobWorkExecutor.shared) { await rescuer.joiner.tendChunks() }
            await presence.leave()
        } onGracefulShutdown: { [weak self] in
            self?.events(.notice("draining: no new jobs; running jobs have \(Int(self?.configuration.grace ?? 0)) s to finish"))
            self?.beginDrain()
        }
    }
}
