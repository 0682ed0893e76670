import ArgumentParser
import FarmLibrary
import FarmLibraryMedia
import Foundation
import QueueCLI

/// `mediafarm library` in the media program: the queue program's library commands, and the two that
/// inspect files new to the library (`add`, `verify`).
struct MediaLibraryCommand: AsyncParsableCommand {
    static let configuration = LibraryCommand.commandConfiguration(subcommands: [LibraryAdd.self] + LibraryCommand.reading + [LibraryVerify.self])
}

struct LibraryAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Register media files (folders are walked) and print their asset ids.",
        discussion: """
        Each file is hashed (unless this host registered the same path with the same size, modification time \
        and inode), and inspected when its content is new to the library. A file that is not media is \
        refused with the reason and the others are still added (exit 1 when any was refused).
        """)

    @OptionGroup var context: LibraryContext

    @Option(help: "Also put the files in this album (made when it does not exist).")
    var album: String?

    @Flag(help: "Print the outcome of every file as JSON.")
    var json = false

    @Argument(help: "Media files or folders.")
    var paths: [String]

    func run() async throws {
        let library = try await context.open(create: true, inspector: .media)
        let json = json
        let outcomes = try await LibraryOptions.run {
            try await library.add(paths, album: album) { outcome in
                guard !json else { return }
                print(Self.line(outcome))
            }
        }
        var counts: [String: Int] = [:]
        for outcome in outcomes { counts[outcome.status.rawValue, default: 0] += 1 }
        if json {
            try printJSON(AddSummary(files: outcomes, counts: counts))
        } else {
            let summary = AddOutcome.Status.allCases.compactMap { s in counts[s.rawValue].map { "\($0) \(s.rawValue)" } }
            FileHandle.standardError.write(Data("library: \(summary.isEmpty ? "nothing to add" : summary.joined(separator: ", "))\n".utf8))
        }
        if counts["refused"] != nil { throw ExitCode(ExitStatus.failure) }
    }

    static func line(_ o: AddOutcome) -> String {
        switch o.status {
        case .refused: "refused    \(o.path): \(o.reason ?? "")"
        case .changed: "\(o.id?.rawValue ?? "")  changed    \(o.path) (it held \(o.previous?.rawValue ?? "other content") before)"
        default: "\(o.id?.rawValue ?? "")  \(o.status.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0))  \(o.path)"
        }
    }

    struct AddSummary: Encodable {
        var files: [AddOutcome]
        var counts: [String: Int]
    }
}

struct LibraryVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every file this host registered: report missing and changed files (exit 1 when any).",
        discussion: "A file whose size, modification time or inode changed is hashed again: same content, its record is updated; other content, it becomes a new asset and the old one is missing here.")

    @OptionGroup var context: LibraryContext

    @Flag(help: "Print the report as JSON.")
    var json = false

    func run() async throws {
        let library = try await context.open(inspector: .media)
        let report = try await LibraryOptions.run { try await library.verify() }
        if json {
            try printJSON(report)
        } else {
            for item in report.missing { print("missing  \(item.id)  \(item.path): \(item.reason)") }
            for item in report.changed { print("changed  \(item.id)  \(item.path): \(item.reason)") }
            print("verify on \(report.host): \(report.checked) files checked, \(report.missing.count) missing, \(report.changed.count) changed"
                  + (report.restamped > 0 ? ", \(report.restamped) touched but unchanged" : ""))
        }
        if !report.clean { throw ExitCode(ExitStatus.failure) }
    }
}

extension AddOutcome.Status: CaseIterable {
    public static var allCases: [AddOutcome.Status] { [.added, .located, .unchanged, .changed, .refused] }
}
