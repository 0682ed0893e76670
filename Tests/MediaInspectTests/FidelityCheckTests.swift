import FarmTestSupport
import Foundation
@testable import MediaCore
@testable import MediaInspect
import QualityModel
import Testing

/// PSNR and SSIM of each picture held to FFmpeg's `psnr` and `ssim` filters on the same pair of files, picture
/// for picture (their stats files), and the fidelity check's figures to the filters' summaries.
@Suite struct FidelityCheckTests {
    static let folder = try! TestPaths.makeTemporaryFolder("fidelity")

    /// A lossless reference, and an encoding of it at a low quality (so the figures are far from equal): H.264
    /// in Matroska unless `container` and `codec` say otherwise.
    static func pair(_ name: String, pixelFormat: String, container: String = "mkv",
                     codec: [String] = ["-c:v", "libx264", "-crf", "38", "-preset", "veryfast"]) throws -> (encoded: String, reference: String) {
        let reference = folder.appendingPathComponent("\(name)-reference.mkv").path
        let encoded = folder.appendingPathComponent("\(name)-encoded.\(container)").path
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=322x182:rate=25:duration=2",
                                           "-pix_fmt", pixelFormat, "-c:v", "ffv1", reference])
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-i", reference] + codec + ["-pix_fmt", pixelFormat, encoded])
        return (encoded, reference)
    }

    /// FFmpeg's per-picture figures: PSNR (`psnr_avg`, 2 decimals) and SSIM (`All`, 6 decimals), and its summaries;
    /// both files' pictures renumbered, so the filters pair them in order, as the check does (a transport stream
    /// starts at 1.4 s).
    static func theirs(_ pair: (encoded: String, reference: String)) throws -> (psnr: [Double], ssim: [Double], log: String) {
        let psnrLog = pair.encoded + ".psnr", ssimLog = pair.encoded + ".ssim"
        let run = try ProcessRunner.check("ffmpeg", ["-nostdin", "-i", pair.encoded, "-i", pair.reference, "-filter_complex",
                                                     "[0:v]settb=1/25,setpts=N,split[a][b];[1:v]settb=1/25,setpts=N,split[c][d];"
                                                         + "[a][c]psnr=stats_file=\(psnrLog);[b][d]ssim=stats_file=\(ssimLog)",
                                                     "-f", "null", "-"])
        func field(_ line: Substring, _ key: String) -> Double? {
            line.split(separator: " ").first { $0.hasPrefix(key + ":") }.flatMap { Double($0.dropFirst(key.count + 1)) }
        }
        let psnr = try String(contentsOfFile: psnrLog, encoding: .utf8).split(separator: "\n").compactMap { field($0, "psnr_avg") }
        let ssim = try String(contentsOfFile: ssimLog, encoding: .utf8).split(separator: "\n").compactMap { field($0, "All") }
        return (psnr, ssim, run.stderr)
    }

    /// Each picture of `encoded` measured against `reference`'s, paired in order, as the check measures them.
    static func ours(_ pair: (encoded: String, reference: String)) throws -> [PictureFidelity] {
        let a = try ReferencePictures(path: pair.encoded, limits: .default, interrupter: Interrupter())
        let b = try ReferencePictures(path: pair.reference, limits: .default, interrupter: Interrupter())
        var measured: [PictureFidelity] = []
        while try a.next(), try b.next() {
            let f = a.frame.withPlanes { pa in b.frame.withPlanes { PictureFidelity.measure(pa, $0) } ?? nil } ?? nil
            measured.append(try #require(f))
        }
        return measured
    }

    @Test(arguments: ["yuv420p", "yuv444p", "yuv420p10le"])
    func eachPicturesPSNRAndSSIMAreFFmpegs(pixelFormat: String) throws {
        let pair = try Self.pair("pair-\(pixelFormat)", pixelFormat: pixelFormat)
        let theirs = try Self.theirs(pair)
        let ours = try Self.ours(pair)
        #expect(ours.count == 50 && theirs.psnr.count == 50 && theirs.ssim.count == 50, "\(ours.count) \(theirs.psnr.count) \(theirs.ssim.count)")
        for (i, (o, t)) in zip(ours, zip(theirs.psnr, theirs.ssim)).enumerated() {
            // The stats file prints PSNR with 2 decimals.
            #expect(abs(o.psnr - t.0) <= 0.0051, "picture \(i + 1): PSNR ours \(o.psnr), psnr's \(t.0)")
            #expect(abs(o.ssim - t.1) <= 0.000001, "picture \(i + 1): SSIM ours \(o.ssim), ssim's \(t.1)")
        }
        #expect(ours.allSatisfy { $0.psnr < 45 && $0.ssim < 0.999 }, "the encoding is lossy: the figures must not be of equal pictures")
    }

    /// The same of a VP9 WebM and of an H.264 transport stream against their Matroska references.
    @Test(arguments: ["webm", "ts"])
    func eachPicturesFiguresAreFFmpegsInOtherContainers(container: String) throws {
        let codec = container == "webm" ? ["-c:v", "libvpx-vp9", "-crf", "50", "-b:v", "0", "-deadline", "realtime", "-cpu-used", "8"]
            : ["-c:v", "libx264", "-crf", "38", "-preset", "veryfast"]
        let pair = try Self.pair("pair-\(container)", pixelFormat: "yuv420p", container: container, codec: codec)
        let theirs = try Self.theirs(pair)
        let ours = try Self.ours(pair)
        #expect(ours.count == 50 && theirs.psnr.count == 50 && theirs.ssim.count == 50, "\(ours.count) \(theirs.psnr.count) \(theirs.ssim.count)")
        for (i, (o, t)) in zip(ours, zip(theirs.psnr, theirs.ssim)).enumerated() {
            #expect(abs(o.psnr - t.0) <= 0.0051 && abs(o.ssim - t.1) <= 0.000001, "\(container) picture \(i + 1): ours \(o.psnr) dB \(o.ssim), theirs \(t.0) dB \(t.1)")
        }
        #expect(ours.contains { $0.psnr < 40 }, "an encoding at a low quality: \(ours.map(\.psnr).min() ?? 0) dB at worst")
    }

    @Test func theCheckGivesTheFiltersSummariesAndItsWorstPictures() throws {
        let pair = try Self.pair("summary", pixelFormat: "yuv420p")
        let theirs = try Self.theirs(pair)
        var plan = CheckPlan(fidelity: .init())
        plan.fidelity?.psnr = 60  // every picture is below: one run, the whole file
        let report = try CheckReport.check(path: pair.encoded, plan: plan, reference: pair.reference)
        let result = try #require(report.checks.first { $0.check == "fidelity" })
        #expect(result.outcome == .failed && report.verdict == .failed)
        #expect(result.runs.count == 1 && result.runs[0].start == 0 && abs(result.runs[0].end - 2) < 1e-9 && result.runs[0].toEnd == true, "\(result.runs)")
        // [Parsed_psnr_2 @ …] PSNR y:… average:A min:M max:…; [Parsed_ssim_3 @ …] SSIM … All:S (…)
        func summary(_ key: String, after label: String) throws -> Double {
            let line = try #require(theirs.log.split(separator: "\n").first { $0.contains("] \(label) ") })
            return try #require(line.split(separator: " ").first { $0.hasPrefix(key + ":") }.flatMap { Double($0.dropFirst(key.count + 1)) })
        }
        let figures = try #require(result.figures)
        #expect(abs(try #require(figures["psnrAverage"]) - summary("average", after: "PSNR")) < 1e-5, "\(figures)")
        #expect(abs(try #require(figures["psnrMin"]) - summary("min", after: "PSNR")) < 1e-5, "\(figures)")
        #expect(abs(try #require(figures["ssimMean"]) - summary("All", after: "SSIM")) < 1e-5, "\(figures)")
        let worst = try #require(result.pictures)
        #expect(worst.count == CheckResult.worstPictures)
        let lowest = try #require(theirs.psnr.enumerated().min { $0.element < $1.element })
        #expect(abs((worst[0].psnr ?? 0) - lowest.element) <= 0.0051 && abs(worst[0].time - Double(lowest.offset) / 25) < 1e-9, "\(worst[0]) \(lowest)")

        // The same file as its own reference: identical pictures, PSNR infinite, nothing found.
        let same = try CheckReport.check(path: pair.reference, plan: CheckPlan(fidelity: .init()), reference: pair.reference)
        let identical = try #require(same.checks.first { $0.check == "fidelity" })
        #expect(identical.outcome == .passed && identical.figures?["psnrMin"] == nil && abs((identical.figures?["ssimMean"] ?? 0) - 1) < 1e-12, "\(identical)")
        #expect(identical.summary.contains("PSNR inf dB at worst"), "\(identical.summary)")
    }

    @Test func aReferenceOfAnotherSizeOrWithoutVideoIsNamed() throws {
        let pair = try Self.pair("sizes", pixelFormat: "yuv420p")
        let small = Self.folder.appendingPathComponent("small.mkv").path
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-i", pair.reference, "-vf", "scale=160:90", "-c:v", "ffv1", small])
        #expect {
            try CheckReport.check(path: pair.encoded, plan: CheckPlan(fidelity: .init()), reference: small)
        } throws: { error in
            "\(error)".contains(small) && "\(error)".contains("160x90") && "\(error)".contains("322x182")
        }
        // A shorter file than its reference: measured, and said.
        let half = Self.folder.appendingPathComponent("half.mkv").path
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-i", pair.encoded, "-t", "1", "-c", "copy", half])
        let shorter = try #require(try CheckReport.check(path: half, plan: CheckPlan(fidelity: .init()), reference: pair.reference).checks.first)
        #expect((shorter.figures?["pictures"] ?? 50) < 50 && shorter.summary.hasSuffix("the reference has more pictures than the file"), "\(shorter)")
        let sound = Self.folder.appendingPathComponent("tone.wav").path
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=duration=1", sound])
        #expect {
            try CheckReport.check(path: pair.encoded, plan: CheckPlan(fidelity: .init()), reference: sound)
        } throws: { error in
            "\(error)".contains(sound) && "\(error)".contains("no video track")
        }
    }
}
