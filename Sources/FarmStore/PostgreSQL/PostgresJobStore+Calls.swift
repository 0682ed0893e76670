import FarmModel
import Foundation
import PostgresNIO

/// How the PostgreSQL queue talks to its server: statements and transactions on the pool, each within the
/// store's deadline, errors named with the server.
extension PostgresJobStore {
    /// One statement on a pooled connection (autocommit), within the deadline.
    @discardableResult
    func run(_ query: PostgresQuery) async throws(JobStoreError) -> [PostgresRow] {
        try await call { [lanes] in try await lanes.with { c in try await c.run(query) } }
    }

    /// A prepared statement (prepared once per connection, then only bound and run).
    func execute<S: PostgresPreparedStatement>(_ statement: S) async throws(JobStoreError) -> [PostgresRow] where S.Row == PostgresRow {
        try await call { [lanes] in try await lanes.with { c in try await c.rows(of: statement) } }
    }

    /// One statement, each row decoded.
    func run<T: Sendable>(_ query: PostgresQuery, _ decode: @escaping @Sendable (PostgresRow) throws -> T) async throws(JobStoreError) -> [T] {
        try await call { [lanes] in try await lanes.with { c in try await c.run(query).map(decode) } }
    }

    /// A transaction on one pooled connection, committed when `body` returns, rolled back when it throws.
    /// A deadlock (two transactions locking the same jobs in different orders, as dependents are released
    /// down a graph) is tried again.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(JobStoreError) -> T {
        try await call { [self, lanes] in
            var attempt = 0
            while true {
                attempt += 1
                do {
                    return try await lanes.with { connection in
                        try await connection.query("BEGIN", logger: Self.logger)
                        do {
                            let value = try await body(connection)
                            try await connection.query("COMMIT", logger: Self.logger)
                            if self.recorded.withLock({ $0.remove(ObjectIdentifier(connection)) }) != nil { self.outboxSignal.signal() }
                            return value
                        } catch {
                            self.recorded.withLock { _ = $0.remove(ObjectIdentifier(connection)) }
                            _ = try? await connection.query("ROLLBACK", logger: Self.logger)  // the error being thrown is the cause
                            throw error
                        }
                    }
                } catch let error as PSQLError where attempt < 5 && ["40P01", "40001"].contains(error.serverInfo?[.sqlState] ?? "") {
                    try await Task.sleep(for: .milliseconds(Int.random(in: 1...(10 * attempt))))
                }
            }
        }
    }

    /// Runs `body` with this store's deadline on the server's silence (each statement's answer starts it
    /// again), on the connections' event loop (`PostgresLoop`); errors become `JobStoreError`s naming the
    /// server.
    func call<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws(JobStoreError) -> T {
        do {
            return try await Deadline.run(seconds: deadline, heartbeat: Heartbeat(), executor: PostgresLoop.executor, body)
        } catch let error as JobStoreError {
            throw error
        } catch is Deadline.Expired {
            throw .unavailable(Self.silence(of: location, for: deadline))
        } catch {
            throw .unavailable("\(location): \(Self.describe(error))")
        }
    }

    /// What a call the server stopped answering says.
    static func silence(of location: String, for seconds: Double) -> String {
        "\(location): no answer within \(Int(seconds)) s (is the server up and reachable, or another transaction holding a lock this one waits for?)"
    }
}
