import FarmTestSupport
import Foundation
import MediaCore
import MediaInspect
import QualityModel
import Testing

/// The quality checks on media with faults put at known times, held to where they were put (a picture for
/// video, 10 ms for sound) and to FFmpeg's own filters on the same file; and on clean material, where they
/// must find nothing.
@Suite struct QualityCheckTests {
    static let folder = try! TestPaths.makeTemporaryFolder("quality")

    static func make(_ name: String, _ arguments: [String]) throws -> String {
        let path = folder.appendingPathComponent(name).path
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error"] + arguments + [path])
        return path
    }

    static func result(_ report: CheckReport, _ check: String) throws -> CheckResult {
        try #require(report.checks.first { $0.check == check }, "no \(check) in \(report.checks.map(\.check))")
    }

    static let frame = 1.0 / 30

    @Test func faultsAreFoundWhereTheyWerePutAndWhereFFmpegsFiltersFindThem() throws {
        let path = MediaFixture.faultsMKV.path
        var plan = CheckPlan.standard
        plan.black?.duration = 1  // the black is 1.5 s: below blackdetect's default of 2
        plan.silence?.eachChannel = true
        let report = try CheckReport.check(path: path, plan: plan)
        let theirs = try QCFilterProbe.run(path, black: "d=1", silence: "mono=1")
        #expect(report.verdict == .failed && report.frames == 600, "\(report.verdict) \(report.frames)")

        let black = try Self.result(report, "black")
        #expect(black.outcome == .failed && black.runs.count == 1, "\(black)")
        if let run = black.runs.first {
            #expect(abs(run.start - 12) <= Self.frame && abs(run.end - 13.5) <= Self.frame, "\(run)")
            #expect(theirs.black.count == 1 && abs(run.start - theirs.black[0].start) < 1e-3 && abs(run.end - (theirs.black[0].end ?? 0)) < 1e-3,
                    "ours \(run), blackdetect's \(theirs.black)")
        }

