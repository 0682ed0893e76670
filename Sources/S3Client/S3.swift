import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// A client of one S3-compatible endpoint: signed requests (Signature Version 4) over async-http-client,
/// retried with exponential backoff when the server is busy or failing (5xx, `SlowDown`) or the connection
/// breaks, each bounded by the configuration's timeouts. Every failure is an `S3Error` naming the object.
///
/// Each operation has an async form and, for FFmpeg's read callbacks on blocking threads, a blocking one
/// (`getBlocking`); never call the blocking one from an event loop or the cooperative pool.
public final class S3: Sendable {
    public let configuration: S3Configuration
    let signer: SigV4Signer
    let client: HTTPClient
    /// The endpoint's scheme, host and port (`:9000`, or "" for the scheme's own); nil when the
    /// configuration's endpoint is not an http(s) address.
    let endpoint: (scheme: String, host: String, port: String)?
    /// Whether each bucket's server honours `If-None-Match: *` on writes, once asked (`honoursConditionalWrites`).
    let conditionalWrites = Mutex<[String: Bool]>([:])

    public init(configuration: S3Configuration) {
        self.configuration = configuration
        signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
        endpoint = URL(string: configuration.endpoint).flatMap { url in
            guard let scheme = url.scheme, let host = url.host else { return nil }
            let port = url.port.map { $0 == (scheme == "https" ? 443 : 80) ? "" : ":\($0)" } ?? ""
            return (scheme, host, port)
        }
        var http = HTTPClient.Configuration()
        http.redirectConfiguration = .disallow
        http.decompression = .disabled
        http.timeout = .init(connect: .milliseconds(Int64(configuration.connectTimeout * 1000)),
                             read: .milliseconds(Int64(configuration.requestTimeout * 1000)))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
    }

    public func shutdown() async { try? await client.shutdown() }  // stopping: nothing to lose

    // MARK: The one client of a process

    private static let sharedClient = Mutex<Result<S3, S3Error>?>(nil)

    /// The client of the environment's configuration (`S3Configuration.fromEnvironment`), made on first use
    /// and kept for the process's life.
    public static func shared() throws(S3Error) -> S3 {
        let result = sharedClient.withLock { cached -> Result<S3, S3Error> in
            if let cached { return cached }
            let made: Result<S3, S3Error>
            do throws(S3Error) { made = .success(S3(configuration: try .fromEnvironment())) } catch { made = .failure(error) }
            cached = made
            return made
        }
        return try result.get()
    }

    // MARK: Requests

    /// One request: what it is for (`GET`, `PutObject`...) names it in errors.
    struct Operation: Sendable {
        var method: HTTPMethod
        var bucket: String
        var key: String?
        var query: [(name: String, value: String)] = []
        var headers: [(name: String, value: String)] = []
        var body: ByteBuffer?
        /// Answers that are not failures for this operation (a 404 to `exists`, a 412 to a conditional write).
        var expected: Set<Int> = []

        var subject: String { S3Location.scheme + bucket + "/" + (key ?? "") }
    }

    struct Response: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: ByteBuffer?

