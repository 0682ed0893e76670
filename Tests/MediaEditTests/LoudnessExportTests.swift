import FarmTestSupport
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import Testing
@testable import MediaEdit

private func t(_ v: Int64, _ s: Int32 = 1) -> MediaTime { MediaTime(value: v, timescale: s) }

/// Exports delivered at a loudness target, checked with FFmpeg's `ebur128` filter (a peer's BS.1770-4)
/// and ffprobe as oracles: the integrated loudness within 0.1 LU of the target, the true peak at or under
/// its limit, and the sample rate, layout and sample count of the composition.
@Suite struct LoudnessExportTests {
    static let folder = try! TestPaths.makeTemporaryFolder("loudness-export")

    /// Makes `name` with ffmpeg from lavfi sources.
    static func make(_ name: String, _ arguments: [String]) throws -> String {
        let path = folder.appendingPathComponent(name).path
        if FileManager.default.fileExists(atPath: path) { return path }
        // Tests run at once and may want the same file: each makes its own, then renames it into place.
        let own = Self.folder.appendingPathComponent("\(UUID().uuidString)-\(name)").path
        let r = try ProcessRunner.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y"] + arguments + [own])
        guard r.status == 0 else { throw FixtureError("ffmpeg \(arguments): \(r.stderr)") }
        guard rename(own, path) == 0 else { throw FixtureError("cannot rename \(own) to \(path)") }
        return path
    }

    /// Programme-like stereo material at about -31 LUFS with its peaks far under 0 dBFS: linear gain
    /// reaches any usual target.
    static func quietProgramme() throws -> String {
        try make("quiet.m4a", [
            "-f", "lavfi", "-i", "anoisesrc=color=pink:sample_rate=48000:amplitude=0.08:duration=30:seed=3",
            "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=30",
            "-filter_complex", "[0]volume='if(lt(t,10),0.5,1)':eval=frame[n];[1]volume=0.03[s];[n][s]amix=inputs=2:normalize=0,pan=stereo|c0=c0|c1=0.8*c0",
            "-c:a", "aac", "-b:a", "192k"])
    }

    /// Noise with a loud click every second: the noise makes the loudness, the clicks the peaks. Bringing
    /// it up to -14 LUFS would put the clicks far over any peak limit.
    static func clicks() throws -> String {
        try make("clicks.wav", [
            "-f", "lavfi", "-i", "anoisesrc=color=pink:sample_rate=48000:amplitude=0.15:duration=20:seed=5",
            "-f", "lavfi", "-i", "aevalsrc='if(lt(mod(t,1),0.001),0.9*sin(2*PI*3000*t),0)':s=48000:d=20",
            "-filter_complex", "[0][1]amix=inputs=2:normalize=0,pan=stereo|c0=c0|c1=c0", "-c:a", "pcm_f32le"])
    }

    func composition(_ path: String, scales: [(TimeRange, MediaTime)] = []) async throws -> Composition {
        var c = Composition()
        let duration = try await Asset(path: path).load(.duration)
        try c.insert(TimeRange(start: .zero, duration: duration), of: path)
        for (range, to) in scales { try c.scale(range, toDuration: to) }
        return c
    }

    func export(_ c: Composition, to name: String, goal: LoudnessGoal, policy: ExportSettings.AudioPolicy = .auto,
                timePitch: AudioTimePitchAlgorithm = .spectral, muxer: String = "mp4") async throws -> (String, ExportReport) {
        let path = Self.folder.appendingPathComponent(name).path
        try? FileManager.default.removeItem(atPath: path)  // a run before this one may have left it
        var settings = ExportSettings(mode: .passthrough, outputPath: path, muxer: muxer, audioPolicy: policy, timePitch: timePitch)
        settings.loudness = goal
        return (path, try await ExportSession(composition: c, settings: settings).export())
    }

    static func ebu() -> LoudnessGoal { LoudnessGoal(measureOnly: false, target: -23, truePeak: -1, standard: "ebu-r128") }

