// mediafarm-queue-bench: throughput of the SQLite queue on this machine, durable commits
// (WAL, synchronous=FULL). Usage: mediafarm-queue-bench FOLDER [JOBS]. Prints one JSON object.
import FarmModel
import FarmStore
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: mediafarm-queue-bench FOLDER [JOBS]\n".utf8))
    exit(2)
}
let folder = arguments[1]
let count = arguments.count > 2 ? Int(arguments[2]) ?? 2000 : 2000
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)

func freshStore(_ name: String) throws -> SQLiteJobStore {
    let path = folder + "/" + name + ".sqlite"
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    return try SQLiteJobStore(path: path)
}

func job(_ i: Int) -> NewJob {
    NewJob(name: "job\(i)", manifest: #"{"version":1,"input":"media/clip\#(i).mp4","report":"out/clip\#(i).json"}"#, baseDirectory: "/data")
}

func rate(_ n: Int, _ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(n) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
}

let owner = "bench:\(getpid())"
var results: [String: Double] = [:]

// One job per transaction: one durable commit each.
let single = try freshStore("single")
results["enqueuePerSecond"] = try await rate(count) {
    for i in 0..<count { _ = try await single.enqueue([job(i)], at: Date()) }
}
results["claimCompletePerSecond"] = try await rate(count) {
    for _ in 0..<count {
        guard let claimed = try await single.claim(limit: 1, owner: owner, leaseDuration: 30, at: Date()).first else { fatalError("queue ran dry") }
        _ = try await single.finish(id: claimed.id, token: claimed.lease!.token, outcome: .succeeded(result: nil), at: Date())
    }
}

// Batches of 500: one durable commit per batch.
let batched = try freshStore("batched")
let batchCount = count * 10
let batch = 500
results["batchedEnqueuePerSecond"] = try await rate(batchCount) {
    for start in stride(from: 0, to: batchCount, by: batch) {
        _ = try await batched.enqueue((start..<min(start + batch, batchCount)).map(job), at: Date())
    }
}
var claimSeconds = 0.0, finishSeconds = 0.0
func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
let batchedStart = now()
var done = 0
while done < batchCount {
    let t0 = now()
    let claimed = try await batched.claim(limit: batch, owner: owner, leaseDuration: 30, at: Date())
    let t1 = now()
    _ = try await batched.finish(claimed.map { FinishedAttempt(id: $0.id, token: $0.lease!.token, outcome: .succeeded(result: nil)) }, at: Date())
    claimSeconds += Double(t1 - t0) / 1e9
    finishSeconds += Double(now() - t1) / 1e9
    done += claimed.count
}
results["batchedClaimCompletePerSecond"] = Double(batchCount) / (Double(now() - batchedStart) / 1e9)
results["batchedClaimPerSecond"] = Double(batchCount) / claimSeconds
results["batchedCompletePerSecond"] = Double(batchCount) / finishSeconds
results["jobs"] = Double(count)
results["batchedJobs"] = Double(batchCount)
let data = try JSONSerialization.data(withJSONObject: results, options: [.sortedKeys])
print(String(decoding: data, as: UTF8.self))
