import Foundation
import GRDB

/// Transactions of plain SQL on a queue's SQLite file, on a connection of their own (so that a
/// transaction whose body awaits never holds the job store's connection): IMMEDIATE, committed durably;
/// one at a time in this process, and SQLite's lock (with its busy timeout) between processes.
final class SQLiteSQLDatabase: SQLDatabase {
    let path: String
    private let queue: DatabaseQueue
    private let turnstile = Turnstile()

    var dialect: SQLDialect { .sqlite }
    var location: String { path }

    init(path: String, busyTimeout: Double) throws(JobStoreError) {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "mediafarm-library"
        // A transaction spans several calls, each its own hop to the connection's queue.
        configuration.allowsUnsafeTransactions = true
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try SQLiteJobStore.keepWriteAheadLog(db)
        }
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw .unavailable("\(path): cannot open the library: \(SQLiteJobStore.describe(error))")
        }
    }

    /// Closes the connection (a later transaction fails with SQLite's "database is closed").
    func close() {
        try? queue.close()  // fails only with statements still running, which a closing store has none of
    }

    func transaction<T: Sendable>(writing: Bool, _ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        await turnstile.enter()
        let session = Session(queue: queue, path: path)
        do {
            try await session.execute(writing ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
            do {
                let value = try await body(session)
                try await session.execute("COMMIT")
                await turnstile.leave()
                return value
            } catch {
                _ = try? await session.execute("ROLLBACK")  // the error being thrown is the cause
                throw error
            }
        } catch {
            await turnstile.leave()
            throw error
        }
    }

    struct Session: SQLSession {
        let queue: DatabaseQueue
        let path: String
        var dialect: SQLDialect { .sqlite }

        func rows(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            let arguments = StatementArguments(binds.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .null: nil
                case .integer(let v): v
                case .real(let v): v
                case .text(let s): s
                }
            })
            do {
                return try await queue.writeWithoutTransaction { db in
                    let statement = try db.makeStatement(sql: sql)
                    return try Row.fetchAll(statement, arguments: arguments).map { row in
                        SQLRow(row.databaseValues.map { value in
                            switch value.storage {
                            case .null: .null
                            case .int64(let v): .integer(v)
                            case .double(let v): .real(v)
                            case .string(let s): .text(s)
                            case .blob(let d): .text(String(decoding: d, as: UTF8.self))
                            }
                        })
                    }
                }
            } catch {
                throw SQLiteJobStore.storeError(error, path)
            }
        }
    }
}
