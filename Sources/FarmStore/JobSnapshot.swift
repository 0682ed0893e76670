import FarmModel
import Foundation

/// The job a webhook event keeps (the outbox's `job` column): the job's row as it was when the event was
/// recorded, as one JSON object whose keys are the row's columns. One Codable type and one encoding, made
/// three ways that tests hold equal: `json` of the row as SQLite reads it (`init(_:from:)`: at the
/// fan-out, or when the row changes first), `sql` by PostgreSQL from the row, and `JSONEncoder` (what
/// `Codable` would write); read back by `JSONDecoder` alone.
///
/// `json` writes the bytes directly, because the fan-out runs it for every event, hundreds at a time in
/// the queue's one writer: `JSONEncoder` costs about 46 us for a snapshot here, a third of a claim and
/// completion's whole cost on SQLite.
struct JobSnapshot: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, name, manifest
        case baseDirectory = "base_directory", outputRoots = "output_roots", priority, maxAttempts = "max_attempts"
        case runAt = "run_at", uniqueKey = "unique_key", timeout, createdAt = "created_at", state, attempt
        case leaseOwner = "lease_owner", leaseToken = "lease_token", leaseExpiresAt = "lease_expires_at", progress, phase
        case workerPID = "worker_pid", startedAt = "started_at", finishedAt = "finished_at", updatedAt = "updated_at"
        case result, errors, afterIDs = "after_ids", afterPolicy = "after_policy", waitingFor = "waiting_for"
        case blockedBy = "blocked_by", requires, chunkPlan = "chunk_plan", chunkOf = "chunk_of", host
    }

    // What a column holds: list columns (output_roots, errors, after_ids, requires, chunk_plan) are JSON text,
    // times are seconds since 1970. Only the job's identity is required: a snapshot an older version wrote
    // (before a column existed) still reads, with the column's default.
    var id: Int64
    var name: String
    var manifest: String
    var baseDirectory: String?
    var outputRoots: String?
    var priority: Int?
    var maxAttempts: Int?
    var runAt: Double?
    var uniqueKey: String?
    var timeout: Double?
    var createdAt: Double?
    var state: String?
    var attempt: Int?
    var leaseOwner: String?
    var leaseToken: String?
    var leaseExpiresAt: Double?
    var progress: Double?
    var phase: String?
    var workerPID: Int64?
    var startedAt: Double?
    var finishedAt: Double?
    var updatedAt: Double?
    var result: String?
    var errors: String?
    var afterIDs: String?
    var afterPolicy: String?
    var waitingFor: Int?
    var blockedBy: Int64?
    var requires: String?
    var chunkPlan: String?
    var chunkOf: Int64?
    var host: String?

    /// The job again.
    var job: Job {
        func date(_ t: Double?) -> Date? { t.map(Date.init(timeIntervalSince1970:)) }
        var job = Job(id: id, name: name, manifest: manifest, baseDirectory: baseDirectory ?? "",
                      outputRoots: JobCoding.decode([String].self, outputRoots) ?? [], priority: priority ?? 0, maxAttempts: maxAttempts ?? 1,
                      runAt: date(runAt), uniqueKey: uniqueKey, timeout: timeout, createdAt: date(createdAt) ?? Date(timeIntervalSince1970: 0))
        job.state = state.flatMap(JobState.init(rawValue:)) ?? .dead
        job.attempt = attempt ?? 0
        if let leaseOwner, let leaseToken, let expiry = date(leaseExpiresAt) {
            job.lease = Job.Lease(owner: leaseOwner, token: leaseToken, expiresAt: expiry)
        }
        job.progress = progress
        job.phase = phase
        job.workerPID = workerPID.map { Int32(truncatingIfNeeded: $0) }
        job.startedAt = date(startedAt)
        job.finishedAt = date(finishedAt)
        job.updatedAt = date(updatedAt) ?? job.createdAt
        job.result = result
        job.errors = JobCoding.decode([Job.AttemptError].self, errors) ?? []
        job.after = JobCoding.decode([Int64].self, afterIDs) ?? []
        job.afterPolicy = afterPolicy.flatMap(AfterPolicy.init(rawValue:)) ?? .success
        job.waitingFor = waitingFor ?? 0
        job.blockedBy = blockedBy
        job.requires = JobCoding.decode([String].self, requires) ?? []
        job.chunkPlan = JobCoding.decode(object: ChunkPlan.self, chunkPlan)
        job.chunkOf = chunkOf
        job.host = host
        return job
    }

    /// A snapshot's text read back.
    static func decoding(_ text: String) throws -> JobSnapshot {
        try JSONDecoder().decode(JobSnapshot.self, from: Data(text.utf8))
    }

    /// The same object made by PostgreSQL from the job's row (`alias`: its table or CTE), in the statement
    /// that records the event. Absent values are left out, as `Codable` leaves out a nil.
    static func sql(_ alias: String) -> String {
        "json_strip_nulls(json_build_object(" + CodingKeys.allCases.map { "'\($0.rawValue)', \(alias).\($0.rawValue)" }.joined(separator: ", ") + "))::text"
    }

    /// The snapshot's JSON, written directly (see the type's comment): what `JSONEncoder` writes for it,
    /// up to the order of keys and the spelling of numbers.
    var json: String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(manifest.utf8.count + (result?.utf8.count ?? 0) + 1024)
        func key(_ key: CodingKeys) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: key.rawValue.utf8)
            out.append(contentsOf: "\":".utf8)
        }
        func string(_ name: CodingKeys, _ value: String?) {
            guard let value else { return }
            key(name)
            out.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(byte)
                case 0..<0x20: out.append(contentsOf: String(format: "\\u%04x", byte).utf8)
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        func number(_ name: CodingKeys, _ value: Double?) {
            // A time or a fraction is always finite; a value that is not is left out rather than written as no JSON.
            guard let value, value.isFinite else { return }
            key(name)
            out.append(contentsOf: "\(value)".utf8)
        }
        func integer<I: BinaryInteger>(_ name: CodingKeys, _ value: I?) {
            guard let value else { return }
            key(name)
            out.append(contentsOf: "\(value)".utf8)
        }
        integer(.id, id)
        string(.name, name)
        string(.manifest, manifest)
        string(.baseDirectory, baseDirectory)
        string(.outputRoots, outputRoots)
        integer(.priority, priority)
        integer(.maxAttempts, maxAttempts)
        number(.runAt, runAt)
        string(.uniqueKey, uniqueKey)
        number(.timeout, timeout)
        number(.createdAt, createdAt)
        string(.state, state)
        integer(.attempt, attempt)
        string(.leaseOwner, leaseOwner)
        string(.leaseToken, leaseToken)
        number(.leaseExpiresAt, leaseExpiresAt)
        number(.progress, progress)
        string(.phase, phase)
        integer(.workerPID, workerPID)
        number(.startedAt, startedAt)
        number(.finishedAt, finishedAt)
        number(.updatedAt, updatedAt)
        string(.result, result)
        string(.errors, errors)
        string(.afterIDs, afterIDs)
        string(.afterPolicy, afterPolicy)
        integer(.waitingFor, waitingFor)
        integer(.blockedBy, blockedBy)
        string(.requires, requires)
        string(.chunkPlan, chunkPlan)
        integer(.chunkOf, chunkOf)
        string(.host, host)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
