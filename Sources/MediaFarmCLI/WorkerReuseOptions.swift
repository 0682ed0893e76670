import ArgumentParser
import FarmModel
import FarmRuntime
import QueueCLI

/// How long a coordinator keeps each worker process (`coordinator` and `batch`): a process runs job after
/// job, and is replaced after `--jobs-per-worker` jobs, when its resident memory after a job is above
/// `--recycle-memory`, and after any job that crashed it or left it unclean.
struct WorkerReuseOptions: ParsableArguments {
    @Option(name: .customLong("jobs-per-worker"), parsing: .unconditional,
            help: "Jobs one worker process runs before it is replaced (1: a new process for every job) \(UserNumbers.jobsPerWorker.inHelp).", transform: UserNumbers.jobsPerWorker.option)
    var jobsPerWorker: Int = WorkerRecycling.default.jobsPerWorker

    @Option(name: .customLong("recycle-memory"), parsing: .unconditional,
            help: ArgumentHelp("Replace a worker process whose resident memory after a job is above this (e.g. 1G, 512M; 0: no limit) \(UserNumbers.bytes.inHelp).",
                               valueName: "size"), transform: UserNumbers.bytes.option)
    var recycleMemory: UInt64 = 1 << 30

    @Option(name: .customLong("claim-ahead"), parsing: .unconditional,
            help: "Jobs claimed beyond the free slots while recent jobs are short (see --claim-ahead-below), started the moment a worker is free (0: none) \(UserNumbers.claimAhead.inHelp).", transform: UserNumbers.claimAhead.option)
    var claimAhead: Int = 2

    @Option(name: .customLong("claim-ahead-below"), parsing: .unconditional,
            help: ArgumentHelp("Claim ahead only while recent jobs take under this many seconds on average \(UserNumbers.wait.inHelp).", valueName: "seconds"), transform: UserNumbers.wait.option)
    var claimAheadBelow: Double = CoordinatorConfiguration().claimAheadBelow

    @Option(name: .customLong("claim-ahead-hold"), parsing: .unconditional,
            help: ArgumentHelp("A job claimed ahead that waits longer than this many seconds for a worker goes back to the queue \(UserNumbers.wait.inHelp).",
                               valueName: "seconds"), transform: UserNumbers.wait.option)
    var claimAheadHold: Double = CoordinatorConfiguration().claimAheadHold

    func apply(to configuration: inout CoordinatorConfiguration) throws {
        configuration.recycling = WorkerRecycling(jobsPerWorker: jobsPerWorker,
                                                  residentLimit: recycleMemory)
        configuration.claimAhead = claimAhead
        configuration.claimAheadBelow = claimAheadBelow
        configuration.claimAheadHold = claimAheadHold
    }
}
