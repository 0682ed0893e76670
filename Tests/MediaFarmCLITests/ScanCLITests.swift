import FarmTestSupport
import Foundation
import Testing

/// `mediafarm scan`, as a user runs it.
@Suite struct ScanCLITests {
    func mediafarm(_ args: [String]) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, args)
    }

    @Test func jsonForMoviesAndImagesInInputOrder() throws {
        let dir = try CodeFixtures.folder("cli")
        let qr = try CodeFixtures.draw(CodeFixtures.qrAndLinearCodes[0], in: dir)
        let ean = try CodeFixtures.draw(CodeFixtures.qrAndLinearCodes[5], in: dir)
        let movie = dir.appendingPathComponent("take.mp4").path
        try CodeFixtures.movie([.init(image: qr, x: 40, y: 40, start: 1, end: 2), .init(image: ean, x: 200, y: 200, start: 1.5, end: 3)],
                               seconds: 3, to: movie)
        let r = try mediafarm(["scan", "--json", "--symbologies", "qr,ean13", movie, qr, "/nonexistent/x.mp4"])
        #expect(r.status == 1)
        let reports = try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [[String: Any]])
        #expect(reports.map { $0["path"] as? String } == [movie, qr, "/nonexistent/x.mp4"])
        let codes = try #require(reports[0]["codes"] as? [[String: Any]])
        #expect(codes.map { $0["symbology"] as? String } == ["qr", "ean13"])
        let first = codes[0]
        #expect(first["payload"] as? String == "MediaFarm QR 1")
        #expect(first["payloadBase64"] as? String == Data("MediaFarm QR 1".utf8).base64EncodedString())
        #expect((first["firstTime"] as? [String: Any])?["seconds"] as? Double == 1)
        #expect((first["lastTime"] as? [String: Any])?["seconds"] as? Double == 1.9)
        #expect(first["frameCount"] as? Int == 10)
        #expect((first["corners"] as? [[String: Any]])?.count == 4 && first["bounds"] is [String: Any])
        #expect(reports[1]["error"] is NSNull && (reports[1]["codes"] as? [Any])?.count == 1)
        #expect((reports[2]["error"] as? String)?.contains("no such file") == true)
    }

    @Test(arguments: [["scan", "--symbologies", "qrcode", "x.mp4"], ["scan", "x.mp4"], ["scan", "--symbologies", "", "x.mp4"],
                      ["scan", "--symbologies", "qr", "--roi", "0.5,0.5,0.6,0.1", "x.mp4"], ["scan", "--symbologies", "qr", "--interval", "soon", "x.mp4"]])
    func badUsageExitsTwo(_ args: [String]) throws {
        let r = try mediafarm(args)
        #expect(r.status == 2, "\(args): \(r.stderr)")
    }

    @Test func notAnImage() throws {
        let dir = try CodeFixtures.folder("cli-bad")
        let path = dir.appendingPathComponent("photo.jpg").path
        try "not a jpeg".write(toFile: path, atomically: true, encoding: .utf8)
        let r = try mediafarm(["scan", "--symbologies", "qr", path])
        #expect(r.status == 1 && r.stderr.contains("photo.jpg"))
    }
}
