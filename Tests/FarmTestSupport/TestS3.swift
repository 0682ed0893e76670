import Foundation

/// S3-compatible servers for tests (moto, which checks signatures). `script/test` starts one for the whole
/// run and gives its endpoint and a key in `MEDIAFARM_TEST_S3`, `MEDIAFARM_TEST_S3_KEY` and
/// `MEDIAFARM_TEST_S3_SECRET`; a test that stops its server starts a private one (`Server`). A missing
/// server is a test failure, never a skip.
public enum TestS3 {
    public struct Endpoint: Sendable {
        public var url: String
        public var accessKey: String
        public var secret: String

        /// The environment a `mediafarm` process needs to reach this server (path-style addressing).
        public var environment: [String: String] {
            ["MEDIAFARM_S3_ENDPOINT": url, "AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secret,
             "AWS_REGION": "us-east-1"]
        }
    }

    /// The shared server, or an error saying how to get one.
    public static func shared() throws -> Endpoint {
        let env = ProcessInfo.processInfo.environment
        guard let url = env["MEDIAFARM_TEST_S3"], let key = env["MEDIAFARM_TEST_S3_KEY"], let secret = env["MEDIAFARM_TEST_S3_SECRET"] else {
            throw FixtureError("MEDIAFARM_TEST_S3 is not set: run the tests through script/test, which starts an S3 server (script/s3-server)")
        }
        return Endpoint(url: url, accessKey: key, secret: secret)
    }

    /// A bucket name of the test's own.
    public static func bucketName(_ label: String = "t") -> String {
        "\(label)-\(UUID().uuidString.lowercased().prefix(13))"
    }

    /// A server of the test's own (`script/s3-server`), stopped by `stop()` or when released.
    public final class Server: @unchecked Sendable {
        public let folder: String
        public let endpoint: Endpoint
        public let port: Int

        /// - Parameter checksSignatures: false for a server that takes any signature (see script/s3-server).
        public init(port: Int? = nil, listen: String = "127.0.0.1", checksSignatures: Bool = true) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-s3-\(UUID().uuidString.prefix(8))").path
            let result = try ProcessRunner.spawn(TestPaths.packageRoot.appendingPathComponent("script/s3-server").path,
                                               ["start", folder, port.map(String.init) ?? "", listen, checksSignatures ? "" : "unsigned"])
            guard result.status == 0 else { throw FixtureError("script/s3-server start failed: \(result.stderr)") }
            var values: [String: String] = [:]
            for line in result.stdout.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { values[parts[0]] = parts[1] }
            }
            guard let url = values["MEDIAFARM_TEST_S3"], let key = values["MEDIAFARM_TEST_S3_KEY"],
                  let secret = values["MEDIAFARM_TEST_S3_SECRET"], let port = url.split(separator: ":").last.flatMap({ Int($0) }) else {
                throw FixtureError("script/s3-server printed no endpoint: \(result.stdout)")
            }
            endpoint = Endpoint(url: url, accessKey: key, secret: secret)
            self.port = port
        }

        deinit { stop() }

        public func stop() {
            _ = try? ProcessRunner.spawn(TestPaths.packageRoot.appendingPathComponent("script/s3-server").path, ["stop", folder])
        }
    }
}
