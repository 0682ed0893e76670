import ArgumentParser
import FarmModel
import FarmRuntime
import FarmStore
import FarmTestSupport
import Foundation
@testable import MediaFarmCLI
@testable import QueueCLI
import Synchronization

/// What a coordinator run with --json printed: in a log file (the process) or kept (in this process).
protocol CoordinatorPrintout {
    var log: String { get }
}

extension CoordinatorPrintout {
    /// The events it printed, one JSON object a line.
    func events() -> [[String: Any]] {
        log.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }  // not JSON: not an event
    }
}

extension Farm.Coordinator: CoordinatorPrintout {}

/// The farm's commands run in the test's own process from the options a user gives them: `submit` and
/// `coordinator` built as the command line builds them (`SubmitCommand.enqueue`,
/// `CoordinatorCommand.run(printer:)`), the jobs read as `status --json` shows them (`JobView`). For the
/// tests of what the farm does; what the process does (signals, exits, a coordinator killed) runs the
/// binary (`mediafarm`, `startCoordinator`). The coordinator's workers are the binary's processes.
extension Farm {
    /// `submit ARGS` in this process: the ids it queued.
    func queued(_ args: [String]) async throws -> [Int64] {
        try await Self.closingQueues {
            try await SubmitCommand.parse(["--queue", queue] + args).enqueue().queued.jobs.map(\.id)
        }
    }

    /// Every job of the queue, chunks too, by id: as `status --json --all --chunks` prints them.
    func jobs() async throws -> [Int64: [String: Any]] {
        let text = try await Self.closingQueues {
            let store = try await QueueOptions.parse(["--queue", queue]).open()
            var query = JobQuery(ids: nil, states: nil, limit: nil, newest: false, before: nil)
            query.topLevel = false
            let jobs = try await StatusCommand.fetch(store, query)
            return String(decoding: try JSONEncoder.sortedPretty().encode(jobs.map { JobView($0, now: Date()) }), as: UTF8.self)
        }
        let rows = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: rows.map { (($0["id"] as? NSNumber)?.int64Value ?? -1, $0) })
    }

    func jobState(_ id: Int64) async throws -> String? { try await jobs()[id]?["state"] as? String }

    /// What `coordinator --json ARGS` did in this process: the status it would have exited with, and what
    /// it printed.
    struct Coordinated: CoordinatorPrintout {
        let status: Int32
        let log: String
    }

    /// `coordinator --json ARGS` in this process until it ends (give `--exit-when-idle`), its workers the
    /// binary's; one that has not ended after `seconds` is cancelled and the test fails with what it printed.
    func coordinate(_ args: [String], within seconds: Double = 600) async throws -> Coordinated {
        let arguments = ["--json", "--queue", queue, "--worker-command", TestPaths.mediafarmExecutable + " worker"] + args
        _ = try CoordinatorCommand.parse(arguments)   // options refused here, before anything runs
        let printed = Printed()
        let printer = CoordinatorPrinter(json: true, write: { printed.add($0) })
        let status: Int32 = try await Self.closingQueues {
            try await withThrowingTaskGroup(of: Int32?.self) { group in
                group.addTask {
                    do {
                        try await CoordinatorCommand.parse(arguments).run(printer: printer, stopSignals: false)
                        return 0
                    } catch let exit as ExitCode {
                        return exit.rawValue
                    } catch let error as CLIError {
                        printed.add("error: \(error.description)\n")
                        return error.status
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(seconds))
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                guard let first else {
                    throw FixtureError("the coordinator did not end within \(Int(seconds)) s: \(printed.text.suffix(3000))")
                }
                return first
            }
        }
        return Coordinated(status: status, log: printed.text)
    }

    /// What a printer wrote.
    private final class Printed: Sendable {
        private let state = Mutex("")
        func add(_ text: String) { state.withLock { $0 += text } }
        var text: String { state.withLock { $0 } }
    }

    /// `body` with the queues it opens closed after it, as a command's are when it ends.
    private static func closingQueues<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await OpenedStores.closing { () async -> Result<T, any Error> in
            do { return .success(try await body()) } catch { return .failure(error) }
        }.get()
    }
}
