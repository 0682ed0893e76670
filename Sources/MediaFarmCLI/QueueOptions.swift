import ArgumentParser
import FarmStore
import Foundation

/// `--queue URL`, else `MEDIAFARM_QUEUE`, else `mediafarm-queue.sqlite` in the current folder.
struct QueueOptions: ParsableArguments {
    static let defaultFile = "mediafarm-queue.sqlite"

    @Option(name: .long, help: ArgumentHelp("The queue: sqlite:PATH or a file path (default: $MEDIAFARM_QUEUE, else ./\(defaultFile)).",
                                            valueName: "url"))
    var queue: String?

    /// The SQLite file the queue URL names.
    func path() throws -> String {
        let url = queue ?? ProcessInfo.processInfo.environment["MEDIAFARM_QUEUE"] ?? Self.defaultFile
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            throw ValidationError("\(url): PostgreSQL queues are not supported yet; use sqlite:PATH")
        }
        var path = url
        for prefix in ["sqlite://", "sqlite:", "file://", "file:"] where path.hasPrefix(prefix) {
            path = String(path.dropFirst(prefix.count))
            break
        }
        guard !path.isEmpty else { throw ValidationError("\(url): the queue URL names no file") }
        return path
    }

    /// Opens the queue; `create` makes a new one where none exists (submit does, the others do not).
    func open(create: Bool = false) throws -> SQLiteJobStore {
        let path = try path()
        do {
            return try SQLiteJobStore(path: path, create: create)
        } catch {
            throw CLIError(error.description, status: ExitStatus.usage)
        }
    }
}

/// An error printed as is, with the exit status it calls for.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    let status: Int32

    init(_ description: String, status: Int32 = ExitStatus.failure) {
        self.description = description
        self.status = status
    }
}

/// Job ids on the command line.
struct JobIDs: ParsableArguments {
    @Argument(help: "Job ids (as `submit` and `status` print them).")
    var ids: [Int64] = []
}
