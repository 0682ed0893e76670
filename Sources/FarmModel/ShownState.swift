import Foundation

/// A job's state as people see it: a queued job whose time has not come (a delayed submission, a backoff
/// after a failed attempt) is `delayed`, with its due time; the others are their `JobState`. The console's
/// tabs and overview, `mediafarm status` and `queue stats`, and `/metrics` count and list by it.
public enum ShownState: String, CaseIterable, Sendable, Hashable, Codable {
    case queued, delayed, waiting, running, succeeded, failed, dead, cancelled

    public init(_ job: Job, at now: Date) {
        switch job.state {
        case .queued: self = job.runAt > now ? .delayed : .queued
        case .waiting: self = .waiting
        case .running: self = .running
        case .succeeded: self = .succeeded
        case .failed: self = .failed
        case .dead: self = .dead
        case .cancelled: self = .cancelled
        }
    }

    /// The stored state it is one of (`delayed` is `queued` not yet due).
    public var stored: JobState {
        switch self {
        case .queued, .delayed: .queued
        case .waiting: .waiting
        case .running: .running
        case .succeeded: .succeeded
        case .failed: .failed
        case .dead: .dead
        case .cancelled: .cancelled
        }
    }

    /// Every name, for help and refusals.
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}
