/// Where a job is in its life. `waiting`, `queued` and `running` are live (a unique key admits one live
/// job); `succeeded`, `failed`, `cancelled` and `dead` are terminal until someone asks for a retry.
///
/// - `waiting`: the job depends on jobs that have not ended yet; it is queued when the last of them has.
///
/// - `failed`: the worker ran the job to its end and reported a failure in words (a missing input, an
///   unwritable output folder): running it again unchanged would fail the same way, so it is not retried.
/// - `dead`: every attempt crashed, was killed, timed out or lost its lease, `maxAttempts` times.
public enum JobState: String, Sendable, Codable, CaseIterable, Hashable {
    case waiting, queued, running, succeeded, failed, cancelled, dead

    public var isTerminal: Bool {
        switch self {
        case .waiting, .queued, .running: false
        case .succeeded, .failed, .cancelled, .dead: true
        }
    }

    /// Live jobs hold their unique key.
    public var isLive: Bool { !isTerminal }
}
