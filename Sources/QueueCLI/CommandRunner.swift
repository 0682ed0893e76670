import ArgumentParser
import FarmModel
import Foundation
import Logging

/// MediaFarm's exit statuses.
public enum ExitStatus {
    public static let success: Int32 = 0
    /// A job or a file failed.
    public static let failure: Int32 = 1
    /// Bad usage or an invalid manifest.
    public static let usage: Int32 = 2
}

/// Runs a command line under a root command (the queue program's or the media program's): the parse,
/// the command, and MediaFarm's exit statuses and messages, the same in both programs.
public enum CommandRunner {
    /// Runs `arguments` under `root` in-process and returns the exit status.
    public static func run(_ root: any ParsableCommand.Type, arguments: [String]) async -> Int32 {
        await OpenedStores.closing { await runCommand(root, arguments: arguments) }
    }

    private static func runCommand(_ root: any ParsableCommand.Type, arguments: [String]) async -> Int32 {
        // `mediafarm` alone is a usage error: the help, on stderr, and exit 2 (not a silent success).
        if arguments.isEmpty {
            FileHandle.standardError.write(Data((root.helpMessage() + "\n").utf8))
            return ExitStatus.usage
        }
        if let problem = unknownCommand(root, arguments) {
            FileHandle.standardError.write(Data((problem + "\n").utf8))
            return ExitStatus.usage
        }
        var parsed: (any ParsableCommand)?
        do {
            var command = try root.parseAsRoot(arguments)
            parsed = command
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch let error as ValidationError where parsed != nil {
            // Found wrong while running: the usage shown is the command's own, not the root's.
            FileHandle.standardError.write(Data(("Error: \(error.message)\nUsage: \(root.usageString(for: type(of: parsed!)))\n"
                + "  See '\(commandPath(root, arguments)) --help' for more information.\n").utf8))
            return ExitStatus.usage
        } catch let code as ExitCode {
            return code.rawValue
        } catch let error as CLIError {
            FileHandle.standardError.write(Data((error.description + "\n").utf8))
            return error.status
        } catch {
            let status = root.exitCode(for: error)
            if status == .success {
                print(root.fullMessage(for: error))
                return 0
            }
            FileHandle.standardError.write(Data((root.fullMessage(for: error) + "\n").utf8))
            return status == .validationFailure ? ExitStatus.usage : ExitStatus.failure
        }
    }

    /// Parses and validates a command line without running it: nil when it would run, else the exit
    /// status and the message it would print.
    public static func check(_ root: any ParsableCommand.Type, arguments: [String]) -> (status: Int32, message: String)? {
        do {
            _ = try root.parseAsRoot(arguments)
            return nil
        } catch {
            let status = root.exitCode(for: error)
            return (status == .validationFailure ? ExitStatus.usage : ExitStatus.failure, root.fullMessage(for: error))
        }
    }

    /// A command name that names no command (`mediafarm inpsect`, `mediafarm help nosuch`, `mediafarm library lst`):
    /// what to say, with the nearest name; nil when the names lead to a command.
    public static func unknownCommand(_ root: any ParsableCommand.Type, _ arguments: [String]) -> String? {
        var words = arguments
        let help = words.first == "help"
        if help { words.removeFirst() }
        var command: any ParsableCommand.Type = root
        var path = [root._commandName]
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

    /// The command that the leading words of `arguments` name under `root` when it has no commands of its
    /// own (`library list`), else nil (`library`, `--help`, `help submit`, a name `root` does not have).
    public static func leaf(_ root: any ParsableCommand.Type, _ arguments: [String]) -> (any ParsableCommand.Type)? {
        var command: any ParsableCommand.Type = root
        for word in arguments {
            let subcommands = command.configuration.subcommands
            if subcommands.isEmpty { break }
            guard let sub = subcommands.first(where: { $0._commandName == word }) else { return nil }
            command = sub
        }
        return command == root || !command.configuration.subcommands.isEmpty ? nil : command
    }

    /// "mediafarm library list": the root and the subcommand names that lead the arguments.
    public static func commandPath(_ root: any ParsableCommand.Type, _ arguments: [String]) -> String {
        var names = [root._commandName]
        var command: any ParsableCommand.Type = root
        for argument in arguments {
            guard let sub = command.configuration.subcommands.first(where: { $0._commandName == argument }) else { break }
            names.append(argument)
            command = sub
        }
        return names.joined(separator: " ")
    }

    /// Logging as every command has it: JSON lines unless stderr is a terminal, at MEDIAFARM_LOG_LEVEL
    /// (default warning). Once per process.
    public static func bootstrapLogging() { _ = loggingOnce }

    private static let loggingOnce: Void = {
        let level = ProcessInfo.processInfo.environment["MEDIAFARM_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let json = JSONLogHandler.wanted
        LoggingSystem.bootstrap { label in
            if json { return JSONLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return PrintableLogHandler(wrapped: handler)
        }
    }()
}
