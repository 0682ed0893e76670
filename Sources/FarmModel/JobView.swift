import Foundation
import QualityModel

/// A job as JSON: the API's (`GET /api/jobs/{id}`, described in `docs/openapi.json`) and `status --json`'s,
/// `cancel --json`'s and `retry --json`'s, one view for all.
public struct JobView: Encodable {
    public struct Worker: Encodable {
        var host: String
        var owner: String
        var pid: Int32?
        var leaseExpiresAt: Date
    }

    public var id: Int64
    public var name: String
    public var state: String
    var priority: Int
    var attempt: Int
    var maxAttempts: Int
    var progress: Double?
    /// What a running (or publishing) job is doing now; absent once it ended, when the last phase it
    /// reported would mislead (a job failed while "starting").
    var phase: String?
    /// The host that runs the job, or that ran its latest attempt; the coordinator holding a running job's lease.
    var host: String?
    var owner: String?
    var workerPID: Int32?
    var uniqueKey: String?
    var createdAt: Date
    var runAt: Date
    var startedAt: Date?
    var finishedAt: Date?
    /// Seconds left, estimated from the progress so far (running jobs that reported progress).
    var etaSeconds: Double?
    /// The lease of a job that holds one (running, or publishing): who holds it, until when.
    var worker: Worker?
    var updatedAt: Date
    /// The jobs this one waits for (absent when none), whether it needs their success, how many have
    /// not ended yet (a waiting job), and the one whose failure failed it.
    var after: [Int64]?
    var afterPolicy: String?
    var waitingFor: Int?
    var blockedBy: Int64?
    /// What a host must provide to run the job.
    var requires: [String]?
    var errors: [Job.AttemptError]
    /// The verdict of the job's quality checks (`passed`, `warnings`, `failed`), when it had checks and an attempt ended.
    var verdict: String?
    /// The worker's report (inspection, scan, export statistics), when the last attempt gave one.
    var result: AnyJSON?
    var manifest: AnyJSON?

    public init(_ job: Job, now: Date) {
        id = job.id
        name = job.name
        state = job.state.rawValue
        priority = job.priority
        attempt = job.attempt
        maxAttempts = job.maxAttempts
        progress = job.progress
        // A split export waiting for its chunks says how far they are ("encoding chunks: 3 of 9 done").
        phase = job.state == .running || (job.state == .waiting && job.chunkPlan != nil) ? job.phase : nil
        owner = job.state == .running ? job.lease?.owner : nil
        host = owner.map(Job.host(ofOwner:)) ?? job.host
        workerPID = job.state == .running ? job.workerPID : nil
        uniqueKey = job.uniqueKey
        createdAt = job.createdAt
        runAt = job.runAt
        startedAt = job.startedAt
        finishedAt = job.finishedAt
        updatedAt = job.updatedAt
        worker = job.lease.map { Worker(host: Job.host(ofOwner: $0.owner), owner: $0.owner, pid: job.workerPID, leaseExpiresAt: $0.expiresAt) }
        if job.state == .running, let started = job.startedAt, let fraction = job.progress {
            etaSeconds = Self.eta(elapsed: now.timeIntervalSince(started), fraction: fraction)
        }
        if !job.after.isEmpty {
            after = job.after
            afterPolicy = job.afterPolicy.rawValue
            waitingFor = job.state == .waiting ? job.waitingFor : nil
        }
        blockedBy = job.blockedBy
        requires = job.requires.isEmpty ? nil : job.requires
        errors = job.errors
        verdict = CheckVerdict.Said(result: job.result)?.verdict.rawValue
        result = job.result.flatMap { try? JSONDecoder().decode(AnyJSON.self, from: Data($0.utf8)) }  // a result that is no JSON is shown as none
        manifest = try? JSONDecoder().decode(AnyJSON.self, from: Data(job.manifest.utf8))  // validated at submission
    }

    /// Seconds left at the rate so far; nil before the first percent.
    public static func eta(elapsed: Double, fraction: Double) -> Double? {
        guard fraction >= 0.01, fraction < 1, elapsed > 0 else { return fraction >= 1 ? 0 : nil }
        return (elapsed * (1 - fraction) / fraction).rounded()
    }
}

/// Any JSON document, decoded to be embedded in a response (a job's manifest and report).
public enum AnyJSON: Codable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([AnyJSON])
    case object([String: AnyJSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let b = try? container.decode(Bool.self) { self = .bool(b) }  // each kind tried in turn
        else if let n = try? container.decode(Double.self) { self = .number(n) }  // each kind tried in turn
        else if let s = try? container.decode(String.self) { self = .string(s) }  // each kind tried in turn
        else if let a = try? container.decode([AnyJSON].self) { self = .array(a) }  // each kind tried in turn
        else { self = .object(try container.decode([String: AnyJSON].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .number(let n): try container.encode(n)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }
}
