import Dispatch
import Foundation
import MediaCore
import MediaTime
import QualityModel

/// The picture checks of one video track, fed each decoded picture in presentation order with its time in
/// the track's ticks. Each follows its FFmpeg filter's arithmetic (integer sums, thresholds truncated as
/// the filter truncates them), so a run starts and ends on the same picture. Thread-confined.
final class PictureChecks {
    private let plan: CheckPlan
    private let timeBase: Rational
    /// The file's start, in the track's ticks: times are reported from it.
    private let origin: Int64
    private let nominalFrameDuration: Double?
    private var black: BlackRuns?
    private var freeze: FreezeRuns?
    private var levels: LevelRuns?
    private var cadence: Cadence?
    private let interlace: InterlaceRuns?
    private(set) var frames = 0
    /// Any picture said it was interlaced.
    private(set) var saidInterlaced = false
    private var lastPTS: Int64?
    private var firstPTS: Int64?
    private var lastDuration: Int64 = 0
    private let scaler = VideoScaler(outputFormat: "yuv420p")
    /// The fidelity check's reference (`mediafarm check --reference`), its pictures paired with these in order.
    private let reference: ReferencePictures?
    private let referenceScaler = VideoScaler(outputFormat: "yuv420p")
    private let fidelity = FidelityLog()
    /// Pictures left without a reference picture (the reference is shorter).
    private var unpaired = 0
    /// What stopped the reference being read: thrown once the pass ends.
    private(set) var referenceFailure: MediaFileError?

    /// `frameRate` is the track's declared constant rate, nil when it has none (the cadence check then does not apply).
    init(plan: CheckPlan, timeBase: Rational, origin: Int64, frameRate: Rational?, reference: ReferencePictures? = nil) {
        self.plan = plan
        self.reference = plan.fidelity != nil ? reference : nil
        self.timeBase = timeBase
        self.origin = origin
        if let rate = frameRate, rate.numerator > 0, rate.denominator > 0, timeBase.numerator > 0 {
            // Ticks per picture: not always whole (30 fps in Matroska's milliseconds).
            nominalFrameDuration = Double(rate.denominator) * Double(timeBase.denominator) / (Double(rate.numerator) * Double(timeBase.numerator))
        } else {
            nominalFrameDuration = nil
        }
        black = plan.black.map { BlackRuns($0, timeBase: timeBase) }
        freeze = plan.freeze.map { FreezeRuns($0, timeBase: timeBase) }
        levels = plan.levels.map { LevelRuns($0, timeBase: timeBase) }
        cadence = plan.cadence != nil ? nominalFrameDuration.map(Cadence.init) : nil
        interlace = plan.interlace.map { InterlaceRuns($0, timeBase: timeBase) }
    }

