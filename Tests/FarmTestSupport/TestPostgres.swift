import Foundation

/// PostgreSQL servers for tests. `script/test` starts one throwaway cluster for the whole run and gives
/// its URL in `MEDIAFARM_TEST_POSTGRES`; a test that stops or restarts its server starts a private one
/// (`Cluster`). A missing server is a test failure, never a skip.
public enum TestPostgres {
    /// The shared server's URL (with its password), or an error saying how to get one.
    public static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["MEDIAFARM_TEST_POSTGRES"], !url.isEmpty else {
            throw FixtureError("MEDIAFARM_TEST_POSTGRES is not set: run the tests through script/test, which starts a PostgreSQL server")
        }
        return url
    }

    /// The shared server's URL with a schema of its own: each test gets an empty queue.
    public static func url(freshSchema: Bool) throws -> String {
        let base = try url()
        guard freshSchema else { return base }
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
        return base + (base.contains("?") ? "&" : "?") + "schema=\(schema)"
    }

    /// A cluster of the test's own, in a temporary folder (`script/pg-cluster`); stopped and removed
    /// by `stop()` or when released.
    public final class Cluster: @unchecked Sendable {
        public let folder: String
        public let url: String
        public let dataDirectory: String
        public let port: Int

        /// - Parameter listen: the addresses the server listens on (other network namespaces need theirs).
        public init(listen: String = "127.0.0.1") throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-pg-\(UUID().uuidString.prefix(8))").path
            let result = try ProcessRunner.spawn(TestPaths.packageRoot.appendingPathComponent("script/pg-cluster").path,
                                               ["start", folder, "", listen])
            guard result.status == 0 else { throw FixtureError("script/pg-cluster start failed: \(result.stderr)") }
            var values: [String: String] = [:]
            for line in result.stdout.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { values[parts[0]] = parts[1] }
            }
            guard let url = values["MEDIAFARM_TEST_POSTGRES"], let data = values["MEDIAFARM_TEST_PGDATA"],
                  let port = values["PGPORT"].flatMap(Int.init) else {
                throw FixtureError("script/pg-cluster printed no URL: \(result.stdout)")
            }
            self.url = url
            self.dataDirectory = data
            self.port = port
        }

        deinit { stop() }

        /// pg_ctl as the server's owner.
        @discardableResult
        public func control(_ arguments: [String]) throws -> ProcessResult {
            let pgctl = try Self.binary("pg_ctl")
            let command = getuid() == 0 ? ["runuser", "-u", "postgres", "--", pgctl] : [pgctl]
            let result = try ProcessRunner.spawn(command[0] == "runuser" ? "/usr/sbin/runuser" : pgctl,
                                               Array(command.dropFirst()) + ["-D", dataDirectory, "-w", "-t", "60"] + arguments)
            guard result.status == 0 else { throw FixtureError("pg_ctl \(arguments.joined(separator: " ")) failed: \(result.stderr)") }
            return result
        }

        /// Stops the server at once (its clients see their connections drop), leaving the data.
        public func kill() throws { try control(["-m", "immediate", "stop"]) }

        public func start() throws { try control(["-l", folder + "/server.log", "start"]) }

        public func stop() {
            _ = try? ProcessRunner.spawn(TestPaths.packageRoot.appendingPathComponent("script/pg-cluster").path, ["stop", folder])
        }

        static func binary(_ name: String) throws -> String {
            let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted {
                $0.compare($1, options: .numeric) == .orderedAscending
            }
            guard let version = versions.last else { throw FixtureError("PostgreSQL is not installed (script/bootstrap installs it)") }
            return "/usr/lib/postgresql/\(version)/bin/\(name)"
        }
    }
}
