import FarmTestSupport
import Foundation
import Testing

/// Quality checks from the command line: `mediafarm check` and its exit statuses, and a job's `"checks"` that
/// fail it before anything is published, or only warn.
@Suite struct QualityCheckCLITests {
    static func json(_ data: Data) -> Any? { try? JSONSerialization.jsonObject(with: data) }

    static func result(_ stdout: String) -> [String: Any]? {
        stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["event"] as? String == "result" }?["job"] as? [String: Any]
    }

    @Test func checkExitsByTheVerdictAndPrintsTheSameJSON() throws {
        let dir = try TestPaths.makeTemporaryFolder("check-cli")
        let faults = MediaFixture.faultsMKV.path
        // At the defaults the faults file fails (the freeze and the clip), and says where in text.
        let text = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check", faults])
        #expect(text.status == 1 && text.stdout.contains("FAILED") && text.stdout.contains("freeze: 1 frozen run") && text.stdout.contains("4.000–7.000 s"),
                "\(text.stdout) \(text.stderr)")
        // Only warnings: exit 0.
        let warn = dir.appendingPathComponent("warn.json")
        try #"{"black": {"duration": 1, "severity": "warn"}, "silence": {"eachChannel": true}}"#.write(to: warn, atomically: true, encoding: .utf8)
        let warned = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check", "--json", "--checks", warn.path, faults, MediaFixture.longMP4.path])
        #expect(warned.status == 0, "\(warned.stderr)")
        let rows = try #require(Self.json(warned.stdoutData) as? [[String: Any]], "\(warned.stdout)")
        let first = try #require(rows.first?["checks"] as? [String: Any])
        #expect(first["verdict"] as? String == "warnings" && (rows.last?["checks"] as? [String: Any])?["verdict"] as? String == "passed", "\(rows)")
        let checks = try #require(first["checks"] as? [[String: Any]])
        #expect(checks.map { $0["check"] as? String } == ["black", "silence"], "\(checks)")
        let run = try #require((checks.first?["runs"] as? [[String: Any]])?.first)
        #expect(run["start"] as? Double == 12 && run["end"] as? Double == 13.5 && run["duration"] as? Double == 1.5, "\(run)")

        // A bad checks file: exit 2, naming the path in it; a missing media file: exit 1, naming it.
        let bad = dir.appendingPathComponent("bad.json")
        try #"{"black": {"pictureRatio": 2}}"#.write(to: bad, atomically: true, encoding: .utf8)
        let refused = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check", "--checks", bad.path, faults])
        #expect(refused.status == 2 && refused.stderr.contains("$.black.pictureRatio") && refused.stderr.contains("outside 0...1"), "\(refused.stderr)")
        let absent = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check", dir.appendingPathComponent("absent.mkv").path])
        #expect(absent.status == 1 && absent.stderr.contains("absent.mkv: no such file"), "\(absent.stderr)")
        let none = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check"])
        #expect(none.status == 2, "\(none.stderr)")
    }

    /// A black export fails its job: nothing is published (no movie, no report), and the result carries the verdict and the runs.
    @Test func anExportThatFailsItsChecksPublishesNothing() throws {
        let dir = try TestPaths.makeTemporaryFolder("check-run")
        try FileManager.default.copyItem(atPath: MediaFixture.faultsMKV.path, toPath: dir.appendingPathComponent("faults.mkv").path)
        try #"""
            { "version": 1, "name": "qc", "input": "faults.mkv", "report": "out/qc.json",
              "export": { "mode": "constantFrameRate", "output": "out/qc.mp4", "video": { "preset": "ultrafast" } },
              "checks": { "black": { "duration": 1 }, "freeze": { "severity": "warn" } } }
            """#.write(to: dir.appendingPathComponent("qc.json"), atomically: true, encoding: .utf8)
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json", "qc.json"], currentDirectory: dir.path)
        #expect(r.status == 1, "\(r.stderr)")
        let result = try #require(Self.result(r.stdout), "\(r.stdout)")
        #expect(result["succeeded"] as? Bool == false && (result["error"] as? String)?.contains("quality checks failed: $.checks.black: 1 black run") == true,
                "\(result)")
        let checks = try #require(result["checks"] as? [String: Any])
        #expect(checks["verdict"] as? String == "failed", "\(checks)")
        let out = (try? FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path)) ?? []
        #expect(out.isEmpty, "published after failing its checks: \(out)")

        // The same job warned only: it succeeds, says so, and its report holds the checks.
        try #"""
            { "version": 1, "name": "qc", "input": "faults.mkv", "report": "out/qc.json",
              "export": { "mode": "constantFrameRate", "output": "out/qc.mp4", "video": { "preset": "ultrafast" } },
              "checks": { "black": { "duration": 1, "severity": "warn" } } }
            """#.write(to: dir.appendingPathComponent("qc-warn.json"), atomically: true, encoding: .utf8)
        let w = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json", "qc-warn.json"], currentDirectory: dir.path)
        #expect(w.status == 0, "\(w.stderr)")
        let warned = try #require(Self.result(w.stdout))
        #expect((warned["checks"] as? [String: Any])?["verdict"] as? String == "warnings", "\(warned)")
        #expect((warned["warnings"] as? [String])?.contains { $0.hasPrefix("$.checks.black: 1 black run") } == true, "\(warned)")
        let report = try #require(Self.json(try Data(contentsOf: dir.appendingPathComponent("out/qc.json"))) as? [String: Any])
        #expect((report["checks"] as? [String: Any])?["verdict"] as? String == "warnings", "\(report.keys)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/qc.mp4").path))
    }

    /// An export's checks run as it encodes, not over the written file after: they find what `mediafarm check`
    /// finds on the published file. The pictures (as handed to the encoder) give the same black, frozen and
    /// out-of-range runs (a frozen picture's first encodings aside); the sound (its encoder's packets decoded as they are written,
    /// the priming and padding left out) the same silent and clipped runs, the same clipped samples and the
    /// same loudness; the spec the same verdict; the length ends with the last picture, without the encoder's padding.
    @Test func anExportsChecksAsItEncodesFindWhatTheWrittenFileHas() throws {
        let dir = try TestPaths.makeTemporaryFolder("check-beside")
        try FileManager.default.copyItem(atPath: MediaFixture.faultsMKV.path, toPath: dir.appendingPathComponent("faults.mkv").path)
        let checks = #"""
            { "black": { "duration": 1, "severity": "measure" }, "freeze": { "severity": "measure" }, "levels": { "severity": "measure" },
              "interlace": { "severity": "measure" }, "cadence": { "severity": "measure" }, "silence": { "eachChannel": true, "duration": 1.5, "severity": "measure" },
              "clipping": { "severity": "measure" }, "channels": { "severity": "measure" }, "loudness": { "standard": "ebu-r128", "severity": "measure" },
              "length": { "duration": 20, "durationTolerance": 0.001, "frames": 600, "severity": "warn" },
              "spec": { "container": ["mp4"], "video": { "codec": ["h264"], "scanType": "progressive" },
                        "audio": { "codec": ["aac"], "sampleRate": [48000] }, "severity": "warn" } }
            """#
        try #"""
            { "version": 1, "name": "qc", "input": "faults.mkv",
              "export": { "mode": "constantFrameRate", "output": "out/qc.mp4", "video": { "preset": "ultrafast" } },
              "checks": \#(checks) }
            """#.write(to: dir.appendingPathComponent("qc.json"), atomically: true, encoding: .utf8)
        try checks.write(to: dir.appendingPathComponent("checks.json"), atomically: true, encoding: .utf8)
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json", "qc.json"], currentDirectory: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        let watched = try #require(Self.result(r.stdout)?["checks"] as? [String: Any], "\(r.stdout)")
        let c = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check", "--json", "--checks", "checks.json", "out/qc.mp4"], currentDirectory: dir.path)
        let read = try #require((Self.json(Data(c.stdout.utf8)) as? [[String: Any]])?.first?["checks"] as? [String: Any], "\(c.stdout) \(c.stderr)")
        func results(_ report: [String: Any]) -> [String: [String: Any]] {
            Dictionary(uniqueKeysWithValues: ((report["checks"] as? [[String: Any]]) ?? []).compactMap { r in (r["check"] as? String).map { ($0, r) } })
        }
        let (a, b) = (results(watched), results(read))
        #expect(Set(a.keys) == Set(b.keys) && a.count == 11, "\(a.keys.sorted()) against \(b.keys.sorted())")
        func runs(_ r: [String: Any]?) -> [(Double, Double)] {
            ((r?["runs"] as? [[String: Any]]) ?? []).map { (($0["start"] as? Double) ?? -1, ($0["end"] as? Double) ?? -1) }
        }
        func figure(_ r: [String: Any]?, _ key: String) -> Double? { (r?["figures"] as? [String: Any])?[key] as? Double }
        // A still picture's first few encodings are refined until they stop changing: the written file's freeze
        // starts those few pictures later (0.167 s at ultrafast) than the pictures handed to the encoder.
        for (check, tolerance) in [("black", 0.034), ("freeze", 0.2), ("levels", 0.034), ("silence", 0.0), ("clipping", 0.0)] {
            let (x, y) = (runs(a[check]), runs(b[check]))
            #expect(!x.isEmpty && x.count == y.count && zip(x, y).allSatisfy { abs($0.0 - $1.0) <= tolerance && abs($0.1 - $1.1) <= tolerance },
                    "\(check): \(x) as it encoded, \(y) in the written file")
        }
        #expect(runs(a["interlace"]).isEmpty && runs(a["cadence"]).isEmpty && runs(b["cadence"]).isEmpty, "\(a["interlace"] ?? [:]) \(a["cadence"] ?? [:])")
        // The same packets decoded: the same samples, the same words.
        for check in ["silence", "clipping", "channels", "loudness"] {
            #expect(a[check]?["summary"] as? String == b[check]?["summary"] as? String && a[check]?["summary"] != nil,
                    "\(check): \(a[check]?["summary"] ?? "none") against \(b[check]?["summary"] ?? "none")")
        }
        for key in ["integrated", "truePeak", "range"] {
            let x = figure(a["loudness"], key)
            #expect(x != nil && figure(b["loudness"], key).map { abs($0 - x!) <= 0.01 } == true, "loudness.\(key): \(String(describing: x))")
        }
        #expect(figure(a["length"], "frames") == 600 && figure(b["length"], "frames") == 600, "\(a["length"] ?? [:])")
        // The sound ends with the last picture, at 20 s; the written file's decoder also plays its encoder's
        // padding past the end (512 samples here), which the checks as it encoded leave out.
        #expect(figure(a["length"], "duration").map { abs($0 - 20) < 1e-9 } == true, "\(a["length"] ?? [:])")
        #expect(figure(b["length"], "duration").map { $0 >= 20 && $0 <= 20 + 1024 / 48000.0 } == true, "\(b["length"] ?? [:])")
        #expect(a["spec"]?["outcome"] as? String == "passed" && b["spec"]?["outcome"] as? String == "passed", "\(a["spec"] ?? [:]) \(b["spec"] ?? [:])")
        #expect(a["length"]?["outcome"] as? String == "passed", "\(a["length"] ?? [:])")
    }

    /// A full-range source's pictures are checked as the export writes them (no range said: limited), as
    /// `mediafarm check` reads the published file: its levels are measured, not found "not applicable".
    @Test func aFullRangeSourcesExportIsCheckedAsWritten() throws {
        let dir = try TestPaths.makeTemporaryFolder("check-full-range")
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=2",
                                           "-vf", "scale=out_range=pc,format=yuvj420p", "-c:v", "libx264", "-preset", "ultrafast",
                                           dir.appendingPathComponent("full.mp4").path])
        let checks = #"{ "levels": { "severity": "measure" }, "black": { "severity": "measure" } }"#
        try #"{ "version": 1, "name": "full", "input": "full.mp4", "export": { "mode": "constantFrameRate", "output": "out/full.mp4" }, "checks": \#(checks) }"#
            .write(to: dir.appendingPathComponent("full.json"), atomically: true, encoding: .utf8)
        try checks.write(to: dir.appendingPathComponent("checks.json"), atomically: true, encoding: .utf8)
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json", "full.json"], currentDirectory: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        let watched = (Self.result(r.stdout)?["checks"] as? [String: Any])?["checks"] as? [[String: Any]] ?? []
        let c = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check", "--json", "--checks", "checks.json", "out/full.mp4"], currentDirectory: dir.path)
        let read = ((Self.json(Data(c.stdout.utf8)) as? [[String: Any]])?.first?["checks"] as? [String: Any])?["checks"] as? [[String: Any]] ?? []
        func levels(_ results: [[String: Any]]) -> (outcome: String?, worst: Double?) {
            let r = results.first { $0["check"] as? String == "levels" }
            return (r?["outcome"] as? String, (r?["figures"] as? [String: Any])?["worstShare"] as? Double)
        }
        let (a, b) = (levels(watched), levels(read))
        #expect(a.outcome == "measured" && b.outcome == "measured", "as it encoded \(a), the written file \(b)")
        // The export's scaler maps the full range into the legal one: the pictures it hands the encoder have no
        // pixel out of range. The written file has some (2.9% here): the encoder's ringing at the test pattern's
        // sharp edges, which the checks as it encodes do not see (docs/checks.md says so).
        #expect(a.worst == 0 && b.worst != nil, "as it encoded \(a), the written file \(b)")
    }

    /// An export's fidelity, measured as it encodes: a minimum it misses fails the job and publishes nothing;
    /// the figures it gives are FFmpeg's `psnr` and `ssim` of the published file against the source, and
    /// `mediafarm check --reference` gives them again from the files.
    @Test func anExportsFidelityIsMeasuredAsItEncodesAndCanFailIt() throws {
        let dir = try TestPaths.makeTemporaryFolder("check-fidelity")
        let source = dir.appendingPathComponent("source.mkv").path
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=3",
                                           "-pix_fmt", "yuv420p", "-c:v", "ffv1", source])
        func manifest(_ name: String, _ fidelity: String) throws {
            try """
                { "version": 1, "name": "\(name)", "input": "source.mkv",
                  "export": { "mode": "constantFrameRate", "output": "out/\(name).mp4", "video": { "preset": "ultrafast", "crf": 30 } },
                  "checks": { "fidelity": \(fidelity) } }
                """.write(to: dir.appendingPathComponent("\(name).json"), atomically: true, encoding: .utf8)
        }
        try manifest("strict", #"{ "psnr": 99 }"#)
        let failed = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json", "strict.json"], currentDirectory: dir.path)
        #expect(failed.status == 1, "\(failed.stderr)")
        let refused = try #require(Self.result(failed.stdout), "\(failed.stdout)")
        #expect((refused["error"] as? String)?.contains("$.checks.fidelity: 1 below-PSNR 99 dB or SSIM 0.9 run") == true, "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/strict.mp4").path))

        try manifest("fair", "true")
        let passed = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json", "fair.json"], currentDirectory: dir.path)
        #expect(passed.status == 0, "\(passed.stderr)")
        let result = try #require(Self.result(passed.stdout), "\(passed.stdout)")
        let fidelity = try #require(((result["checks"] as? [String: Any])?["checks"] as? [[String: Any]])?.first { $0["check"] as? String == "fidelity" })
        let figures = try #require(fidelity["figures"] as? [String: Double], "\(fidelity)")
        #expect(fidelity["outcome"] as? String == "passed" && figures["pictures"] == 90, "\(fidelity)")
        #expect((fidelity["pictures"] as? [[String: Any]])?.count == 5, "\(fidelity)")

        // FFmpeg on the published file and the source, paired in order: by time, the filters would pair the export's
        // third picture (66.67 ms) with the source's second (Matroska's milliseconds put its third at 67 ms).
        let output = dir.appendingPathComponent("out/fair.mp4").path
        let ffmpeg = try ProcessRunner.check("ffmpeg", ["-nostdin", "-i", output, "-i", source, "-filter_complex",
                                                        "[0:v]settb=1/30,setpts=N,split[a][b];[1:v]settb=1/30,setpts=N,split[c][d];[a][c]psnr;[b][d]ssim",
                                                        "-f", "null", "-"])
        func summary(_ key: String, _ label: String) throws -> Double {
            let line = try #require(ffmpeg.stderr.split(separator: "\n").first { $0.contains("] \(label) ") }, "\(ffmpeg.stderr)")
            return try #require(line.split(separator: " ").first { $0.hasPrefix(key + ":") }.flatMap { Double($0.dropFirst(key.count + 1)) })
        }
        #expect(abs(try #require(figures["psnrAverage"]) - summary("average", "PSNR")) < 0.01, "\(figures) \(ffmpeg.stderr)")
        #expect(abs(try #require(figures["psnrMin"]) - summary("min", "PSNR")) < 0.01, "\(figures)")
        #expect(abs(try #require(figures["ssimMean"]) - summary("All", "SSIM")) < 0.0001, "\(figures)")

        // The files compared afterwards give the same figures; the fidelity check without a reference is refused.
        let check = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check", "--json", "--reference", source, output])
        #expect(check.status == 0, "\(check.stderr)")
        let rows = try #require(Self.json(check.stdoutData) as? [[String: Any]], "\(check.stdout)")
        let again = try #require(((rows.first?["checks"] as? [String: Any])?["checks"] as? [[String: Any]])?.first { $0["check"] as? String == "fidelity" })
        #expect(again["figures"] as? [String: Double] == figures, "\(again)")
        // The composition is the source picture for picture: a 30 fps Matroska source exported at 30 fps loses none
        // to its millisecond times (a picture dropped and one doubled would measure about 23 dB).
        #expect((figures["psnrMin"] ?? 0) > 30, "\(figures)")
        let plan = dir.appendingPathComponent("fidelity.json")
        try #"{"fidelity": {"ssim": 0.95}}"#.write(to: plan, atomically: true, encoding: .utf8)
        let noReference = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["check", "--checks", plan.path, output])
        #expect(noReference.status == 2 && noReference.stderr.contains("--reference"), "\(noReference.stderr)")
    }

    /// Checks of the input fail the job before the export is made.
    @Test func anInputThatFailsItsChecksIsNotExported() throws {
        let dir = try TestPaths.makeTemporaryFolder("check-input")
        try FileManager.default.copyItem(atPath: MediaFixture.faultsMKV.path, toPath: dir.appendingPathComponent("faults.mkv").path)
        try #"""
            { "version": 1, "name": "qc-in", "input": "faults.mkv",
              "export": { "mode": "passthrough", "output": "out/in.mkv" },
              "checks": { "of": "input", "clipping": true } }
            """#.write(to: dir.appendingPathComponent("in.json"), atomically: true, encoding: .utf8)
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json", "in.json"], currentDirectory: dir.path)
        #expect(r.status == 1, "\(r.stderr)")
        let result = try #require(Self.result(r.stdout), "\(r.stdout)")
        let runs = ((result["checks"] as? [String: Any])?["checks"] as? [[String: Any]])?.first?["runs"] as? [[String: Any]]
        #expect(runs?.count == 1 && runs?.first?["channel"] as? Int == 1, "\(result)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/in.mkv").path))
    }
}

/// Quality checks over HTTP: jobs submitted to the API carry their verdict in the job's view, the list and
/// the console filter by it, and `/metrics` counts verdicts.
@Suite struct QualityCheckAPITests {
    @Test func theAPIAndTheConsoleFilterByVerdictAndMetricsCountThem() async throws {
        let farm = try HTTPFarm("checks-api", workers: 2)
        try FileManager.default.copyItem(atPath: MediaFixture.faultsMKV.path, toPath: farm.dir.appendingPathComponent("faults.mkv").path)
        // The checked file is an asset: the pages' strips link each run to the picture at its start.
        var environment = ProcessInfo.processInfo.environment
        environment["MEDIAFARM_QUEUE"] = "sqlite:" + farm.dir.appendingPathComponent("queue.sqlite").path
        let added = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["library", "add", "--json", farm.dir.appendingPathComponent("faults.mkv").path],
                                          environment: environment)
        let asset = try #require(((try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any])?["files"] as? [[String: Any]])?.first?["id"] as? String,
                                 "\(added.stdout) \(added.stderr)")
        let warned = try await farm.submit(#"{"version": 1, "name": "qc-warned", "input": "faults.mkv", "checks": {"black": {"duration": 1, "severity": "warn"}}}"#)
        let failed = try await farm.submit(#"{"version": 1, "name": "qc-failed", "input": "faults.mkv", "checks": {"freeze": true}}"#)
        let plain = try await farm.submit(#"{"version": 1, "name": "qc-none", "input": "clip.mp4"}"#)
        for id in [warned, failed, plain] {
            let job = try await farm.waitFor(id, timeout: 120) { ["succeeded", "failed"].contains($0["state"] as? String ?? "") }
            #expect(["succeeded", "failed"].contains(job["state"] as? String ?? ""), "\(job)")
        }
        #expect(try await farm.job(warned)["verdict"] as? String == "warnings")
        #expect(try await farm.job(failed)["verdict"] as? String == "failed")
        #expect(try await farm.job(plain)["verdict"] == nil)
        let listed = try await farm.request("GET", "/api/jobs?verdict=failed").json?["jobs"] as? [[String: Any]]
        #expect(listed?.compactMap { $0["id"] as? Int }.map(Int64.init) == [failed], "\(listed ?? [])")
        let bad = try await farm.request("GET", "/api/jobs?verdict=ok")
        #expect(bad.status == 400 && bad.body.contains("verdict ok: give one of passed, warnings, failed"), "\(bad.body)")
        #expect(try await farm.metric(#"mediafarm_check_verdicts_total{verdict="warnings"}"#) == 1)
        #expect(try await farm.metric(#"mediafarm_check_verdicts_total{verdict="failed"}"#) == 1)
        #expect(try await farm.metric(#"mediafarm_check_verdicts_total{verdict="passed"}"#) == 0)
        let page = try await farm.request("GET", "/jobs?state=all&verdict=warnings").body
        #expect(page.contains("qc-warned") && !page.contains("qc-failed") && !page.contains(">qc-none<"), "\(page)")
        #expect(page.contains(#"<option value="warnings" selected>"#), "\(page)")

        // The failed job's page draws its freeze (4 s to 7 s of 20 s) in the strip, linked to the still at 4 s.
        let jobPage = try await farm.request("GET", "/jobs/\(failed)").body
        let still = "/api/assets/\(asset)/still?at=4.000000"
        #expect(jobPage.contains(#"id="checks-strip""#) && jobPage.contains(#"<a href="\#(still)"><rect class="run run-freeze failed" x="\#(90 + 0.2 * 910)""#),
                "\(jobPage)")
        let picture = try await farm.request("GET", still)
        #expect(picture.status == 200 && picture.headers.lowercased().contains("content-type: image/jpeg"), "\(picture.status) \(picture.headers)")
        for (at, words) in [("nan", "from 0 to 172800"), ("-1", "from 0 to 172800"), ("1e30", "from 0 to 172800")] {
            let refused = try await farm.request("GET", "/api/assets/\(asset)/still?at=\(at)")
            #expect(refused.status == 400 && refused.body.contains(words), "\(at): \(refused.status) \(refused.body)")
        }
        let missing = try await farm.request("GET", "/api/assets/\(asset)/still")
        #expect(missing.status == 400 && missing.body.contains("at: give the time"), "\(missing.body)")
        let past = try await farm.request("GET", "/api/assets/\(asset)/still?at=99")
        #expect(past.status == 422 && past.body.contains("no still picture at 99"), "\(past.status) \(past.body)")
        // The asset keeps the last verdict (the failed job ran after the warned one on the same file) and its page draws it.
        let assetPage = try await farm.request("GET", "/library/assets/\(asset)").body
        #expect(assetPage.contains("Its last quality checks") && assetPage.contains(#"id="checks-strip""#), "\(assetPage)")
    }
}
