import FarmModel
import Foundation

/// The queue's own history for the console's charts, with no other store: what the jobs' times say (how
/// many ended per minute or hour by outcome, how long they waited and ran) and a sample of the queue's
/// depth each minute (table `queue_samples`, migration v13), taken by whichever coordinator reports first in
/// that minute and kept 72 hours.
public struct QueueHistory: Sendable {
    public let database: any SQLDatabase
    public static let keptSeconds: Double = 72 * 3600

    public init(_ database: any SQLDatabase) {
        self.database = database
    }

    static func statements(_ dialect: SQLDialect) -> [String] {
        let (integer, prefix) = dialect == .postgres ? ("BIGINT", "{schema}.") : ("INTEGER", "")
        return ["CREATE TABLE \(prefix)queue_samples (minute \(integer) PRIMARY KEY, queued \(integer) NOT NULL, running \(integer) NOT NULL, waiting \(integer) NOT NULL)"]
    }

    /// Records the depth of the minute of `now` unless a coordinator did already; forgets samples older than
    /// 72 hours.
    public func sample(queued: Int, running: Int, waiting: Int, at now: Date) async throws {
        let minute = Int64((now.timeIntervalSince1970 / 60).rounded(.down))
        try await database.write { session in
            try await session.execute("INSERT INTO queue_samples (minute, queued, running, waiting) VALUES (?, ?, ?, ?) ON CONFLICT (minute) DO NOTHING",
                                      [SQLValue(minute), SQLValue(queued), SQLValue(running), SQLValue(waiting)])
            try await session.execute("DELETE FROM queue_samples WHERE minute < ?", [SQLValue(minute - Int64(Self.keptSeconds / 60))])
        }
    }

    /// A chart's span: the last hour by the minute, or the last 72 hours by the hour.
    public enum Span: String, Sendable, CaseIterable {
        case hour, days
        public var bucketSeconds: Double { self == .hour ? 60 : 3600 }
        public var buckets: Int { self == .hour ? 60 : 72 }
    }

    /// One bucket of a chart.
    public struct Bucket: Sendable, Hashable, Codable {
        public var start: Date
        /// Jobs that ended in it, by their state (succeeded, failed, dead, cancelled).
        public var ended: [String: Int]
        /// The queue's depth at its last sample (nil: no coordinator sampled it).
        public var queued: Int?
        public var running: Int?
        /// Of the jobs that ended in it: seconds from due to started, and from started to ended.
        public var waitP50: Double?
        public var waitP95: Double?
        public var runP50: Double?
        public var runP95: Double?
    }

    /// The span ending at `now`, oldest bucket first.
    public func chart(_ span: Span, at now: Date) async throws -> [Bucket] {
        let size = span.bucketSeconds
        let end = ((now.timeIntervalSince1970 / size).rounded(.down) + 1) * size
        let start = end - size * Double(span.buckets)
        let (ended, samples) = try await database.read { session in
            let ended = try await session.rows("""
                SELECT finished_at, state, started_at, run_at FROM jobs
                WHERE finished_at >= ? AND finished_at < ? AND state IN ('succeeded', 'failed', 'dead', 'cancelled')
                """, [SQLValue(start), SQLValue(end)])
            let samples = try await session.rows("SELECT minute, queued, running FROM queue_samples WHERE minute >= ? AND minute < ? ORDER BY minute",
                                                 [SQLValue(Int64(start / 60)), SQLValue(Int64(end / 60))])
            return (ended, samples)
        }
        var buckets = (0..<span.buckets).map { Bucket(start: Date(timeIntervalSince1970: start + Double($0) * size), ended: [:]) }
        var waits = Array(repeating: [Double](), count: span.buckets), runs = waits
        for row in ended {
            guard let finished = row[0].double, let state = row[1].string else { continue }
            let i = Int((finished - start) / size)
            guard buckets.indices.contains(i) else { continue }
            buckets[i].ended[state, default: 0] += 1
            if let started = row[2].double {
                runs[i].append(max(0, finished - started))
                if let due = row[3].double { waits[i].append(max(0, started - due)) }
            }
        }
        for row in samples {
            guard let minute = row[0].double else { continue }
            let i = Int((minute * 60 - start) / size)
            guard buckets.indices.contains(i) else { continue }
            (buckets[i].queued, buckets[i].running) = (row[1].int.map(Int.init), row[2].int.map(Int.init))
        }
        for i in buckets.indices {
            (buckets[i].waitP50, buckets[i].waitP95) = (Self.percentile(waits[i], 0.5), Self.percentile(waits[i], 0.95))
            (buckets[i].runP50, buckets[i].runP95) = (Self.percentile(runs[i], 0.5), Self.percentile(runs[i], 0.95))
        }
        return buckets
    }

    /// The `q` quantile (nearest rank) of `values`; nil when there are none.
    static func percentile(_ values: [Double], _ q: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1))]
    }
}
