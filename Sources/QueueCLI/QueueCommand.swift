import ArgumentParser
import FarmModel
import FarmStore
import Foundation

/// `mediafarm queue`: the queue itself, as an operator sees it.
public struct QueueCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Create or upgrade the queue, show its figures, prune finished jobs.",
        subcommands: [Migrate.self, Stats.self, Depth.self, Pause.self, Resume.self, Prune.self])

    /// A pause's scope in words: "the farm", "host NAME", "coordinator OWNER".
    static func describe(_ scope: String) -> String {
        if scope == "farm" { return "the farm" }
        if scope.hasPrefix("host:") { return "host " + scope.dropFirst(5) }
        return "coordinator " + scope.dropFirst(12)
    }

    /// Which claimers a pause or a resume is for: the farm, a host, or one coordinator.
    struct PauseScope: ParsableArguments {
        @Option(name: .long, help: "Only the coordinators of this host (as leases name it: the part of an owner before the first colon).")
        var host: String?
        @Option(name: .long, help: "Only this coordinator (its owner name, HOST:PID:RANDOM, as queue stats lists it).")
        var coordinator: String?

        func validate() throws {
            if host != nil && coordinator != nil { throw ValidationError("--host and --coordinator: give one (or neither, for the whole farm)") }
            if let host, host.isEmpty || host.contains(":") { throw ValidationError("--host \(host): a host name, without a colon") }
            if let coordinator, coordinator.split(separator: ":").count < 2 { throw ValidationError("--coordinator \(coordinator): an owner name, HOST:PID:RANDOM") }
        }

        var scope: String { QueuePause.scope(host: host, coordinator: coordinator) }

        /// Opens the queue, does `body` to its pauses and closes it: the answer, and where the queue is.
        func change<T: Sendable>(_ queue: QueueOptions, _ body: @Sendable (QueuePauses) async throws -> T) async throws -> (T, String) {
            let store = try await queue.open()
            let answer: T
            do { answer = try await body(store.pauses) } catch { throw CLIError(String(describing: error)) }
            await store.close()
            return (answer, store.location)
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pause",
            abstract: "Stop coordinators taking new jobs: the whole farm, one host (--host) or one coordinator (--coordinator).",
            discussion: """
            Kept in the queue, so every coordinator that shares it obeys, within a claim: jobs already running go on, \
            nothing new starts until `queue resume`. queue stats, the console and /metrics show pauses.
            """)

        @OptionGroup var queue: QueueOptions
        @OptionGroup var scope: PauseScope
        @Flag(help: "Print the pauses in force as JSON.")
        var json = false

        func run() async throws {
            let (who, scope) = ("mediafarm queue pause (\(ProcessInfo.processInfo.hostName))", self.scope.scope)
            let (pauses, location) = try await self.scope.change(queue) { try await $0.pause(scope, by: who, at: Date()) }
            if json {
                print(String(decoding: try JSONEncoder.sortedPretty().encode(["pauses": pauses]), as: UTF8.self))
            } else {
                print("claiming paused for \(QueueCommand.describe(scope)) on \(location); queue resume\(self.scope.host.map { " --host \($0)" } ?? "")\(self.scope.coordinator.map { " --coordinator \($0)" } ?? "") lifts it")
            }
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "resume",
            abstract: "Lift a pause of `queue pause`: the farm's, a host's (--host) or a coordinator's (--coordinator).",
            discussion: "Coordinators claim again within their idle wait (2 s). Exit status 1 when there was no such pause.")

        @OptionGroup var queue: QueueOptions
        @OptionGroup var scope: PauseScope
        @Flag(help: "Print the pauses still in force as JSON.")
        var json = false

        func run() async throws {
            let scope = self.scope.scope
            let (outcome, location) = try await self.scope.change(queue) { try await $0.resume(scope) }
            if json {
                print(String(decoding: try JSONEncoder.sortedPretty().encode(["pauses": outcome.pauses]), as: UTF8.self))
            } else if outcome.lifted {
                print("claiming resumed for \(QueueCommand.describe(scope)) on \(location)")
            }
            for pause in outcome.pauses where !json {
                print("still paused: \(QueueCommand.describe(pause.scope))")
            }
            guard outcome.lifted else { throw CLIError("\(QueueCommand.describe(scope)) was not paused") }
        }
    }

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
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
            commandName: "stats",
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
            let pauses: [QueuePause]
            do {
                stats = try await store.stats(at: now)
                coordinators = try await store.registry.all()
                pauses = try await store.pauses.all()
            } catch {
                throw CLIError(String(describing: error))
            }
            await store.close()
            let silentAfter = CoordinatorPresence.silentAfter
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
                    var pauses: [QueuePause]
                }
                let counts = Dictionary(uniqueKeysWithValues: stats.shown.map { ($0.key.rawValue, $0.value) })
                let row = Row(queue: store.location, total: stats.total, counts: counts,
                              oldestQueuedSeconds: oldestWait.map { ($0 * 1000).rounded() / 1000 },
                              runningByHost: stats.runningByHost, dead: stats.dead,
                              // As GET /api/coordinators shows them.
                              coordinators: coordinators.map { CoordinatorView($0, now: now, silentAfter: silentAfter, this: false, pauses: pauses) },
                              pauses: pauses)
                print(String(decoding: try JSONEncoder.sortedPretty().encode(row), as: UTF8.self))
                return
            }
            print("queue \(store.location): \(stats.total) jobs")
            let shown = stats.shown
            for state in ShownState.allCases {
                print("  " + state.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0) + String(shown[state] ?? 0))
            }
            print("oldest due job waiting: " + (oldestWait.map { String(format: "%.1f s", $0) } ?? "none"))
            if stats.runningByHost.isEmpty {
                print("running: none")
            } else {
                print("running by host: " + stats.runningByHost.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            for pause in pauses {
                print("claiming paused for \(QueueCommand.describe(pause.scope)) since \(ISO8601DateFormatter().string(from: pause.since))"
                      + (pause.by.map { " (by \($0))" } ?? ""))
            }
            print(coordinators.isEmpty ? "coordinators: none" : "coordinators:")
            for c in coordinators {
                let since = c.secondsSinceReport(at: now)
                let paused = pauses.contains { $0.stops(owner: c.owner) } ? ", paused" : ""
                let state = (since > silentAfter ? ", silent" : c.draining ? ", draining" : "") + paused
                print("  \(c.owner): \(c.busy) of \(c.slots) slots busy\(state), last report \(String(format: "%.0f", since)) s ago")
            }
        }
    }

    struct Depth: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "depth",
            abstract: "The coordinators of one kind the queue asks for: the figure an autoscaler reads, with its parts.",
            discussion: """
                A kind is the coordinators of one host name (--host: pods that share their volumes share one) \
                that provide the same tags (--provides), each with --slots workers. The figure is queued + \
                running: the due queued jobs they could claim (by the claim's own rule; none while the farm or \
                the host is paused) and the jobs running on them. An autoscaler whose target is --slots jobs a \
                coordinator asks for jobs / slots, rounded up. On a PostgreSQL queue, the KEDA query printed \
                reads the same figure (docs/operations.md, Kubernetes).
                """)

        @OptionGroup var queue: QueueOptions
        @Option(name: .customLong("provides"), help: ArgumentHelp("A tag the kind's coordinators provide (repeatable, as coordinator --provides).", valueName: "tag"))
        var provides: [String] = []
        @Option(help: ArgumentHelp("The kind's host name, as its coordinators' --host or MEDIAFARM_HOST (default: $MEDIAFARM_HOST, else this machine's host name).",
                                   valueName: "name"))
        var host: String?
        @Option(parsing: .unconditional, help: "Worker slots of each coordinator of the kind, as its --workers \(UserNumbers.workers.inHelp).",
                transform: UserNumbers.workers.option)
        var slots: Int = 2
        @Flag(help: "Print the figure and its parts as JSON.")
        var json = false

        func validate() throws {
            for tag in provides { if let problem = HostCapability.problem(tag) { throw ValidationError("--provides: \(problem)") } }
            if let host, host.isEmpty || host.contains(":") { throw ValidationError("--host \(host): a host name, without a colon") }
        }

        func run() async throws {
            let location = try queue.location()
            let host = LibraryOptions.hostName(self.host)
            guard !host.isEmpty, !host.contains(":") else {
                throw CLIError("host \(host) (from MEDIAFARM_HOST or this machine): a host name, without a colon; give --host", status: ExitStatus.usage)
            }
            let store = try await queue.open()
            let figure: ScalingDemand
            do { figure = try await store.scaling.demand(provides: provides, host: host, slots: slots) } catch {
                await store.close()
                throw CLIError(String(describing: error))
            }
            await store.close()
            let query: String? = if case .postgres(let server) = location {
                ScalingDemand.query(schema: server.schema, provides: provides, host: host)
            } else { nil }
            if json {
                struct Row: Encodable { var queue: String, scaling: ScalingDemand, kedaQuery: String? }
                print(String(decoding: try JSONEncoder.sortedPretty().encode(Row(queue: store.location, scaling: figure, kedaQuery: query)), as: UTF8.self))
                return
            }
            let kind = figure.provides.isEmpty ? "providing nothing more" : "providing " + figure.provides.joined(separator: ", ")
            print("queue \(store.location): coordinators of host \(host), \(kind), \(Spoken.count(slots, "slot")) each")
            print("  queued   \(figure.queued)" + (figure.paused ? " (claiming paused)" : " (due, claimable by them)"))
            print("  running  \(figure.running)")
            print("  jobs     \(figure.jobs): \(Spoken.count(figure.coordinators, "coordinator")) asked for (\(figure.jobs) / \(slots), rounded up)")
            if let query { print("KEDA query (targetQueryValue \"\(slots)\"): \(query)") }
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune",
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