        let freeze = try Self.result(report, "freeze")
        #expect(freeze.outcome == .failed && freeze.runs.count == 1, "\(freeze)")
        if let run = freeze.runs.first {
            #expect(abs(run.start - 4) <= Self.frame && abs(run.end - 7) <= Self.frame && abs(run.duration - 3) <= Self.frame, "\(run)")
            #expect(theirs.freeze.count == 1 && abs(run.start - theirs.freeze[0].start) < 1e-3 && abs(run.end - (theirs.freeze[0].end ?? 0)) < 1e-3,
                    "ours \(run), freezedetect's \(theirs.freeze)")
        }

        // The bright quarter: every picture from 15 to 16 s, and the same pictures as signalstats' BRNG above 1%.
        let levels = try Self.result(report, "levels")
        #expect(levels.outcome == .warning && levels.runs.count == 1, "\(levels)")
        if let run = levels.runs.first {
            #expect(abs(run.start - 15) <= Self.frame && abs(run.end - 16) <= Self.frame, "\(run)")
            #expect(abs((run.value ?? 0) - 0.25) < 0.02, "a quarter of the pixels, not \(run.value ?? 0)")
        }
        let flagged = theirs.brng.enumerated().filter { $0.element > 0.01 }.map(\.offset)
        #expect(flagged.first.map { Double($0) * Self.frame } == levels.runs.first?.start && flagged.count == 30, "BRNG above 1% at pictures \(flagged)")
        #expect(abs((levels.figures?["worstShare"] ?? 0) - (theirs.brng.max() ?? 0)) < 1e-6, "worst \(levels.figures ?? [:]) against \(theirs.brng.max() ?? 0)")

        let silence = try Self.result(report, "silence")
        #expect(silence.outcome == .warning && silence.runs.count == 1, "\(silence)")
        if let run = silence.runs.first {
            #expect(run.channel == 2 && run.track == 2 && abs(run.start - 5) <= 0.01 && abs(run.end - 7) <= 0.01, "\(run)")
            #expect(theirs.silence.count == 1 && theirs.silence[0].channel == 2 && abs(run.start - theirs.silence[0].start) <= 0.01
                    && abs(run.end - (theirs.silence[0].end ?? 0)) <= 0.01, "ours \(run), silencedetect's \(theirs.silence)")
        }

        // 50 ms clipped on the left: the samples at full scale are astats' peak count of that channel.
        let clipping = try Self.result(report, "clipping")
        #expect(clipping.outcome == .failed && clipping.runs.count == 1, "\(clipping)")
        if let run = clipping.runs.first {
            #expect(run.channel == 1 && abs(run.start - 9) <= 0.01 && abs(run.end - 9.05) <= 0.01, "\(run)")
            #expect(theirs.peakCounts.first.map(Double.init) == run.value, "ours \(run.value ?? 0), astats' \(theirs.peakCounts)")
        }
        for name in ["channels", "cadence", "interlace"] { #expect(try Self.result(report, name).outcome == .passed, "\(name)") }
    }

    @Test func aMissingPictureInAConstantRateIsFound() throws {
        let report = try CheckReport.check(path: MediaFixture.droppedFrameMKV.path, plan: CheckPlan(cadence: .init()))
        let cadence = try Self.result(report, "cadence")
        #expect(cadence.outcome == .warning && cadence.figures?["dropped"] == 1 && cadence.figures?["duplicated"] == 0, "\(cadence)")
        #expect(cadence.runs.count == 1 && abs((cadence.runs.first?.start ?? 0) - 100 * Self.frame) <= 0.002, "\(cadence.runs)")
        // The same file whole is fine.
        let whole = try CheckReport.check(path: MediaFixture.longMP4.path, plan: CheckPlan(cadence: .init()))
        #expect(try Self.result(whole, "cadence").outcome == .passed)
    }

    /// Fields woven into progressive pictures (60 fields a second, coded as 30 progressive pictures) are found, counted as `idet` counts them
    /// at the same threshold; and FFmpeg's own threshold (1.04) would have typed the moving test pattern of the faults file as interlaced.
    @Test func interlacedPicturesInAProgressiveVideoAreFoundAsIdetFindsThem() throws {
        let path = try Self.make("combed.mp4", ["-f", "lavfi", "-i", "testsrc2=s=320x240:r=60:d=6", "-vf", "tinterlace=mode=interleave_top",
                                                "-c:v", "libx264", "-crf", "16", "-preset", "veryfast", "-pix_fmt", "yuv420p"])
        let interlace = try Self.result(try CheckReport.check(path: path, plan: CheckPlan(interlace: .init())), "interlace")
        #expect(interlace.outcome == .warning && interlace.runs.count == 1 && interlace.runs.first?.duration == 6, "\(interlace)")
        let theirs = try QCFilterProbe.idet(path)
        let figures = interlace.figures ?? [:]
        #expect(["tff", "bff", "progressive", "undetermined"].map { Int(figures[$0] ?? -1) } == theirs.multi, "ours \(figures), idet's \(theirs)")
        #expect(["singleTFF", "singleBFF", "singleProgressive", "singleUndetermined"].map { Int(figures[$0] ?? -1) } == theirs.single, "ours \(figures), idet's \(theirs)")
        var lenient = CheckPlan.Interlace()
        lenient.threshold = 1.04
        let fooled = try Self.result(try CheckReport.check(path: MediaFixture.faultsMKV.path, plan: CheckPlan(interlace: lenient)), "interlace")
        let theirsFooled = Array(try QCFilterProbe.idet(MediaFixture.faultsMKV.path, threshold: 1.04).multi.prefix(2))
        #expect(fooled.outcome == .warning && ["tff", "bff"].map { Int(fooled.figures?[$0] ?? -1) } == theirsFooled, "\(fooled)")
        #expect(try Self.result(try CheckReport.check(path: MediaFixture.faultsMKV.path, plan: CheckPlan(interlace: .init())), "interlace").outcome == .passed)
        // The same pictures coded as interlaced say so: the check does not apply.
        let flagged = try Self.make("flagged.mp4", ["-f", "lavfi", "-i", "testsrc2=s=320x240:r=60:d=2", "-vf", "tinterlace=mode=interleave_top",
                                                    "-c:v", "libx264", "-flags", "+ildct+ilme", "-preset", "veryfast", "-pix_fmt", "yuv420p"])
        #expect(try Self.result(try CheckReport.check(path: flagged, plan: CheckPlan(interlace: .init())), "interlace").outcome == .notApplicable)
    }

    @Test func aSilentChannelAndAnInvertedPairAreFound() throws {
        let path = try Self.make("channels.wav", ["-f", "lavfi", "-i", "aevalsrc='0.3*sin(2*PI*440*t)|-0.3*sin(2*PI*440*t)|0|0.2*sin(2*PI*550*t)':s=48000:d=3",
                                                  "-c:a", "pcm_s16le"])
        let report = try CheckReport.check(path: path, plan: CheckPlan(channels: .init()))
        let channels = try Self.result(report, "channels")
        #expect(channels.outcome == .warning, "\(channels)")
        #expect(channels.summary.contains("channel 3 is digitally silent") && channels.summary.contains("channels 1 and 2 are phase-inverted"), "\(channels.summary)")
        #expect(!channels.summary.contains("channels 1 and 4") && !channels.summary.contains("channel 4 is"), "\(channels.summary)")
        // Stereo that is merely alike (the same tone, one quieter) is not inverted.
        let alike = try Self.make("alike.wav", ["-f", "lavfi", "-i", "aevalsrc='0.3*sin(2*PI*440*t)|0.1*sin(2*PI*440*t)':s=48000:d=3", "-c:a", "pcm_s16le"])
        #expect(try Self.result(try CheckReport.check(path: alike, plan: CheckPlan(channels: .init())), "channels").outcome == .passed)
    }

    @Test func loudnessIsHeldToItsTargetAndTruePeak() throws {
        // A 1 kHz sine at -20 dBFS peak (lavfi's sine is 1/8 of full scale) in both channels reads -20 LUFS: outside EBU R128, within -20 ± 1.
        let path = try Self.make("loud.wav", ["-f", "lavfi", "-i", "sine=f=1000:sample_rate=48000:d=10", "-af", "volume=0.8,pan=stereo|c0=c0|c1=c0", "-c:a", "pcm_s16le"])
        let r128 = try Self.result(try CheckReport.check(path: path, plan: CheckPlan(loudness: .init(target: -23, tolerance: 1, truePeak: -1))), "loudness")
        #expect(r128.outcome == .failed && r128.summary.contains("outside -23.0 ± 1.0 LU"), "\(r128)")
        let near = try Self.result(try CheckReport.check(path: path, plan: CheckPlan(loudness: .init(target: -20, tolerance: 1, truePeak: -1))), "loudness")
        #expect(near.outcome == .passed, "\(near)")
        let peak = try Self.result(try CheckReport.check(path: path, plan: CheckPlan(loudness: .init(target: -20, tolerance: 1, truePeak: -25))), "loudness")
        #expect(peak.outcome == .failed && peak.summary.contains("true peak"), "\(peak)")
    }

    /// A spec that holds passes; one that does not names each field, what it expected and what it found.
    @Test func aFileIsHeldToItsSpec() throws {
        var spec = CheckPlan.Spec()
        spec.container = ["mp4"]
        spec.size = SpecRange(min: nil, max: 10_000_000)
        var video = CheckPlan.Spec.Video()
        (video.codec, video.profile, video.width, video.height) = (["h264"], ["Constrained Baseline", "High"], SpecRange(min: 320, max: 320), SpecRange(min: 240, max: 240))
        (video.frameRate, video.scanType, video.pixelFormat) = ([30], "progressive", ["yuv420p"])
        video.bitRate = SpecRange(min: 1000, max: nil)
        var audio = CheckPlan.Spec.Audio()
        (audio.codec, audio.sampleRate, audio.channels, audio.channelLayout) = (["aac"], [48000], SpecRange(min: 2, max: 2), ["stereo"])
        audio.bitRate = SpecRange(min: 64_000, max: 128_000)
        (spec.video, spec.audio) = (video, audio)
        let fine = try Self.result(try CheckReport.check(path: MediaFixture.cfr30MP4.path, plan: CheckPlan(spec: spec)), "spec")
        #expect(fine.outcome == .passed, "\(fine.summary)")

        spec.container = ["matroska"]
        spec.video?.codec = ["hevc", "av1"]
        spec.video?.frameRate = [25, 50]
        spec.video?.width = SpecRange(min: 1280, max: nil)
        spec.audio?.sampleRate = [44100]
        spec.audio?.bitRate = SpecRange(min: 192_000, max: nil)
        let off = try Self.result(try CheckReport.check(path: MediaFixture.cfr30MP4.path, plan: CheckPlan(spec: spec)), "spec")
        #expect(off.outcome == .failed, "\(off)")
        for said in ["container: expected matroska, found mov,mp4,m4a,3gp,3g2,mj2", "video.codec: expected one of hevc, av1, found h264",
                     "video.frameRate: expected one of 25, 50, found 30", "video.width: expected at least 1280, found 320",
                     "audio.sampleRate: expected 44100, found 48000", "audio.bitRate: expected at least 192000 b/s, found "] {
            #expect(off.summary.contains(said), "\(said) not in \(off.summary)")
        }
        // Video asked of a file with none.
        var wants = CheckPlan.Spec()
        wants.video = CheckPlan.Spec.Video()
        let none = try Self.result(try CheckReport.check(path: MediaFixture.audioWAV.path, plan: CheckPlan(spec: wants)), "spec")
        #expect(none.outcome == .failed && none.summary == "video: expected a video track, found none", "\(none)")
    }

    @Test func theLengthIsHeldToWhatIsExpected() throws {
        var length = CheckPlan.Length()
        (length.duration, length.durationTolerance, length.frames) = (10, 0.05, 300)
        let fine = try Self.result(try CheckReport.check(path: MediaFixture.longMP4.path, plan: CheckPlan(length: length)), "length")
        #expect(fine.outcome == .passed && fine.figures?["frames"] == 300, "\(fine)")
        // A duration alone is measured too (the pictures and the sound are decoded for it).
        var alone = CheckPlan.Length()
        (alone.duration, alone.durationTolerance) = (10, 0.05)
        let measured = try Self.result(try CheckReport.check(path: MediaFixture.longMP4.path, plan: CheckPlan(length: alone)), "length")
        #expect(measured.outcome == .passed && abs((measured.figures?["duration"] ?? 0) - 10) < 0.05, "\(measured)")
        length.frames = 299
        let off = try Self.result(try CheckReport.check(path: MediaFixture.longMP4.path, plan: CheckPlan(length: length)), "length")
        #expect(off.outcome == .failed && off.summary.contains("has 300 pictures, not 299 ± 0"), "\(off)")
    }

    /// A dark, quiet scene (low, moving luma; soft noise well above -60 dBFS) is neither black, frozen nor silent.
    @Test func aDarkQuietSceneHasNoFindingsAtTheDefaults() throws {
        let path = try Self.make("dark-quiet.mkv", [
            "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=12,lutyuv=y='45+val/8':u='128+(val-128)/8':v='128+(val-128)/8'",
            "-f", "lavfi", "-i", "anoisesrc=color=pink:sample_rate=48000:amplitude=0.02:duration=12:seed=3",
            "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "flac", "-ac", "2"])
        let report = try CheckReport.check(path: path, plan: .standard)
        #expect(report.verdict == .passed, "\(report.problems)")
        #expect(report.checks.map(\.check) == ["black", "freeze", "levels", "interlace", "cadence", "silence", "clipping", "channels"], "\(report.checks.map(\.check))")
    }

    /// The corpus's real files: nothing black, frozen, silent, clipped or odd in their channels; where levels or cadence find
    /// something, it is there (signalstats' BRNG above 1%, and the gaps in ffprobe's picture times).
    @Test func theCorpusHasNoFalseFindings() throws {
        for url in TestPaths.corpusFiles where !url.lastPathComponent.contains("invalid") {
            let path = url.path
            let report = try CheckReport.check(path: path, plan: .standard)
            for check in ["black", "freeze", "silence", "clipping", "channels"] {
                let r = try Self.result(report, check)
                #expect(r.outcome == .passed || r.outcome == .notApplicable, "\(url.lastPathComponent): \(r)")
            }
            if try Self.result(report, "interlace").outcome != .notApplicable {
                let figures = try Self.result(report, "interlace").figures ?? [:]
                #expect(["tff", "bff", "progressive", "undetermined"].map { Int(figures[$0] ?? -1) } == (try QCFilterProbe.idet(path).multi),
                        "\(url.lastPathComponent): \(figures)")
            }
            let levels = try Self.result(report, "levels")
            guard levels.outcome != .notApplicable else { continue }
            let theirs = try QCFilterProbe.run(path, audio: false)
            let ours = levels.runs.reduce(0) { $0 + $1.duration }
            let flagged = theirs.brng.filter { $0 > 0.01 }.count
            #expect((ours == 0) == (flagged == 0), "\(url.lastPathComponent): ours \(levels.runs), BRNG above 1% in \(flagged) pictures")
            #expect(abs((levels.figures?["worstShare"] ?? -1) - (theirs.brng.max() ?? -1)) < 1e-5, "\(url.lastPathComponent): \(levels.figures ?? [:]) against \(theirs.brng.max() ?? -1)")
        }
    }

    @Test func aResultKeepsItsFirstHundredRunsAndCountsTheRest() {
        let runs = (0..<1500).map { CheckRun(start: Double($0), end: Double($0) + 0.5) }
        let result = CheckResult(check: "black", severity: .warn, found: true, summary: runs.said("black"), thresholds: [:], runs: runs)
        #expect(result.runs.count == 100 && result.runsLeftOut == 1400 && result.runs.last?.start == 99 && result.summary.hasPrefix("1500 black runs"))
    }

    @Test func aFileWithoutVideoOrSoundSaysWhichChecksDoNotApply() throws {
        let report = try CheckReport.check(path: MediaFixture.audioWAV.path, plan: .standard)
        #expect(try Self.result(report, "black").outcome == .notApplicable && report.verdict == .passed, "\(report.checks)")
        #expect(throws: MediaFileError.self) { try CheckReport.check(path: Self.folder.appendingPathComponent("absent.mp4").path, plan: .standard) }
    }
}
