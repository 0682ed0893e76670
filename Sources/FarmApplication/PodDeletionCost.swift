import AsyncHTTPClient
import FarmModel
import FarmRuntime
import Foundation
import NIOCore
import NIOSSL
import ServiceLifecycle

/// Where a coordinator in a Kubernetes pod finds its pod and the API server: the pod's name and namespace from
/// the downward API (`MEDIAFARM_POD_NAME`, `MEDIAFARM_POD_NAMESPACE`, as deploy/kubernetes sets them), the
/// server from `MEDIAFARM_KUBERNETES_API` (for instance a `kubectl proxy` beside it, `http://127.0.0.1:8001`),
/// else the in-cluster address (`KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT`) with the service
/// account's token and CA.
public struct KubernetesPod: Sendable, Equatable {
    public var name: String
    public var namespace: String
    /// The API server, without a trailing slash.
    public var api: String
    /// The bearer token's file (read at each request: projected tokens are rotated); nil: none is sent.
    public var tokenFile: String?
    /// The CA the API server's certificate is checked against; nil: the system's.
    public var caFile: String?

    public static let serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount"

    public init(name: String, namespace: String, api: String, tokenFile: String?, caFile: String?) {
        (self.name, self.namespace, self.api, self.tokenFile, self.caFile) = (name, namespace, api, tokenFile, caFile)
    }

    /// The pod this process runs in, when the environment says so: nil outside a pod (no pod name);
    /// a problem to say when it names a pod but not how to reach the API server.
    public static func from(environment: [String: String], fileExists: (String) -> Bool = FileManager.default.fileExists(atPath:))
        -> Result<KubernetesPod, Problem>? {
        func value(_ key: String) -> String? { environment[key].flatMap { $0.isEmpty ? nil : $0 } }
        guard let name = value("MEDIAFARM_POD_NAME") else { return nil }
        guard let namespace = value("MEDIAFARM_POD_NAMESPACE") else {
            return .failure(Problem(description: "MEDIAFARM_POD_NAME is set but MEDIAFARM_POD_NAMESPACE is not (the downward API's metadata.namespace)"))
        }
        for (key, value) in [("MEDIAFARM_POD_NAME", name), ("MEDIAFARM_POD_NAMESPACE", namespace)] where !isName(value) {
            return .failure(Problem(description: "\(key) \(value): not a Kubernetes name (lower-case letters, digits, '-' and '.', at most 253)"))
        }
        let token = "\(serviceAccount)/token", ca = "\(serviceAccount)/ca.crt"
        if let api = value("MEDIAFARM_KUBERNETES_API") {
            guard api.hasPrefix("http://") || api.hasPrefix("https://") else {
                return .failure(Problem(description: "MEDIAFARM_KUBERNETES_API \(api): give an http:// or https:// URL"))
            }
            return .success(KubernetesPod(name: name, namespace: namespace, api: String(api.trimmingSuffix("/")),
                                          tokenFile: api.hasPrefix("https://") && fileExists(token) ? token : nil,
                                          caFile: api.hasPrefix("https://") && fileExists(ca) ? ca : nil))
        }
        guard let host = value("KUBERNETES_SERVICE_HOST") else {
            return .failure(Problem(description: "no Kubernetes API server: KUBERNETES_SERVICE_HOST is not set (set MEDIAFARM_KUBERNETES_API)"))
        }
        let port = value("KUBERNETES_SERVICE_PORT") ?? "443"
        let place = host.contains(":") ? "[\(host)]" : host
        return .success(KubernetesPod(name: name, namespace: namespace, api: "https://\(place):\(port)",
                                      tokenFile: fileExists(token) ? token : nil, caFile: fileExists(ca) ? ca : nil))
    }

    /// A DNS-1123 subdomain, as pods' and namespaces' names are: nothing in it can leave its URL path segment.
    static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 253 && text.first != "-" && text.last != "-"
            && text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "." }
    }

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The pod's URL on the API server.
    var url: String { "\(api)/api/v1/namespaces/\(namespace)/pods/\(name)" }
}

/// Keeps the pod's `controller.kubernetes.io/pod-deletion-cost` current, so that a scale-in removes the pods
/// that lose least: an idle coordinator costs 0, a busy one 1 more than the minutes its oldest running job has
/// run. It patches the annotation when the cost changes (checked every `interval` seconds). Where it may not
/// (no token, a Role without `patch` on pods: 401, 403, 404), it says so once, with the way past it, and
/// stops trying; other failures are said once until a patch succeeds again.
public final class PodDeletionCost: Service, Sendable {
    public static let annotation = "controller.kubernetes.io/pod-deletion-cost"

