import FarmTestSupport
import Foundation
import NIOCore
import S3Client
import Testing

/// A package a job published to object storage, on the job's page: played from its prefix through the console
/// (the page's player and switcher as for a package in a folder), each file read from its object, ranges read
/// alone, nothing outside the package's names; and Chromium plays it to the end.
struct ConsoleObjectPackageTests {
    @Test func aPackageInObjectStoragePlaysFromItsPage() async throws {
        let server = try TestS3.shared()
        let s3 = S3(configuration: S3Configuration(endpoint: server.url, region: "us-east-1", pathStyle: true,
                                                   credentials: SigV4Credentials(accessKeyID: server.accessKey, secretAccessKey: server.secret)))
        do {
            try await Self.play(server, s3)
        } catch {
            await s3.shutdown()  // a client left open ends the whole test process: the failure is reported instead
            throw error
        }
        await s3.shutdown()
    }

    static func play(_ server: TestS3.Endpoint, _ s3: S3) async throws {
        let bucket = TestS3.bucketName("console")
        try await s3.createBucket(bucket)
        let spool = try TestPaths.makeTemporaryFolder("console-s3-spool").path
        let farm = try HTTPFarm("console-s3-package", workers: 1, arguments: ["--host", "web", "--output-root", "s3://\(bucket)/out"],
                                environment: server.environment.merging(["MEDIAFARM_SPOOL": spool]) { $1 })
        // The input is an asset, so that the package is one too.
        var environment = ProcessInfo.processInfo.environment
        environment["MEDIAFARM_QUEUE"] = "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path
        let added = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "add", "--json", "--host", "web", farm.dir.appendingPathComponent("tone.mp4").path],
                                          environment: environment)
        let tone = try #require(((try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any])?["files"] as? [[String: Any]])?.first?["id"] as? String,
                                "\(added.stdout) \(added.stderr)")
        let id = try await farm.submit("""
            { "version": 1, "name": "pkg", "input": "asset:\(tone)", "reuse": false,
              "stream": { "output": "s3://\(bucket)/out/pkg", "segmentSeconds": 2,
                          "video": { "rungs": [{ "height": 240, "bitrate": 400000 }, { "height": 120, "bitrate": 150000 }], "preset": "ultrafast" } } }
            """)
        let job = try await farm.waitFor(id, timeout: 120) { ["succeeded", "failed", "dead"].contains($0["state"] as? String ?? "") }
        #expect(job["state"] as? String == "succeeded", "\(job) \(farm.log)")
        let page = try await farm.request("GET", "/jobs/\(id)").body
        #expect(page.contains("<video class=\"output\" id=\"package-player\" controls preload=\"metadata\" src=\"/jobs/\(id)/package/master.m3u8\">"), "\(page)")
        #expect(page.contains("?rung=video-2\">video-2: 160x120"), "\(page)")
        // Each file as its object holds it; a range read alone.
        let stored = try await s3.get(S3Location(bucket: bucket, key: "out/pkg/master.m3u8"))
        let master = try await farm.request("GET", "/jobs/\(id)/package/master.m3u8")
        #expect(master.status == 200 && master.headers.lowercased().contains("content-type: application/vnd.apple.mpegurl")
                && master.body == String(buffer: stored.bytes), "\(master.status) \(master.body)")
        let one = try await farm.request("GET", "/jobs/\(id)/package/master.m3u8?rung=video-2")
        #expect(one.status == 200 && one.body.components(separatedBy: "#EXT-X-STREAM-INF:").count == 2 && !one.body.contains("video-1/"), "\(one.body)")
        let segment = try await s3.get(S3Location(bucket: bucket, key: "out/pkg/video-1/2.m4s"))
        let part = try await farm.request("GET", "/jobs/\(id)/package/video-1/2.m4s", ["-H", "Range: bytes=100-163", "-o", farm.dir.appendingPathComponent("part").path])
        #expect(part.status == 206 && part.headers.lowercased().contains("content-range: bytes 100-163/\(segment.bytes.readableBytes)")
                && part.headers.lowercased().contains("content-type: video/iso.segment"), "\(part.status) \(part.headers)")
        #expect(try Data(contentsOf: farm.dir.appendingPathComponent("part")) == Data(segment.bytes.readableBytesView.dropFirst(100).prefix(64)))
        #expect(try await farm.request("GET", "/jobs/\(id)/package/video-1/2.m4s", ["-H", "Range: bytes=\(segment.bytes.readableBytes)-"]).status == 416)
        // Only names a package holds, and files it has.
        for path in ["/package/.mediafarm-package.json", "/package/%2e%2e/pkg.json", "/package/video-1/%2e%2e/%2e%2e/x", "/package/video-9/1.m4s",
                     "/package/master.m3u8?rung=video-9", "/package/a/b/c.m4s"] {
            let answer = try await farm.request("GET", "/jobs/\(id)" + path)
            #expect(answer.status == 404, "\(path): \(answer.status) \(answer.body.prefix(200))")
        }
        // The package is an asset, in object storage: its page plays it from there, and its files are the same objects.
        let detail = try await farm.request("GET", "/api/assets/\(tone)").json ?? [:]
        let made = try #require((detail["representations"] as? [[String: Any]])?.first { $0["kind"] as? String == "package" }, "\(detail)")
        let package = try #require(made["output"] as? String)
        #expect(made["path"] as? String == "s3://\(bucket)/out/pkg/master.m3u8", "\(made)")
        let assetPage = try await farm.request("GET", "/library/assets/\(package)").body
        #expect(assetPage.contains("id=\"package-player\" controls preload=\"metadata\" src=\"/api/assets/\(package)/package/master.m3u8\">"), "\(assetPage)")
        let fromAsset = try await farm.request("GET", "/api/assets/\(package)/package/master.m3u8")
        #expect(fromAsset.status == 200 && fromAsset.body == String(buffer: stored.bytes), "\(fromAsset.status) \(fromAsset.body)")
        #expect(try await farm.request("GET", "/api/assets/\(package)/package/.mediafarm-package.json").status == 404)
        // Chromium plays the page's player, switched to the small rung by the page's own script, to its last frame.
        var arguments = [TestPaths.packageRoot.appendingPathComponent("Tests/Readers/chromium-play.py").path, "--console", farm.base + "/jobs/\(id)",
                         "package-player", "--choose", "/jobs/\(id)/package/master.m3u8?rung=video-2"]
        if let token = farm.token { arguments += ["--header", "Authorization: Bearer \(token)"] }
        let played = try await ProcessRunner.spawned("/usr/bin/python3", arguments)
        let json = try JSONSerialization.jsonObject(with: Data(played.stdout.utf8)) as? [String: Any] ?? [:]
        let last = (json["times"] as? [Double])?.max() ?? 0
        #expect(json["error"] == nil && (600...630).contains(json["decoded"] as? Int ?? 0) && abs(last - 599.0 / 60) < 0.001,
                "\(played.stdout) \(played.stderr)")
    }
}
