import Foundation
import PostgresNIO

/// Transactions of plain SQL on a PostgreSQL queue's connections, in its schema (the search path),
/// within the store's deadline.
struct PostgresSQLDatabase: SQLDatabase {
    let store: PostgresJobStore

    var dialect: SQLDialect { .postgres }
    var location: String { store.location }

    /// An error of the transaction's body, carried through unchanged.
    private struct BodyError: Error {
        let error: any Error
    }

    func transaction<T: Sendable>(writing: Bool, _ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        let lanes = store.lanes
        let logger = PostgresJobStore.logger
        do {
            return try await Deadline.run(seconds: store.deadline, heartbeat: Heartbeat(), executor: PostgresLoop.executor) {
                try await lanes.with { connection in
                    try await connection.query(writing ? "BEGIN" : "BEGIN READ ONLY", logger: logger)
                    do {
                        let value: T
                        do {
                            value = try await body(Session(connection: connection))
                        } catch let error as PSQLError {
                            throw error
                        } catch {
                            throw BodyError(error: error)
                        }
                        try await connection.query("COMMIT", logger: logger)
                        return value
                    } catch {
                        _ = try? await connection.query("ROLLBACK", logger: logger)  // the error being thrown is the cause
                        throw error
                    }
                }
            }
        } catch let error as BodyError {
            throw error.error
        } catch let error as JobStoreError {
            throw error
        } catch is Deadline.Expired {
            throw JobStoreError.unavailable(PostgresJobStore.silence(of: location, for: store.deadline))
        } catch {
            throw JobStoreError.unavailable("\(location): \(PostgresJobStore.describe(error))")
        }
    }

    struct Session: SQLSession {
        let connection: PostgresConnection
        var dialect: SQLDialect { .postgres }

        func rows(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            var bindings = PostgresBindings(capacity: binds.count)
            for value in binds {
                switch value {
                case .null: bindings.appendNull()
                case .integer(let v): try bindings.append(v)
                case .real(let v): try bindings.append(v)
                case .text(let s): try bindings.append(s)
                }
            }
            let rows = try await connection.run(PostgresQuery(unsafeSQL: SQLDialect.numbered(sql), binds: bindings))
            return try rows.map { row in
                SQLRow(try row.map { cell -> SQLValue in
                    guard cell.bytes != nil else { return .null }
                    switch cell.dataType {
                    case .int8, .int4, .int2: return .integer(try cell.decode(Int64.self))
                    case .float8, .float4: return .real(try cell.decode(Double.self))
                    case .numeric: return .real(Double(try cell.decode(String.self)) ?? .nan)
                    case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
                    default: return .text(try cell.decode(String.self))
                    }
                })
            }
        }
    }
}

extension PostgresJobStore {
    /// The tables beside the jobs (the asset library's), on the store's connections.
    public var database: any SQLDatabase {
        get throws(JobStoreError) { PostgresSQLDatabase(store: self) }
    }
}
