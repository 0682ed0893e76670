import FarmTestSupport
import Foundation
import Testing

/// What a user reads says what the binary does: every option of every command is in the page that
/// documents the command, and the manual pages generated from the parser name them all.
@Suite struct DocumentationTests {
    /// A command of the parser (as `--experimental-dump-help` describes it): its path and long options.
    struct Command {
        var path: [String]
        var options: [String]
    }

    /// The leaf commands of `mediafarm`, from the parser itself.
    static func commands() throws -> [Command] {
        let dump = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["--experimental-dump-help"])
        let root = try #require((try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])?["command"] as? [String: Any])
        var found: [Command] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            let subcommands = (command["subcommands"] as? [[String: Any]] ?? []).filter { $0["commandName"] as? String != "help" }
            if path.count > 1 && subcommands.isEmpty {
                // Hidden options (the worker's test hooks) are for tests, not for pages.
                let shown = (command["arguments"] as? [[String: Any]] ?? []).filter { ($0["shouldDisplay"] as? Bool) != false }
                let options = shown.flatMap { argument in
                    (argument["names"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "long" }.compactMap { $0["name"] as? String }
                }.filter { !["help", "version", "experimental-dump-help"].contains($0) }
                found.append(Command(path: path, options: options))
            }
            for sub in subcommands { walk(sub, path + [sub["commandName"] as? String ?? "?"]) }
        }
        walk(root, ["mediafarm"])
        return found
    }

    /// The page of docs/ that documents each top-level command.
    static let pages = ["inspect": "inspection.md", "scan": "scanning.md", "run": "manifests.md", "submit": "farm.md", "status": "farm.md",
                        "cancel": "farm.md", "retry": "farm.md", "coordinator": "farm.md", "worker": "farm.md", "queue": "farm.md",
                        "ingest": "ingest.md", "capture": "capture.md", "library": "library.md", "batch": "operations.md",
                        "healthcheck": "operations.md", "webhooks": "webhooks.md", "images": "pictures.md", "poster": "pictures.md", "storyboard": "pictures.md", "waveform": "pictures.md",
                        "loudness": "inspection.md", "check": "checks.md"]

    @Test func everyOptionIsInThePageOfItsCommand() throws {
        let commands = try Self.commands()
        #expect(commands.count >= 30, "\(commands.map(\.path))")
        var missing: [String] = []
        for command in commands {
            let page = try #require(Self.pages[command.path[1]], "no documentation page for \(command.path.joined(separator: " "))")
            let text = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/" + page), encoding: .utf8)
            for option in command.options where !text.contains("--" + option) {
                missing.append("\(command.path.joined(separator: " ")) --\(option) (docs/\(page))")
            }
        }
        #expect(missing.isEmpty, "options no page documents:\n\(missing.joined(separator: "\n"))")
    }

    @Test func theManualPagesNameEveryCommandAndOption() throws {
        let tool = TestPaths.packageRoot.appendingPathComponent(".build/debug/generate-manual").path
        try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is not built: script/test builds it (swift build --product generate-manual)")
        let folder = try TestPaths.makeTemporaryFolder("man")
        let made = try ProcessRunner.run(tool, [TestPaths.mediafarmExecutable, "--multi-page", "--date", "2026-11-25", "-o", folder.path])
        #expect(made.status == 0, "\(made.stderr)")
        for command in try Self.commands() {
            let name = command.path.joined(separator: ".") + ".1"
            let page = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            #expect(page.contains(".Dt \(command.path.joined(separator: ".").uppercased()) 1"), "\(name)")
            for option in command.options {
                #expect(page.contains("Fl -\(option)"), "\(name) does not name --\(option)")
            }
        }
    }

    @Test func shellCompletionIsDocumentedAndWorks() throws {
        let readme = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("--generate-completion-script") && readme.contains("script/install") && readme.contains("man mediafarm"))
        for shell in ["bash", "zsh", "fish"] {
            let script = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["--generate-completion-script", shell])
            #expect(script.status == 0 && script.stdout.contains("submit") && script.stdout.contains("allow-missing-inputs"), "\(shell)")
        }
    }
}
