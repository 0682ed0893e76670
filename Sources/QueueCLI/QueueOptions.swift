import ArgumentParser
import FarmModel
import FarmStore
import Foundation
import SafeFiles
import Synchronization

/// `--queue URL`, else `MEDIAFARM_QUEUE`, else `mediafarm-queue.sqlite` in the current folder.
public struct QueueOptions: ParsableArguments {
    public init() {}

    public static let defaultFile = "mediafarm-queue.sqlite"

    @Option(name: .long, help: ArgumentHelp("""
        The queue: sqlite:PATH (or a file path), or postgres://USER@HOST[:PORT]/DATABASE (password from \
        PGPASSWORD or the URL) (default: $MEDIAFARM_QUEUE, else ./\(defaultFile)).
        """, valueName: "url"))
    public var queue: String?

    /// Before any command runs: the queue's files are protected from the first manifest checked on. A
    /// malformed URL is reported by the command itself, with the usage status (`location()` throws it).
    public func validate() throws {
        _ = try? location()  // the command reports a malformed URL itself
    }

    /// Where the queue is; a malformed URL is a usage error.
    public func location() throws -> QueueLocation {
        let url = queue ?? ProcessInfo.processInfo.environment["MEDIAFARM_QUEUE"] ?? Self.defaultFile
        do {
            let location = try QueueLocation.parse(url)
            // Outputs this process validates or publishes never replace the queue.
            if case .sqlite(let path) = location { ProtectedFiles.shared.protectDatabase(path, role: "the queue's database") }
            return location
        } catch {
            throw CLIError(error.description, status: ExitStatus.usage)
        }
    }

    /// Opens the queue; `create` makes a new SQLite queue where none exists (submit and the coordinator
    /// do, the others do not). A PostgreSQL queue must have been made with `mediafarm queue migrate`.
    public func open(create: Bool = false, migrate: Bool = false, connections: Int = 1, listen: Bool = false) async throws -> any JobStore {
        let location = try location()
        do {
            let store = try await JobStores.open(location, create: create, migrate: migrate, connections: connections, listen: listen)
            OpenedStores.current?.add(store)
            return store
        } catch {
            // An SQLite file that is not there or not a queue is a usage error, as it always was; a server
            // that does not answer is a failure.
            let status: Int32 = switch (location, error) {
            case (_, .invalidLocation), (.sqlite, _): ExitStatus.usage
            default: ExitStatus.failure
            }
            throw CLIError(error.description, status: status)
        }
    }
}

/// An error printed as is, with the exit status it calls for.
public struct CLIError: Error, CustomStringConvertible {
    public let description: String
    public let status: Int32

    public init(_ description: String, status: Int32 = ExitStatus.failure) {
        self.description = description
        self.status = status
    }
}

/// Job ids on the command line.
public struct JobIDs: ParsableArguments {
    public init() {}

    @Argument(help: "Job ids (as `submit` and `status` print them) \(UserNumbers.jobID.inHelp).", transform: UserNumbers.jobID.option)
    public var ids: [Int64] = []
}

/// "1 file", "2 files": a count with its noun (`plural` when adding "s" is wrong).
public func counted(_ n: Int, _ noun: String, plural: String? = nil) -> String {
    "\(n) \(n == 1 ? noun : plural ?? noun + "s")"
}

/// Where outputs may go: `--output-root` folders and object prefixes (`s3://BUCKET/PREFIX`), else
/// MEDIAFARM_OUTPUT_ROOTS (colon-separated), else nil
/// (each manifest's own folder). Made absolute against the current folder.
public enum OutputRoots {
    public static func chosen(_ flags: [String]) -> [String]? {
        let roots = flags.isEmpty
            ? ProcessInfo.processInfo.environment["MEDIAFARM_OUTPUT_ROOTS"].map { PathRules.splitList($0) }
            : flags
        let cwd = FileManager.default.currentDirectoryPath
        return roots?.map { PathRules.resolve($0, against: cwd) }
    }
}

/// The queues a command opened, closed as it ends (`CommandRunner.run`): an SQLite queue is checkpointed and
/// its write-ahead log emptied by the last connection to close, which must happen before the process exits,
/// not whenever the last reference to the store goes. One list per command run (a task-local value), so
/// that commands run in one process at once close only their own queues.
final class OpenedStores: Sendable {
    @TaskLocal static var current: OpenedStores?
    private let stores = Mutex<[any JobStore]>([])

    func add(_ store: any JobStore) { stores.withLock { $0.append(store) } }

    /// Runs `body` with a list of its own for the queues it opens, and closes them after.
    static func closing<T: Sendable>(_ body: () async -> T) async -> T {
        let opened = OpenedStores()
        let value = await $current.withValue(opened) { await body() }
        for store in opened.stores.withLock({ $0 }) { await store.close() }
        return value
    }
}