    /// Measures one picture at `pts` (the track's ticks). A format the measurements cannot read (RGB,
    /// semi-planar) is converted to 8-bit 4:2:0 first, as FFmpeg inserts a scaler before its filters.
    func add(_ frame: borrowing Frame, pts: Int64) throws(FFmpegError) {
        frames += 1
        if firstPTS == nil { firstPTS = pts }
        lastPTS = pts
        lastDuration = frame.duration
        if frame.scanType != "progressive" { saidInterlaced = true }
        cadence?.add(pts)
        if !measure(frame, pts: pts) {
            var fresh = Frame()  // a new buffer each time: the freeze check keeps a reference to it
            try scaler.convert(frame, into: &fresh)
            _ = measure(fresh, pts: pts)
        }
        if let reference {
            try compare(frame, with: reference, pts: pts)
            // Stops the pass (the caller answers with `referenceFailure`).
            if referenceFailure != nil { throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: "fidelity", detail: "the reference failed") }
        }
    }

    /// PSNR and SSIM against the reference's next picture, both converted to 8-bit 4:2:0 when their formats differ.
    private func compare(_ frame: borrowing Frame, with reference: ReferencePictures, pts: Int64) throws(FFmpegError) {
        do throws(MediaFileError) {
            guard try reference.next() else { unpaired += 1; return }
        } catch {
            referenceFailure = error
            return
        }
        var measured = frame.withPlanes { a in reference.frame.withPlanes { PictureFidelity.measure(a, $0) } ?? nil } ?? nil
        if measured == nil {
            var a = Frame(), b = Frame()
            try scaler.convert(frame, into: &a)
            try referenceScaler.convert(reference.frame, into: &b)
            measured = a.withPlanes { pa in b.withPlanes { PictureFidelity.measure(pa, $0) } ?? nil } ?? nil
        }
        guard let measured else {
            referenceFailure = MediaFileError(path: reference.file.path, reason: .ffmpeg(FFmpegError(code: FFmpegError.invalidArgument.code, operation: "fidelity",
                detail: "its pictures are \(reference.frame.width)x\(reference.frame.height), the checked file's \(frame.width)x\(frame.height): PSNR and SSIM compare pictures of one size"), while: "comparing pictures"))
            return
        }
        fidelity.add(time: seconds(pts), fidelity: measured, frameDuration: (nominalFrameDuration ?? Double(frame.duration)) * timeBase.doubleValue)
    }

    /// False, measuring nothing, when the picture's format is not one the measurements read. Black and levels,
    /// freeze, and interlace each keep their own state: with more than one of them on, they measure the picture
    /// beside one another (the decode's threads are FFmpeg's; the measurements were one thread's).
    private func measure(_ frame: borrowing Frame, pts: Int64) -> Bool {
        guard frame.withPlanes({ _ in true }) == true else { return false }
        let parts = [black != nil || levels != nil, freeze != nil, interlace != nil]
        if parts.filter({ $0 }).count > 1, (try? shared.frame.reference(frame)) != nil {  // a picture not held is measured here, in turn
            nonisolated(unsafe) let checks = self  // each part touches its own checks' state only, and the picture read-only
            DispatchQueue.concurrentPerform(iterations: 3) { part in
                if parts[part] { checks.measure(part: part, of: checks.shared.frame, pts: pts) }
            }
            shared.frame.reset()
        } else {
            for part in 0..<3 where parts[part] { measure(part: part, of: frame, pts: pts) }
        }
        return true
    }

    private func measure(part: Int, of frame: borrowing Frame, pts: Int64) {
        switch part {
        case 0:
            _ = frame.withPlanes { planes in
                black?.add(planes, pts: pts)
                levels?.add(planes, pts: pts)
            }
        case 1: freeze?.add(frame, pts: pts)
        default: interlace?.add(frame, pts: pts)
        }
    }

    /// The picture the measurements read beside one another.
    private final class SharedPicture { var frame = Frame() }
    private let shared = SharedPicture()

    /// The results, with the file's last picture ending at `end` ticks (its start plus its duration).
    func finish() -> [CheckResult] {
        let last = lastPTS ?? 0
        let end = last &+ lastPictureTicks
        var results: [CheckResult] = []
        let seconds = { (ticks: Int64) in self.seconds(ticks) }
        if var black, let p = plan.black {
            let runs = black.finish(lastPTS: last, end: end).map { $0.seconds(seconds) }
            results.append(CheckResult(check: "black", severity: p.severity, found: !runs.isEmpty, summary: runs.said("black"),
                                       thresholds: ["duration": p.duration, "pictureRatio": p.pictureRatio, "pixelThreshold": p.pixelThreshold],
                                       runs: runs, figures: black.threshold.map { ["lumaThreshold": Double($0)] }))
        }
        if let freeze, let p = plan.freeze {
            let runs = freeze.finish(end: end).map { $0.seconds(seconds) }
            results.append(CheckResult(check: "freeze", severity: p.severity, found: !runs.isEmpty, summary: runs.said("frozen"),
                                       thresholds: ["duration": p.duration, "noise": p.noise], runs: runs))
        }
        if var levels, let p = plan.levels {
            if levels.fullRange {
                results.append(.notApplicable("levels", p.severity, "the video is full range (yuvj, or colour range pc): every code value is legal"))
            } else {
                let runs = levels.finish(end: end).map { $0.seconds(seconds) }
                let worst = levels.worst
                let summary = runs.isEmpty ? String(format: "no picture has more than %g%% of its pixels out of range (the most: %.4f%%)", p.pixelShare * 100, worst * 100)
                    : runs.said("out-of-range") + String(format: "; the most in one picture: %.2f%% of its pixels", worst * 100)
                results.append(CheckResult(check: "levels", severity: p.severity, found: !runs.isEmpty, summary: summary,
                                           thresholds: ["pixelShare": p.pixelShare, "duration": p.duration], runs: runs,
                                           figures: ["worstShare": worst, "lumaMin": Double(levels.legal.lumaMin), "lumaMax": Double(levels.legal.lumaMax),
                                                     "chromaMin": Double(levels.legal.chromaMin), "chromaMax": Double(levels.legal.chromaMax)]))
            }
        }
        if let interlace, let p = plan.interlace {
            let runs = interlace.finish(end: end).map { $0.seconds(seconds) }
            let m = interlace.multi, s = interlace.single
            let figures = ["tff": Double(m[0]), "bff": Double(m[1]), "progressive": Double(m[2]), "undetermined": Double(m[3]),
                           "singleTFF": Double(s[0]), "singleBFF": Double(s[1]), "singleProgressive": Double(s[2]), "singleUndetermined": Double(s[3])]
            if saidInterlaced {
                var result = CheckResult.notApplicable("interlace", p.severity, "the video says its pictures are interlaced")
                result.figures = figures
                results.append(result)
            } else {
                let counts = "idet's multi-frame detection: \(m[0]) TFF, \(m[1]) BFF, \(m[2]) progressive, \(m[3]) undetermined"
                results.append(CheckResult(check: "interlace", severity: p.severity, found: !runs.isEmpty,
                                           summary: (runs.isEmpty ? "no interlaced run in a video that says it is progressive" : runs.said("interlaced") + " in a video that says it is progressive")
                                               + " (" + counts + ")",
                                           thresholds: ["duration": p.duration], runs: runs, figures: figures))
            }
        }
        if let p = plan.cadence {
            if let cadence, let frameDuration = nominalFrameDuration {
                let runs = cadence.runs.map { $0.seconds(seconds) }
                let summary = runs.isEmpty ? "every picture one frame after the last"
                    : "\(cadence.dropped) picture\(cadence.dropped == 1 ? "" : "s") missing and \(cadence.duplicated) duplicated, "
                        + String(format: "the first at %.3f s", runs[0].start)
                results.append(CheckResult(check: "cadence", severity: p.severity, found: !runs.isEmpty, summary: summary, thresholds: [:], runs: runs,
                                           figures: ["dropped": Double(cadence.dropped), "duplicated": Double(cadence.duplicated),
                                                     "frameDuration": frameDuration * timeBase.doubleValue]))
            } else {
                results.append(.notApplicable("cadence", p.severity, "the video declares no constant frame rate"))
            }
        }
        if let p = plan.fidelity {
            if reference != nil {
                var result = CheckResult.fidelity(p, fidelity)
                if unpaired > 0 {
                    result.summary += "; the reference ended \(unpaired) picture\(unpaired == 1 ? "" : "s") early"
                    result.figures?["unpaired"] = Double(unpaired)
                } else if (try? reference?.next()) == true {  // a reference that fails past the last picture has no more to say
                    result.summary += "; the reference has more pictures than the file"
                }
                results.append(result)
            } else {
                results.append(.notApplicable("fidelity", p.severity, "no reference to measure the pictures against (mediafarm check --reference FILE)"))
            }
        }
        return results
    }

    /// Seconds from the file's start.
    func seconds(_ ticks: Int64) -> Double { Double(ticks - origin) * timeBase.doubleValue }
    /// Seconds from the first picture's start to the last one's end.
    var duration: Double {
        guard let first = firstPTS, let last = lastPTS else { return 0 }
        return Double(last &+ lastPictureTicks &- first) * timeBase.doubleValue
    }
    /// The last picture's duration: its own, or one frame of the declared rate (time stamps from a hostile file may be anything).
    private var lastPictureTicks: Int64 { max(lastDuration, Int64(min((nominalFrameDuration ?? 0).rounded(), 1e15))) }
}

/// A run in ticks, before it is said in seconds.
struct TickRun {
    var start: Int64
    var end: Int64
    var value: Double?
    var toEnd = false

    func seconds(_ s: (Int64) -> Double) -> CheckRun {
        CheckRun(start: s(start), end: s(end), duration: s(end) - s(start), value: value, toEnd: toEnd)
    }
}
