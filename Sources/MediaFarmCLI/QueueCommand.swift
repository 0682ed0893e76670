import ArgumentParser
import FarmModel
import FarmRuntime
import FarmStore
import Foundation

/// `mediafarm queue`: the queue itself, as an operator sees it.
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Create or upgrade the queue, show its figures, prune finished jobs.",
        subcommands: [Migrate.self, Stats.self, Prune.self])

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the queue's schema, or upgrade it to this program's version (idempotent).",
            discussion: """
            For a PostgreSQL queue, run it once before the first submission and after each upgrade of MediaFarm; \
            the other commands refuse a missing or older schema. An SQLite queue is created or upgraded by \
            whichever command opens it first; this command does it explicitly.
            """)

        @OptionGroup var queue: QueueOptions
        @Flag(help: "Print the result as JSON.")
        var json = false

        func run() async throws {
            let store = try await queue.open(create: true, migrate: true)
            await store.close()
            let change = store.schemaChange
            if json {
                struct Migrated: Encodable { var queue: String, schema: String, versionBefore: Int, version: Int }
                let outcome = change.from == change.to ? "current" : change.from == 0 ? "created" : "upgraded"
                let row = Migrated(queue: store.location, schema: outcome, versionBefore: change.from, version: change.to)
                print(String(decoding: try JSONEncoder.sortedPretty().encode(row), as: UTF8.self))
            } else {
                print("\(store.location): \(change.description)")
            }
        }
    }

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Jobs by state, the oldest due job's wait, running jobs per host, dead jobs, and the coordinators.",
            discussion: """
                Coordinators report their worker slots every 5 seconds and leave the list when they stop; one \
                not heard from for 15 seconds is shown as silent (it died or lost the queue), and is forgotten \
                after a day.
                """)

        @OptionGroup var queue: QueueOptions
        @Flag(help: "Print the figures as JSON.")
        var json = false

        func run() async throws {
            let store = try await queue.open()
            let now = Date()
            let stats: QueueStats
            let coordinators: [CoordinatorPresence]
            do {
                stats = try await store.stats(at: now)
                coordinators = try await CoordinatorRegistry(try store.database).all()
            } catch {
                throw CLIError(String(describing: error))
            }
            await store.close()
            let silentAfter = CoordinatorConfiguration().silentAfter
            let oldestWait = stats.oldestDueAt.map { max(0, now.timeIntervalSince($0)) }
            if json {
                struct Row: Encodable {
                    var queue: String
                    var total: Int
                    var counts: [String: Int]
                    var oldestQueuedSeconds: Double?
                    var runningByHost: [String: Int]
                    var dead: Int
                    var coordinators: [CoordinatorView]
                }
                let counts = Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0.rawValue, stats.counts[$0.rawValue] ?? 0) })
                let row = Row(queue: store.location, total: stats.total, counts: counts,
                              oldestQueuedSeconds: oldestWait.map { ($0 * 1000).rounded() / 1000 },
                              runningByHost: stats.runningByHost, dead: stats.dead,
                              // As GET /api/coordinators shows them.
                              coordinators: coordinators.map { CoordinatorView($0, now: now, silentAfter: silentAfter, this: false) })
                print(String(decoding: try JSONEncoder.sortedPretty().encode(row), as: UTF8.self))
                return
            }
            print("queue \(store.location): \(stats.total) jobs")
            for state in JobState.allCases {
                print("  " + state.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0) + String(stats.counts[state.rawValue] ?? 0))
            }
            print("oldest due job waiting: " + (oldestWait.map { String(format: "%.1f s", $0) } ?? "none"))
            if stats.runningByHost.isEmpty {
                print("running: none")
            } else {
                print("running by host: " + stats.runningByHost.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            print(coordinators.isEmpty ? "coordinators: none" : "coordinators:")
            for c in coordinators {
                let since = c.secondsSinceReport(at: now)
                let state = since > silentAfter ? ", silent" : c.draining ? ", draining" : ""
                print("  \(c.owner): \(c.busy) of \(c.slots) slots busy\(state), last report \(String(format: "%.0f", since)) s ago")
            }
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete jobs that finished (succeeded, failed, cancelled, dead) more than --older-than days ago.",
            discussion: "A coordinator also prunes on its own (see its --keep-finished).")

        @OptionGroup var queue: QueueOptions
        @Option(name: .customLong("older-than"), parsing: .unconditional, help: "Days since the job finished \(UserNumbers.keepDays.inHelp).", transform: UserNumbers.keepDays.option)
        var olderThan: Double
        @Flag(help: "Print the result as JSON.")
        var json = false

        func validate() throws {
            guard olderThan >= 0 else { throw ValidationError("--older-than must not be negative") }
        }

        func run() async throws {
            let store = try await queue.open()
            let cutoff = Date().addingTimeInterval(-olderThan * 86400)
            var deleted = 0
            do {
                while true {
                    let n = try await store.prune(finishedBefore: cutoff, limit: 5000)
                    deleted += n
                    if n < 5000 { break }
                }
            } catch {
                throw CLIError("\(error) (\(deleted) jobs deleted before it)")
            }
            await store.close()
            if json {
                print(String(decoding: try JSONEncoder.sortedPretty().encode(["deleted": deleted]), as: UTF8.self))
            } else {
                print("deleted \(deleted) finished jobs older than \(olderThan) days from \(store.location)")
            }
        }
    }
}
