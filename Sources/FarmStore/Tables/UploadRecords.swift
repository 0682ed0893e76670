import FarmModel
import Foundation
import GRDB
import PostgresNIO

/// The multipart upload an attempt began for one of its outputs bound for object storage, recorded with
/// the job as soon as the worker began it: the next attempt goes on with it (a worker killed while
/// sending parts loses none of what it sent), and a job that ends without success has it aborted, so no
/// upload is left open.
public struct RecordedUpload: Sendable, Hashable {
    public var jobID: Int64
    /// `s3://BUCKET/KEY`.
    public var address: String
    public var uploadID: String
    public var attempt: Int

    public init(jobID: Int64, address: String, uploadID: String, attempt: Int) {
        self.jobID = jobID
        self.address = address
        self.uploadID = uploadID
        self.attempt = attempt
    }
}

enum UploadSchema {
    static func statements(_ dialect: SQLDialect) -> [String] {
        let (integer, real, prefix) = switch dialect {
        case .sqlite: ("INTEGER", "REAL", "")
        case .postgres: ("BIGINT", "DOUBLE PRECISION", "{schema}.")
        }
        return ["""
            CREATE TABLE \(prefix)object_uploads (
                job_id \(integer) NOT NULL,
                address TEXT NOT NULL,
                upload_id TEXT NOT NULL,
                attempt \(integer) NOT NULL,
                recorded_at \(real) NOT NULL,
                PRIMARY KEY (job_id, address)
            )
            """]
    }
}

extension SQLiteJobStore {
    public func recordUpload(_ upload: RecordedUpload, token: String, at now: Date) async throws(JobStoreError) -> Bool {
        try await write { db in
            try db.execute(sql: """
                INSERT INTO object_uploads (job_id, address, upload_id, attempt, recorded_at)
                SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ? AND state = 'running' AND lease_token = ?)
                ON CONFLICT (job_id, address) DO UPDATE SET upload_id = excluded.upload_id, attempt = excluded.attempt,
                    recorded_at = excluded.recorded_at
                """, arguments: [upload.jobID, upload.address, upload.uploadID, upload.attempt, now.timeIntervalSince1970, upload.jobID, token])
            return db.changesCount > 0
        }
    }

    public func recordedUploads(of id: Int64) async throws(JobStoreError) -> [RecordedUpload] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT address, upload_id, attempt FROM object_uploads WHERE job_id = ? ORDER BY address", arguments: [id])
                .map { RecordedUpload(jobID: id, address: $0[0], uploadID: $0[1], attempt: $0[2]) }
        }
    }

    public func forgetUploads(_ uploads: [RecordedUpload]) async throws(JobStoreError) {
        guard !uploads.isEmpty else { return }
        try await write { db in
            for upload in uploads {
                try db.execute(sql: "DELETE FROM object_uploads WHERE job_id = ? AND address = ? AND upload_id = ?",
                               arguments: [upload.jobID, upload.address, upload.uploadID])
            }
        }
    }
}

extension PostgresJobStore {
    public func recordUpload(_ upload: RecordedUpload, token: String, at now: Date) async throws(JobStoreError) -> Bool {
        try await run("""
            INSERT INTO object_uploads (job_id, address, upload_id, attempt, recorded_at)
            SELECT \(upload.jobID), \(upload.address), \(upload.uploadID), \(upload.attempt), \(now.timeIntervalSince1970)
            WHERE EXISTS (SELECT 1 FROM \(unescaped: table) WHERE id = \(upload.jobID) AND state = 'running' AND lease_token = \(token))
            ON CONFLICT (job_id, address) DO UPDATE SET upload_id = excluded.upload_id, attempt = excluded.attempt, recorded_at = excluded.recorded_at
            RETURNING 1
            """).count > 0
    }

    public func recordedUploads(of id: Int64) async throws(JobStoreError) -> [RecordedUpload] {
        try await run("SELECT address, upload_id, attempt FROM object_uploads WHERE job_id = \(id) ORDER BY address") { row in
            let (address, uploadID, attempt) = try row.decode((String, String, Int64).self)
            return RecordedUpload(jobID: id, address: address, uploadID: uploadID, attempt: Int(attempt))
        }
    }

    public func forgetUploads(_ uploads: [RecordedUpload]) async throws(JobStoreError) {
        for upload in uploads {
            _ = try await run("DELETE FROM object_uploads WHERE job_id = \(upload.jobID) AND address = \(upload.address) AND upload_id = \(upload.uploadID)")
        }
    }
}
