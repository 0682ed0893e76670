import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The farm scaled as KEDA and Kubernetes would scale it, with no cluster: `script/play-autoscaler` runs the
/// ScaledObject's own query every second, decides as the HorizontalPodAutoscaler does with the
/// ScaledObject's behavior (its windows and periods at 3/100 of their length), and starts coordinator
/// processes in network namespaces or SIGTERMs the ones of lowest deletion cost, which the coordinators
/// patch into the player's stand-in API as they would into a pod's annotations.
extension MultiHostTests {
    /// One burst of work: inspections, picture jobs and chunked exports (which split into chunk jobs).
    struct Burst {
        let names: [String]
        let pictures: [String]
        let exports: [String]

        init(_ index: Int, in folder: URL, inspections: Int, pictures: Int, exports: Int) throws {
            let jobs = folder.appendingPathComponent("burst\(index)")
            try FileManager.default.createDirectory(at: jobs, withIntermediateDirectories: true)
            var names: [String] = [], pictureNames: [String] = [], exportNames: [String] = []
            func write(_ name: String, _ text: String) throws {
                try text.write(to: jobs.appendingPathComponent(name + ".json"), atomically: true, encoding: .utf8)
                names.append(name)
            }
            // Spread through the burst, as a watch folder's ingest would hand them in.
            for i in 0..<(inspections + pictures + exports) {
                let name = String(format: "b%d-%04d", index, i)
                if i % ((inspections + pictures + exports) / exports) == 0 && exportNames.count < exports {
                    try write(name, """
                        { "version": 1, "name": "\(name)", "input": "../long.mp4", "reuse": false,
                          "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "../out/\(name).mp4", "chunkSeconds": 10,
                                      "video": { "preset": "medium" } } }
                        """)
                    exportNames.append(name)
                } else if i % ((inspections + pictures + exports) / pictures) == 1 && pictureNames.count < pictures {
                    try write(name, """
                        { "version": 1, "name": "\(name)", "input": "../poster.mp4", "reuse": false,
                          "poster": { "output": "../out/\(name)/poster.jpg", "maxWidth": 160 },
                          "images": { "every": 5, "output": "../out/\(name)/t-{index}.jpg", "maxWidth": 96 } }
                        """)
                    pictureNames.append(name)
                } else {
                    try write(name, #"{ "version": 1, "name": "\#(name)", "input": "../in.mp4", "report": "../out/\#(name).json" }"#)
                }
            }
            self.names = names
            self.pictures = pictureNames
            self.exports = exportNames
        }
    }

    /// Two bursts of 1,000 jobs each (inspections, picture jobs, 30 s chunked exports in 10 s chunks) on a
    /// farm that starts idle with one pod: the player scales it out to its maximum and back in through each
    /// burst. Every job runs once to success with no attempt charged, every chunk is joined, a scale-in
    /// stopped pods with work running (given back or finished within the grace), the busy pods reported a
    /// higher deletion cost than the idle ones, and the replica count followed the query's figure.
    @Test func anAutoscalerPlayedOnTheQueuesFigureRunsTwoThousandJobsOnceThroughScaleOutAndScaleIn() throws {
        let network = try HostNetwork(hosts: 4)
        let cluster = try TestPostgres.Cluster(listen: (["127.0.0.1"] + network.serverAddresses).joined(separator: ","))
        defer { cluster.stop() }
        let folder = try TestPaths.makeTemporaryFolder("autoscaler")
        let out = folder.appendingPathComponent("out")
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: folder.appendingPathComponent("in.mp4").path)
        try FileManager.default.copyItem(atPath: MediaFixture.posterMP4.path, toPath: folder.appendingPathComponent("poster.mp4").path)
        try ProcessRunner.check("ffmpeg", ["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=30",
                                           "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=30", "-c:v", "libx264", "-preset", "ultrafast",
                                           "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", folder.appendingPathComponent("long.mp4").path])
        try ProcessRunner.check("ffmpeg", ["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=1280x720:r=30:d=40",
                                           "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p",
                                           folder.appendingPathComponent("long720.mp4").path])
        let bursts = [try Burst(0, in: folder, inspections: 950, pictures: 40, exports: 10),
                      try Burst(1, in: folder, inspections: 947, pictures: 40, exports: 10)]
        // The tail: three unchunked 720p exports (40, 10 and 40 s at preset medium) on an idle fleet of one pod
        // of 2 slots: it takes two, the figure (3) asks for a second pod, which takes the third. When the
        // 10 s export ends, two remain on two pods and the figure asks for one: past the scale-down window
        // the newer pod is stopped (equal costs: the newest goes first) with its export running, which its
        // 2 s drain gives back and the first pod runs.
        let tail = folder.appendingPathComponent("tail")
        try FileManager.default.createDirectory(at: tail, withIntermediateDirectories: true)
        for (i, seconds) in [40, 10, 40].enumerated() {
            try """
                { "version": 1, "name": "tail-\(i)", "edits": [{ "source": "../long720.mp4", "duration": \(seconds) }], "reuse": false,
                  "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "../out/tail-\(i).mp4", "video": { "preset": "medium" } } }
                """.write(to: tail.appendingPathComponent("tail-\(i).json"), atomically: true, encoding: .utf8)
        }
        func mediafarm(_ args: [String]) throws -> ProcessResult {
            try ProcessRunner.spawn(TestPaths.mediafarmExecutable, args,
                                    environment: ProcessInfo.processInfo.environment.merging(["MEDIAFARM_QUEUE": cluster.url]) { $1 })
        }
        #expect(try mediafarm(["queue", "migrate"]).status == 0)

