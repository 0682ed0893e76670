import FarmTestSupport
import Foundation
import MediaCore
import MediaInspect
import Testing

/// Loudness (BS.1770-4 by libebur128) against its calibration and against a peer's implementation,
/// FFmpeg's `ebur128` filter, on tones and programme-like material made by ffmpeg.
@Suite struct LoudnessTests {
    static let folder = try! TestPaths.makeTemporaryFolder("loudness")

    /// Makes `name` with ffmpeg from a lavfi graph `source` (audio only unless `video`).
    static func make(_ name: String, _ arguments: [String]) throws -> String {
        let path = folder.appendingPathComponent(name).path
        let r = try ProcessRunner.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y"] + arguments + [path])
        guard r.status == 0 else { throw FixtureError("ffmpeg \(arguments): \(r.stderr)") }
        return path
    }

    static func ffmpeg(_ path: String) throws -> EBUR128Probe.Summary { try EBUR128Probe.summary(path) }

    @Test func aSineAtMinus20dBFSIsMinus23LUFS() throws {
        // BS.1770's calibration: a 1 kHz sine whose peak is -20 dBFS, in one channel, reads -23.0 LUFS.
        let path = try Self.make("sine-20.wav", ["-f", "lavfi", "-i", "sine=f=1000:sample_rate=48000:d=20", "-af", "volume=0.8", "-c:a", "pcm_f32le"])
        let report = try LoudnessReport.measure(path: path)
        let f = try #require(report.tracks.first?.loudness)
        #expect(abs((f.integrated ?? 0) + 23.0) < 0.05, "\(f)")
        #expect(abs((f.truePeak ?? 0) + 20.0) < 0.1 && abs((f.samplePeak ?? 0) + 20.0) < 0.05, "\(f)")
        #expect(f.range < 0.1 && abs((f.shortTermMax ?? 0) + 23.0) < 0.05 && f.seconds == 20 && f.sampleRate == 48000, "\(f)")
        #expect(f.channels == [LoudnessFigures.Channel(name: "FC", weight: 1)] && f.note == nil && abs((f.relativeGate ?? 0) + 33.0) < 0.05, "\(f)")
        #expect(report.asset?.integrated == f.integrated)
    }

    /// Programme-like stereo material (pink noise whose level moves, a tone, a pause) agrees with FFmpeg's
    /// ebur128 filter: integrated and range within 0.1 LU, true peak within 0.2 dB.
    @Test func programmeMaterialAgreesWithFFmpegsFilter() throws {
        let path = try Self.make("programme.m4a", [
            "-f", "lavfi", "-i", "anoisesrc=color=pink:sample_rate=48000:amplitude=0.3:duration=40:seed=7",
            "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=40",
            "-filter_complex", "[0]volume='if(lt(t,10),0.3,if(lt(t,20),1,if(lt(t,25),0,0.6)))':eval=frame[n];[1]volume=0.2[s];[n][s]amix=inputs=2:normalize=0,pan=stereo|c0=c0|c1=0.7*c0",
            "-c:a", "aac", "-b:a", "192k"])
        let ours = try #require(try LoudnessReport.measure(path: path).tracks.first?.loudness)
        let theirs = try Self.ffmpeg(path)
        #expect(abs((ours.integrated ?? 0) - theirs.integrated) <= 0.1, "integrated \(ours.integrated ?? .nan) against \(theirs.integrated)")
        #expect(abs(ours.range - theirs.range) <= 0.1, "range \(ours.range) against \(theirs.range)")
        #expect(abs((ours.truePeak ?? -99) - theirs.truePeak) <= 0.2, "true peak \(ours.truePeak ?? .nan) against \(theirs.truePeak)")
        #expect(ours.range > 3, "the level moves: a range of some LU, not \(ours.range)")
        #expect(abs((ours.shortTermMax ?? 0) - theirs.shortTermMax) <= 0.1, "short-term max \(ours.shortTermMax ?? .nan) against \(theirs.shortTermMax)")
        #expect(abs((ours.momentaryMax ?? 0) - theirs.momentaryMax) <= 0.1, "momentary max \(ours.momentaryMax ?? .nan) against \(theirs.momentaryMax)")
    }

    /// 5.1: the surrounds weigh 1.41 (+1.5 dB), the LFE nothing; against FFmpeg's filter too.
    @Test func surroundChannelsAreWeightedAndTheLFEIsNot() throws {
        func tone(in channel: String) throws -> LoudnessFigures {
            let path = try Self.make("51-\(channel).wav", [
                "-f", "lavfi", "-i", "sine=f=1000:sample_rate=48000:d=10",
                "-af", "volume=0.8,pan=5.1(side)|\(channel)=c0", "-c:a", "pcm_s24le"])
            let f = try #require(try LoudnessReport.measure(path: path).tracks.first?.loudness)
            if channel != "LFE" {
                let theirs = try Self.ffmpeg(path)
                #expect(abs((f.integrated ?? 0) - theirs.integrated) <= 0.1, "\(channel): \(f.integrated ?? .nan) against \(theirs.integrated)")
            }
            return f
        }
        let front = try tone(in: "FL")
        let surround = try tone(in: "SL")
        let lfe = try tone(in: "LFE")
        #expect(front.channels.map(\.name) == ["FL", "FR", "FC", "LFE", "SL", "SR"], "\(front.channels)")
        #expect(front.channels.map(\.weight) == [1, 1, 1, 0, 1.41, 1.41])
        #expect(abs((front.integrated ?? 0) + 23.0) < 0.05, "\(front)")
        #expect(abs((surround.integrated ?? 0) - (front.integrated ?? 0) - 10 * log10(1.41)) < 0.05, "\(surround) \(front)")
        #expect(lfe.integrated == nil && lfe.note?.contains("absolute gate") == true, "\(lfe)")
    }

    /// Silence is gated out: no integrated loudness, and the report says why instead of dividing by nothing.
    @Test func silenceHasNoIntegratedLoudnessAndSaysWhy() throws {
        let path = try Self.make("silence.wav", ["-f", "lavfi", "-i", "anullsrc=r=44100:cl=stereo", "-t", "5", "-c:a", "pcm_s16le"])
        let report = try LoudnessReport.measure(path: path)
        let f = try #require(report.tracks.first?.loudness)
        #expect(f.integrated == nil && f.truePeak == nil && f.relativeGate == nil && f.range == 0, "\(f)")
        #expect(f.note == "every 400 ms block is below the absolute gate of -70 LUFS (silence): no integrated loudness", "\(f)")
        #expect(report.asset?.integrated == nil && f.seconds == 5)
        // JSON holds no NaN or infinity: it encodes.
        #expect(throws: Never.self) { try JSONEncoder().encode(report) }
    }

    @Test func aMovieWithoutAudioAndGarbageAreRefusedByName() throws {
        let video = try Self.make("silent-film.mp4", ["-f", "lavfi", "-i", "testsrc2=s=160x120:d=1", "-c:v", "libx264", "-pix_fmt", "yuv420p"])
        #expect { try LoudnessReport.measure(path: video) } throws: { error in
            "\(error)".contains("silent-film.mp4") && "\(error)".contains("no audio track")
        }
        let garbage = Self.folder.appendingPathComponent("garbage.wav").path
        try Data((0..<20_000).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: garbage))
        #expect(throws: MediaFileError.self) { try LoudnessReport.measure(path: garbage) }
    }
}
