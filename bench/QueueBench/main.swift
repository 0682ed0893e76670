// mediafarm-queue-bench: throughput of a queue backend on this machine, committed as the store commits
// (SQLite: WAL, a submission synchronous=FULL and every other commit NORMAL; PostgreSQL: synchronous_commit
// on). Usage:
//   mediafarm-queue-bench sqlite:FOLDER [JOBS]      fresh queue files in FOLDER
//   mediafarm-queue-bench postgres://... [JOBS]     fresh schemas in that database
//   mediafarm-queue-bench URL JOBS claimloop        only claim+complete, one commit each (jobs queued untimed)
//   mediafarm-queue-bench URL JOBS claimloop webhook  the same with a webhook endpoint in the queue: every
//                                                      completion also records its event (SQLite: its
//                                                      deliveries made when the reader at the end looks)
// Prints one JSON object.
import FarmModel
import FarmStore
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: mediafarm-queue-bench sqlite:FOLDER|postgres://... [JOBS]\n".utf8))
    exit(2)
}
let target = arguments[1]
let count = arguments.count > 2 ? Int(arguments[2]) ?? 2000 : 2000
if target.hasPrefix("sqlite:") {
    try FileManager.default.createDirectory(atPath: String(target.dropFirst("sqlite:".count)), withIntermediateDirectories: true)
}

/// The measurements, run off the main actor: top-level code is main-actor isolated, and every store call
/// from there would hop to the task pool and back (two thread switches per call, which this bench would
/// measure instead of the store).
struct QueueBench {
    let target: String
    let count: Int
    let owner = "bench:\(getpid())"

    /// An empty queue: a new file, or a new schema.
    func freshStore(_ name: String) async throws -> any JobStore {
        if target.hasPrefix("sqlite:") {
            let path = String(target.dropFirst("sqlite:".count)) + "/" + name + ".sqlite"
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            return try SQLiteJobStore(path: path)
        }
        let url = target + (target.contains("?") ? "&" : "?") + "schema=bench_\(name)_\(getpid())"
        return try await JobStores.open(try QueueLocation.parse(url), migrate: true, connections: 2)
    }

