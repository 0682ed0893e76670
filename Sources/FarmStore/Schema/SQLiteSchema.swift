import FarmModel
import GRDB

/// The SQLite queue's schema, as GRDB migrations. A migration is never edited once released: a change is
/// a new one (v5 rebuilds the jobs table, which is how SQLite changes a CHECK constraint).
extension SQLiteJobStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 jobs") { db in
            try db.execute(sql: """
                CREATE TABLE jobs (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    name TEXT NOT NULL,
                    manifest TEXT NOT NULL,
                    base_directory TEXT NOT NULL,
                    output_roots TEXT NOT NULL DEFAULT '[]',
                    state TEXT NOT NULL CHECK (state IN ('queued','running','succeeded','failed','cancelled','dead')),
                    priority INTEGER NOT NULL DEFAULT 0,
                    attempt INTEGER NOT NULL DEFAULT 0,
                    max_attempts INTEGER NOT NULL,
                    run_at REAL NOT NULL,
                    unique_key TEXT,
                    timeout REAL,
                    lease_owner TEXT,
                    lease_token TEXT,
                    lease_expires_at REAL,
                    progress REAL,
                    phase TEXT,
                    worker_pid INTEGER,
                    created_at REAL NOT NULL,
                    started_at REAL,
                    finished_at REAL,
                    updated_at REAL NOT NULL,
                    result TEXT,
                    errors TEXT NOT NULL DEFAULT '[]'
                );
                CREATE INDEX jobs_claimable ON jobs(priority DESC, run_at, id) WHERE state = 'queued';
                CREATE INDEX jobs_leases ON jobs(lease_expires_at) WHERE state = 'running';
                CREATE UNIQUE INDEX jobs_unique_live ON jobs(unique_key)
                    WHERE unique_key IS NOT NULL AND state IN ('queued', 'running');
                """)
        }
        migrator.registerMigration("v2 pruning") { db in
            try db.execute(sql: "CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at IS NOT NULL")
        }
        migrator.registerMigration("v3 library") { db in
            for statement in LibrarySchema.statements(.sqlite) { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v4 coordinators") { db in
            for statement in CoordinatorRegistry.statements(.sqlite) { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v5 dependencies") { db in
            // A new state (`waiting`) changes the state column's CHECK: SQLite rebuilds the table for it.
            let sequence = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'jobs'")
            let kept = """
                id, name, manifest, base_directory, output_roots, state, priority, attempt, max_attempts, run_at, unique_key, timeout, \
                lease_owner, lease_token, lease_expires_at, progress, phase, worker_pid, created_at, started_at, finished_at, updated_at, \
                result, errors
                """
            try db.execute(sql: """
                CREATE TABLE jobs_v5 (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    name TEXT NOT NULL,
                    manifest TEXT NOT NULL,
                    base_directory TEXT NOT NULL,
                    output_roots TEXT NOT NULL DEFAULT '[]',
                    state TEXT NOT NULL CHECK (state IN ('waiting','queued','running','succeeded','failed','cancelled','dead')),
                    priority INTEGER NOT NULL DEFAULT 0,
                    attempt INTEGER NOT NULL DEFAULT 0,
                    max_attempts INTEGER NOT NULL,
                    run_at REAL NOT NULL,
                    unique_key TEXT,
                    timeout REAL,
                    lease_owner TEXT,
                    lease_token TEXT,
                    lease_expires_at REAL,
                    progress REAL,
                    phase TEXT,
                    worker_pid INTEGER,
                    created_at REAL NOT NULL,
                    started_at REAL,
                    finished_at REAL,
                    updated_at REAL NOT NULL,
                    result TEXT,
                    errors TEXT NOT NULL DEFAULT '[]',
                    after_ids TEXT NOT NULL DEFAULT '[]',
                    after_policy TEXT,
                    waiting_for INTEGER NOT NULL DEFAULT 0,
                    blocked_by INTEGER
                );
                INSERT INTO jobs_v5 (\(kept)) SELECT \(kept) FROM jobs;
                DROP TABLE jobs;
                ALTER TABLE jobs_v5 RENAME TO jobs;
                CREATE INDEX jobs_claimable ON jobs(priority DESC, run_at, id) WHERE state = 'queued';
                CREATE INDEX jobs_leases ON jobs(lease_expires_at) WHERE state = 'running';
                CREATE UNIQUE INDEX jobs_unique_live ON jobs(unique_key)
                    WHERE unique_key IS NOT NULL AND state IN ('waiting', 'queued', 'running');
                CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at IS NOT NULL;
                CREATE INDEX jobs_keys ON jobs(unique_key, id) WHERE unique_key IS NOT NULL;
                CREATE INDEX jobs_blocked ON jobs(blocked_by) WHERE blocked_by IS NOT NULL;
                CREATE TABLE job_dependencies (
                    depends_on INTEGER NOT NULL,
                    job_id INTEGER NOT NULL,
                    PRIMARY KEY (depends_on, job_id)
                ) WITHOUT ROWID;
                """)
            // Ids are never reused, pruned ones included.
            if let sequence { try db.execute(sql: "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'jobs'", arguments: [sequence]) }
        }
        migrator.registerMigration("v6 placement") { db in
            // What a claimer must provide, and the library assets the job reads (present on its host).
            try db.execute(sql: "ALTER TABLE jobs ADD COLUMN requires TEXT")
            try db.execute(sql: "ALTER TABLE jobs ADD COLUMN assets TEXT")
        }
        migrator.registerMigration("v7 webhooks") { db in
            for statement in WebhookSchema.statements(.sqlite) { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v8 object uploads") { db in
            for statement in UploadSchema.statements(.sqlite) { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v9 object locations") { db in
            // An asset's location that is an object (host '*'): its entity tag says whether it changed.
            try db.execute(sql: "ALTER TABLE asset_locations ADD COLUMN etag TEXT")
        }
        migrator.registerMigration("v10 chunked exports") { db in
            for statement in ChunkSchema.statements(.sqlite) { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v11 reusable results") { db in
            for statement in ResultRecords.statements(.sqlite) { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v12 pictures") { db in
            for statement in PictureSchema.statements(.sqlite) { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v13 queue pauses and history") { db in
            for statement in QueuePauses.statements(.sqlite) + QueueHistory.statements(.sqlite) + CoordinatorRegistry.providesStatements(.sqlite) {
                try db.execute(sql: statement)
            }
        }
        migrator.registerMigration("v14 waiting jobs") { db in
            for statement in JobIndexes.statements("") + OutputClaims.statements(.sqlite) { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v15 webhook events") { db in
            for statement in WebhookEventSchema.statements { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v16 webhook events keep their job in its row") { db in
            for statement in WebhookEventSchema.nullableJobStatements { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v17 jobs counted by their indexes") { db in
            for statement in JobCounts.statements { try db.execute(sql: statement) }
        }
        migrator.registerMigration("v18 assets' verdicts") { db in
            for statement in LibrarySchema.verdictStatements("") { try db.execute(sql: statement) }
        }
        return migrator
    }
}

/// Indexes on the jobs that both backends make.
enum JobIndexes {
    /// The jobs waiting (for their dependencies, or a chunked export for its chunks): the overview, the
    /// console's waiting tab and a coordinator's tending of chunked exports find them without reading the
    /// whole queue. Only a waiting row is in it, so claiming and finishing do not pay for it.
    /// And the assets a job made, for its page; and the host that ran a job's latest attempt, kept when it
    /// ends (the console lists and filters jobs by it).
    static func statements(_ prefix: String) -> [String] {
        ["CREATE INDEX jobs_waiting ON \(prefix)jobs (id) WHERE state = 'waiting'",
         // A result copied from a copy names the job that did the work.
         "ALTER TABLE \(prefix)job_results ADD COLUMN origin_job_id BIGINT",
         "ALTER TABLE \(prefix)job_results ADD COLUMN origin_job_name TEXT",
         "ALTER TABLE \(prefix)jobs ADD COLUMN host TEXT",
         "CREATE INDEX asset_representations_job ON \(prefix)asset_representations (job_id)"]
    }
}

/// The jobs counted by state without reading every row (SQLite; 34 ms of 100,000 rows before): the
/// overview, the jobs list's tabs, `/metrics`, `/readyz` and the queue's samples read them. Every state but
/// `succeeded` has a partial index of its own (waiting, queued and running had them for claiming and
/// leases; failed, cancelled and dead get theirs here, written only when a job enters or leaves one of
/// them), and every job is in one small index that nothing changes after the job is made; `succeeded`, the
/// bulk of an old queue, is what is left. Claiming and succeeding write no page more than before. The lists
/// of one state use the same partial indexes (with the states written as literals: `SQLiteJobStore.filter`).
enum JobCounts {
    /// The states counted by their own index.
    static let indexed = JobState.allCases.filter { $0 != .succeeded }

    static let statements = [
        "CREATE INDEX jobs_made ON jobs (created_at)",
        "CREATE INDEX jobs_failed ON jobs (id) WHERE state = 'failed'",
        "CREATE INDEX jobs_cancelled ON jobs (id) WHERE state = 'cancelled'",
        "CREATE INDEX jobs_dead ON jobs (id) WHERE state = 'dead'",
    ]

    /// One row: every job, then each indexed state's count, in `indexed`'s order.
    static let read = "SELECT (SELECT COUNT(*) FROM jobs)"
        + indexed.map { ", (SELECT COUNT(*) FROM jobs WHERE state = '\($0.rawValue)')" }.joined()

    /// The counts of the row `read` gives, the states no job is in left out.
    static func counts(_ row: Row) -> [JobState: Int] {
        let all: Int = row[0]
        var counts: [JobState: Int] = [:]
        for (i, state) in indexed.enumerated() {
            let n: Int = row[i + 1]
            if n > 0 { counts[state] = n }
        }
        let succeeded = all - counts.values.reduce(0, +)
        if succeeded > 0 { counts[.succeeded] = succeeded }
        return counts
    }
}