    /// The audio stream's rate, channel layout and sample count (as the container declares it: exact).
    static func audioShape(_ path: String) throws -> (rate: Int, layout: String, samples: Int) {
        let r = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=sample_rate,channel_layout",
                                                    "-of", "default=nw=1", path]).stdout
        func field(_ name: String) -> String {
            r.split(separator: "\n").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) } ?? ""
        }
        return (Int(field("sample_rate")) ?? 0, field("channel_layout"), try MediaProbe.declaredAudioSamples(path) ?? -1)
    }

    @Test func linearGainDeliversAtTheTargetAndKeepsTheShapeOfTheAudio() async throws {
        let source = try Self.quietProgramme()
        let c = try await composition(source)
        let (path, report) = try await export(c, to: "ebu.mp4", goal: Self.ebu())
        let l = try #require(report.audio.loudness)
        #expect(report.audio.handling == "encoded" && l.mode == .normalized && l.standard == "ebu-r128")
        #expect(l.limiter == nil, "gain alone suffices here: \(l)")
        let before = try #require(l.before.integrated), gain = try #require(l.meanGain)
        // The gain is the target minus the loudness before, corrected by what the codec took.
        #expect(before < -28 && abs(gain - (-23 - before)) < 0.5, "\(l)")
        #expect(abs((l.after?.integrated ?? 0) + 23) <= LoudnessNormalizer.tolerance, "\(l)")
        // The peer's meter agrees.
        let theirs = try EBUR128Probe.summary(path)
        #expect(abs(theirs.integrated + 23) <= 0.1, "ffmpeg reads \(theirs.integrated) LUFS")
        #expect(theirs.truePeak <= -1, "ffmpeg reads a true peak of \(theirs.truePeak)")
        // The loudness range is kept: a gain changes none of it.
        #expect(abs(theirs.range - l.before.range) <= 0.3, "range \(theirs.range) against \(l.before.range) before")
        let shape = try Self.audioShape(path)
        #expect(shape.rate == 48000 && shape.layout == "stereo" && shape.samples == 30 * 48000, "\(shape)")
    }

    @Test func theLimiterHoldsTheTruePeakWhereGainAloneWouldBreakIt() async throws {
        let c = try await composition(try Self.clicks())
        let goal = LoudnessGoal(measureOnly: false, target: -14, truePeak: -1, standard: "streaming-14")
        let (path, report) = try await export(c, to: "limited.mp4", goal: goal)
        let l = try #require(report.audio.loudness)
        let limiter = try #require(l.limiter, "the clicks need the limiter: \(l)")
        #expect(limiter.maxReduction < -3 && limiter.limitedSeconds > 0 && limiter.ceiling <= -1.1, "\(limiter)")
        #expect(l.note?.contains("the limiter held it") == true, "\(l.note ?? "no note")")
        #expect((l.before.truePeak ?? -99) + (l.meanGain ?? 0) > -1, "gain alone would pass the limit: \(l)")
        let theirs = try EBUR128Probe.summary(path)
        #expect(abs(theirs.integrated + 14) <= 0.1, "ffmpeg reads \(theirs.integrated) LUFS")
        #expect(theirs.truePeak <= -1, "ffmpeg reads a true peak of \(theirs.truePeak) dBTP")
        #expect(try Self.audioShape(path).samples == 20 * 48000)
    }

    @Test func aSilentTrackIsReportedNotDividedBy() async throws {
        let source = try Self.make("silence.wav", ["-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo", "-t", "5", "-c:a", "pcm_s16le"])
        let (path, report) = try await export(try await composition(source), to: "silence.mp4", goal: Self.ebu())
        let l = try #require(report.audio.loudness)
        #expect(l.before.integrated == nil && l.gain == 0 && l.passes == 1, "\(l)")
        #expect(l.note?.contains("silent") == true, "\(l.note ?? "no note")")
        #expect(try Self.audioShape(path).samples == 5 * 48000)
    }

    @Test func fivePointOneIsWeightedAndKeepsItsChannels() async throws {
        let source = try Self.make("surround.wav", [
            "-f", "lavfi", "-i", "anoisesrc=color=pink:sample_rate=48000:amplitude=0.05:duration=12:seed=9",
            "-af", "pan=5.1(side)|FL=c0|FR=0.9*c0|FC=0.5*c0|LFE=c0|SL=0.7*c0|SR=0.6*c0", "-c:a", "pcm_f32le"])
        let goal = LoudnessGoal(measureOnly: false, target: -24, truePeak: -2, standard: "atsc-a85")
        let (path, report) = try await export(try await composition(source), to: "surround.mp4", goal: goal)
        let l = try #require(report.audio.loudness)
        #expect(l.before.channels.map(\.weight) == [1, 1, 1, 0, 1.41, 1.41], "\(l.before.channels)")
        let theirs = try EBUR128Probe.summary(path)
        #expect(abs(theirs.integrated + 24) <= 0.1 && theirs.truePeak <= -2, "ffmpeg reads \(theirs.integrated) LUFS, \(theirs.truePeak) dBTP")
        let shape = try Self.audioShape(path)
        #expect(shape.layout.hasPrefix("5.1") && shape.samples == 12 * 48000, "\(shape)")
    }

    @Test func monoStaysMono() async throws {
        let source = try Self.make("mono.wav", ["-f", "lavfi", "-i", "sine=f=1000:sample_rate=44100:d=8", "-af", "volume=0.1", "-c:a", "pcm_s16le"])
        let (path, report) = try await export(try await composition(source), to: "mono.mp4", goal: Self.ebu())
        let l = try #require(report.audio.loudness)
        // A 1 kHz sine with a -20 dBFS peak reads -23.0 LUFS; lavfi's sine peaks at 1/8, here x 0.1: -38.06 dBFS,
        // so -41.06 LUFS and a gain of 18.06 dB.
        #expect(abs((l.before.integrated ?? 0) + 41.06) < 0.1 && abs((l.meanGain ?? 0) - 18.06) < 0.15, "\(l)")
        let theirs = try EBUR128Probe.summary(path)
        #expect(abs(theirs.integrated + 23) <= 0.1, "ffmpeg reads \(theirs.integrated)")
        let shape = try Self.audioShape(path)
        #expect(shape.rate == 44100 && shape.layout == "mono" && shape.samples == 8 * 44100, "\(shape)")
    }

    /// The loudness is the composition's, after the retime: a quiet half slowed four times weighs four
    /// times as much as it does in the source.
    @Test func aScaledEditIsMeasuredAfterItsRetime() async throws {
        let source = try Self.make("loud-then-quiet.wav", [
            "-f", "lavfi", "-i", "anoisesrc=color=pink:sample_rate=48000:amplitude=0.2:duration=10:seed=4",
            "-af", "volume='if(lt(t,5),1,0.4)':eval=frame,pan=stereo|c0=c0|c1=c0", "-c:a", "pcm_f32le"])
        let sourceLoudness = try #require(try LoudnessReport.measure(path: source).asset?.integrated)
        let c = try await composition(source, scales: [(TimeRange(start: t(5), end: t(10)), t(20))])
        let (path, report) = try await export(c, to: "retimed.mp4", goal: Self.ebu(), timePitch: .varispeed)
        let l = try #require(report.audio.loudness)
        #expect(abs(l.before.seconds - 25) < 0.01, "the composition lasts 25 s: \(l.before.seconds)")
        // Quiet for 5 of 10 s in the source (-8 dB: inside the relative gate), for 20 of 25 s in the composition.
        #expect((l.before.integrated ?? 0) < sourceLoudness - 2, "\(l.before.integrated ?? .nan) against the source's \(sourceLoudness)")
        let theirs = try EBUR128Probe.summary(path)
        #expect(abs(theirs.integrated + 23) <= 0.1, "ffmpeg reads \(theirs.integrated)")
        #expect(try Self.audioShape(path).samples == 25 * 48000)
    }

    /// A smart cut (frames from a cut to the next keyframe re-encoded, audio encoded): its audio is brought
    /// to the target over the composition, and the cut is still exact.
    @Test func aSmartCutIsNormalized() async throws {
        var c = Composition()
        try c.insert(TimeRange(start: MediaTime(value: 13, timescale: 10), duration: t(5)), of: MediaFixture.tone60MP4.path)
        let path = Self.folder.appendingPathComponent("smart.mp4").path
        try? FileManager.default.removeItem(atPath: path)  // a run before this one may have left it
        var settings = ExportSettings(mode: .passthrough, outputPath: path, muxer: "mp4", preset: "ultrafast", cuts: .smart)
        settings.loudness = Self.ebu()
        let report = try await ExportSession(composition: c, settings: settings).export()
        #expect(report.cuts.first?.method == .smartRendered && report.audio.handling == "encoded", "\(report.cuts)")
        let l = try #require(report.audio.loudness)
        #expect(abs(l.before.seconds - 5) < 0.001 && l.mode == .normalized, "\(l)")
        let theirs = try EBUR128Probe.summary(path)
        #expect(abs(theirs.integrated + 23) <= 0.1 && theirs.truePeak <= -1, "ffmpeg reads \(theirs.integrated) LUFS, \(theirs.truePeak) dBTP")
        #expect(try Self.audioShape(path).samples == 5 * 48000)
        #expect(try MediaProbe.packets(path, stream: "v").count == 300, "5 s at 60 fps, exactly")
    }

    /// A programme of several minutes is encoded in parts of about a minute, on every core, each part with
    /// 256 AAC frames encoded before it and dropped: the parts join without a seam. Around each join, the
    /// decoded audio is as close to the gained source as anywhere near it (the codec's noise to the
    /// signal, window by window); the sample count is the composition's, and the loudness the target.
    @Test func aLongProgrammeIsEncodedInPartsThatJoinWithoutASeam() async throws {
        let seconds = 160, rate = 48000
        // Tones moving in pitch and level, different on each side: the codec codes their waveform (noise
        // it would code as noise), so a seam would stand out from its quiet residue.
        let source = try Self.make("tones-160s.wav", [
            "-f", "lavfi", "-i", "aevalsrc='(0.5+0.5*abs(sin(t/7)))*(0.1*sin(2*PI*220*t)+0.08*sin(2*PI*330*t+sin(t))+0.05*sin(2*PI*(440+20*sin(t/3))*t))"
                + "|(0.5+0.5*abs(sin(t/5)))*(0.1*sin(2*PI*221*t)+0.07*sin(2*PI*550*t)+0.03*sin(2*PI*2500*t))':s=48000:d=160",
            "-c:a", "pcm_s16le"])
        let parts = LoudnessNormalizer.parts(frames: seconds * rate, sampleRate: rate)
        #expect(parts.count == 3 && parts.allSatisfy { $0.lowerBound % 1024 == 0 } && parts.last?.upperBound == seconds * rate, "\(parts)")
        let (path, report) = try await export(try await composition(source), to: "long.mp4", goal: Self.ebu())
        let l = try #require(report.audio.loudness)
        #expect(abs((l.after?.integrated ?? 0) + 23) <= LoudnessNormalizer.tolerance, "\(l)")
        let theirs = try EBUR128Probe.summary(path)
        #expect(abs(theirs.integrated + 23) <= 0.1 && theirs.truePeak <= -1, "ffmpeg reads \(theirs.integrated) LUFS, \(theirs.truePeak) dBTP")
        #expect(try Self.audioShape(path).samples == seconds * rate)

        // Both decoded to interleaved float by FFmpeg, each window of 1024 frames compared with the source
        // at the gain that fits it best: what is left is the codec's noise.
        func decode(_ file: String, _ name: String) throws -> FileHandle {
            let raw = Self.folder.appendingPathComponent(name).path
            _ = try ProcessRunner.check("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", file, "-map", "0:a:0", "-f", "f32le", "-ac", "2", raw])
            return try FileHandle(forReadingFrom: URL(fileURLWithPath: raw))
        }
        let ours = try decode(path, "long-ours.f32"), original = try decode(source, "long-source.f32")
        func window(_ file: FileHandle, _ start: Int) throws -> [Float] {
            try file.seek(toOffset: UInt64(start * 2 * 4))
            let data = try #require(try file.read(upToCount: 1024 * 2 * 4))
            return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        }
        func noise(at start: Int) throws -> Double {
            let o = try window(ours, start).map(Double.init), s = try window(original, start).map(Double.init)
            let os = zip(o, s).reduce(0) { $0 + $1.0 * $1.1 }, ss = s.reduce(0) { $0 + $1 * $1 }
            let g = os / ss
            return zip(o, s).reduce(0) { $0 + ($1.0 - g * $1.1) * ($1.0 - g * $1.1) } / (g * g * ss)
        }
        for join in parts.dropFirst().map(\.lowerBound) {
            let seam = try [noise(at: join - 1024), noise(at: join)]
            let around = try (-40..<40).filter { ![-1, 0].contains($0) }.map { try noise(at: join + $0 * 1024) }.sorted()
            let typical = around[around.count / 2]
            #expect(seam.max()! <= 3 * typical, "at frame \(join): noise \(seam) against \(typical) around it")
        }
    }

    /// At a low bit rate the codec takes loudness away, several LU: the first pass over a programme of
    /// several parts sees it in its first parts and steers the rest to a second gain (half a dB more, no
    /// further); the next pass corrects the rest over the whole at one gain.
    @Test func aPassIsSteeredWhereTheCodecTakesLoudnessAway() async throws {
        let source = try Self.make("noise-160s.wav", [
            "-f", "lavfi", "-i", "anoisesrc=color=pink:sample_rate=48000:amplitude=0.05:duration=160:seed=12",
            "-f", "lavfi", "-i", "anoisesrc=color=white:sample_rate=48000:amplitude=0.02:duration=160:seed=13",
            "-filter_complex", "[0]volume='0.4+0.6*abs(sin(t/11))':eval=frame[a];[a][1]join=inputs=2:channel_layout=stereo", "-c:a", "pcm_s16le"])
        let path = Self.folder.appendingPathComponent("steered.mp4").path
        try? FileManager.default.removeItem(atPath: path)  // a run before this one may have left it
        var settings = ExportSettings(mode: .passthrough, outputPath: path, muxer: "mp4", audioPolicy: .auto, audioBitRate: 48_000)
        settings.loudness = Self.ebu()
        let report = try await ExportSession(composition: try await composition(source), settings: settings).export()
        let l = try #require(report.audio.loudness)
        // AAC at 48 kb/s took some 4 LU: far more than one pass's steering (half a dB) makes up.
        // One gain, or the stretches at each (never both), covering the programme.
        #expect((l.gain == nil) != (l.gains == nil), "\(l)")
        if let spans = l.gains {
            #expect(spans.first?.from == 0 && abs((spans.last?.to ?? 0) - 160) < 0.01 && zip(spans, spans.dropFirst()).allSatisfy { $0.to == $1.from },
                    "\(spans)")
        }
        #expect((l.gain ?? l.gains?.map(\.gain).min() ?? 0) > -23 - (l.before.integrated ?? 0) + 2, "\(l)")
        #expect(abs((l.after?.integrated ?? 0) + 23) <= LoudnessNormalizer.tolerance, "\(l)")
        let theirs = try EBUR128Probe.summary(path)
        #expect(abs(theirs.integrated + 23) <= 0.1 && theirs.truePeak <= -1, "ffmpeg reads \(theirs.integrated) LUFS, \(theirs.truePeak) dBTP")
        #expect(try Self.audioShape(path).samples == 160 * 48000)
    }

    @Test func measureOnlyReportsAndChangesNothing() async throws {
        let source = try Self.quietProgramme()
        let goal = LoudnessGoal(measureOnly: true, target: nil, truePeak: nil, standard: nil)
        let (path, report) = try await export(try await composition(source), to: "measured.mp4", goal: goal)
        #expect(report.audio.handling == "copied")
        let l = try #require(report.audio.loudness)
        #expect(l.mode == .measured && l.gain == nil && l.after == nil)
        let ours = try #require(try LoudnessReport.measure(path: source).asset?.integrated)
        #expect(abs((l.before.integrated ?? 0) - ours) < 0.05, "\(l.before) against \(ours)")
        #expect(try MediaProbe.streamHashes(path) == MediaProbe.streamHashes(source), "copied audio is untouched")

        // Encoded audio, measured before and after the codec.
        let (_, encoded) = try await export(try await composition(source), to: "measured-encoded.mp4", goal: goal, policy: .reencode)
        let e = try #require(encoded.audio.loudness)
        #expect(e.mode == .measured && abs((e.before.integrated ?? 0) - ours) < 0.1 && abs((e.after?.integrated ?? 0) - ours) < 0.5, "\(e)")
    }

    @Test func copiedAudioIsNotNormalizedButRefusedWithTheWaysOut() async throws {
        let source = try Self.quietProgramme()
        await #expect {
            _ = try await export(try await composition(source), to: "copy.mp4", goal: Self.ebu(), policy: .copy)
        } throws: { error in
            let text = "\(error)"
            return text.contains("copied audio cannot be brought to a loudness target") && text.contains("\"policy\": \"auto\"")
                && text.contains("\"measure\": true")
        }
        #expect(!FileManager.default.fileExists(atPath: Self.folder.appendingPathComponent("copy.mp4").path))
    }
}
