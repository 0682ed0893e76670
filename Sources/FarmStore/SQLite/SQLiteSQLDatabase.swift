import Foundation
import GRDB
import Synchronization

/// Transactions of plain SQL on a queue's SQLite file, on a connection of their own (so that a
/// transaction whose body awaits never holds the job store's connection), opened at the first
/// transaction: IMMEDIATE, committed durably; one at a time in this process, and SQLite's lock (with its
/// busy timeout) between processes. A read of one statement goes to the job store's connection
/// (`single`): a command that only looks something up (`submit` asking whether its input is an asset)
/// opens no second connection, which cost it 4.5 ms, a sixth of its run.
final class SQLiteSQLDatabase: SQLDatabase {
    let path: String
    private let busyTimeout: Double
    private let single: @Sendable (String, [SQLValue]) async throws -> [SQLRow]
    /// The connection once opened; closed for good with its store.
    private let opened = Mutex<(queue: DatabaseQueue?, closed: Bool)>((nil, false))
    private let turnstile = Turnstile()

    var dialect: SQLDialect { .sqlite }
    var location: String { path }

    init(path: String, busyTimeout: Double, single: @escaping @Sendable (String, [SQLValue]) async throws -> [SQLRow]) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.single = single
    }

    /// The connection, opened when first needed.
    private func queue() throws(JobStoreError) -> DatabaseQueue {
        try opened.withLock { (state: inout (queue: DatabaseQueue?, closed: Bool)) throws(JobStoreError) -> DatabaseQueue in
            if let queue = state.queue { return queue }
            guard !state.closed else { throw .unavailable("\(path): the queue was closed") }
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
                let made = try DatabaseQueue(path: path, configuration: configuration)
                state.queue = made
                return made
            } catch {
                throw .unavailable("\(path): cannot open the library: \(SQLiteJobStore.describe(error))")
            }
        }
    }

    /// Closes the connection if it was opened; a later transaction fails, as the store's calls do.
    func close() {
        opened.withLock { state in
            try? state.queue?.close()  // fails only with statements still running, which a closing store has none of
            state = (nil, true)
        }
    }

    func readRows(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await single(sql, binds)
    }

    func transaction<T: Sendable>(writing: Bool, _ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        await turnstile.enter()
        let session: Session
        do {
            session = Session(queue: try queue(), path: path)
        } catch {
            await turnstile.leave()
            throw error
        }
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
            let arguments = SQLiteSQLDatabase.arguments(binds)
            do {
                return try await queue.writeWithoutTransaction { db in try SQLiteSQLDatabase.rows(db, sql, arguments) }
            } catch {
                throw SQLiteJobStore.storeError(error, path)
            }
        }
    }

    static func arguments(_ binds: [SQLValue]) -> StatementArguments {
        StatementArguments(binds.map { value -> (any DatabaseValueConvertible)? in
            switch value {
            case .null: nil
            case .integer(let v): v
            case .real(let v): v
            case .text(let s): s
            }
        })
    }

    /// A statement's rows as the library reads them.
    static func rows(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> [SQLRow] {
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
}
