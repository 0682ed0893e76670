import ArgumentParser
import Foundation
import FarmModel
import Logging
import MediaCore

/// `mediafarm`: the root command. Exit status: 0 success, 1 a job or file failed, 2 bad usage or an
/// invalid manifest.
public struct MediaFarmMain: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "mediafarm",
        abstract: "Batch media processing: inspect, retime, scan and export media on a farm of workers.",
        version: MediaFarmVersion.string,
        subcommands: [InspectCommand.self, ScanCommand.self, ImagesCommand.self, PosterCommand.self, StoryboardCommand.self, WaveformCommand.self, RunCommand.self, SubmitCommand.self, StatusCommand.self,
                      CancelCommand.self, RetryCommand.self, CoordinatorCommand.self, WorkerCommand.self, QueueCommand.self, IngestCommand.self, BatchCommand.self, HealthcheckCommand.self, CaptureCommand.self,
                      LibraryCommand.self, WebhooksCommand.self, LoudnessCommand.self])

    public init() {}

    /// Parses the arguments, runs the command, and exits with MediaFarm's exit codes.
    public static func runAndExit() async -> Never {
        let code = await run(arguments: Array(CommandLine.arguments.dropFirst()))
        Foundation.exit(code)
    }

    /// Runs a command line in-process and returns the exit status (used by `main` and by tests).
    public static func run(arguments: [String]) async -> Int32 {
        bootstrapLogging()
        // `mediafarm` alone is a usage error: the help, on stderr, and exit 2 (not a silent success).
        if arguments.isEmpty {
            FileHandle.standardError.write(Data((helpMessage() + "\n").utf8))
            return ExitStatus.usage
        }
        if let problem = unknownCommand(arguments) {
            FileHandle.standardError.write(Data((problem + "\n").utf8))
            return ExitStatus.usage
        }
        var parsed: (any ParsableCommand)?
        do {
            var command = try parseAsRoot(arguments)
            parsed = command
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch let error as ValidationError where parsed != nil {
            // Found wrong while running: the usage shown is the command's own, not the root's.
            FileHandle.standardError.write(Data(("Error: \(error.message)\nUsage: \(usageString(for: type(of: parsed!)))\n"
                + "  See '\(commandPath(arguments)) --help' for more information.\n").utf8))
            return ExitStatus.usage
        } catch let code as ExitCode {
            return code.rawValue
        } catch let error as CLIError {
            FileHandle.standardError.write(Data((error.description + "\n").utf8))
            return error.status
        } catch {
            let status = exitCode(for: error)
            if status == .success {
                print(fullMessage(for: error))
                return 0
            }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            return status == .validationFailure ? ExitStatus.usage : ExitStatus.failure
        }
    }

    /// Parses and validates a command line without running it: nil when it would run, else the exit
    /// status and the message it would print. For tests that try every option's values.
    public static func check(arguments: [String]) -> (status: Int32, message: String)? {
        do {
            _ = try parseAsRoot(arguments)
            return nil
        } catch {
            let status = exitCode(for: error)
            return (status == .validationFailure ? ExitStatus.usage : ExitStatus.failure, fullMessage(for: error))
        }
    }

    /// A command name that names no command (`mediafarm inpsect`, `mediafarm help nosuch`, `mediafarm library lst`):
    /// what to say, with the nearest name; nil when the names lead to a command.
    static func unknownCommand(_ arguments: [String]) -> String? {
        var words = arguments
        let help = words.first == "help"
        if help { words.removeFirst() }
        var command: any ParsableCommand.Type = MediaFarmMain.self
        var path = ["mediafarm"]
        for word in words {
            let configuration = command.configuration
            let subcommands = configuration.subcommands
            let hasDefault = configuration.defaultSubcommand.map { _ in true } ?? false
            guard !subcommands.isEmpty, !hasDefault, !word.hasPrefix("-") else { return nil }
            guard let sub = subcommands.first(where: { $0._commandName == word }) else {
                let names = subcommands.map { $0._commandName }
                return "Error: \(path.joined(separator: " ")) has no command \"\(word)\"\(Suggestion.hint(word, in: names)); "
                    + "its commands: \(names.joined(separator: ", "))\n  See '\(path.joined(separator: " ")) --help' for more information."
            }
            path.append(word)
            command = sub
        }
        return nil
    }

    /// "mediafarm library list": the root and the subcommand names that lead the arguments.
    static func commandPath(_ arguments: [String]) -> String {
        var names = ["mediafarm"]
        var command: any ParsableCommand.Type = MediaFarmMain.self
        for argument in arguments {
            guard let sub = command.configuration.subcommands.first(where: { $0._commandName == argument }) else { break }
            names.append(argument)
            command = sub
        }
        return names.joined(separator: " ")
    }

    private static let loggingOnce: Void = {
        let level = ProcessInfo.processInfo.environment["MEDIAFARM_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let json = JSONLogHandler.wanted
        LoggingSystem.bootstrap { label in
            if json { return JSONLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        // FFmpeg's own chatter stays silent unless asked for: its errors reach users through our messages.
        let ffmpegLevel = ProcessInfo.processInfo.environment["MEDIAFARM_FFMPEG_LOG"].flatMap(Logger.Level.init(rawValue:))
        FFmpegLog.install(level: ffmpegLevel)
    }()

    static func bootstrapLogging() { _ = loggingOnce }
}

/// MediaFarm's exit statuses.
public enum ExitStatus {
    public static let success: Int32 = 0
    /// A job or a file failed.
    public static let failure: Int32 = 1
    /// Bad usage or an invalid manifest.
    public static let usage: Int32 = 2
}

