import FarmModel
import Foundation
import GRDB

/// The queue read as lists: the jobs a query selects, how many, and the counts by state.
extension SQLiteJobStore {
    public func jobs(matching query: JobQuery) async throws(JobStoreError) -> [Job] {
        try await read { [self] db in
            var (sql, arguments) = Self.filter(query)
            // The running jobs are few (no more than the farm's slots): found by their lease index and sorted,
            // rather than the whole table walked in id order for a page of them (`+id` keeps the walk out).
            let id = query.states == [.running] ? "+id" : "id"
            sql = "SELECT \(Self.columns) FROM jobs" + sql + (query.newest ? " ORDER BY \(id) DESC" : " ORDER BY \(id)")
            if let limit = query.limit {
                sql += " LIMIT ?"
                arguments.append(limit)
            }
            let jobs = try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map(Self.job)
            return query.newest ? jobs.reversed() : jobs
        }
    }

    public func count(matching query: JobQuery) async throws(JobStoreError) -> Int {
        try await read { db in
            let (sql, arguments) = Self.filter(query)
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM jobs" + sql, arguments: StatementArguments(arguments)) ?? 0
        }
    }

    /// The WHERE clause of a query's filters (empty for none), with its arguments.
    static func filter(_ query: JobQuery) -> (sql: String, arguments: [any DatabaseValueConvertible]) {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        func add(_ condition: String, _ values: [any DatabaseValueConvertible] = []) {
            conditions.append(condition)
            arguments += values
        }
        if let ids = query.ids { add("id IN (\(ids.map { String($0) }.joined(separator: ",")))") }
        if let states = query.states {
            // The states as literals (the enum's raw values): `state = 'running'` can use a partial index on
            // one state (jobs_waiting, jobs_leases, jobs_failed); SQLite reads `state IN (?)` as `state = +?`, which
            // matches none, and the newest-first lists read the whole table.
            let names = states.map { "'\($0.rawValue)'" }
            add(names.count == 1 ? "state = \(names[0])" : "state IN (\(names.joined(separator: ",")))")
        }
        if let before = query.before { add("id < ?", [before]) }
        if let after = query.afterID { add("id > ?", [after]) }
        if let prefix = query.namePrefix, !prefix.isEmpty { add("substr(name, 1, length(?)) = ?", [prefix, prefix]) }
        if query.topLevel { add("chunk_of IS NULL") }
        if let chunkOf = query.chunkOf { add("chunk_of = ?", [chunkOf]) }
        if let dependsOn = query.dependsOn { add("id IN (SELECT job_id FROM job_dependencies WHERE depends_on = ?)", [dependsOn]) }
        if let after = query.runAfter { add("run_at > ?", [after.timeIntervalSince1970]) }
        if let by = query.runBy { add("run_at <= ?", [by.timeIntervalSince1970]) }
        if let prefix = query.keyPrefix, !prefix.isEmpty { add("substr(unique_key, 1, length(?)) = ?", [prefix, prefix]) }
        // `+created_at`: the index every job is in (jobs_made, for counting) would otherwise be taken for a
        // range, and every job in it read and sorted for one page, instead of the newest walked until it is full.
        if let from = query.createdFrom { add("+created_at >= ?", [from.timeIntervalSince1970]) }
        if let before = query.createdBefore { add("+created_at < ?", [before.timeIntervalSince1970]) }
        if let text = query.mentions, !text.isEmpty { add("instr(manifest, ?) > 0", [text]) }
        if query.failedAttempts { add("errors <> '[]'") }
        if let blocker = query.blockedBy { add("blocked_by = ?", [blocker]) }
        if let verdict = query.verdict { add("instr(result, ?) > 0", [JobQuery.verdictText(verdict)]) }
        if let host = query.host, !host.isEmpty { add("COALESCE(substr(lease_owner, 1, instr(lease_owner || ':', ':') - 1), host) = ?", [host]) }
        if let album = query.album, !album.isEmpty {
            add("id IN (SELECT i.job_id FROM job_inputs i JOIN album_assets a ON a.asset_id = i.asset_id WHERE a.album = ?)", [album])
        }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), arguments)
    }

    public func counts() async throws(JobStoreError) -> [JobState: Int] {
        try await read { [self] db in
            try Row.fetchOne(db, sql: JobCounts.read).map(JobCounts.counts) ?? [:]
        }
    }

    public func stats(at now: Date) async throws(JobStoreError) -> QueueStats {
        try await read { [self] db in
            let byState = try Row.fetchOne(db, sql: JobCounts.read).map(JobCounts.counts) ?? [:]
            let counts = Dictionary(uniqueKeysWithValues: byState.map { ($0.key.rawValue, $0.value) })
            var hosts: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT substr(lease_owner, 1, instr(lease_owner || ':', ':') - 1) AS host, COUNT(*) AS n
                FROM jobs WHERE state = 'running' GROUP BY host
                """) {
                // (A running row always has its lease; one without is no host's and no reason to fail.)
                if let host: String = row["host"] { hosts[host] = row["n"] }
            }
            let oldest = try Double.fetchOne(db, sql: "SELECT MIN(run_at) FROM jobs WHERE state = 'queued' AND run_at <= ?",
                                             arguments: [now.timeIntervalSince1970])
            let delayed = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND run_at > ?",
                                           arguments: [now.timeIntervalSince1970]) ?? 0
            return QueueStats(counts: counts, oldestDueAt: oldest.map(Date.init(timeIntervalSince1970:)), runningByHost: hosts,
                              dead: counts["dead"] ?? 0, total: counts.values.reduce(0, +), delayed: delayed)
        }
    }
}
