import PostgresNIO

// The hot statements, prepared once per connection.

/// queued -> running for up to `limit` jobs: what `JobStateMachine`'s claim sets (the attempt counted,
/// a fresh token, progress 0, phase "starting"; the conformance suite holds both backends to the same
/// result), in priority, runAt, id order, skipping rows other claimers hold. Prepared: planning it
/// cost as much as running it. `jobs` is found through the connection's search path (the schema).
struct ClaimStatement: PostgresPreparedStatement {
    static let sql = """
        WITH picked AS (
            SELECT id FROM jobs WHERE state = 'queued' AND run_at <= $1 AND \(runnable(provides: "$5", host: "$6"))
                AND \(QueuePauses.notPaused(host: "$6", owner: "$3"))
            ORDER BY priority DESC, run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
        UPDATE jobs AS j
        SET state = 'running', attempt = j.attempt + 1, lease_owner = $3, lease_token = replace(gen_random_uuid()::text, '-', ''),
            lease_expires_at = $4, started_at = $1, finished_at = NULL, progress = 0, phase = 'starting', worker_pid = NULL,
            updated_at = $1, revision = j.revision + 1, host = split_part($3, ':', 1)
        FROM picked WHERE j.id = picked.id
        RETURNING \(PostgresJobStore.columns("j"))
        """
    static let bindingDataTypes: [PostgresDataType] = [.float8, .int8, .text, .float8, .text, .text]
    /// A queued job the claimer can run: it provides (`provides`, the placeholder of a JSON array) every
    /// capability the job requires, and its host (`host`) holds every asset the job reads. Tables are
    /// found through the connection's search path.
    static func runnable(provides: String, host: String) -> String {
        """
        (requires IS NULL OR requires::jsonb <@ \(provides)::jsonb)
        AND (assets IS NULL OR NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(assets::jsonb) AS a(id) WHERE NOT EXISTS (
            SELECT 1 FROM asset_locations AS l WHERE l.asset_id = a.id AND l.host IN (\(host), '*') AND l.state = 'present')))
        """
    }

    let now: Double
    let limit: Int64
    let owner: String
    let expires: Double
    let provides: String
    let host: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(now)
        bindings.append(limit)
        bindings.append(owner)
        bindings.append(expires)
        bindings.append(provides)
        bindings.append(host)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// running -> succeeded where the token still holds: what `JobStateMachine`'s succeed sets; and in the
/// same statement, what it means for the jobs waiting for this one: one dependency fewer, `ready`
/// (queued, runAt at the latest now) for those whose last it was; and the webhook event with its
/// deliveries, when anyone wants it. After the job's columns come the count of jobs made due, then the
/// count of deliveries recorded. Prepared.
struct SucceedStatement: PostgresPreparedStatement {
    static let sql = PostgresJobStore.recording(after: """
        WITH done AS (
            UPDATE jobs SET state = 'succeeded', result = $3, progress = 1, phase = 'done', finished_at = $4, lease_owner = NULL,
                host = COALESCE(split_part(lease_owner, ':', 1), host),
                lease_token = NULL, lease_expires_at = NULL, worker_pid = NULL, updated_at = $4, revision = revision + 1
            WHERE id = $1 AND state = 'running' AND lease_token = $2
            RETURNING \(PostgresJobStore.columns()), notify),
        released AS (
            UPDATE jobs AS d SET waiting_for = d.waiting_for - 1,
                state = CASE WHEN d.waiting_for <= 1 THEN 'queued' ELSE 'waiting' END,
                run_at = CASE WHEN d.waiting_for <= 1 THEN GREATEST(d.run_at, $4) ELSE d.run_at END,
                updated_at = $4, revision = d.revision + 1
            FROM job_dependencies AS e, done
            WHERE e.depends_on = done.id AND d.id = e.job_id AND d.state = 'waiting'
            RETURNING d.state),
        """, source: "done", type: "'job.succeeded'", now: "$4") + """
        SELECT \(PostgresJobStore.columns("done")), (SELECT COUNT(*) FROM released WHERE released.state = 'queued'),
            (SELECT COUNT(*) FROM sent) FROM done
        """
    static let bindingDataTypes: [PostgresDataType] = [.int8, .text, .text, .float8]

    let id: Int64
    let token: String
    let result: String?
    let now: Double

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(id)
        bindings.append(token)
        bindings.append(result)
        bindings.append(now)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}
