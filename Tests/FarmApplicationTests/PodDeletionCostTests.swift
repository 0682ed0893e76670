@testable import FarmApplication
import FarmModel
@testable import FarmRuntime
import FarmStore
import FarmTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// A coordinator in a Kubernetes pod keeps its pod's deletion cost current: idle 0, busy 1 + the minutes of its
/// oldest job, patched when it changes; a refusal (the Role) is said once with the way past it. No Kubernetes
/// API server runs here: the patches go to a stand-in that answers as one does (a merge patch of the pod; a
/// Status body with 403 and 404), over plain HTTP as a `kubectl proxy` beside the coordinator serves it.
@Suite struct PodDeletionCostTests {
    struct Patch: Sendable { var path: String, contentType: String?, authorization: String?, body: String }
    /// What arrived, in order, from any task.
    final class Log<T: Sendable>: Sendable {
        private let items = Mutex<[T]>([])
        func add(_ item: T) { items.withLock { $0.append(item) } }
        var all: [T] { items.withLock { $0 } }
    }

    /// The stand-in's router: pods "forbidden" (403), "gone" (404) and "broken" (500); the others patched.
    static func standIn(_ seen: Log<Patch>) -> Router<BasicRequestContext> {
        let router = Router()
        router.patch("/api/v1/namespaces/:namespace/pods/:name") { request, context -> Response in
            let body = String(buffer: try await request.body.collect(upTo: 1 << 16))
            seen.add(Patch(path: request.uri.path, contentType: request.headers[.contentType], authorization: request.headers[.authorization], body: body))
            let name = try context.parameters.require("name")
            func status(_ code: HTTPResponse.Status, _ message: String) -> Response {
                Response(status: code, headers: [.contentType: "application/json"],
                         body: .init(byteBuffer: ByteBuffer(string: #"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"\#(message)","code":\#(code.code)}"#)))
            }
            switch name {
            case "forbidden": return status(.forbidden, #"pods \"forbidden\" is forbidden: User \"system:serviceaccount:mediafarm:default\" cannot patch resource \"pods\""#)
            case "gone": return status(.notFound, #"pods \"gone\" not found"#)
            case "broken": return status(.internalServerError, "etcdserver: request timed out")
            default: return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"kind":"Pod"}"#)))
            }
        }
        return router
    }

    func coordinator() throws -> Coordinator {
        let folder = try TestPaths.makeTemporaryFolder("pod-cost")
        return Coordinator(store: try SQLiteJobStore(path: folder.appendingPathComponent("q.sqlite").path), configuration: CoordinatorConfiguration(), events: { _ in })
    }

    @Test func anIdleCoordinatorPatchesZeroOnceAndARefusalIsSaidOnce() async throws {
        let seen = Log<Patch>()
        let token = try TestPaths.makeTemporaryFolder("pod-token").appendingPathComponent("token")
        try "a-service-account-token\n".write(to: token, atomically: true, encoding: .utf8)
        let coordinator = try coordinator()
        try await Application(router: Self.standIn(seen)).test(.live) { client in
            let api = "http://127.0.0.1:\(try #require(client.port))"
            let said = Log<String>()
            let pod = KubernetesPod(name: "mediafarm-coordinator-7d9f-abcde", namespace: "mediafarm", api: api, tokenFile: token.path, caFile: nil)
            let cost = PodDeletionCost(pod: pod, coordinator: coordinator, interval: 0.01, notice: { m in said.add(m) })
            // Ten looks at an idle coordinator: one patch (the cost did not change after it).
            await cost.keep(turns: 10)
            let patches = seen.all
            #expect(patches.count == 1, "\(patches.map(\.body))")
            #expect(patches.first?.path == "/api/v1/namespaces/mediafarm/pods/mediafarm-coordinator-7d9f-abcde")
            #expect(patches.first?.contentType == "application/merge-patch+json")
            #expect(patches.first?.authorization == "Bearer a-service-account-token")
            #expect(patches.first?.body == #"{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"0"}}}"#)
            #expect(said.all.isEmpty)

            // A Role without patch: said once, with the server's reason and the way past it, and no more tries.
            let forbidden = PodDeletionCost(pod: KubernetesPod(name: "forbidden", namespace: "mediafarm", api: api, tokenFile: nil, caFile: nil),
                                                coordinator: coordinator, interval: 0.01, notice: { m in said.add(m) })
            await forbidden.keep(turns: 10)
            let refusal = said.all
            #expect(refusal.count == 1, "\(refusal)")
            #expect(refusal.first?.contains("403") == true && refusal.first?.contains("deploy/kubernetes/base/rbac.yaml") == true
                    && refusal.first?.contains("cannot patch resource") == true, "\(refusal)")
            #expect(seen.all.count == 2, "one try, not ten")

            let gone = PodDeletionCost(pod: KubernetesPod(name: "gone", namespace: "mediafarm", api: api, tokenFile: nil, caFile: nil),
                                           coordinator: coordinator, notice: { _ in })
            #expect(await gone.patch(0) == .refused("no pod mediafarm/gone at \(api) (404): check MEDIAFARM_POD_NAME and MEDIAFARM_POD_NAMESPACE (the downward API)"))
            // A server's failure is tried again: said once until a patch succeeds.
            let broken = PodDeletionCost(pod: KubernetesPod(name: "broken", namespace: "mediafarm", api: api, tokenFile: nil, caFile: nil),
                                             coordinator: coordinator, interval: 0.01, notice: { m in said.add(m) })
            let before = seen.all.count
            await broken.keep(turns: 5)
            #expect(seen.all.count - before == 5, "tried at every look")
            let failures = said.all.dropFirst()
            #expect(failures.count == 1 && failures.first?.contains("500: etcdserver: request timed out") == true, "\(failures)")
        }
        // Nobody listening: a failure, said, not a crash.
        let closed = PodDeletionCost(pod: KubernetesPod(name: "p", namespace: "n", api: "http://127.0.0.1:9", tokenFile: nil, caFile: nil),
                                         coordinator: coordinator, notice: { _ in })
        if case .failed(let why) = await closed.patch(3) { #expect(why.contains("patching pod n/p at http://127.0.0.1:9")) } else { Issue.record("not a failure") }
    }

    @Test func theCostIsTheOldestJobsMinutes() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func snapshot(_ started: [Double], ahead: [Double] = []) -> CoordinatorSnapshot {
            let jobs = started.map { ($0, nil as String?) } + ahead.map { ($0, Job.claimedAheadPhase as String?) }
            return CoordinatorSnapshot(owner: "cluster:1:a", workers: 2, draining: false, startedAt: now,
                                       running: jobs.enumerated().map { i, job in
                                           CoordinatorSnapshot.RunningJob(id: Int64(i), name: "j", attempt: 1, pid: nil, started: now.addingTimeInterval(-job.0),
                                                                          fraction: nil, phase: job.1, eta: nil)
                                       }, loops: [:])
        }
        #expect(PodDeletionCost.cost(snapshot([]), now: now) == 0)
        #expect(PodDeletionCost.cost(snapshot([10]), now: now) == 1)
        #expect(PodDeletionCost.cost(snapshot([10, 125]), now: now) == 3)
        #expect(PodDeletionCost.cost(snapshot([1e15]), now: now) == Int32.max)
        #expect(PodDeletionCost.cost(snapshot([-30]), now: now) == 1, "a clock step back is not a negative age")
        // Jobs claimed ahead of a free slot have not started: a drain gives them back at once.
        #expect(PodDeletionCost.cost(snapshot([], ahead: [600]), now: now) == 0)
        #expect(PodDeletionCost.cost(snapshot([70], ahead: [600]), now: now) == 2)
    }

    @Test func thePodAndItsServerComeFromTheEnvironment() {
        let none: (String) -> Bool = { _ in false }
        #expect(KubernetesPod.from(environment: [:], fileExists: none) == nil)
        #expect(KubernetesPod.from(environment: ["MEDIAFARM_POD_NAME": "p"], fileExists: none)
            == .failure(.init(description: "MEDIAFARM_POD_NAME is set but MEDIAFARM_POD_NAMESPACE is not (the downward API's metadata.namespace)")))
        let base = ["MEDIAFARM_POD_NAME": "p", "MEDIAFARM_POD_NAMESPACE": "n"]
        #expect(KubernetesPod.from(environment: base, fileExists: none)
            == .failure(.init(description: "no Kubernetes API server: KUBERNETES_SERVICE_HOST is not set (set MEDIAFARM_KUBERNETES_API)")))
        let all: (String) -> Bool = { _ in true }
        let sa = KubernetesPod.serviceAccount
        #expect(KubernetesPod.from(environment: base.merging(["KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"]) { $1 }, fileExists: all)
            == .success(KubernetesPod(name: "p", namespace: "n", api: "https://10.96.0.1:443", tokenFile: sa + "/token", caFile: sa + "/ca.crt")))
        #expect(KubernetesPod.from(environment: base.merging(["KUBERNETES_SERVICE_HOST": "fd00::1"]) { $1 }, fileExists: none)
            == .success(KubernetesPod(name: "p", namespace: "n", api: "https://[fd00::1]:443", tokenFile: nil, caFile: nil)))
        #expect(KubernetesPod.from(environment: base.merging(["MEDIAFARM_KUBERNETES_API": "http://127.0.0.1:8001/"]) { $1 }, fileExists: all)
            == .success(KubernetesPod(name: "p", namespace: "n", api: "http://127.0.0.1:8001", tokenFile: nil, caFile: nil)))
        #expect(KubernetesPod.from(environment: base.merging(["MEDIAFARM_KUBERNETES_API": "ftp://x"]) { $1 }, fileExists: all)
            == .failure(.init(description: "MEDIAFARM_KUBERNETES_API ftp://x: give an http:// or https:// URL")))
    }
}