    let pod: KubernetesPod
    let coordinator: Coordinator
    let interval: Double
    let notice: @Sendable (String) -> Void
    private let http: HTTPClient.Configuration

    public init(pod: KubernetesPod, coordinator: Coordinator, interval: Double = 5, notice: @escaping @Sendable (String) -> Void) {
        (self.pod, self.coordinator, self.interval, self.notice) = (pod, coordinator, interval, notice)
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(10))
        if let caFile = pod.caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            configuration.tlsConfiguration = tls
        }
        http = configuration
    }

    /// The cost of a coordinator as it is now: 0 when it runs nothing, else 1 + the whole minutes its oldest
    /// running job has run (at most Int32's largest, the annotation's range). A job claimed ahead of a free
    /// slot has not started: a drain gives it back at once, so it costs nothing.
    public static func cost(_ snapshot: CoordinatorSnapshot, now: Date) -> Int32 {
        guard let oldest = snapshot.running.filter({ $0.phase != Job.claimedAheadPhase }).map(\.started).min() else { return 0 }
        let minutes = max(0, now.timeIntervalSince(oldest)) / 60
        return minutes.isFinite && minutes < Double(Int32.max - 1) ? Int32(minutes) + 1 : Int32.max
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.keep() }
    }

    /// Patches whenever the cost changed, until cancelled or refused (or, for a test, after `turns` looks).
    func keep(turns: Int? = nil) async {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        var patched: Int32?
        var failing = false
        var turn = 0
        while !Task.isCancelled {
            if let turns, turn >= turns { break }
            turn += 1
            let cost = Self.cost(coordinator.snapshot, now: Date())
            if cost != patched {
                switch await patch(cost, with: client) {
                case .done:
                    patched = cost
                    if failing { notice("pod deletion cost: patched \(pod.namespace)/\(pod.name) again") }
                    failing = false
                case .refused(let why):
                    notice("pod deletion cost: \(why); scale-ins choose among this farm's pods without it")
                    try? await client.shutdown()  // done with it: nothing to lose
                    return
                case .failed(let why):
                    if !failing { notice("pod deletion cost: \(why) (trying again every \(Spoken.duration(interval)))") }
                    failing = true
                }
            }
            try? await Task.sleep(for: .seconds(interval))  // cancelled: the loop ends
        }
        try? await client.shutdown()  // stopping: nothing to lose
    }

    enum Outcome: Equatable { case done, refused(String), failed(String) }

    /// One merge patch of the annotation, on a client of its own.
    func patch(_ cost: Int32) async -> Outcome {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        let outcome = await patch(cost, with: client)
        try? await client.shutdown()  // done with it: nothing to lose
        return outcome
    }

    /// One merge patch of the annotation.
    func patch(_ cost: Int32, with client: HTTPClient) async -> Outcome {
        let target = "\(pod.namespace)/\(pod.name) at \(pod.api)"
        var request = HTTPClientRequest(url: pod.url)
        request.method = .PATCH
        request.headers.add(name: "Content-Type", value: "application/merge-patch+json")
        request.headers.add(name: "Accept", value: "application/json")
        if let tokenFile = pod.tokenFile {
            guard let token = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {  // unreadable: said as the reason
                return .refused("cannot read the service account's token \(tokenFile)")
            }
            request.headers.add(name: "Authorization", value: "Bearer " + token.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let body = #"{"metadata":{"annotations":{"\#(Self.annotation)":"\#(cost)"}}}"#
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(15))
            let text = String(buffer: try await response.body.collect(upTo: 64 * 1024))
            switch response.status.code {
            case 200..<300:
                return .done
            case 401, 403:
                return .refused("""
                    the API server refused to patch pod \(target) (\(response.status.code)): give the pod's service account \
                    get and patch on pods (deploy/kubernetes/base/rbac.yaml)\(Self.reason(text))
                    """)
            case 404:
                return .refused("no pod \(target) (404): check MEDIAFARM_POD_NAME and MEDIAFARM_POD_NAMESPACE (the downward API)")
            default:
                return .failed("patching pod \(target): \(response.status.code)\(Self.reason(text))")
            }
        } catch {
            return .failed("patching pod \(target): \(error)")
        }
    }

    /// The `message` of a Kubernetes Status body, if it has one.
    static func reason(_ body: String) -> String {
        struct Status: Decodable { var message: String? }
        guard let message = (try? JSONDecoder().decode(Status.self, from: Data(body.utf8)))?.message, !message.isEmpty else { return "" }  // not a Status: nothing to add
        return ": " + message.prefix(300)
    }
}

private extension String {
    func trimmingSuffix(_ suffix: Character) -> Substring {
        var s = Substring(self)
        while s.last == suffix { s = s.dropLast() }
        return s
    }
}