        func header(_ name: String) -> String? { headers.first(name: name) }
        var text: Substring { body.map { Substring(String(buffer: $0)) } ?? "" }
    }

    /// The URL, the path and the host of an operation, as addressed by the configuration. A query item
    /// without a value (`?uploads`) is written bare.
    func address(_ op: Operation, _ endpoint: (scheme: String, host: String, port: String)) -> (url: String, path: String, host: String) {
        let host = (configuration.pathStyle ? "" : op.bucket + ".") + endpoint.host + endpoint.port
        let path = (configuration.pathStyle ? "/" + op.bucket : "") + "/" + (op.key ?? "")
        let encodedPath = path.split(separator: "/", omittingEmptySubsequences: false).map { SigV4Signer.encode(String($0)) }.joined(separator: "/")
        let query = op.query.map { SigV4Signer.encode($0.name) + ($0.value.isEmpty ? "" : "=" + SigV4Signer.encode($0.value)) }
            .joined(separator: "&")
        return ("\(endpoint.scheme)://\(host)\(encodedPath)" + (query.isEmpty ? "" : "?" + query), path, host)
    }

    func prepare(_ op: Operation) throws -> HTTPClient.Request {
        guard let endpoint else {
            throw S3Error(.configuration, configuration.endpoint, "not an http:// or https:// address of a server")
        }
        let (url, path, host) = address(op, endpoint)
        let payload = op.body.map { buffer in buffer.withUnsafeReadableBytes { SigV4Signer.hash($0) } } ?? SigV4Signer.emptyPayloadHash
        let request = SigV4Signer.Request(method: op.method.rawValue, path: path, query: op.query,
                                          headers: [("Host", host)] + op.headers, payloadHash: payload)
        var headers = HTTPHeaders()
        for (name, value) in signer.signedHeaders(request, at: Date()) { headers.add(name: name, value: value) }
        if let body = op.body { headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes)) }
        return try HTTPClient.Request(url: url, method: op.method, headers: headers, body: op.body.map { .byteBuffer($0) })
    }

    /// One try: the answer, or the error it is (transient ones may be tried again); `cancel` stops the
    /// request where it is (its answer then fails).
    func attempt(_ op: Operation) -> (answer: EventLoopFuture<Response>, cancel: @Sendable () -> Void) {
        let loop = client.eventLoopGroup.any()
        let request: HTTPClient.Request
        do { request = try prepare(op) } catch {
            return (loop.makeFailedFuture(S3Error(.configuration, configuration.endpoint, "cannot address \(op.subject): \(error)")), {})
        }
        let deadline = NIODeadline.now() + .milliseconds(Int64(configuration.requestTimeout * 1000))
        let task = client.execute(request: request, delegate: ResponseAccumulator(request: request), deadline: deadline)
        let answer = task.futureResult.flatMapThrowing { (answer: HTTPClient.Response) throws -> Response in
            let response = Response(status: Int(answer.status.code), headers: answer.headers, body: answer.body)
            if (200..<300).contains(response.status) || op.expected.contains(response.status) { return response }
            throw self.failure(op, response)
        }.flatMapErrorThrowing { error in
            if let error = error as? S3Error { throw error }
            throw self.connectionFailure(op, error)
        }
        return (answer, { task.cancel() })
    }

    /// Sends `op`, trying again with backoff while it fails transiently.
    func send(_ op: Operation) async throws(S3Error) -> Response {
        var tries = 0
        while true {
            tries += 1
            let (answer, cancel) = attempt(op)
            // A cancelled task stops its request (an object reader closed while it fetched ahead).
            do { return try await withTaskCancellationHandler { try await answer.get() } onCancel: { cancel() } } catch {
                if Task.isCancelled { throw S3Error(.cancelled, op.subject, "cancelled") }
                let failure = error as? S3Error ?? connectionFailure(op, error)
                guard failure.isTransient, tries < configuration.maxAttempts else { throw failure.afterTries(tries) }
                try? await Task.sleep(for: .seconds(backoff(tries)))  // cancelled: the next attempt sees it
                if Task.isCancelled { throw failure.afterTries(tries) }
            }
        }
    }

    /// `send`, waiting on the calling thread (which must not be an event loop or the cooperative pool).
    func sendBlocking(_ op: Operation) throws(S3Error) -> Response {
        var tries = 0
        while true {
            tries += 1
            do { return try attempt(op).answer.wait() } catch {
                let failure = error as? S3Error ?? connectionFailure(op, error)
                guard failure.isTransient, tries < configuration.maxAttempts else { throw failure.afterTries(tries) }
                Thread.sleep(forTimeInterval: backoff(tries))
            }
        }
    }

    /// Seconds before try `tries + 1`: exponential from the configured backoff, with jitter.
    func backoff(_ tries: Int) -> Double {
        configuration.backoff * pow(2, Double(tries - 1)) * Double.random(in: 0.5...1.0)
    }

    /// The error an answer is, from its status and the server's `<Code>`.
    func failure(_ op: Operation, _ response: Response) -> S3Error {
        let code = S3XML.value("Code", in: response.text)
        let status = response.status
        let bucketSubject = S3Location.scheme + op.bucket + "/"
        switch (status, code) {
        case (_, "NoSuchBucket"):
            return S3Error(.noSuchBucket, bucketSubject, "no such bucket", status: status, code: code)
        case (_, "NoSuchKey"):
            return S3Error(.noSuchKey, op.subject, "no such object", status: status, code: code)
        case (404, nil) where op.key != nil && op.method == .HEAD:
            // A HEAD has no body to say which is missing: the object, as S3 answers for a missing bucket too.
            return S3Error(.noSuchKey, op.subject, "no such object", status: status, code: code)
        case (_, "NoSuchUpload"):
            return S3Error(.noSuchUpload, op.subject, "the multipart upload no longer exists (completed or aborted)", status: status, code: code)
        case (_, "SignatureDoesNotMatch"):
            return S3Error(.signatureRefused, op.subject,
                           "the server refused the request's signature: the secret key does not belong to access key \(configuration.credentials.accessKeyID) (check AWS_SECRET_ACCESS_KEY or the profile)",
                           status: status, code: code)
        case (_, "InvalidAccessKeyId"):
            return S3Error(.unknownAccessKey, op.subject,
                           "the server does not know access key \(configuration.credentials.accessKeyID) (check AWS_ACCESS_KEY_ID or the profile)",
                           status: status, code: code)
        case (_, "AccessDenied"), (403, nil):
            return S3Error(.accessDenied, op.subject, "access denied to \(configuration.credentials.accessKeyID)", status: status, code: code)
        case (412, _), (_, "PreconditionFailed"):
            return S3Error(.alreadyExists, op.subject, "the condition of the request failed", status: status, code: code)
        case (416, _), (_, "InvalidRange"):
            return S3Error(.invalidRange, op.subject, "the range asked for is outside the object", status: status, code: code)
        case (404, _):
            return S3Error(op.key == nil ? .noSuchBucket : .noSuchKey, op.key == nil ? bucketSubject : op.subject,
                           op.key == nil ? "no such bucket" : "not found", status: status, code: code)
        default:
            let message = S3XML.value("Message", in: response.text).map { ": \($0)" } ?? ""
            return S3Error(.refused, op.subject, "\(op.method.rawValue) failed\(message)", status: status, code: code)
        }
    }

    func connectionFailure(_ op: Operation, _ error: any Error) -> S3Error {
        let seconds = Int(configuration.connectTimeout.rounded())
        // Which server, and where that came from: AWS's default when nothing named another.
        let from = configuration.endpointSource.map { " (\($0))" }
            ?? (configuration.endpoint.hasSuffix(".amazonaws.com") ? " (AWS's: set MEDIAFARM_S3_ENDPOINT or AWS_ENDPOINT_URL for another server)" : "")
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout:
                return S3Error(.unreachable, op.subject, "cannot reach \(configuration.endpoint)\(from): no connection in \(seconds) s")
            case .deadlineExceeded, .readTimeout:
                return S3Error(.timedOut, op.subject, "no answer from \(configuration.endpoint) in \(Int(configuration.requestTimeout)) s")
            default: break
            }
        }
        let text = String(describing: error)
        for refusal in ["Connection refused", "No route to host", "Network is unreachable", "Name or service not known", "Host is unreachable"]
        where text.contains(refusal) {
            return S3Error(.unreachable, op.subject, "cannot reach \(configuration.endpoint)\(from): \(refusal.lowercased()) (tried for \(seconds) s)")
        }
        return S3Error(.connectionBroken, op.subject, "the connection to \(configuration.endpoint) broke: \(text)")
    }
}

extension S3Error {
    func afterTries(_ tries: Int) -> S3Error {
        guard tries > 1 else { return self }
        var error = self
        error.detail += " (after \(tries) tries)"
        return error
    }
}