    func job(_ i: Int) -> NewJob {
        NewJob(name: "job\(i)", manifest: #"{"version":1,"input":"media/clip\#(i).mp4","report":"out/clip\#(i).json"}"#, baseDirectory: "/data")
    }

    func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Runs `body` as a coordinator's loops run: on the store's executor (SQLite: its writer thread,
    /// where each call runs in place; PostgreSQL: none).
    func rate(_ n: Int, on store: any JobStore, _ body: () async throws -> Void) async throws -> Double {
        let start = now()
        try await withTaskExecutorPreference(store.executor) { try await body() }
        return Double(n) / (Double(now() - start) / 1e9)
    }

    /// Claim+complete alone, as the raw SQL loop it is compared with does it; with `webhook`, with an endpoint
    /// registered, so that each completion records a webhook event and its delivery (nothing sends them).
    func claimLoop(webhook: Bool = false) async throws -> [String: Double] {
        let store = try await freshStore("loop\(UInt32.random(in: 0...UInt32.max))")
        if webhook {
            try await store.registerWebhooks([WebhookEndpoint(url: try WebhookURL.parse("http://127.0.0.1:9/hook").get())], allowing: [],
                                             by: owner, at: Date())
        }
        for start in stride(from: 0, to: count, by: 500) {
            _ = try await store.enqueue((start..<min(start + 500, count)).map(job), at: Date())
        }
        let perSecond = try await rate(count, on: store) {
            for _ in 0..<count {
                guard let claimed = try await store.claim(limit: 1, owner: owner, leaseDuration: 30, at: Date()).first else { fatalError("queue ran dry") }
                _ = try await store.finish(id: claimed.id, token: claimed.lease!.token, outcome: .succeeded(result: nil), at: Date())
            }
        }
        // SQLite makes the events into deliveries when a sender or a reader first looks: this reader, timed.
        let start = now()
        let recorded = try await store.deliveries(matching: DeliveryQuery(limit: count + 1)).count
        let listed = Double(now() - start) / 1e9
        guard recorded == (webhook ? count : 0) else { fatalError("\(recorded) deliveries recorded for \(count) completions") }
        await store.close()
        return ["claimCompletePerSecond": perSecond, "jobs": Double(count), "deliveriesRecorded": Double(recorded),
                "deliveriesMadeAndListedPerSecond": Double(recorded) / listed]
    }

    func run() async throws -> [String: Double] {
        var results: [String: Double] = [:]
        // One job per transaction: one durable commit each.
        let single = try await freshStore("single")
        results["enqueuePerSecond"] = try await rate(count, on: single) {
            for i in 0..<count { _ = try await single.enqueue([job(i)], at: Date()) }
        }
        var singleClaim = 0.0, singleFinish = 0.0
        results["claimCompletePerSecond"] = try await rate(count, on: single) {
            for _ in 0..<count {
                let t0 = now()
                guard let claimed = try await single.claim(limit: 1, owner: owner, leaseDuration: 30, at: Date()).first else { fatalError("queue ran dry") }
                let t1 = now()
                _ = try await single.finish(id: claimed.id, token: claimed.lease!.token, outcome: .succeeded(result: nil), at: Date())
                singleClaim += Double(t1 - t0) / 1e9
                singleFinish += Double(now() - t1) / 1e9
            }
        }
        results["claimMicroseconds"] = singleClaim / Double(count) * 1e6
        results["readMicroseconds"] = 1e6 / (try await rate(count, on: single) {
            for _ in 0..<count { _ = try await single.nextRunAt() }
        })
        // The same claim and completion from the cooperative pool (an HTTP handler's calls): each call
        // hops to the store's thread and back.
        _ = try await single.enqueue((0..<count).map(job), at: Date())
        let fromPool = now()
        for _ in 0..<count {
            guard let claimed = try await single.claim(limit: 1, owner: owner, leaseDuration: 30, at: Date()).first else { fatalError("queue ran dry") }
            _ = try await single.finish(id: claimed.id, token: claimed.lease!.token, outcome: .succeeded(result: nil), at: Date())
        }
        results["claimCompleteFromPoolPerSecond"] = Double(count) / (Double(now() - fromPool) / 1e9)
        results["completeMicroseconds"] = singleFinish / Double(count) * 1e6

        // Batches of 500: one durable commit per batch.
        let batched = try await freshStore("batched")
        let batchCount = count * 10
        let batch = 500
        results["batchedEnqueuePerSecond"] = try await rate(batchCount, on: batched) {
            for start in stride(from: 0, to: batchCount, by: batch) {
                _ = try await batched.enqueue((start..<min(start + batch, batchCount)).map(job), at: Date())
            }
        }
        var claimSeconds = 0.0, finishSeconds = 0.0
        let batchedStart = now()
        var done = 0
        try await withTaskExecutorPreference(batched.executor) {
        while done < batchCount {
            let t0 = now()
            let claimed = try await batched.claim(limit: batch, owner: owner, leaseDuration: 30, at: Date())
            let t1 = now()
            _ = try await batched.finish(claimed.map { FinishedAttempt(id: $0.id, token: $0.lease!.token, outcome: .succeeded(result: nil)) }, at: Date())
            claimSeconds += Double(t1 - t0) / 1e9
            finishSeconds += Double(now() - t1) / 1e9
            done += claimed.count
        }
        }
        results["batchedClaimCompletePerSecond"] = Double(batchCount) / (Double(now() - batchedStart) / 1e9)
        results["batchedClaimPerSecond"] = Double(batchCount) / claimSeconds
        results["batchedCompletePerSecond"] = Double(batchCount) / finishSeconds
        results["jobs"] = Double(count)
        results["batchedJobs"] = Double(batchCount)
        return results
    }
}

let bench = QueueBench(target: target, count: count)
let results = arguments.count > 3 && arguments[3] == "claimloop"
    ? try await bench.claimLoop(webhook: arguments.count > 4 && arguments[4] == "webhook") : try await bench.run()
let data = try JSONSerialization.data(withJSONObject: results, options: [.sortedKeys])
print(String(decoding: data, as: UTF8.self))
