import FarmTestSupport
import Foundation
import Testing

/// `mediafarm images` as a user runs it: pictures written whole, per-time failures, refusals.
@Suite struct ImagesCLITests {
    func movie() throws -> URL {
        let folder = try TestPaths.makeTemporaryFolder("images-cli")
        let path = folder.appendingPathComponent("take.mp4")
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=25:d=4", "-c:v", "libx264",
                                               "-g", "50", "-pix_fmt", "yuv420p", path.path])
        return path
    }

    func images(_ arguments: [String], in folder: URL) throws -> ProcessResult {
        try ProcessRunner.run(TestPaths.mediafarmExecutable, ["images"] + arguments, currentDirectory: folder.path)
    }

    @Test func picturesAreWrittenAndATimePastTheEndFailsAlone() throws {
        let take = try movie()
        let folder = take.deletingLastPathComponent()
        let r = try images(["--exact", "--at", "1", "--at", "2.5", "--at", "9", "--max-width", "320", "--json", "-o", "thumbs/t-{index}.png",
                            "--format", "png", take.path], in: folder)
        #expect(r.status == 1, "\(r.stderr)")
        let records = try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [[String: Any]])
        #expect(records.count == 3)
        #expect(records[0]["actualTime"] as? Double == 1 && records[0]["width"] as? Int == 320 && records[0]["height"] as? Int == 180)
        #expect(records[1]["actualTime"] as? Double == 2.48, "the frame shown at 2.5 s begins at 2.48 s: \(records[1])")
        #expect((records[2]["error"] as? String)?.contains("past the end") == true)
        let written = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("thumbs").path).sorted()
        #expect(written == ["t-1.png", "t-2.png"], "only whole pictures, no temporaries: \(written)")
        let png = try Data(contentsOf: folder.appendingPathComponent("thumbs/t-1.png"))
        #expect(png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))

        // Again: each picture is there, and is not replaced without --overwrite.
        let again = try images(["--exact", "--at", "1", "-o", "thumbs/t-{index}.png", "--format", "png", take.path], in: folder)
        #expect(again.status == 1 && again.stderr.contains("thumbs/t-1.png: already exists; --overwrite replaces it"), "\(again.stderr)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("thumbs/t-1.png")) == png)
        let replaced = try images(["--exact", "--at", "3", "-o", "thumbs/t-{index}.png", "--format", "png", "--overwrite", take.path], in: folder)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("thumbs/t-1.png")) != png)
    }

    @Test func aStoryboardIsWrittenWholeOrNotAtAll() throws {
        let take = try movie()
        let folder = take.deletingLastPathComponent()
        let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["storyboard", "--tiles", "8", "--columns", "3", "--rows", "2", "--json",
                                                                     "-o", "board", take.path], currentDirectory: folder.path)
        #expect(r.status == 0, "\(r.stderr)")
        let index = try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])
        #expect(index["sheets"] as? [String] == ["take-1.jpg", "take-2.jpg"] && (index["tiles"] as? [Any])?.count == 8)
        let written = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("board").path).sorted()
        #expect(written == ["take-1.jpg", "take-2.jpg", "take.json", "take.vtt"], "\(written)")
        let vtt = try String(contentsOf: folder.appendingPathComponent("board/take.vtt"), encoding: .utf8)
        #expect(vtt.hasPrefix("WEBVTT\n\n00:00:00.000 --> 00:00:00.500\ntake-1.jpg#xywh=0,0,160,90\n"), "\(vtt)")
        let again = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["storyboard", "-o", "board", take.path], currentDirectory: folder.path)
        #expect(again.status == 1 && again.stderr.contains("board/take-1.jpg: already exists; --overwrite replaces it"), "\(again.stderr)")
    }

    /// `mediafarm poster`: auto passes over black, a fade and a blank card to the picture of the middle third,
    /// and says which frames it looked at; a time gives that frame; bad usage is exit 2, a bad movie exit 1.
    @Test func aPosterIsARepresentativeFrame() throws {
        let folder = try TestPaths.makeTemporaryFolder("poster-cli")
        let movie = MediaFixture.posterMP4.path
        func poster(_ arguments: [String]) throws -> ProcessResult {
            try ProcessRunner.run(TestPaths.mediafarmExecutable, ["poster"] + arguments, currentDirectory: folder.path)
        }
        let auto = try poster(["--json", "--max-height", "90", "-o", "p.jpg", movie])
        #expect(auto.status == 0, "\(auto.stderr)")
        let record = try #require(try JSONSerialization.jsonObject(with: auto.stdoutData) as? [String: Any])
        let picture = record["picture"] as? [String: Any] ?? [:]
        let time = try #require(picture["actualTime"] as? Double)
        #expect(time >= 19 && time < 20 && picture["width"] as? Int == 160 && picture["height"] as? Int == 90, "\(record)")
        #expect(record["chosen"] as? String == "auto")
        let candidates = record["candidates"] as? [[String: Any]] ?? []
        #expect(candidates.count >= 7 && candidates.allSatisfy { (10...20).contains($0["time"] as? Double ?? -1) }, "\(candidates)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("p.jpg")).prefix(3) == Data([0xFF, 0xD8, 0xFF]))
        let again = try poster(["-o", "p.jpg", movie])
        #expect(again.status == 1 && again.stderr.contains("p.jpg: already exists; --overwrite replaces it"), "\(again.stderr)")
        let at = try poster(["--at", "4.5", "--exact", "--format", "png", "-o", "at.png", movie])
        #expect(at.status == 0 && at.stdout.contains("the frame at 4.480 s"), "\(at.stdout) \(at.stderr)")
        for (arguments, says) in [(["--at", "nan", movie], "--at nan"), (["--at=-3", movie], "--at -3"), (["--exact", movie], "--exact needs --at"),
                                  (["--quality", "2", movie], "--quality")] {
            let r = try poster(arguments)
            #expect(r.status == 2 && r.stderr.contains(says), "\(arguments): \(r.status) \(r.stderr)")
        }
        try Data(repeating: 7, count: 4000).write(to: folder.appendingPathComponent("garbage.mp4"))
        let garbage = try poster(["garbage.mp4"])
        #expect(garbage.status == 1 && garbage.stderr.contains("garbage.mp4"), "\(garbage.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("garbage-poster.jpg").path))
    }

    /// `mediafarm waveform`: an SVG and the peaks of a movie's sound; bad usage is exit 2; a movie without
    /// sound is exit 1, naming the reason, and writes nothing.
    @Test func aWaveformIsWrittenAsSVGWithItsPeaks() throws {
        let folder = try TestPaths.makeTemporaryFolder("waveform-cli")
        func waveform(_ arguments: [String]) throws -> ProcessResult {
            try ProcessRunner.run(TestPaths.mediafarmExecutable, ["waveform"] + arguments, currentDirectory: folder.path)
        }
        let r = try waveform(["--json", "--width", "200", "-o", "w.svg", "--peaks", "w.json", MediaFixture.cfr30MP4.path])
        #expect(r.status == 0, "\(r.stderr)")
        let record = try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])
        #expect(record["width"] as? Int == 200 && record["height"] as? Int == 140 && record["sampleRate"] as? Int == 48000, "\(record)")
        let svg = try String(contentsOf: folder.appendingPathComponent("w.svg"), encoding: .utf8)
        let parsed = try ProcessRunner.run("/usr/bin/python3", ["-c", "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(r.get('width'), len(r[0].get('d').split('M')) - 1)",
                                                                folder.appendingPathComponent("w.svg").path])
        #expect(parsed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "200 200", "\(parsed.stdout) \(parsed.stderr) \(svg.prefix(200))")
        let peaks = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("w.json"))) as? [String: Any])
        #expect((peaks["data"] as? [Int])?.count == 400)
        for (arguments, says) in [(["--width", "8", "x.mp4"], "--width"), (["--height", "nan", "x.mp4"], "--height"), (["-o", "w.gif", "x.mp4"], "--output")] {
            let bad = try waveform(arguments)
            #expect(bad.status == 2 && bad.stderr.contains(says), "\(arguments): \(bad.status) \(bad.stderr)")
        }
        // Of two tracks, the one flagged default is drawn: a silent first track and a tone flagged default.
        let two = folder.appendingPathComponent("two-tracks.mp4").path
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo:d=2", "-f", "lavfi", "-i", "sine=f=440:sample_rate=44100:d=2",
                                           "-map", "0", "-map", "1", "-c:a", "aac", "-disposition:a:0", "0", "-disposition:a:1", "default", two])
        let drawn = try waveform(["--json", "-o", "two.svg", "--peaks", "two.json", two])
        let drawnRecord = try JSONSerialization.jsonObject(with: drawn.stdoutData) as? [String: Any]
        #expect(drawn.status == 0 && drawnRecord?["sampleRate"] as? Int == 44100, "the flagged track's rate: \(drawn.stdout) \(drawn.stderr)")
        let drawnPeaks = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("two.json"))) as? [String: Any]
        #expect(((drawnPeaks?["data"] as? [Int]) ?? []).map(abs).max() ?? 0 > 1000, "the tone, not the silence")
        let silent = try waveform(["-o", "silent.png", MediaFixture.rotatedMP4.path])
        #expect(silent.status == 1 && silent.stderr.contains("no audio track to draw"), "\(silent.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("silent.png").path))
    }

    /// A picture's format is its name's: `-o p.png` writes a PNG without `--format`; a `--format` that
    /// disagrees with the name, or a name no picture format has, is exit 2 naming both, writing nothing.
    @Test func thePicturesFormatFollowsTheOutputsExtension() throws {
        let take = try movie()
        let folder = take.deletingLastPathComponent()
        let signatures: [String: [UInt8]] = ["png": [0x89, 0x50, 0x4E, 0x47], "jpg": [0xFF, 0xD8, 0xFF], "jpeg": [0xFF, 0xD8, 0xFF], "webp": [0x52, 0x49, 0x46, 0x46]]
        for (ext, signature) in signatures {
            let poster = try ProcessRunner.run(TestPaths.mediafarmExecutable, ["poster", "--json", "-o", "p.\(ext)", take.path], currentDirectory: folder.path)
            #expect(poster.status == 0, "\(ext): \(poster.stderr)")
            #expect(try Data(contentsOf: folder.appendingPathComponent("p.\(ext)")).prefix(signature.count) == Data(signature), "poster -o p.\(ext)")
            let record = try JSONSerialization.jsonObject(with: poster.stdoutData) as? [String: Any]
            #expect((record?["picture"] as? [String: Any])?["format"] as? String == (ext == "jpg" ? "jpeg" : ext), "\(record ?? [:])")
            let images = try images(["--at", "1", "-o", "t-{index}.\(ext)", take.path], in: folder)
            #expect(images.status == 0, "\(ext): \(images.stderr)")
            #expect(try Data(contentsOf: folder.appendingPathComponent("t-1.\(ext)")).prefix(signature.count) == Data(signature), "images -o t-{index}.\(ext)")
        }
        for (command, arguments, says) in [("poster", ["--format", "jpeg", "-o", "q.png"], "--format jpeg disagrees with --output q.png, a PNG"),
                                           ("images", ["--at", "1", "--format", "png", "-o", "q-{index}.jpg"], "--format png disagrees"),
                                           ("poster", ["-o", "q.gif"], "name a .jpg, .jpeg, .png or .webp file")] {
            let r = try ProcessRunner.run(TestPaths.mediafarmExecutable, [command] + arguments + [take.path], currentDirectory: folder.path)
            #expect(r.status == 2 && r.stderr.contains(says), "\(command) \(arguments): \(r.status) \(r.stderr)")
        }
        for name in ["q.png", "q-1.jpg", "q.gif"] { #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path), "\(name)") }
    }

    @Test func badUsageIsExitTwoNamingTheProblem() throws {
        let take = try movie()
        let folder = take.deletingLastPathComponent()
        for (arguments, says) in [([take.path], "give the times one way"), (["--at", "1", "--every", "2", take.path], "give the times one way"),
                                  (["--exact", "--tolerance", "1", "--at", "1", take.path], "--exact and --tolerance"),
                                  (["--count", "3", "-o", "one.jpg", take.path], "{index} or {time}"),
                                  (["--at", "1", "--format", "gif", take.path], "--format"),
                                  (["--at", "-1", take.path], "--at")] {
            let r = try images(arguments, in: folder)
            #expect(r.status == 2 && r.stderr.contains(says), "\(arguments): \(r.status) \(r.stderr)")
        }
        let missing = try images(["--at", "1", folder.appendingPathComponent("none.mp4").path], in: folder)
        #expect(missing.status == 1 && missing.stderr.contains("none.mp4"), "\(missing.stderr)")
    }
}
