import Foundation

/// What the farm tells of its jobs as they happen: a coordinator's attempts (started, progress,
/// finished), the API's changes (submitted, cancelled, retried) and notices. One case per kind, each
/// with its own fields; one JSON encoding (the farm's: ISO 8601 times), the same on `coordinator
/// --json` (a line each) and `GET /api/events` (a server-sent event each, named by `event`); the OpenAPI
/// document describes each case (`CoordinatorEvent`). Absent fields are left out, never null; `job` is
/// the job's id.
public enum CoordinatorEvent: Sendable, Equatable, Codable {
    case started(Started)
    case progress(Progress)
    case finished(Finished)
    case notice(Notice)
    case submitted(Submitted)
    case cancelled(Changed)
    case retried(Changed)

    /// The kinds, as `event` names them.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case started, progress, finished, notice, submitted, cancelled, retried
    }

    /// A worker began an attempt of a job.
    public struct Started: Codable, Sendable, Equatable {
        public var at: Date
        public var job: Int64
        public var name: String
        public var attempt: Int
        /// The worker process's id.
        public var pid: Int32
        /// Seconds between the job's being due and its worker's start.
        public var queuedFor: Double
        public var hops: Hops
    }

    /// Where the time between a job's being due and its worker's start went, in seconds: until the
    /// claimer's turn that claimed it began (`wait`: a notification, a freed slot or a poll), the claim's
    /// round trip (`claim`), and handing it to its worker process (`hand`).
    public struct Hops: Codable, Sendable, Equatable {
        public var wait: Double
        public var claim: Double
        public var hand: Double

        public init(wait: Double, claim: Double, hand: Double) {
            (self.wait, self.claim, self.hand) = (wait, claim, hand)
        }
    }

    /// What a running job's worker says of its progress.
    public struct Progress: Codable, Sendable, Equatable {
        public var at: Date
        public var job: Int64
        public var name: String
        /// 0...1.
        public var fraction: Double
        public var phase: String
    }

    /// An attempt ended; `state` is the job's state after it (or lost, stale: the attempt's result was not wanted).
    public struct Finished: Codable, Sendable, Equatable {
        public var at: Date
        public var job: Int64
        public var name: String
        public var state: String
        public var attempt: Int
        /// Why it ended as it did; absent when it succeeded.
        public var message: String?
        /// How long the attempt took.
        public var seconds: Double
    }

    /// Something worth a line in the log (a rescued job, a stale attempt, a store error, an API's action).
    public struct Notice: Codable, Sendable, Equatable {
        public var at: Date
        public var message: String
    }

    /// A job submitted through the API.
    public struct Submitted: Codable, Sendable, Equatable {
        public var at: Date
        public var job: Int64
        public var name: String
        /// false: a live job already held the unique key; `job` is that one.
        public var queued: Bool
    }

    /// A job cancelled or retried through the API, with its state after the change.
    public struct Changed: Codable, Sendable, Equatable {
        public var at: Date
        public var job: Int64
        public var name: String
        public var state: String
    }

    public static func started(id: Int64, name: String, attempt: Int, pid: Int32, queuedFor: Double, hops: Hops, at: Date = Date()) -> CoordinatorEvent {
        .started(Started(at: at, job: id, name: name, attempt: attempt, pid: pid, queuedFor: queuedFor, hops: hops))
    }

    public static func progress(id: Int64, name: String, fraction: Double, phase: String, at: Date = Date()) -> CoordinatorEvent {
        .progress(Progress(at: at, job: id, name: name, fraction: fraction, phase: phase))
    }

    /// An attempt ended; `state` is the job's state after it.
    public static func finished(id: Int64, name: String, state: String, attempt: Int, message: String?, seconds: Double,
                                at: Date = Date()) -> CoordinatorEvent {
        .finished(Finished(at: at, job: id, name: name, state: state, attempt: attempt, message: message, seconds: seconds))
    }

    public static func notice(_ text: String, at: Date = Date()) -> CoordinatorEvent {
        .notice(Notice(at: at, message: text))
    }

    public static func submitted(id: Int64, name: String, queued: Bool, at: Date = Date()) -> CoordinatorEvent {
        .submitted(Submitted(at: at, job: id, name: name, queued: queued))
    }

    /// A job cancelled or retried through the API (`kind` is one of the two), with its state after the change.
    public static func changed(_ kind: Kind, id: Int64, name: String, state: String, at: Date = Date()) -> CoordinatorEvent {
        let change = Changed(at: at, job: id, name: name, state: state)
        return kind == .retried ? .retried(change) : .cancelled(change)
    }

    public var kind: Kind {
        switch self {
        case .started: .started
        case .progress: .progress
        case .finished: .finished
        case .notice: .notice
        case .submitted: .submitted
        case .cancelled: .cancelled
        case .retried: .retried
        }
    }

    /// When it happened.
    public var at: Date {
        switch self {
        case .started(let e): e.at
        case .progress(let e): e.at
        case .finished(let e): e.at
        case .notice(let e): e.at
        case .submitted(let e): e.at
        case .cancelled(let e), .retried(let e): e.at
        }
    }

    /// The job it is about (none for a notice).
    public var job: Int64? {
        switch self {
        case .started(let e): e.job
        case .progress(let e): e.job
        case .finished(let e): e.job
        case .notice: nil
        case .submitted(let e): e.job
        case .cancelled(let e), .retried(let e): e.job
        }
    }

    private enum Key: String, CodingKey { case event }

    /// One object: `event` names the case, beside the case's own fields.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(kind, forKey: .event)
        switch self {
        case .started(let e): try e.encode(to: encoder)
        case .progress(let e): try e.encode(to: encoder)
        case .finished(let e): try e.encode(to: encoder)
        case .notice(let e): try e.encode(to: encoder)
        case .submitted(let e): try e.encode(to: encoder)
        case .cancelled(let e), .retried(let e): try e.encode(to: encoder)
        }
    }

    public init(from decoder: any Decoder) throws {
        switch try decoder.container(keyedBy: Key.self).decode(Kind.self, forKey: .event) {
        case .started: self = .started(try Started(from: decoder))
        case .progress: self = .progress(try Progress(from: decoder))
        case .finished: self = .finished(try Finished(from: decoder))
        case .notice: self = .notice(try Notice(from: decoder))
        case .submitted: self = .submitted(try Submitted(from: decoder))
        case .cancelled: self = .cancelled(try Changed(from: decoder))
        case .retried: self = .retried(try Changed(from: decoder))
        }
    }

    /// The one encoding (the farm's, `JSONEncoder.api`): keys sorted, slashes as they are, ISO 8601
    /// times, absent fields left out; one line.
    public var json: String {
        // Every field is a number, a string, a Bool, a date or the hops: encoding cannot fail.
        (try? JSONEncoder.api.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"  // an event always encodes
    }
}
