import ArgumentParser
import FarmModel
import Foundation
import MediaCore
import QueueCLI

/// `--stall-timeout`: how long one read, decode or write may go without progress before the work is
/// given up as stalled. It never limits a job's total time (that is the job's `timeout`). Applied by
/// setting MEDIAFARM_STALL_TIMEOUT in this process, so that `SafetyLimits.default` and every worker
/// process started from here see it.
struct StallOptions: ParsableArguments {
    @Option(name: .customLong("stall-timeout"), parsing: .unconditional,
            help: ArgumentHelp("Seconds a read, decode or write may make no progress before it is given up (default 120, or MEDIAFARM_STALL_TIMEOUT). Not a limit on total time \(UserNumbers.wait.inHelp).",
                               valueName: "seconds"), transform: UserNumbers.wait.option)
    var stallTimeout: Double?

    /// Puts the option into the environment (an explicit option wins over an inherited variable).
    func apply() {
        if let stallTimeout { setenv(SafetyLimits.stallTimeoutVariable, String(stallTimeout), 1) }
    }
}
