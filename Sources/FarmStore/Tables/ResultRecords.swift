import FarmModel
import SafeFiles
import Foundation

/// A succeeded job's result, kept so that the same work asked again is answered from it (results reused
/// by content): the job, its published output and that output's SHA-256 when it was published, and its
/// report's text.
public struct ReusableResult: Sendable, Equatable {
    /// What the job computed from: its manifest's settings, its inputs' content ids, MediaFarm's and the
    /// engine's versions (hex SHA-256; see `ResultKey` in FarmRuntime).
    public var key: String
    public var jobID: Int64
    public var jobName: String
    /// The output as published (a path on the host that published it; a shared folder reaches it from
    /// others), with its size and SHA-256 then; nil for a job that exported nothing (a scan).
    public var output: String?
    public var sha256: String?
    public var size: Int64?
    /// The report's JSON text, when the job wrote one (and it is not larger than `reportLimit`).
    public var report: String?
    public var createdAt: Date
    /// A picture job's files as published, in the order of its outputs, with the counts of its numbered ones.
    public var files: ReusedFiles?
    /// The job that did the work, when this result is a copy of its result (a reuse of a reuse); nil when
    /// `jobID` did it.
    public var originJobID: Int64?
    public var originJobName: String?

    /// The job that did the work: the origin, or this job.
    public var worker: (id: Int64, name: String) { (originJobID ?? jobID, originJobName ?? jobName) }

    /// A report larger than this is not kept: a job asking for a report cannot be answered from it.
    public static let reportLimit = 4 << 20

    public init(key: String, jobID: Int64, jobName: String, output: String?, sha256: String?, size: Int64?, report: String?, createdAt: Date) {
        self.key = key
        self.jobID = jobID
        self.jobName = jobName
        self.output = output
        self.sha256 = sha256
        self.size = size
        self.report = report
        self.createdAt = createdAt
    }
}

/// The pictures of a reusable result: each file as published, with its SHA-256 and size, in the order of the
/// job's outputs (`StagedOutput.picturePaths`); and how many numbered files it wrote. And its package's files.
public struct ReusedFiles: Sendable, Codable, Equatable {
    public struct File: Sendable, Codable, Equatable {
        public var path: String
        public var sha256: String
        public var size: Int64
        /// The file's stamp when it held those bytes (taken before and after they were hashed, or as it was
        /// linked): a file whose stamp is still this one is linked by the next job that reuses it, not read.
        /// nil in results recorded before stamps were: those are copied and hashed.
        public var stamp: FileStamp?
        /// An object's entity tag as published (a package at a prefix): the next job that reuses it copies it
        /// on the server only while the object still has it.
        public var etag: String?
        public init(path: String, sha256: String, size: Int64, stamp: FileStamp? = nil, etag: String? = nil) {
            (self.path, self.sha256, self.size, self.stamp, self.etag) = (path, sha256, size, stamp, etag)
        }
    }
    public var numbered: NumberedOutputs?
    public var files: [File]
    /// A streaming package's folder as published, with every file in it (paths relative to it) but its marker.
    public var package: Package?
    public init(numbered: NumberedOutputs?, files: [File], package: Package? = nil) {
        (self.numbered, self.files, self.package) = (numbered, files, package)
    }

    public struct Package: Sendable, Codable, Equatable {
        /// Its folder, or its prefix (`s3://BUCKET/PREFIX`).
        public var folder: String
        public var files: [File]
        /// The package as its players see it (what its job's result said), carried to the job that reuses it.
        public var summary: PackageSummary?
        public init(folder: String, files: [File], summary: PackageSummary?) { (self.folder, self.files, self.summary) = (folder, files, summary) }
    }
}

/// The queue's reusable results (table `job_results`, beside the jobs, in both backends): recorded when a
/// job that may be reused succeeds, looked up by key before the next such job runs, forgotten when the
/// output no longer holds what was published or when the job is pruned.
public struct ResultRecords: Sendable {
    public let database: any SQLDatabase

    public init(_ database: any SQLDatabase) {
        self.database = database
    }

    static func statements(_ dialect: SQLDialect) -> [String] {
        let (integer, real, prefix) = switch dialect {
        case .sqlite: ("INTEGER", "REAL", "")
        case .postgres: ("BIGINT", "DOUBLE PRECISION", "{schema}.")
        }
        return [
            """
            CREATE TABLE \(prefix)job_results (
                result_key TEXT NOT NULL,
                job_id \(integer) NOT NULL,
                job_name TEXT NOT NULL,
                output TEXT,
                sha256 TEXT,
                size \(integer),
                report TEXT,
                created_at \(real) NOT NULL,
                PRIMARY KEY (result_key, job_id)
            )
            """,
            "CREATE INDEX job_results_job ON \(prefix)job_results (job_id)",
        ]
    }

    /// Records `result` (a second record of the same job and key changes nothing).
    public func record(_ result: ReusableResult) async throws {
        let files = try result.files.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try await database.write { session in
            try await session.execute("""
                INSERT INTO job_results (result_key, job_id, job_name, output, sha256, size, report, created_at, files, origin_job_id, origin_job_name)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (result_key, job_id) DO NOTHING
                """, [SQLValue(result.key), SQLValue(result.jobID), SQLValue(result.jobName), SQLValue(result.output), SQLValue(result.sha256),
                      SQLValue(result.size), SQLValue(result.report), SQLValue(result.createdAt), SQLValue(files),
                      SQLValue(result.originJobID), SQLValue(result.originJobName)])
        }
    }

    /// The results recorded under `key`, newest first, at most `limit`.
    public func results(key: String, limit: Int = 4) async throws -> [ReusableResult] {
        try await database.read { session in
            try await session.rows("""
                SELECT result_key, job_id, job_name, output, sha256, size, report, created_at, files, origin_job_id, origin_job_name FROM job_results
                WHERE result_key = ? ORDER BY created_at DESC, job_id DESC LIMIT ?
                """, [SQLValue(key), SQLValue(limit)]).map { row in
                var result = ReusableResult(key: row[0].string ?? "", jobID: row[1].int ?? 0, jobName: row[2].string ?? "", output: row[3].string,
                                            sha256: row[4].string, size: row[5].int, report: row[6].string, createdAt: row[7].date ?? .distantPast)
                result.files = row[8].string.flatMap { try? JSONDecoder().decode(ReusedFiles.self, from: Data($0.utf8)) }  // unreadable: it answers no picture or package job
                (result.originJobID, result.originJobName) = (row[9].int, row[10].string)
                return result
            }
        }
    }

    /// Forgets one result (its output changed since, or is gone).
    public func forget(key: String, jobID: Int64) async throws {
        try await database.write { session in
            try await session.execute("DELETE FROM job_results WHERE result_key = ? AND job_id = ?", [SQLValue(key), SQLValue(jobID)])
        }
    }
}
