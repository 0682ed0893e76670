import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Results reused by content, through the commands and real coordinators: the same export submitted
/// again is answered from the first job's output on another host, and a changed input byte, a changed
/// preset, `"reuse": false` or an earlier output changed since run the job again.
@Suite(.serialized) struct ResultReuseTests {
    /// Two hosts on one PostgreSQL queue: the first runs the export; the same export submitted again under
    /// another name and output is answered by the second host from the first result, without a worker: the
    /// same bytes, a report saying from which job, the result naming it.
    @Test func anIdenticalResubmissionIsAnsweredFromTheFirstResultOnAnotherHost() async throws {
        let farm = try Farm("reuse-hosts")
        farm.queueURL = try TestPostgres.url(freshSchema: true)
        #expect(try farm.mediafarm(["queue", "migrate"]).status == 0)
        let first = try await farm.queued([try farm.manifest("first", Self.manifest("first"))])[0]
        let host1 = try await farm.coordinate(["--exit-when-idle", "--workers", "1", "--host", "host1"])
        #expect(host1.status == 0, "\(host1.log)")
        #expect(try await farm.jobState(first) == "succeeded")

        let second = try await farm.queued([try farm.manifest("second", Self.manifest("second"))])[0]
        let host2 = try await farm.coordinate(["--exit-when-idle", "--workers", "1", "--host", "host2"])
        #expect(host2.status == 0, "\(host2.log)")
        let job = try await farm.jobs()[second] ?? [:]
        #expect(job["state"] as? String == "succeeded" && job["attempt"] as? Int == 1, "\(job)")
        let events = host2.events()
        #expect(!events.contains { $0["event"] as? String == "started" }, "a worker ran the second job: \(host2.log)")
        let finished = events.first { $0["event"] as? String == "finished" && ($0["job"] as? NSNumber)?.int64Value == second }
        let seconds = (finished?["seconds"] as? NSNumber)?.doubleValue ?? .infinity
        // How long it took is bench/reuse's to measure: a busy machine makes any bound here a coin toss.
        print(String(format: "reuse: the second job was answered in %.3f s", seconds))
        #expect(seconds.isFinite, "no finished event: \(host2.log)")
        #expect(Self.notices(host2).contains("job \(second): answered from the result of job \(first) (first)"), "\(host2.log)")

        let a = try Data(contentsOf: farm.out.appendingPathComponent("first.mp4"))
        let b = try Data(contentsOf: farm.out.appendingPathComponent("second.mp4"))
        #expect(a.count > 10_000 && a == b, "the reused output differs from the first (\(a.count) and \(b.count) bytes)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: farm.out.appendingPathComponent("second.json"))) as? [String: Any]
        let reused = report?["reused"] as? [String: Any]
        #expect(report?["name"] as? String == "second" && (reused?["job"] as? NSNumber)?.int64Value == first
                && reused?["name"] as? String == "first" && (reused?["sha256"] as? String)?.count == 64, "\(report ?? [:])")
        #expect(report?["export"] != nil, "the first job's export report is kept")
        let result = job["result"] as? [String: Any]
        #expect(((result?["reused"] as? [String: Any])?["job"] as? NSNumber)?.int64Value == first, "\(job)")
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// What must run again: `"reuse": false`, another preset, an input with one byte changed (same path,
    /// same size), and an earlier output changed since it was published (its result is then forgotten).
    @Test func aChangedInputByteAChangedPresetOrReuseFalseRunsAgain() async throws {
        let farm = try Farm("reuse-changes")
        let first = try await farm.queued([try farm.manifest("first", Self.manifest("first"))])[0]
        #expect(try Self.drain(farm) == [first])

        // Answered: the control (the same export again), and the three that must run.
        let same = try await farm.queued([try farm.manifest("same", Self.manifest("same"))])[0]
        let off = try await farm.queued([try farm.manifest("off", Self.manifest("off", reuse: false))])[0]
        let preset = try await farm.queued([try farm.manifest("preset", Self.manifest("preset", preset: "faster"))])[0]
        #expect(try Self.drain(farm) == [off, preset], "only the jobs that may not be reused ran")
        #expect(try Self.reusedFrom(farm, same) == first)
        for id in [off, preset] { #expect(try Self.reusedFrom(farm, id) == nil) }
        // A copy of a copy names the job that did the work, and its report keeps the form it was written in.
        let chained = try await farm.queued([try farm.manifest("chained", Self.manifest("chained"))])[0]
        let chainLog = try Self.drainLog(farm)
        #expect(try Self.reusedFrom(farm, chained) == first, "\(chainLog)")
        #expect(chainLog.ran.isEmpty && chainLog.text.contains("job \(chained): answered from the result of job \(first) (first), copied from job \(same)"),
                "\(chainLog)")
        let firstReport = try String(contentsOf: farm.out.appendingPathComponent("first.json"), encoding: .utf8)
        let chainedReport = try String(contentsOf: farm.out.appendingPathComponent("chained.json"), encoding: .utf8)
        #expect(firstReport.contains("\n  ") && chainedReport.contains("\n  "), "laid out as written: \(chainedReport.prefix(200))")

        // One byte of the input changed in place (a letter of the muxer's tag: the movie still plays).
        let input = farm.folder.appendingPathComponent("in.mp4").path
        var bytes = try Data(contentsOf: URL(fileURLWithPath: input))
        let tag = try #require(bytes.range(of: Data("Lavf".utf8)), "no muxer tag in the input")
        bytes[tag.lowerBound + 3] = UInt8(ascii: "F")
        try bytes.write(to: URL(fileURLWithPath: input))
        let changed = try await farm.queued([try farm.manifest("changed", Self.manifest("changed"))])[0]
        #expect(try Self.drain(farm) == [changed], "the job whose input changed ran")

        // The newest result's output changed since: not reused (nor is anything else), and forgotten.
        let output = farm.out.appendingPathComponent("changed.mp4")
        var published = try Data(contentsOf: output)
        published[published.count - 1] ^= 0xff
        try published.write(to: output)
        let again = try await farm.queued([try farm.manifest("again", Self.manifest("again"))])[0]
        let log = try Self.drainLog(farm)
        #expect(log.ran == [again], "\(log.text)")
        #expect(log.text.contains("job \(again): the result of job \(changed) is not reused: \(output.path) changed since it was published"), "\(log.text)")
        // The run just made answers the next one.
        let last = try await farm.queued([try farm.manifest("last", Self.manifest("last"))])[0]
        #expect(try Self.drain(farm) == [])
        #expect(try Self.reusedFrom(farm, last) == again)
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    /// An earlier output of another size changed: known without reading it, the result is forgotten and the job runs.
    @Test func anEarlierOutputOfAnotherSizeIsNotRead() async throws {
        let farm = try Farm("reuse-size")
        let first = try await farm.queued([try farm.manifest("first", Self.manifest("first"))])[0]
        #expect(try Self.drain(farm) == [first])
        let output = farm.out.appendingPathComponent("first.mp4")
        let bytes = try Data(contentsOf: output)
        try bytes.prefix(bytes.count / 2).write(to: output)
        let again = try await farm.queued([try farm.manifest("again", Self.manifest("again"))])[0]
        let log = try Self.drainLog(farm)
        #expect(log.ran == [again], "\(log.text)")
        #expect(log.text.contains("job \(again): the result of job \(first) is not reused: \(output.path) changed since it was published "
                                  + "(\(bytes.count / 2) bytes, not \(bytes.count))"), "\(log.text)")
    }

    /// A package's ladder made once is answered again to another folder without a worker, its marker this
    /// job's: every file unchanged since it was published is linked (the same inode, no byte written), one
    /// whose stamp changed (touched) is copied and checked. A segment of the newest answer changed since
    /// (same size) is found as the copy is hashed: that result is forgotten and the older one answers.
    @Test func aPackageIsAnsweredFromTheFirstByLinksAndAChangedSegmentIsNotCopied() async throws {
        let farm = try Farm("reuse-package")
        let first = try await farm.queued([try farm.manifest("first", Self.package("first"))])[0]
        #expect(try Self.drain(farm) == [first])
        let again = try await farm.queued([try farm.manifest("again", Self.package("again"))])[0]
        let log = try Self.drainLog(farm)
        #expect(log.ran.isEmpty, "a worker ran: \(log.text)")
        #expect(log.text.contains("job \(again): answered from the result of job \(first) (first)"), "\(log.text)")
        let folder = { (name: String) in farm.out.appendingPathComponent(name).path }
        let (a, b) = (folder("first"), folder("again"))
        let files = try Self.packageFiles(a)
        #expect(files.count > 6 && files.contains("master.m3u8") && files.contains("manifest.mpd") && files.contains("video-1/1.m4s"), "\(files)")
        #expect(try Self.packageFiles(b) == files)
        for file in files {
            #expect(FileManager.default.contents(atPath: a + "/" + file) == FileManager.default.contents(atPath: b + "/" + file), "\(file) differs")
            #expect(Self.inode(a + "/" + file) == Self.inode(b + "/" + file), "\(file) was copied, not linked")
        }
        let marker = { (folder: String) in try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/.mediafarm-package.json"))) as? [String: Any] }
        let (markerA, markerB) = (try marker(a), try marker(b))
        #expect(markerB?["entryPoints"] as? [String] == ["master.m3u8", "manifest.mpd"], "\(markerB ?? [:])")
        #expect(markerA?["token"] as? String != nil && markerA?["token"] as? String != markerB?["token"] as? String, "the answer's marker is its own job's")
        #expect(Self.inode(a + "/.mediafarm-package.json") != Self.inode(b + "/.mediafarm-package.json"))
        #expect(try Self.reusedFrom(farm, again) == first)
        #expect(!FileManager.default.fileExists(atPath: b + "/.mediafarm-writing"))

        // A segment touched (its bytes unchanged): the third job, answered from the second, copies it and links the rest.
        let touched = b + "/video-1/1.m4s"
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, touched, &times, 0) == 0)
        let third = try await farm.queued([try farm.manifest("third", Self.package("third"))])[0]
        let thirdLog = try Self.drainLog(farm)
        #expect(thirdLog.ran.isEmpty, "a worker ran: \(thirdLog.text)")
        #expect(thirdLog.text.contains("job \(third): answered from the result of job \(first) (first), copied from job \(again)"), "\(thirdLog.text)")
        let c = folder("third")
        for file in files {
            #expect(FileManager.default.contents(atPath: c + "/" + file) == FileManager.default.contents(atPath: a + "/" + file), "\(file) differs")
            let linked = Self.inode(c + "/" + file) == Self.inode(a + "/" + file)
            #expect(linked == (file != "video-1/1.m4s"), "\(file): linked \(linked)")
        }

        // One byte of the third's own copy changed in place: the fourth is answered from the second, copying its touched segment.
        let segment = URL(fileURLWithPath: c + "/video-1/1.m4s")
        var bytes = try Data(contentsOf: segment)
        bytes[bytes.count / 2] ^= 0xff
        try bytes.write(to: segment)
        let fourth = try await farm.queued([try farm.manifest("fourth", Self.package("fourth"))])[0]
        let fourthLog = try Self.drainLog(farm)
        #expect(fourthLog.ran.isEmpty, "a worker ran: \(fourthLog.text)")
        #expect(fourthLog.text.contains("job \(fourth): the result of job \(third) is not reused: \(segment.path) changed since it was published (SHA-256 "),
                "\(fourthLog.text)")
        #expect(fourthLog.text.contains("job \(fourth): answered from the result of job \(first) (first), copied from job \(again)"), "\(fourthLog.text)")
        #expect(FileManager.default.contents(atPath: folder("fourth") + "/video-1/1.m4s") == FileManager.default.contents(atPath: a + "/video-1/1.m4s"))
        #expect(farm.leftovers().isEmpty, "\(farm.leftovers())")
    }

    static func inode(_ path: String) -> UInt64? {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    // MARK: - Helpers

    static func package(_ name: String) -> String {
        """
        { "version": 1, "name": "\(name)", "input": "in.mp4", "report": "out/\(name).json",
          "stream": { "output": "out/\(name)", "segmentSeconds": 2, "video": { "rungs": [{ "height": 144, "bitrate": 200000 }] } } }
        """
    }

    /// Every file of a package but its marker, relative to its folder.
    static func packageFiles(_ folder: String) throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: folder).filter { name in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: folder + "/" + name, isDirectory: &isFolder) && !isFolder.boolValue && !name.hasSuffix(".mediafarm-package.json")
        }.sorted()
    }

    static func manifest(_ name: String, preset: String = "veryfast", reuse: Bool? = nil) -> String {
        """
        { "version": 1, "name": "\(name)", "input": "in.mp4", "report": "out/\(name).json", \(reuse.map { "\"reuse\": \($0)," } ?? "")
          "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "out/\(name).mp4", "video": { "preset": "\(preset)" } } }
        """
    }

    /// Runs a coordinator until the queue is idle; the jobs a worker ran.
    static func drain(_ farm: Farm) throws -> [Int64] { try drainLog(farm).ran }

    static func drainLog(_ farm: Farm) throws -> (ran: [Int64], text: String) {
        let coordinator = try farm.startCoordinator(["--exit-when-idle", "--workers", "1"])
        #expect(coordinator.wait(timeout: 120) == 0, "\(coordinator.log)")
        for (id, job) in try farm.status() { #expect(job["state"] as? String == "succeeded", "job \(id): \(job)") }
        let ran = coordinator.events().filter { $0["event"] as? String == "started" }.compactMap { ($0["job"] as? NSNumber)?.int64Value }
        return (ran.sorted(), notices(coordinator))
    }

    /// The coordinator's notices, one per line.
    static func notices(_ coordinator: some CoordinatorPrintout) -> String {
        coordinator.events().filter { $0["event"] as? String == "notice" }.compactMap { $0["message"] as? String }.joined(separator: "\n")
    }

    /// The job whose result answered `id`, per its result in the queue.
    static func reusedFrom(_ farm: Farm, _ id: Int64) throws -> Int64? {
        let result = try farm.status()[id]?["result"] as? [String: Any]
        return ((result?["reused"] as? [String: Any])?["job"] as? NSNumber)?.int64Value
    }
}
