import FarmTestSupport
import Foundation
import Testing

/// `mediafarm loudness`: text, JSON, and files it cannot measure named with a non-zero exit.
@Suite struct LoudnessCLITests {
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
