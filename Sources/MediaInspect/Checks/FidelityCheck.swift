import Foundation
import MediaCore
import MediaTime
import QualityModel

extension CheckResult {
    /// Pictures a fidelity result names as the worst.
    public static let worstPictures = 5

    /// The fidelity check's result from each picture's PSNR and SSIM: runs of pictures below a minimum,
    /// the lowest and mean figures (`psnrAverage` is FFmpeg's `average`, the PSNR of the mean error), and
    /// the worst pictures by PSNR, then SSIM.
    public static func fidelity(_ p: CheckPlan.Fidelity, _ log: FidelityLog) -> CheckResult {
        let entries = log.entries
        guard let peak = entries.first?.fidelity.peak else {
            return .notApplicable("fidelity", p.severity, "no picture was measured")
        }
        func below(_ f: PictureFidelity) -> Bool {
            (p.psnr.map { f.psnr < $0 } ?? false) || (p.ssim.map { f.ssim < $0 } ?? false)
        }
        var runs: [CheckRun] = []
        var open: (start: Double, worst: Double)?
        for e in entries {
            if below(e.fidelity) {
                open = (open?.start ?? e.time, min(open?.worst ?? .infinity, e.fidelity.psnr))
            } else if let o = open {
                runs.append(CheckRun(start: o.start, end: e.time, value: o.worst.isFinite ? o.worst : nil))
                open = nil
            }
        }
        if let o = open, let last = entries.last {
            runs.append(CheckRun(start: o.start, end: last.time + log.frameDuration, value: o.worst.isFinite ? o.worst : nil, toEnd: true))
        }
        let meanMSE = entries.reduce(0) { $0 + $1.fidelity.mse } / Double(entries.count)
        let minPSNR = entries.map(\.fidelity.psnr).min() ?? .infinity
        let minSSIM = entries.map(\.fidelity.ssim).min() ?? 1
        let meanSSIM = entries.reduce(0) { $0 + $1.fidelity.ssim } / Double(entries.count)
        let average = PictureFidelity.psnr(mse: meanMSE, peak: peak)
        var figures = ["ssimMin": minSSIM, "ssimMean": meanSSIM, "pictures": Double(entries.count)]
        if minPSNR.isFinite { figures["psnrMin"] = minPSNR }
        if average.isFinite { figures["psnrAverage"] = average }
        let worst = entries.sorted { ($0.fidelity.psnr, $0.fidelity.ssim, $0.time) < ($1.fidelity.psnr, $1.fidelity.ssim, $1.time) }
            .prefix(worstPictures).map { CheckPicture(time: $0.time, psnr: $0.fidelity.psnr.isFinite ? $0.fidelity.psnr : nil, ssim: $0.fidelity.ssim) }
        let said = String(format: "PSNR %@ dB at worst, %@ dB on average; SSIM %.4f at worst, %.4f on average, over %d pictures",
                          minPSNR.isFinite ? String(format: "%.2f", minPSNR) : "inf", average.isFinite ? String(format: "%.2f", average) : "inf",
                          minSSIM, meanSSIM, entries.count)
        let limits = [p.psnr.map { String(format: "PSNR %g dB", $0) }, p.ssim.map { String(format: "SSIM %g", $0) }].compactMap { $0 }
        let summary = runs.isEmpty ? said : runs.said("below-" + limits.joined(separator: " or ")) + "; " + said
        var thresholds: [String: Double] = [:]
        thresholds["psnr"] = p.psnr
        thresholds["ssim"] = p.ssim
        var result = CheckResult(check: "fidelity", severity: p.severity, found: !runs.isEmpty, summary: summary, thresholds: thresholds,
                                 runs: runs, figures: figures)
        result.pictures = Array(worst)
        return result
    }
}

/// A reference file's pictures, decoded one at a time as the checked file's pictures come, paired in order
/// (FFmpeg's `psnr` and `ssim` pair by time: the same for two files of the same pictures). Thread-confined.
final class ReferencePictures {
    let file: InputFile
    private let decoder: Decoder
    private var packet = Packet()
    private var ended = false
    /// The decoder was full: the packet is sent again once a picture is taken.
    private var resend = false
    private(set) var frame = Frame()

    init(path: String, limits: SafetyLimits, interrupter: Interrupter) throws(MediaFileError) {
        file = try InputFile(path: path, limits: limits, interrupter: interrupter)
        guard let video = file.streams.first(where: { $0.mediaType == .video && !$0.isAttachedPicture }) else {
            throw MediaFileError(path: path, reason: .noVideo)
        }
        file.discardAll(except: [video.index])
        decoder = try Decoder(file: file, streamIndex: video.index)
    }

    /// Decodes the next picture into `frame`; false when the reference has none left.
    func next() throws(MediaFileError) -> Bool {
        func undecodable(_ error: FFmpegError) -> MediaFileError {
            MediaFileError(path: file.path, reason: .undecodable(track: decoder.stream.index, codec: decoder.stream.codecName, error))
        }
        while true {
            do throws(FFmpegError) {
                switch try decoder.receive(into: &frame) {
                case .frame: return true
                case .endOfStream: return false
                case .needsInput: break
                }
                if resend {
                    resend = try decoder.send(packet) == .full
                    continue
                }
            } catch { throw undecodable(error) }
            if ended { return false }
            if try file.read(into: &packet) == .packet {
                guard packet.streamIndex == decoder.stream.index else { continue }
                do throws(FFmpegError) { resend = try decoder.send(packet) == .full } catch { throw undecodable(error) }
            } else {
                ended = true
                do throws(FFmpegError) { try decoder.sendEndOfStream() } catch { throw undecodable(error) }
            }
        }
    }
}
