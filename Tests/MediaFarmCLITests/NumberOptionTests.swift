import FarmTestSupport
import Foundation
import MediaFarmCLI
import Synchronization
import Testing

/// Every numeric option of every command, found from the commands' own definitions (the binary's
/// `--experimental-dump-help`), given every hostile value: each must be refused while the arguments are
/// parsed, with exit 2 and a message naming the option, never a trap. A new option is covered without
/// anyone remembering to add it here.
@Suite struct NumberOptionTests {
    struct Argument: Decodable {
        struct Name: Decodable { var kind: String; var name: String }
        var kind: String
        var names: [Name]?
        var preferredName: Name?
        var valueName: String?
        var isOptional: Bool
        var isRepeating: Bool
        var allValues: [String]?
        var abstract: String?
    }

    struct Command: Decodable {
        var commandName: String
        var arguments: [Argument]?
        var subcommands: [Command]?
    }

    struct Tool: Decodable { var command: Command }

    /// A command's path and one argument of it that takes a value.
    struct Case: CustomStringConvertible {
        var path: [String]
        var argument: Argument
        var fillers: [String]
        var spelling: String { argument.kind == "positional" ? "<\(argument.valueName ?? "")>" : "--" + (argument.preferredName?.name ?? "") }
        var description: String { (path + [spelling]).joined(separator: " ") }

        /// The command line with `value` for this argument and placeholders for the others it requires.
        func arguments(_ value: String) -> [String] {
            argument.kind == "positional" ? path + fillers + [value] : path + fillers + [spelling, value]
        }
    }

    static let hostile = ["nan", "NaN", "inf", "-inf", "infinity", "1e30", "1e300", "-0", "-0.0", "99999999999999999999",
                          "-99999999999999999999", "0x10", "1.5e3", "", "12abc"]

    /// Every argument that takes a value, with the placeholders its command requires besides it.
    static func cases() throws -> [Case] {
        let dump = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["--experimental-dump-help"])
        let tool = try JSONDecoder().decode(Tool.self, from: dump.stdoutData)
        var found: [Case] = []
        func walk(_ command: Command, _ path: [String]) {
            let arguments = (command.arguments ?? []).filter { $0.kind != "flag" && $0.preferredName?.name != "help" && $0.preferredName?.name != "version" }
            for argument in arguments {
                var fillers: [String] = []
                for other in arguments where !other.isOptional && other.preferredName?.name != argument.preferredName?.name {
                    let value = other.allValues?.first ?? "1"
                    if other.kind == "positional" {
                        if argument.kind != "positional" { fillers.append(value) }
                    } else {
                        fillers += ["--" + (other.preferredName?.name ?? ""), value]
                    }
                }
                found.append(Case(path: path, argument: argument, fillers: fillers))
            }
            for sub in command.subcommands ?? [] { walk(sub, path + [sub.commandName]) }
        }
        for sub in tool.command.subcommands ?? [] { walk(sub, [sub.commandName]) }
        return found
    }

    /// The numeric ones: an argument that refuses "abc" naming it (a string option takes it; an option
    /// with a list of values is not a number).
    static func numeric() throws -> [Case] {
        try cases().filter { c in
            guard c.argument.allValues == nil else { return false }
            guard let problem = MediaFarmMain.check(arguments: c.arguments("abc")) else { return false }
            return problem.message.contains("'abc'") || problem.message.contains(" abc:")
        }
    }

    @Test func everyNumericOptionRefusesEveryHostileValue() throws {
        let numeric = try Self.numeric()
        // The commands have dozens: a discovery that finds few has stopped working.
        #expect(numeric.count >= 40, "\(numeric.map(\.description))")
        for expected in ["coordinator --max-memory", "coordinator --grace", "capture --max-size", "submit --delay", "worker --recycle-above",
                         "coordinator --recycle-memory", "cancel <ids>"] {
            #expect(numeric.contains { $0.description == expected }, "\(expected) not found among \(numeric.map(\.description))")
        }
        var count = 0
        var subprocessCases: [(Case, [String])] = []
        for c in numeric {
            var values = Self.hostile
            values += Self.outside(c.argument.abstract ?? "")
            for value in values {
                count += 1
                let arguments = c.arguments(value)
                guard let problem = MediaFarmMain.check(arguments: arguments) else {
                    Issue.record("\(c) \(value) was accepted: \(arguments)")
                    continue
                }
                #expect(problem.status == 2, "\(arguments): \(problem)")
                if c.argument.kind != "positional" || !value.hasPrefix("-") {
                    let named = problem.message.contains(c.spelling) || problem.message.contains("<\(c.argument.valueName ?? "?")>")
                    #expect(named, "\(arguments): the message does not name the option: \(problem.message)")
                }
                if ["nan", "1e30", "-0"].contains(value) { subprocessCases.append((c, arguments)) }
            }
        }
        // As a user runs them: exit 2 from the binary, never a signal.
        let results = Mutex<[(String, Int32, String)]>([])
        let lines = subprocessCases.map(\.1)
        DispatchQueue.concurrentPerform(iterations: lines.count) { i in
            let arguments = lines[i]
            let r = (try? ProcessRunner.spawn(TestPaths.mediafarmExecutable, arguments)) ?? ProcessResult(status: -1, stdout: Data(), stderr: "could not start")
            results.withLock { $0.append((arguments.joined(separator: " "), r.status, r.stderr)) }
        }
        for (line, status, stderr) in results.withLock({ $0 }) {
            #expect(status == 2, "mediafarm \(line): exit \(status): \(stderr)")
            #expect(!stderr.isEmpty, "mediafarm \(line): no message")
        }
        print("NumberOptionTests: \(numeric.count) numeric arguments, \(count) hostile cases in-process, \(subprocessCases.count) through the binary")
    }

    /// Values just outside the range the help states ("(from 0 to 86400 seconds)", "(greater than 0 and
    /// at most 3600 seconds)", "(from 0 to 1024P)").
    static func outside(_ help: String) -> [String] {
        guard let open = help.range(of: "(", options: .backwards) else { return [] }
        let words = help[open.upperBound...].split(whereSeparator: { $0 == " " || $0 == ")" }).map(String.init)
        var values: [String] = []
        if let i = words.firstIndex(of: "from"), i + 3 < words.count, words[i + 2] == "to" {
            values += [below(words[i + 1]), above(words[i + 3])].compactMap { $0 }
        } else if let i = words.firstIndex(of: "than"), i + 4 < words.count, words[i + 3] == "most" {
            values += [words[i + 1], above(words[i + 4])].compactMap { $0 }
        }
        return values
    }

    static func below(_ text: String) -> String? {
        guard let n = Int64(text), n > Int64.min else { return nil }
        return String(n - 1)
    }

    static func above(_ text: String) -> String? {
        let unit = text.last.map { "KMGTP".contains($0) } == true ? String(text.last!) : ""
        guard let n = Int64(unit.isEmpty ? text : String(text.dropLast())), n < Int64.max else { return nil }
        return String(n + 1) + unit
    }
}
