import ArgumentParser
import FarmModel
import Foundation
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm`, the front: the queue's commands, run in this program, which loads no media library and
/// starts in a few milliseconds; every other command line (the media commands, `--help`, `--version`,
/// `help`, a group without its command) is handed by exec to the media program, `mediafarm-engine`,
/// which has every command. Both programs parse the queue's commands with the same types, so a command
/// line means the same in either.
public struct QueueMain: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "mediafarm",
        abstract: abstract,
        version: MediaFarmVersion.string,
        subcommands: [SubmitCommand.self, StatusCommand.self, CancelCommand.self, RetryCommand.self, QueueCommand.self,
                      LibraryCommand.self, WebhooksCommand.self])

    public init() {}

    /// What `mediafarm --help` says the program is, the same in both programs.
    public static let abstract = "Batch media processing: inspect, retime, scan and export media on a farm of workers."

    /// The media program's name, installed beside the front or in ../libexec/mediafarm.
    public static let engineName = "mediafarm-engine"

    /// Hands the command line to the media program unless it is a queue command (the media program
    /// replaces this process: same process id, same standard streams, its own exit status). Called first
    /// thing, on the main thread, before this program has started a thread of its own.
    public static func handOverUnlessQueueCommand() {
        if CommandRunner.leaf(QueueMain.self, Array(CommandLine.arguments.dropFirst())) == nil { handOver() }
    }

    /// Runs the queue command and exits with its status.
    public static func runQueueCommand() async -> Never {
        CommandRunner.bootstrapLogging()
        Glibc.exit(await CommandRunner.run(QueueMain.self, arguments: Array(CommandLine.arguments.dropFirst())))
    }

    /// Execs the media program with this command line. SIGTERM and SIGINT are blocked across the exec
    /// (a blocked signal stays pending through it): the media program unblocks them once its handlers are
    /// in place, so a stop sent while this program hands over is kept, not lost and not fatal too soon.
    static func handOver() -> Never {
        guard let engine = enginePath() else {
            FileHandle.standardError.write(Data("""
                mediafarm: the media program \(engineName) is not installed beside \(OwnExecutable.path ?? "this program") \
                (nor in ../libexec/mediafarm): only the queue's commands (submit, status, cancel, retry, queue, webhooks, \
                library list) run without it; install both programs (script/install)

                """.utf8))
            Glibc.exit(ExitStatus.failure)
        }
        var stops = sigset_t()
        var before = sigset_t()
        sigemptyset(&stops)
        sigaddset(&stops, SIGTERM)
        sigaddset(&stops, SIGINT)
        sigprocmask(SIG_BLOCK, &stops, &before)
        let argv = CommandLine.unsafeArgv
        execv(engine, argv)
        let problem = String(cString: strerror(errno))
        sigprocmask(SIG_SETMASK, &before, nil)
        FileHandle.standardError.write(Data("mediafarm: cannot run the media program \(engine): \(problem)\n".utf8))
        Glibc.exit(ExitStatus.failure)
    }

    /// The media program: beside this one, else in ../libexec/mediafarm (an installed layout).
    public static func enginePath() -> String? {
        guard let own = OwnExecutable.path else { return nil }
        let folder = (own as NSString).deletingLastPathComponent
        for candidate in [folder + "/" + engineName, (folder as NSString).deletingLastPathComponent + "/libexec/mediafarm/" + engineName]
        where access(candidate, X_OK) == 0 {
            return candidate
        }
        return nil
    }
}
