import FarmTestSupport
import Foundation
import Testing

/// `mediafarm loudness`: text, JSON, and files it cannot measure named with a non-zero exit.
@Suite struct LoudnessCLITests {
    /// `run` of a normalised export says in one line what became of the loudness (before, after, gain,
    /// limiter), and warns when the limiter cut deeper than 3 dB: quiet noise with full-scale clicks,
    /// brought to -14 LUFS, leaves the limiter to flatten the clicks.
    @Test func runSaysWhatNormalisationDidAndWarnsOfADeepLimiterCut() throws {
        let dir = try TestPaths.makeTemporaryFolder("loudness-run")
        let made = try ProcessRunner.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=10:d=3",
                                                             "-f", "lavfi", "-i", "anoisesrc=color=pink:amplitude=0.03:sample_rate=48000:seed=7:d=3",
                                                             "-f", "lavfi", "-i", "aevalsrc='if(lt(mod(t,1),0.004),0.95,0)':s=48000:d=3",
                                                             "-filter_complex", "[1:a][2:a]amix=inputs=2:normalize=0[a]", "-map", "0:v", "-map", "[a]",
                                                             "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "192k", "-shortest",
                                                             dir.appendingPathComponent("clicks.mp4").path])
        try #require(made.status == 0, "\(made.stderr)")
        try #"""
            { "version": 1, "name": "loud", "input": "clicks.mp4", "overwrite": true, "report": "out/loud.json",
              "export": { "mode": "constantFrameRate", "frameRate": 10, "output": "out/loud.mp4", "audio": { "loudness": { "target": -14, "truePeak": -1 } } } }
            """#.write(to: dir.appendingPathComponent("loud.json"), atomically: true, encoding: .utf8)
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "loud.json"], currentDirectory: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        let line = try #require(r.stdout.split(separator: "\n").first { $0.hasPrefix("  loudness: ") }, "\(r.stdout)")
        #expect(line.contains(" → -14.0 LUFS (target -14.0), gain +") && line.contains("limiter up to -"), "\(line)")
        #expect(r.stderr.contains("loud: warning: $.export.audio.loudness: the limiter took off up to"), "\(r.stderr)")
        let json = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["run", "--json", "loud.json"], currentDirectory: dir.path)
        let result = json.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["event"] as? String == "result" }?["job"] as? [String: Any]
        #expect(((result?["loudness"] as? [String: Any])?["after"] as? Double).map { abs($0 + 14) < 0.1 } == true, "\(result ?? [:])")
        // The source's AAC was at 192 kb/s, the export's at the default 128 kb/s: said, with the way to keep it.
        #expect((result?["warnings"] as? [String])?.count == 2, "\(result ?? [:])")
        #expect(r.stderr.contains("loud: warning: $.export.audio.bitrate: the audio was encoded again at 128 kb/s, below the source's ")
                && r.stderr.contains("export.audio.bitrate 1"), "\(r.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("out/loud.json"))) as? [String: Any]
        let audio = ((report?["export"] as? [String: Any])?["audio"] as? [String: Any]) ?? [:]
        #expect(audio["bitRate"] as? Int == 128_000 && (audio["sourceBitRate"] as? Int ?? 0) > 150_000 && (audio["note"] as? String)?.contains("below") == true,
                "\(audio)")
    }

    @Test func filesAreMeasuredAndTheOnesThatCannotBeAreNamed() throws {
        let dir = try TestPaths.makeTemporaryFolder("loudness-cli")
        let tone = dir.appendingPathComponent("tone.mp4").path
        let made = try ProcessRunner.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:d=4",
                                                             "-f", "lavfi", "-i", "sine=f=1000:sample_rate=48000:d=4", "-af", "volume=0.8,pan=stereo|c0=c0|c1=c0",
                                                             "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "256k", "-shortest", tone])
        try #require(made.status == 0, "\(made.stderr)")
        let text = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["loudness", tone])
        #expect(text.status == 0 && text.stdout.contains("track 2 (aac, und, 2 ch, 48000 Hz") && text.stdout.contains("integrated -20.0 LUFS"), "\(text.stdout) \(text.stderr)")

        let missing = dir.appendingPathComponent("nope.wav").path
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["loudness", "--json", tone, missing])
        #expect(r.status == 1 && r.stderr.contains("nope.wav"), "\(r.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [[String: Any]])
        #expect(rows.count == 2 && rows[1]["path"] as? String == missing && (rows[1]["error"] as? String)?.contains("nope.wav") == true, "\(rows)")
        // In text, a file that cannot be measured is said once: on standard error, not again on the output.
        let said = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["loudness", tone, missing])
        #expect(said.status == 1 && !said.stdout.contains("nope.wav") && said.stderr.components(separatedBy: "nope.wav").count == 2,
                "\(said.stdout) \(said.stderr)")
        let loudness = try #require(rows[0]["loudness"] as? [String: Any])
        let track = try #require((loudness["tracks"] as? [[String: Any]])?.first)
        #expect(track["trackID"] as? Int == 2, "\(track)")
        let figures = try #require(track["loudness"] as? [String: Any])
        #expect(abs((figures["integrated"] as? Double ?? 0) + 20.0) < 0.2 && figures["truePeak"] is Double && figures["range"] is Double, "\(figures)")
        #expect((loudness["gating"] as? String)?.contains("-70 LUFS") == true)

        // The inspection key: asked for by --loudness (or --keys loudness), never loaded by default.
        let inspected = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["inspect", "--json", "--loudness", tone])
        let report = try #require((try JSONSerialization.jsonObject(with: inspected.stdoutData) as? [[String: Any]])?.first, "\(inspected.stderr)")
        let key = try #require(report["loudness"] as? [String: Any], "\(report.keys)")
        let keyTrack = try #require((key["tracks"] as? [[String: Any]])?.first)
        #expect(keyTrack["trackID"] as? Int == 2 && abs(((keyTrack["loudness"] as? [String: Any])?["integrated"] as? Double ?? 0) + 20.0) < 0.2, "\(key)")
        #expect(report["tracks"] != nil && report["duration"] != nil, "the standard keys still load: \(report.keys)")
        let plain = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["inspect", "--json", tone])
        #expect(plain.status == 0 && !plain.stdout.contains("\"loudness\""), "loudness is not loaded unless asked for")
        let inspectText = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["inspect", "--keys", "loudness", tone])
        #expect(inspectText.status == 0 && inspectText.stdout.contains("loudness #2: integrated -20.0 LUFS"), "\(inspectText.stdout)")
        let film = dir.appendingPathComponent("film.mp4").path
        _ = try ProcessRunner.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:d=1", "-c:v", "libx264",
                                                      "-pix_fmt", "yuv420p", film])
        let noAudio = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["inspect", "--keys", "loudness,tracks", film])
        #expect(noAudio.status == 0 && noAudio.stdout.contains("loudness: no audio track"), "\(noAudio.stdout) \(noAudio.stderr)")
    }
}
