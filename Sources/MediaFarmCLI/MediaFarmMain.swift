import ArgumentParser
import Foundation
import FarmModel
import Logging
import MediaCore
import QueueCLI

/// `mediafarm`: the root command of the media program (`mediafarm-engine`), which has every command. The
/// queue's commands are QueueCLI's, the same ones the `mediafarm` front runs without the media libraries.
/// Exit status: 0 success, 1 a job or file failed, 2 bad usage or an invalid manifest.
public struct MediaFarmMain: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "mediafarm",
        abstract: QueueMain.abstract,
        version: MediaFarmVersion.string,
        subcommands: [InspectCommand.self, ScanCommand.self, ImagesCommand.self, PosterCommand.self, StoryboardCommand.self, WaveformCommand.self, RunCommand.self, SubmitCommand.self, StatusCommand.self,
                      CancelCommand.self, RetryCommand.self, CoordinatorCommand.self, WorkerCommand.self, QueueCommand.self, IngestCommand.self, BatchCommand.self, HealthcheckCommand.self, CaptureCommand.self,
                      MediaLibraryCommand.self, WebhooksCommand.self, LoudnessCommand.self, CheckCommand.self])

    public init() {}

    /// Parses the arguments, runs the command, and exits with MediaFarm's exit codes.
    public static func runAndExit() async -> Never {
        let code = await run(arguments: Array(CommandLine.arguments.dropFirst()))
        Foundation.exit(code)
    }

    /// Runs a command line in-process and returns the exit status (used by `main` and by tests).
    public static func run(arguments: [String]) async -> Int32 {
        bootstrapLogging()
        return await CommandRunner.run(MediaFarmMain.self, arguments: arguments)
    }

    /// Parses and validates a command line without running it: nil when it would run, else the exit
    /// status and the message it would print. For tests that try every option's values.
    public static func check(arguments: [String]) -> (status: Int32, message: String)? {
        CommandRunner.check(MediaFarmMain.self, arguments: arguments)
    }

    private static let loggingOnce: Void = {
        CommandRunner.bootstrapLogging()
        // FFmpeg's own chatter stays silent unless asked for: its errors reach users through our messages.
        let ffmpegLevel = ProcessInfo.processInfo.environment["MEDIAFARM_FFMPEG_LOG"].flatMap(Logger.Level.init(rawValue:))
        FFmpegLog.install(level: ffmpegLevel)
    }()

    static func bootstrapLogging() { _ = loggingOnce }
}
