import ArgumentParser
import FarmModel
import FarmStore
import Foundation
import QualityModel
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm status`: the job table, or JSON.
public struct StatusCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show jobs: a table with a progress bar per running job, or --json.",
        discussion: """
            Without job ids, the newest 100 jobs (a line says how many more match: --limit N or --all for them), chunk \
            jobs folded under their export (--chunks shows them). --watch redraws until the jobs shown have all ended.
            """)

    @OptionGroup var queue: QueueOptions

    @Flag(help: "Print an array of jobs as JSON.")
    var json = false

    @Flag(help: "Redraw every half second until every job shown has ended.")
    var watch = false

    @Option(help: "Only jobs in this state (repeatable): \(ShownState.names) (delayed: queued, not due yet; queued: due now).")
    var state: [String] = []

    @OptionGroup var jobIDs: JobIDs

    public func validate() throws {
        for s in state where ShownState(rawValue: s) == nil {
            throw ValidationError("--state \(s): one of \(ShownState.names)")
        }
        if all && limit != nil { throw ValidationError("--all and --limit: give one") }
        if all && after != nil { throw ValidationError("--all and --after: --after pages through the newest first; --all shows every job") }
        // Delayed is the one state whose jobs' due time lies ahead: with others it cannot be one query.
        let asked = Set(state.compactMap(ShownState.init(rawValue:)))
        if asked.contains(.delayed) && !asked.contains(.queued) && asked.count > 1 {
            throw ValidationError("--state delayed goes alone, or with --state queued (the jobs of the other states are due already)")
        }
    }

    @Option(parsing: .unconditional, help: "Only the newest N jobs (after the other filters) \(UserNumbers.limit.inHelp); default 100.",
            transform: UserNumbers.limit.option)
    var limit: Int?

    @Flag(help: "Every job that matches, not only the newest 100 (--json streams them, oldest first).")
    var all = false

    @Option(parsing: .unconditional, help: "The next page: the jobs older than job ID (the last one shown), newest first, as the API's after \(UserNumbers.jobID.inHelp).",
            transform: UserNumbers.jobID.option)
    var after: Int64?

    @Flag(help: "Show the chunk jobs of chunked exports too (folded under their export by default).")
    var chunks = false

    @Option(help: "Only jobs whose quality checks gave this verdict: passed, warnings or failed.")
    var verdict: CheckVerdict?

    static let defaultLimit = 100

    public func run() async throws {
        let store = try await queue.open()
        let asked = Set(state.compactMap(ShownState.init(rawValue:)))
        let states = asked.isEmpty ? nil : Array(Set(asked.map(\.stored))).sorted { $0.rawValue < $1.rawValue }
        let named = !jobIDs.ids.isEmpty
        let shown = limit ?? (named || all ? nil : Self.defaultLimit)
        var query = JobQuery(ids: named ? jobIDs.ids : nil, states: states, limit: shown, newest: shown != nil, before: after)
        // Queued and delayed share the stored state: one of them alone is the due time's side.
        let now = Date()
        // Every job of another state is due already: queued with them is their side of the due time too.
        if asked == [.delayed] { query.runAfter = now } else if asked.contains(.queued) && !asked.contains(.delayed) { query.runBy = now }
        query.topLevel = !chunks && !named
        query.verdict = verdict
        if json && all && !watch {
            try await Self.stream(store, query)
            return
        }
        var jobs = try await Self.fetch(store, query)
        if watch {
            jobs = try await Self.watch(store: store, ids: jobs.map(\.id), draw: !json)
        }
        if json {
            print(String(decoding: try JSONEncoder.sortedPretty().encode(jobs.map { JobView($0, now: Date()) }), as: UTF8.self))
        } else if !watch {
            let pauses = (try? await store.pauses.all()) ?? []  // none known: none named
            print(Self.table(jobs, pauses: pauses), terminator: "")
        }
        if let shown, jobs.count == shown, !watch {
            var rest = query
            (rest.limit, rest.newest) = (nil, false)
            let more = (try? await store.count(matching: rest)).map { $0 - jobs.count } ?? 0  // unknown: no line (the jobs are shown)
            if more > 0 {
                let next = jobs.first.map { " (--after \($0.id): the next page)" } ?? ""
                let line = "\(more) more job\(more == 1 ? "" : "s") match (the newest \(shown) shown): --limit N or --all shows more\(next)\n"
                if json { FileHandle.standardError.write(Data(line.utf8)) } else { print(line, terminator: "") }
            }
        }
        if !jobIDs.ids.isEmpty, state.isEmpty, limit == nil, jobs.count < jobIDs.ids.count {
            let missing = Set(jobIDs.ids).subtracting(jobs.map(\.id)).sorted()
            throw CLIError("no job \(missing.map(String.init).joined(separator: ", ")) in \(store.location)")
        }
    }

    /// Every job of `query` as one JSON array, oldest first, a thousand at a time: a queue of any size in
    /// little memory.
    static func stream(_ store: any JobStore, _ query: JobQuery) async throws {
        let encoder = JSONEncoder.sortedPretty()
        var page = query
        (page.limit, page.newest) = (1000, false)
        var first = true
        FileHandle.standardOutput.write(Data("[".utf8))
        while true {
            let jobs = try await fetch(store, page)
            for job in jobs {
                let text = String(decoding: try encoder.encode(JobView(job, now: Date())), as: UTF8.self)
                FileHandle.standardOutput.write(Data(((first ? "\n" : ",\n") + text.split(separator: "\n", omittingEmptySubsequences: false)
                    .map { "  " + $0 }.joined(separator: "\n")).utf8))
                first = false
            }
            guard jobs.count == 1000, let last = jobs.last else { break }
            page.afterID = last.id
        }
        FileHandle.standardOutput.write(Data((first ? "]\n" : "\n]\n").utf8))
    }

    static func fetch(_ store: any JobStore, _ query: JobQuery) async throws -> [Job] {
        do { return try await store.jobs(matching: query) } catch { throw CLIError(error.description) }
    }

    /// Polls until every job in `ids` has ended, redrawing the table on a terminal; returns the jobs.
    static func watch(store: any JobStore, ids: [Int64], draw: Bool) async throws -> [Job] {
        let terminal = draw && isatty(STDOUT_FILENO) == 1
        var lines = 0
        while true {
            let jobs = try await fetch(store, JobQuery(ids: ids))
            let text = table(jobs)
            if terminal {
                if lines > 0 { FileHandle.standardOutput.write(Data("\u{1B}[\(lines)A\u{1B}[J".utf8)) }
                FileHandle.standardOutput.write(Data(text.utf8))
                lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
            }
            if jobs.allSatisfy(\.state.isTerminal) {
                if draw && !terminal { print(text, terminator: "") }
                return jobs
            }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    /// "job 3", "jobs 3, 4 and 7", "jobs 3, 4, 5 and 97 more".
    static func jobList(_ ids: [Int64]) -> String {
        let shown = ids.prefix(ids.count > 5 ? 3 : 5).map(String.init)
        let more = ids.count - shown.count
        if ids.count == 1 { return "job \(ids[0])" }
        if more > 0 { return "jobs " + shown.joined(separator: ", ") + " and \(more) more" }
        return "jobs " + shown.dropLast().joined(separator: ", ") + " and " + shown.last!
    }

    /// What holds queued jobs back, when claiming is paused: the farm's pause (nothing starts), or the
    /// hosts' and coordinators' (those take nothing); nil when nothing is paused.
    static func pauseNote(_ pauses: [QueuePause]) -> String? {
        if let farm = pauses.first(where: { $0.scope == "farm" }) {
            return "the farm is paused" + (farm.by.map { " by \($0)" } ?? "") + ": nothing starts until `mediafarm queue resume`"
        }
        guard !pauses.isEmpty else { return nil }
        return "paused: " + pauses.map { $0.scope.replacingOccurrences(of: ":", with: " ") }.joined(separator: ", ") + " (queue stats; queue resume lifts them)"
    }

    /// One line per job: id, name, state, attempts, progress bar or outcome.
    static func table(_ jobs: [Job], pauses: [QueuePause] = []) -> String {
        guard !jobs.isEmpty else { return "no jobs\n" }
        let nameWidth = min(28, max(4, jobs.map { UserText.printable($0.name).count }.max() ?? 4))
        let idWidth = max(4, jobs.map { String($0.id).count }.max() ?? 4) + 2
        let attemptsWidth = max(8, jobs.map(\.attemptsSummary.count).max() ?? 8) + 2
        func pad(_ s: String, _ w: Int) -> String { s.count >= w ? String(s.prefix(w)) : s + String(repeating: " ", count: w - s.count) }
        // A longer name is cut with an ellipsis: the columns stay apart.
        func name(_ s: String) -> String { s.count > nameWidth ? String(s.prefix(nameWidth - 1)) + "…" : s }
        var out = pad("ID", idWidth) + pad("NAME", nameWidth + 2) + pad("STATE", 11) + pad("ATTEMPTS", attemptsWidth) + "PROGRESS / RESULT\n"
        for job in jobs {
            var detail: String
            switch job.state {
            case .running where job.phase == Job.claimedAheadPhase:
                detail = Job.claimedAheadPhase + (job.lease.map { " on " + Job.host(ofOwner: $0.owner) } ?? "")
            case .running:
                let fraction = job.progress ?? 0
                let filled = Int(fraction * 20)
                detail = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: 20 - filled) + "] "
                    + String(format: "%3.0f%% ", fraction * 100) + (job.phase ?? "")
                if let lease = job.lease {
                    detail += " (" + Job.host(ofOwner: lease.owner) + (job.workerPID.map { ", pid \($0)" } ?? "") + ")"
                }
            case .waiting where job.chunkPlan != nil:
                detail = (job.phase ?? "encoding chunks") + " (\(job.chunkPlan?.chunks.count ?? 0) chunk jobs: status --chunks)"
            case .waiting:
                detail = "waits for " + StatusCommand.jobList(job.after) + " (\(job.waitingFor) not ended; they must \(job.afterPolicy.waitsTo))"
            case .queued:
                let wait = job.runAt.timeIntervalSinceNow
                detail = wait > 0.5 ? "due in " + Spoken.duration(wait)
                    : job.requires.isEmpty ? "waiting for a worker" : "waiting for a host that provides " + job.requires.joined(separator: ", ")
                if let held = Self.pauseNote(pauses) { detail += "; " + held }
                if let last = job.errors.last { detail += "; last error: \(last.message)" }
            case .succeeded:
                // a result this version cannot read shows as none
                let result = job.result.flatMap { try? JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }
                // The attempt's time as the queue recorded it (claimed to ended), as the coordinator's log says it.
                let took = job.startedAt.flatMap { start in job.finishedAt.map { $0.timeIntervalSince(start) } } ?? result?.seconds ?? 0
                detail = String(format: "%.1f s", took)
                if let output = result?.output { detail += " -> \(output)" } else if let report = result?.report { detail += " -> \(report)" }
                if let plan = job.chunkPlan { detail += " (\(plan.chunks.count) chunks joined; their files removed)" }
            case .failed, .dead:
                detail = job.errors.last?.message ?? "failed"
            case .cancelled:
                detail = "cancelled"
            }
            out += pad(String(job.id), idWidth) + pad(name(UserText.printable(job.name)), nameWidth + 2) + pad(ShownState(job, at: Date()).rawValue, 11)
                + pad(job.attemptsSummary, attemptsWidth) + UserText.printable(detail) + "\n"
        }
        return out
    }
}

/// `mediafarm cancel`.
public struct CancelCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel queued or running jobs (a running worker is stopped at once: its coordinator looks every 0.25 s; its temporary files are removed).")

    @OptionGroup var queue: QueueOptions
    @Flag(help: "Print the jobs as JSON (as status --json does).")
    var json = false
    @OptionGroup var jobIDs: JobIDs

    public func validate() throws {
        guard !jobIDs.ids.isEmpty else {
            throw ValidationError("name the jobs to cancel, e.g. `mediafarm cancel 12 13` (ids as submit and status print them)")
        }
    }

    public func run() async throws {
        let store = try await queue.open()
        try await JobControl.apply(jobIDs.ids, verb: "cancelled", json: json, store: store) { (id: Int64) async throws(JobStoreError) -> Job in
            try await store.cancel(id: id, at: Date())
        }
    }
}

/// `mediafarm retry`.
public struct RetryCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Queue failed, dead or cancelled jobs again, with a fresh set of attempts.")

    @OptionGroup var queue: QueueOptions
    @Flag(help: "Print the jobs as JSON (as status --json does).")
    var json = false
    @OptionGroup var jobIDs: JobIDs

    public func validate() throws {
        guard !jobIDs.ids.isEmpty else {
            throw ValidationError("name the jobs to retry, e.g. `mediafarm retry 12 13` (ids as submit and status print them)")
        }
    }

    public func run() async throws {
        let store = try await queue.open()
        try await JobControl.apply(jobIDs.ids, verb: "queued again", json: json, store: store) { (id: Int64) async throws(JobStoreError) -> Job in
            try await store.retry(id: id, at: Date(), by: JobControl.commandLineCaller)
        }
    }
}

enum JobControl {
    /// Who a command-line retry is said to be by: "mediafarm retry, USER on HOST".
    static var commandLineCaller: String {
        let user = getpwuid(geteuid()).flatMap { String(validatingCString: $0.pointee.pw_name) } ?? "uid \(geteuid())"
        return "mediafarm retry, \(user) on \(ProcessInfo.processInfo.hostName)"
    }

    /// What a cancel or retry did to the jobs that wait for `job` (at most 20 said).
    static func dependents(of job: Job, store: any JobStore) async throws -> [String] {
        var query = JobQuery(limit: 21)
        if job.state.isTerminal {
            (query.states, query.blockedBy) = ([.failed], job.id)
        } else {
            (query.states, query.dependsOn) = ([.waiting], job.id)
        }
        let found = try await store.jobs(matching: query)
        var lines = found.prefix(20).map { other in
            job.state.isTerminal ? "job \(other.id) (\(UserText.printable(other.name))) failed: it needed job \(job.id) to succeed"
                : "job \(other.id) (\(UserText.printable(other.name))) waits for it again"
        }
        if found.count > 20 { lines.append("and more (mediafarm status --state \(job.state.isTerminal ? "failed" : "waiting"))") }
        return lines
    }

    /// A refusal with the way out, where there is one.
    static func refusal(_ error: JobStoreError) -> String {
        switch error {
        case .transition(let id, .illegal(.retry, from: let state)) where state == .succeeded:
            "job \(id) succeeded: there is nothing to retry; to run it again, submit its manifest again (or Resubmit on its page in the console)"
        case .transition(let id, .illegal(.retry, from: let state)):
            "job \(id) is \(state.rawValue), not ended: only failed, dead or cancelled jobs are retried (cancel it first to start it over)"
        case .transition(let id, .illegal(.cancel, from: let state)):
            "job \(id) already ended (\(state.rawValue)): there is nothing to cancel"
        default:
            error.description
        }
    }

    /// Applies `change` to each job; reports each, and what it did to the jobs that wait for it; exit 1
    /// when any was refused.
    static func apply(_ ids: [Int64], verb: String, json: Bool, store: any JobStore, _ change: (Int64) async throws(JobStoreError) -> Job) async throws {
        var refused = 0
        var changed: [Job] = []
        for id in ids {
            do {
                let job = try await change(id)
                changed.append(job)
                if !json {
                    print("job \(id) (\(UserText.printable(job.name))) \(verb)")
                    do {
                        for line in try await dependents(of: job, store: store) { print("  " + line) }
                    } catch {
                        print("  (the jobs that wait for it cannot be listed now: \(error))")
                    }
                }
            } catch {
                refused += 1
                FileHandle.standardError.write(Data("\(refusal(error))\n".utf8))
            }
        }
        if json { print(String(decoding: try JSONEncoder.sortedPretty().encode(changed.map { JobView($0, now: Date()) }), as: UTF8.self)) }
        if refused > 0 { throw ExitCode(ExitStatus.failure) }
    }
}

extension CheckVerdict: ExpressibleByArgument {}