        // The player: at most 4 pods of 2 slots (this machine's two cores), the ScaledObject's windows and
        // periods at 3/100 (scale-down stabilization 9 s, one pod every 1.8 s), a 2 s drain (jobs running past
        // it are given back) and 10 s of termination grace; each pod one core at most (the tail's exports last
        // long enough for the scale-down window on a machine of many cores too). The pods claim nothing ahead of their free slots
        // (`--claim-ahead 0`), so that the tail's exports land as it says.
        let pods = folder.appendingPathComponent("pods"), timeline = folder.appendingPathComponent("timeline.jsonl")
        let summary = folder.appendingPathComponent("summary.json")
        let player = try Background(["/usr/bin/python3", TestPaths.packageRoot.appendingPathComponent("script/play-autoscaler").path,
                                     "--connection", cluster.url, "--pods", pods.path, "--timeline", timeline.path, "--summary", summary.path,
                                     "--time-scale", "0.03", "--max-replicas", "4", "--termination-grace", "10", "--pod-cpu", "1"]
                                    + network.namespaces.enumerated().flatMap { ["--namespace", "\($1)=\(network.serverAddresses[$0])"] }
                                    + ["--", TestPaths.mediafarmExecutable, "coordinator", "--workers", "2", "--host", "cluster", "--lease", "5",
                                       "--grace", "2", "--claim-ahead", "0", "--json"],
                                    log: folder.appendingPathComponent("player.log").path)
        defer { player.kill(SIGTERM); _ = player.wait(timeout: 60) }
        func ticks() -> [[String: Any]] {
            ((try? String(contentsOf: timeline, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        /// Waits (up to `seconds`) until the last tick satisfies `condition`.
        func waitForTick(_ what: String, _ seconds: Double, _ condition: ([String: Any]) -> Bool) throws {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let last = ticks().last, condition(last) { return }
                try #require(player.wait(timeout: 0) == nil, "the player ended: \(player.log)")
                Thread.sleep(forTimeInterval: 0.5)
            }
            throw FixtureError("no tick with \(what) in \(seconds) s: \(ticks().suffix(3)), \(player.log)")
        }
        func idle(_ tick: [String: Any]) -> Bool { tick["metric"] as? Double == 0 && tick["replicas"] as? Int == 1 && tick["terminating"] as? Int == 0 }
        try waitForTick("one idle pod", 60, idle)
        var burstEnds: [Double] = []
        for phase in ["burst0", "burst1", "tail"] {
            let submitted = try mediafarm(["submit", "--output-root", out.path, folder.appendingPathComponent(phase).path])
            try #require(submitted.status == 0, Comment(rawValue: submitted.stderr))
            try waitForTick("\(phase)'s work started", 60) { ($0["metric"] as? Double ?? 0) > 0 }
            try waitForTick("\(phase) done and the fleet back to one pod", 600, idle)
            burstEnds.append(ticks().last?["t"] as? Double ?? 0)
        }
        player.kill(SIGTERM)
        #expect(player.wait(timeout: 60) == 0, "\(player.log)")

        // Every job once, to success, with no attempt charged (a drained attempt is given back uncharged).
        let jobs = try JSONSerialization.jsonObject(with: try mediafarm(["status", "--json", "--all", "--chunks"]).stdoutData) as? [[String: Any]] ?? []
        let chunkJobs = jobs.filter { ($0["name"] as? String)?.contains("[chunk ") == true }
        #expect(jobs.count == 2000 + chunkJobs.count && chunkJobs.count == 60, "\(jobs.count) jobs, \(chunkJobs.count) chunks")
        for job in jobs {
            #expect(job["state"] as? String == "succeeded" && job["attempt"] as? Int == 1 && ((job["errors"] as? [Any]) ?? []).isEmpty, "\(job)")
        }
        let logs = ((try? FileManager.default.contentsOfDirectory(atPath: pods.path)) ?? []).filter { $0.hasSuffix(".log") }.map { pods.appendingPathComponent($0).path }
        let successes = Self.successes(in: logs)
        #expect(successes.count == jobs.count && successes.values.allSatisfy { $0 == 1 }, "\(successes.count) jobs succeeded; twice: \(successes.filter { $0.value > 1 })")
        // Every output whole: each report, each picture job's files, each export's 900 frames (its 3 chunks joined).
        for burst in bursts {
            for name in burst.names where !burst.pictures.contains(name) && !burst.exports.contains(name) {
                #expect((try? JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent(name + ".json")))) != nil, "\(name).json")
            }
            for name in burst.pictures {
                let files = (try? FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent(name).path)) ?? []
                #expect(files.contains("poster.jpg") && files.count == 7, "\(name): \(files.sorted())")
            }
            for name in burst.exports {
                let video = try MediaProbe.packets(out.appendingPathComponent(name + ".mp4").path, stream: "v")
                #expect(video.count == 900, "\(name).mp4: \(video.count) frames")
            }
        }
        for i in 0..<3 {
            let video = try MediaProbe.packets(out.appendingPathComponent("tail-\(i).mp4").path, stream: "v")
            #expect(video.count == (i == 1 ? 300 : 1200), "tail-\(i).mp4: \(video.count) frames")
        }

        // The pods: scaled out past one and back in, in each burst; nothing killed, nothing restarted unasked.
        let life = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: summary)) as? [String: Any])
        let podLives = life["pods"] as? [[String: Any]] ?? []
        #expect(life["restarts"] as? Int == 0 && podLives.allSatisfy { $0["killed"] as? Bool == false && $0["status"] as? Int == 0 }, "\(podLives)")
        let all = ticks()
        for (i, end) in burstEnds.prefix(2).enumerated() {
            let start = i == 0 ? 0 : burstEnds[i - 1]
            let peak = all.filter { ($0["t"] as? Double ?? 0) > start && ($0["t"] as? Double ?? 0) <= end }.compactMap { $0["replicas"] as? Int }.max()
            #expect(peak == 4, "burst \(i) peaked at \(peak ?? 0) pods")
        }
        // The replica count followed the query: every scale-out came when the figure asked for more pods than
        // ran, every scale-in when it asked for fewer, one pod at a time (the behavior's one pod a period).
        var replicas = 1
        for tick in all {
            guard let now = tick["replicas"] as? Int, let desired = tick["desired"] as? Int else { continue }
            if now > replicas { #expect(desired > replicas, "scaled out at \(tick)") }
            if now < replicas { #expect(desired < replicas && now == replicas - 1, "scaled in at \(tick)") }
            replicas = now
        }
        // A scale-in in the middle of work: a pod stopped while it ran jobs, which finished within its
        // drain or were given back (and ran once to success elsewhere: checked above).
        let drainedBusy = podLives.filter { pod in
            guard let terminated = pod["terminated"] as? Double, burstEnds.contains(where: { terminated < $0 }),
                  let log = try? String(contentsOfFile: pod["log"] as? String ?? "", encoding: .utf8) else { return false }
            guard let drain = log.range(of: "draining: no new jobs") else { return false }
            return log[drain.upperBound...].contains(#""event":"finished""#)
        }
        #expect(!drainedBusy.isEmpty, "no pod was stopped with work running: \(podLives)")
        // The deletion costs the pods patched: busy pods above idle ones, and each scale-in stopped a pod of the
        // lowest cost then running (the pods left have none lower).
        #expect(all.contains { (($0["costs"] as? [String: Int]) ?? [:]).values.contains { $0 >= 1 } }, "no pod ever reported a cost above 0")
        #expect(all.contains { (($0["costs"] as? [String: Int]) ?? [:]).values.contains(0) })
        for tick in all {
            let stopped = (tick["stopped"] as? [[String: Any]] ?? []).compactMap { $0["cost"] as? Int }
            let left = ((tick["costs"] as? [String: Int]) ?? [:]).values
            #expect(stopped.allSatisfy { cost in left.allSatisfy { cost <= $0 } }, "stopped \(stopped) with \(left) left at \(tick["t"] ?? "")")
        }
        print("autoscaler: \(podLives.count) pods over \(Int(burstEnds.last ?? 0)) s; \(drainedBusy.count) stopped with work running")
    }
}
