import FarmModel
import Foundation

/// What one pass found and did (`ingest --json`).
public struct IngestReport: Sendable, Codable, Hashable {
    public struct Skipped: Sendable, Codable, Hashable {
        public var path: String
        public var reason: String
    }

    public struct Ingested: Sendable, Codable, Hashable {
        /// The job's id; nil in a dry run.
        public var id: Int64?
        /// The file the job reads (in `processing/` when the config moves files).
        public var path: String
        public var hash: String
    }

    public struct Renamed: Sendable, Codable, Hashable {
        public var path: String
        public var from: String
    }

    public struct Quarantined: Sendable, Codable, Hashable {
        public var path: String
        public var movedTo: String?
        public var reason: String
        /// Why it could not be moved into quarantine (it stays where it is).
        public var notMoved: String?
    }

    public var seen = 0
    /// Of `seen`, the objects (under `s3://` watches); the rest are files.
    public var seenObjects = 0
    public var settling = 0
    /// Of `settling`, the files first seen (or changed) this pass: their settle time starts now (in a dry
    /// run, it would start: a dry run records nothing).
    public var firstSeen = 0
    public var enqueued = 0
    public var duplicates = 0
    public var quarantined = 0
    public var skipped: [Skipped] = []
    public var jobs: [Ingested] = []
    public var quarantine: [Quarantined] = []
    public var duplicateFiles: [Skipped] = []
    /// Files ingested before and since renamed or moved inside the watch folders (`afterEnqueue: leave`):
    /// the library learns the new path, and a job that has not run yet reads the file there.
    public var renamed: [Renamed] = []
    /// Rows for files gone from the watch folders longer than `forgetGoneAfterDays`, forgotten this pass.
    public var forgotten = 0
    /// What `--reingest` named that this pass did not ingest again, and why (the command then exits 1).
    public var notReingested: [Skipped] = []
    /// Object prefixes this pass could not list, and why (the command then exits 1; their objects' rows are
    /// left as they were).
    public var unlisted: [Skipped] = []

    /// Whether `text` is a SHA-256 in hex (a content), not a path.
    public static func isHash(_ text: String) -> Bool {
        text.count == 64 && text.allSatisfy(\.isHexDigit)
    }
    public var dryRun = false
    /// Enqueued files registered in the asset library, and what went wrong registering the others (the pass
    /// then counts as failed: exit 1).
    public var registered = 0
    public var libraryWarnings: [String] = []
    /// Another pass held the lock: this one did nothing.
    public var busy = false

    public init() {}
}

/// Why a pass could not run (exit 1; nothing was marked ingested, so the next pass tries again).
public struct IngestError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// The pass was asked for something it cannot do (a bad `--reingest`): nothing was done.
    public var isUsage = false
    public init(_ description: String, isUsage: Bool = false) {
        self.description = description
        self.isUsage = isUsage
    }
}

extension IngestError {
    /// A template's manifest that fails its checks, every issue in one line ("$.input: ...; $.export: ...").
    public init(invalid: ManifestValidationError) {
        self.init(invalid.issues.map { "\($0.path): \($0.message)" }.joined(separator: "; "))
    }
}
