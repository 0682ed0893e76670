import Foundation

/// What the farm tells of its jobs as they happen: a coordinator's attempts (started, progress,
/// finished), the API's changes (submitted, cancelled, retried) and notices. One type with one JSON
/// encoding, the same on `coordinator --json` (a line each) and `GET /api/events` (a server-sent event
/// each, named by `event`); the OpenAPI document describes it (`CoordinatorEvent`). Absent fields are
/// left out, never null; `job` is the job's id.
public struct CoordinatorEvent: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case started, progress, finished, notice, submitted, cancelled, retried
    }

    /// When a job passed each step between the queue and its worker, in seconds since 1970.
    public struct Hops: Codable, Sendable, Equatable {
        public var woke: Double
        public var claimed: Double
        public var handed: Double

        public init(woke: Double, claimed: Double, handed: Double) {
            self.woke = woke
            self.claimed = claimed
            self.handed = handed
        }
    }

    public var event: Kind
    /// When it happened: seconds since 1970 (UTC), with fractions.
    public var at: Double
    public var job: Int64?
    public var name: String?
    public var attempt: Int?
    /// The worker process's id (`started`).
    public var pid: Int32?
    /// Seconds between the job's being due and its worker's start (`started`).
    public var queuedFor: Double?
    public var hops: Hops?
    /// 0...1 (`progress`).
    public var fraction: Double?
    public var phase: String?
    /// The job's state after the event (`finished`, `cancelled`, `retried`).
    public var state: String?
    /// How long the attempt took (`finished`).
    public var seconds: Double?
    /// Why an attempt ended as it did (`finished`), or the notice's text.
    public var message: String?
    /// false: a live job already held the unique key (`submitted`).
    public var queued: Bool?

    public init(_ event: Kind, at: Date = Date(), job: Int64? = nil, name: String? = nil) {
        self.event = event
        self.at = at.timeIntervalSince1970
        self.job = job
        self.name = name
    }

    public static func started(id: Int64, name: String, attempt: Int, pid: Int32, queuedFor: Double, hops: Hops, at: Date = Date()) -> CoordinatorEvent {
        var e = CoordinatorEvent(.started, at: at, job: id, name: name)
        e.attempt = attempt
        e.pid = pid
        e.queuedFor = queuedFor
        e.hops = hops
        return e
    }

    public static func progress(id: Int64, name: String, fraction: Double, phase: String, at: Date = Date()) -> CoordinatorEvent {
        var e = CoordinatorEvent(.progress, at: at, job: id, name: name)
        e.fraction = fraction
        e.phase = phase
        return e
    }

    /// An attempt ended; `state` is the job's state after it.
    public static func finished(id: Int64, name: String, state: String, attempt: Int, message: String?, seconds: Double,
                                at: Date = Date()) -> CoordinatorEvent {
        var e = CoordinatorEvent(.finished, at: at, job: id, name: name)
        e.state = state
        e.attempt = attempt
        e.message = message
        e.seconds = seconds
        return e
    }

    /// Something worth a line in the log (a rescued job, a stale attempt, a store error).
    public static func notice(_ text: String, at: Date = Date()) -> CoordinatorEvent {
        var e = CoordinatorEvent(.notice, at: at)
        e.message = text
        return e
    }

    public static func submitted(id: Int64, name: String, queued: Bool, at: Date = Date()) -> CoordinatorEvent {
        var e = CoordinatorEvent(.submitted, at: at, job: id, name: name)
        e.queued = queued
        return e
    }

    /// A job cancelled or retried through the API, with its state after the change.
    public static func changed(_ kind: Kind, id: Int64, name: String, state: String, at: Date = Date()) -> CoordinatorEvent {
        var e = CoordinatorEvent(kind, at: at, job: id, name: name)
        e.state = state
        return e
    }

    /// The one encoding: keys sorted, slashes as they are, absent fields left out; one line.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every field is a number, a string, a Bool or the hops: encoding cannot fail.
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"  // an event always encodes
    }
}
