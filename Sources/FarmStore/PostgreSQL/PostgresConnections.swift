import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// How a PostgreSQL store reaches its server: configurations, single connections (the schema check,
/// the listener), the lanes its statements run on, and errors in words.
extension PostgresJobStore {
    static func clientConfiguration(_ server: PostgresLocation) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socket = server.socketPath {
            configuration = .init(unixSocketPath: socket, username: server.user, password: server.password, database: server.database)
        } else {
            let tls: PostgresClient.Configuration.TLS = switch server.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
            configuration = .init(host: server.host, port: server.port, username: server.user, password: server.password,
                                  database: server.database, tls: tls)
        }
        configuration.options.connectTimeout = .milliseconds(Int64(server.connectTimeout * 1000))
        configuration.options.additionalStartupParameters = Self.startupParameters(server)
        return configuration
    }

    /// The application's name, and the schema as the search path: the prepared statements name their
    /// table unqualified.
    static func startupParameters(_ server: PostgresLocation) -> [(String, String)] {
        [("application_name", server.applicationName), ("search_path", "\"\(server.schema)\"")]
    }

    /// One connection outside the pool (the listener), closed after `body`.
    static func withConnection<T: Sendable>(_ server: PostgresLocation,
                                            _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T) async throws(JobStoreError) -> T {
        let connection = try await connect(server)
        do {
            let value = try await body(connection, logger)
            try? await connection.close()  // closing a connection being given up: nothing to lose
            return value
        } catch {
            try? await connection.close()  // closing a connection being given up: nothing to lose
            throw (error as? JobStoreError) ?? .unavailable("\(server): \(describe(error))")
        }
    }

    /// A new connection, or an error that names the server and says why not.
    static func connect(_ server: PostgresLocation) async throws(JobStoreError) -> PostgresConnection {
        let logger = Self.logger
        do {
            var configuration: PostgresConnection.Configuration
            if let socket = server.socketPath {
                configuration = .init(unixSocketPath: socket, username: server.user, password: server.password, database: server.database)
            } else {
                let tls: PostgresConnection.Configuration.TLS = switch server.tls {
                case .disable: .disable
                case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
                case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
                }
                configuration = .init(host: server.host, port: server.port, username: server.user, password: server.password,
                                      database: server.database, tls: tls)
            }
            configuration.options.connectTimeout = .milliseconds(Int64(server.connectTimeout * 1000))
            configuration.options.additionalStartupParameters = Self.startupParameters(server)
            let configured = configuration
            // On the store's event loop, as its calls run: the limit is on the server's answer, and a task
            // pool whose threads are all busy (a caller's blocking work beside it) cannot spend it before
            // the connection is even asked for.
            return try await Deadline.run(seconds: server.connectTimeout, executor: PostgresLoop.executor, {
                try await PostgresConnection.connect(configuration: configured, id: 1, logger: logger)
            }, late: { connection in try? await connection.close() })  // a connection that came too late: nothing to lose
        } catch let error as JobStoreError {
            throw error
        } catch is Deadline.Expired {
            throw .unavailable("\(server): cannot connect: no answer within \(Self.format(server.connectTimeout)) s")
        } catch {
            throw .unavailable("\(server): cannot connect: \(describe(error))")
        }
    }

    /// The server's own message when there is one (wrong password, missing database, constraint),
    /// else what failed on the way (connection refused, closed), in words.
    static func describe(_ error: any Error) -> String {
        if let e = error as? PSQLError {
            if let message = e.serverInfo?[.message] {
                return message + (e.serverInfo?[.constraintName].map { " (\($0))" } ?? "")
            }
            let what: String = switch e.code {
            case .connectionError: "cannot reach the server"
            case .serverClosedConnection: "the server closed the connection"
            case .clientClosedConnection, .poolClosed: "the connection was closed"
            case .sslUnsupported: "the server does not offer TLS (sslmode=require)"
            case .queryCancelled: "the query was cancelled"
            case .authMechanismRequiresPassword: "the server asks for a password (give one in the URL or PGPASSWORD)"
            case .unsupportedAuthMechanism: "the server asks for an authentication method this program does not support"
            default: e.code.description
            }
            return e.underlying.map { "\(what): \(describe($0))" } ?? what
        }
        if let e = error as? NIOConnectionError {
            let reasons = e.connectionErrors.map { describe($0.error) } + (e.dnsAAAAError.map { [describe($0)] } ?? [])
                + (e.dnsAError.map { [describe($0)] } ?? [])
            return reasons.isEmpty ? "cannot connect to \(e.host):\(e.port)" : Array(Set(reasons)).sorted().joined(separator: "; ")
        }
        if let e = error as? IOError { return String(cString: strerror(e.errnoCode)) }
        return String(describing: error)
    }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}

/// The event loop the queue's pooled connections live on, one thread for the process, and the calls'
/// task executor: a call's task runs on the thread where its connection's answers arrive, so each
/// answer resumes it in place. On the task pool each statement cost several thread wake-ups (the call's
/// task started and its caller resumed, each answer handed over): claim+complete ran at 0.86 of a raw
/// SQL loop's rate, 1.03 here (bench/README.md). A call's body only runs statements and reads
/// their rows; it never blocks the thread.
enum PostgresLoop {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    static let executor = EventLoopExecutor(group.next())
}

/// A task executor that runs its jobs on a NIO event loop.
final class EventLoopExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Something that runs one statement.
protocol Queryable: Sendable {
    func run(_ query: PostgresQuery) async throws -> [PostgresRow]
}

/// Where a store's statements run: a pool (a coordinator: many tasks at once, reconnection), or the one
/// connection a short command opened to check the schema (no second connection to make and
/// authenticate before its first statement), one call at a time.
enum Lanes: Sendable {
    case pool(PostgresClient)
    case single(PostgresConnection, Turnstile)

    func with<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        switch self {
        case .pool(let client):
            return try await client.withConnection { connection in try await body(connection) }
        case let .single(connection, turnstile):
            await turnstile.enter()
            do {
                let value = try await body(connection)
                await turnstile.leave()
                return value
            } catch {
                await turnstile.leave()
                throw error
            }
        }
    }
}

/// One caller at a time, the others waiting in order.
actor Turnstile {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func enter() async {
        if busy {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            busy = true
        }
    }

    func leave() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}

extension PostgresConnection: Queryable {
    /// Collects the rows on the connection's event loop and hands them over once (the row sequence's
    /// async iteration costs a thread switch per step, which measured as much as the query).
    func run(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let result: EventLoopFuture<PostgresQueryResult> = self.query(query, logger: PostgresJobStore.logger)
        let rows = try await result.get().rows
        Heartbeat.current?.beat()
        return rows
    }

    /// A prepared statement's rows (prepared once per connection, then only bound and run), each answer a
    /// beat of the call's heartbeat as `run`'s are.
    func rows<S: PostgresPreparedStatement>(of statement: S) async throws -> [PostgresRow] where S.Row == PostgresRow {
        var rows: [PostgresRow] = []
        for try await row in try await execute(statement, logger: PostgresJobStore.logger) { rows.append(row) }
        Heartbeat.current?.beat()
        return rows
    }
}
