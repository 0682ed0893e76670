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

/// `blackdetect`: a picture is black when at least `pic_th` of its luma samples are at most
/// `16 + pix_th × 219` (scaled to the bit depth; `pix_th × max` for full range), truncated. A run starts on
/// the first black picture and ends on the first picture that is not; it is kept when it lasts at least `d`.
struct BlackRuns {
    let settings: CheckPlan.Black
    let minimumTicks: Int64
    private(set) var threshold: Int?
    private var start: Int64?
    private var runs: [TickRun] = []

    init(_ settings: CheckPlan.Black, timeBase: Rational) {
        self.settings = settings
        minimumTicks = Int64(settings.duration / timeBase.doubleValue)
    }

    mutating func add(_ planes: PicturePlanes, pts: Int64) {
        let th: Int
        if let threshold { th = threshold } else {
            let factor = Double(1 << (planes.depth - 8))
            let max = Double((1 << planes.depth) - 1)
            th = Int(planes.isFullRange ? settings.pixelThreshold * max : 16 * factor + settings.pixelThreshold * (235 - 16) * factor)
            threshold = th
        }
        let luma = planes.planes[0]
        var count = 0
        if planes.depth == 8 {
            let t = UInt8(clamping: th)
            for y in 0..<luma.height {
                let row = luma.base + y * luma.bytesPerRow
                for x in 0..<luma.width where row[x] <= t { count += 1 }
            }
        } else {
            for y in 0..<luma.height {
                let row = UnsafeRawPointer(luma.base + y * luma.bytesPerRow)
                for x in 0..<luma.width where Int(row.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)) <= th { count += 1 }
            }
        }
        let ratio = Double(count) / Double(luma.width * luma.height)
        if ratio >= settings.pictureRatio {
            if start == nil { start = pts }
        } else if let s = start {
            close(s, pts)
            start = nil
        }
    }

    private mutating func close(_ s: Int64, _ end: Int64, toEnd: Bool = false) {
        if end &- s >= minimumTicks { runs.append(TickRun(start: s, end: end, toEnd: toEnd)) }
    }

    /// A run still open at the end lasts to the end of the last picture (`blackdetect` ends it at the last picture's start).
    mutating func finish(lastPTS: Int64, end: Int64) -> [TickRun] {
        if let s = start { close(s, end, toEnd: true); start = nil }
        return runs
    }
}

/// `freezedetect`: each picture is compared with the reference (the last picture that differed), by
/// the mean absolute difference of every plane's samples over full scale. A run is the reference's time to
/// the first picture that differs again, kept when it lasts at least `d` (microseconds, rounded as the
/// filter rounds them).
final class FreezeRuns {
    let settings: CheckPlan.Freeze
    let timeBase: Rational
    let minimumMicroseconds: Int64
    private var reference = Frame()
    private var referencePTS: Int64?
    private var reported = false
    private var runs: [TickRun] = []
    private var openStart: Int64?

    init(_ settings: CheckPlan.Freeze, timeBase: Rational) {
        self.settings = settings
        self.timeBase = timeBase
        minimumMicroseconds = Int64((settings.duration * 1_000_000).rounded())
    }

    private func microseconds(_ ticks: Int64) -> Int64 {
        // av_rescale_q(ticks, tb, 1/1000000): rounded to nearest, halves away from zero.
        let n = Int64(timeBase.numerator) * 1_000_000, d = Int64(timeBase.denominator)
        let (product, overflow) = ticks.multipliedReportingOverflow(by: n)
        guard !overflow else { return Int64((Double(ticks) * Double(n) / Double(d)).rounded()) }
        return product >= 0 ? (product + d / 2) / d : -((-product + d / 2) / d)
    }

    func add(_ frame: borrowing Frame, pts: Int64) {
        guard let refPTS = referencePTS else {
            try? reference.reference(frame)  // a failed reference leaves none: the next picture becomes it
            referencePTS = reference.hasData ? pts : nil
            return
        }
        let duration = pts < refPTS ? 0 : microseconds(pts &- refPTS)
        let frozen = Self.isFrozen(reference, frame, noise: settings.noise)
        if duration >= minimumMicroseconds {
            if !reported { openStart = refPTS }
            if !frozen, let s = openStart { runs.append(TickRun(start: s, end: pts)); openStart = nil }
            reported = frozen
        }
        if !frozen {
            try? reference.reference(frame)  // as above
            referencePTS = reference.hasData ? pts : nil
        }
    }

    /// A freeze still open at the end lasts to the end of the last picture (`freezedetect` never ends it).
    func finish(end: Int64) -> [TickRun] {
        if let s = openStart { runs.append(TickRun(start: s, end: end, toEnd: true)); openStart = nil }
        return runs
    }

    /// The mean absolute difference of all planes over full scale is at most `noise`. The chroma planes'
    /// rows are the luma's shifted down (rounded down, as the filter counts them).
    static func isFrozen(_ a: borrowing Frame, _ b: borrowing Frame, noise: Double) -> Bool {
        let measured: (sad: UInt64, count: UInt64, depth: Int)? = a.withPlanes { pa in
            b.withPlanes { pb -> (UInt64, UInt64, Int)? in
                guard pa.planes.count == pb.planes.count, pa.depth == pb.depth,
                      zip(pa.planes, pb.planes).allSatisfy({ $0.width == $1.width && $0.height == $1.height }) else { return nil }
                var sad: UInt64 = 0, count: UInt64 = 0
                let lumaHeight = pa.planes[0].height
                for (p, (x, y)) in zip(pa.planes, pb.planes).enumerated() {
                    let chroma = pa.hasChroma && (p == 1 || p == 2)
                    let rows = chroma ? lumaHeight >> pa.chromaShift.vertical : x.height
                    sad &+= difference(x, y, rows: rows, wide: pa.depth > 8)
                    count += UInt64(x.width * rows)
                }
                return (sad, count, pa.depth)
            } ?? nil
        } ?? nil
        guard let m = measured, m.count > 0 else { return false }
        let mafd = Double(m.sad) / Double(m.count) / Double(UInt64(1) << m.depth)
        return mafd <= noise
    }

    private static func difference(_ a: PicturePlanes.Plane, _ b: PicturePlanes.Plane, rows: Int, wide: Bool) -> UInt64 {
        var sad: UInt64 = 0
        for y in 0..<rows {
            var line: UInt64 = 0
            if wide {
                let ra = UnsafeRawPointer(a.base + y * a.bytesPerRow), rb = UnsafeRawPointer(b.base + y * b.bytesPerRow)
                for x in 0..<a.width {
                    let d = Int(ra.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)) - Int(rb.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                    line &+= UInt64(d.magnitude)
                }
            } else {
                let ra = a.base + y * a.bytesPerRow, rb = b.base + y * b.bytesPerRow
                for x in 0..<a.width {
                    let u = ra[x], v = rb[x]
                    line &+= UInt64(u > v ? u - v : v - u)
                }
            }
            sad &+= line
        }
        return sad
    }
}

/// `signalstats`' BRNG: a pixel is out of range when its luma is outside 16–235 or its co-sited chroma
/// outside 16–240 (scaled to the bit depth); each picture's share of such pixels, over its luma
/// samples. Pictures above `pixelShare` make runs, kept when they last at least `duration`.
struct LevelRuns {
    struct Legal { var lumaMin: Int, lumaMax: Int, chromaMin: Int, chromaMax: Int }
    let settings: CheckPlan.Levels
    let minimumTicks: Int64
    private(set) var worst = 0.0
    private(set) var fullRange = false
    private(set) var legal = Legal(lumaMin: 16, lumaMax: 235, chromaMin: 16, chromaMax: 240)
    private var start: Int64?
    private var runWorst = 0.0
    private var runs: [TickRun] = []
    private var badChroma: [Bool] = []

    init(_ settings: CheckPlan.Levels, timeBase: Rational) {
        self.settings = settings
        minimumTicks = Int64(settings.duration / timeBase.doubleValue)
    }

    mutating func add(_ planes: PicturePlanes, pts: Int64) {
        if planes.isFullRange { fullRange = true; return }
        let m = 1 << (planes.depth - 8)
        legal = Legal(lumaMin: 16 * m, lumaMax: 235 * m, chromaMin: 16 * m, chromaMax: 240 * m)
        let share = Double(outOfRange(planes)) / Double(planes.planes[0].width * planes.planes[0].height)
        worst = max(worst, share)
        if share > settings.pixelShare {
            if start == nil { start = pts; runWorst = 0 }
            runWorst = max(runWorst, share)
        } else if let s = start {
            close(s, pts)
            start = nil
        }
    }

    private mutating func close(_ s: Int64, _ end: Int64, toEnd: Bool = false) {
        if end &- s >= minimumTicks { runs.append(TickRun(start: s, end: end, value: runWorst, toEnd: toEnd)) }
    }

    mutating func finish(end: Int64) -> [TickRun] {
        if let s = start { close(s, end, toEnd: true); start = nil }
        return runs
    }

    /// Pixels (at luma resolution) with any component outside the legal range.
    private mutating func outOfRange(_ planes: PicturePlanes) -> Int {
        let luma = planes.planes[0]
        let (lo, hi, clo, chi) = (legal.lumaMin, legal.lumaMax, legal.chromaMin, legal.chromaMax)
        let wide = planes.depth > 8
        @inline(__always) func value(_ row: UnsafePointer<UInt8>, _ x: Int) -> Int {
            wide ? Int(UnsafeRawPointer(row).loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)) : Int(row[x])
        }
        var count = 0
        guard planes.hasChroma else {
            for y in 0..<luma.height {
                let row = luma.base + y * luma.bytesPerRow
                for x in 0..<luma.width { let v = value(row, x); if v < lo || v > hi { count += 1 } }
            }
            return count
        }
        let u = planes.planes[1], v = planes.planes[2]
        let (hs, vs) = planes.chromaShift
        if badChroma.count != u.width { badChroma = Array(repeating: false, count: u.width) }
        var chromaRow = -1
        for y in 0..<luma.height {
            let cy = y >> vs
            if cy != chromaRow {
                chromaRow = cy
                let ru = u.base + cy * u.bytesPerRow, rv = v.base + cy * v.bytesPerRow
                for x in 0..<u.width {
                    let a = value(ru, x), b = value(rv, x)
                    badChroma[x] = a < clo || a > chi || b < clo || b > chi
                }
            }
            let row = luma.base + y * luma.bytesPerRow
            for x in 0..<luma.width {
                let l = value(row, x)
                if l < lo || l > hi || badChroma[x >> hs] { count += 1 }
            }
        }
        return count
    }
}

/// Pictures of a constant-frame-rate track one frame apart: a longer step is pictures missing (dropped),
/// a step of nothing or less than half a frame a picture shown twice (duplicated).
struct Cadence {
    let frameDuration: Double
    private var last: Int64?
    private(set) var runs: [TickRun] = []
    private(set) var dropped = 0, duplicated = 0

    init(_ frameDuration: Double) { self.frameDuration = frameDuration }

    mutating func add(_ pts: Int64) {
        defer { last = pts }
        guard let last else { return }
        let step = Double(pts) - Double(last)
        if step < frameDuration / 2 {
            duplicated += 1
            runs.append(TickRun(start: last, end: last + Int64(frameDuration.rounded()), value: 0))
        } else if step > frameDuration * 1.5 {
            let missing = Int(min(step / frameDuration, 1e9).rounded()) - 1
            dropped += missing
            runs.append(TickRun(start: last + Int64(frameDuration.rounded()), end: pts, value: Double(missing)))
        }
    }
}

/// `idet`: each picture measured against the one before and the one after (the first against itself, the
/// last against itself), its fields compared as FFmpeg 5.1 compares them, and typed by the last four
/// pictures' types (its multi-frame detection). Runs of pictures typed with one field order (top or bottom
/// first), kept when they last at least `duration`, in a video whose pictures say they are progressive.
final class InterlaceRuns {
    enum Kind: Int { case tff, bff, progressive, undetermined }
    let settings: CheckPlan.Interlace
    let minimumTicks: Int64
    private var prev = Frame(), cur = Frame()
    private var curPTS: Int64?
    private var history: [Kind] = [.undetermined, .undetermined, .undetermined, .undetermined]
    private var lastType: Kind = .undetermined
    private(set) var single = [0, 0, 0, 0], multi = [0, 0, 0, 0]
    private var start: Int64?
    private var runKind: Kind = .undetermined
    private var runs: [TickRun] = []

    init(_ settings: CheckPlan.Interlace, timeBase: Rational) {
        self.settings = settings
        minimumTicks = Int64(settings.duration / timeBase.doubleValue)
    }

    func add(_ frame: borrowing Frame, pts: Int64) {
        if let at = curPTS {
            measure(next: frame, at: at)
            try? prev.reference(cur)  // a failed reference leaves the picture before empty: it is measured against itself
        } else {
            try? prev.reference(frame)  // as above
        }
        try? cur.reference(frame)  // as above: a picture that cannot be held is not measured
        curPTS = cur.hasData ? pts : nil
    }

    private func measure(next: borrowing Frame, at pts: Int64) {
        guard let sums = prev.hasData ? Self.sums(prev, cur, next) : Self.sums(cur, cur, next) else { return }
        let (a0, a1, delta, g0, g1) = (Float(sums.0), Float(sums.1), Float(sums.2), Float(sums.3), Float(sums.4))
        let intl = Float(settings.threshold), prog: Float = 1.5
        let type: Kind = a0 > intl * a1 ? .tff : a1 > intl * a0 ? .bff : a1 > prog * delta ? .progressive : .undetermined
        _ = (g0, g1)  // repeated fields are not a finding here
        history = [type] + history.prefix(3)
        var best: Kind = .undetermined, match = 0
        for h in history where h != .undetermined {
            if best == .undetermined { best = h }
            if h == best { match += 1 } else { match = 0; break }
        }
        if (lastType == .undetermined && match >= 1) || match > 2 { lastType = best }
        single[type.rawValue] += 1
        multi[lastType.rawValue] += 1
        // A run is of one field order: material that is not interlaced fools the detection both ways at once.
        if let s = start, lastType != runKind {
            close(s, pts)
            start = nil
        }
        if start == nil, lastType == .tff || lastType == .bff { (start, runKind) = (pts, lastType) }
    }

    private func close(_ s: Int64, _ end: Int64, toEnd: Bool = false) {
        if end &- s >= minimumTicks { runs.append(TickRun(start: s, end: end, toEnd: toEnd)) }
    }

    func finish(end: Int64) -> [TickRun] {
        if let at = curPTS {
            // The last picture, with itself as the one after.
            var last = Frame()
            try? last.reference(cur)  // as above
            if last.hasData { measure(next: last, at: at) }
            curPTS = nil
        }
        if let s = start { close(s, end, toEnd: true); start = nil }
        return runs
    }

    /// alpha[0], alpha[1], delta, gamma[0], gamma[1] over every plane, rows 2 to height - 3.
    static func sums(_ p: borrowing Frame, _ c: borrowing Frame, _ n: borrowing Frame) -> (Int64, Int64, Int64, Int64, Int64)? {
        p.withPlanes { pp in
            c.withPlanes { cp in
                n.withPlanes { np -> (Int64, Int64, Int64, Int64, Int64)? in
                    guard pp.planes.count == cp.planes.count, np.planes.count == cp.planes.count, pp.depth == cp.depth, np.depth == cp.depth,
                          zip(pp.planes, cp.planes).allSatisfy({ $0.width == $1.width && $0.height == $1.height }),
                          zip(np.planes, cp.planes).allSatisfy({ $0.width == $1.width && $0.height == $1.height }) else { return nil }
                    var alpha: (Int64, Int64) = (0, 0), delta: Int64 = 0, gamma: (Int64, Int64) = (0, 0)
                    let wide = cp.depth > 8
                    for i in 0..<cp.planes.count {
                        let plane = cp.planes[i], w = plane.width
                        guard plane.height > 4 else { continue }
                        for y in 2..<(plane.height - 2) {
                            let prev = pp.planes[i].base + y * pp.planes[i].bytesPerRow
                            let cur = plane.base + y * plane.bytesPerRow
                            let next = np.planes[i].base + y * np.planes[i].bytesPerRow
                            let above = cur - plane.bytesPerRow, below = cur + plane.bytesPerRow
                            let a = line(above, prev, below, w, wide), b = line(above, next, below, w, wide)
                            if y & 1 == 0 { alpha.0 += a; alpha.1 += b } else { alpha.1 += a; alpha.0 += b }
                            delta += line(above, cur, below, w, wide)
                            let g = line(cur, prev, cur, w, wide)
                            if y & 1 == 0 { gamma.1 += g } else { gamma.0 += g }
                        }
                    }
                    return (alpha.0, alpha.1, delta, gamma.0, gamma.1)
                } ?? nil
            } ?? nil
        } ?? nil
    }

    /// Σ |a + c - 2b| over a row.
    @inline(__always)
    static func line(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ c: UnsafePointer<UInt8>, _ w: Int, _ wide: Bool) -> Int64 {
        var sum = 0
        if wide {
            let ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b), rc = UnsafeRawPointer(c)
            for x in 0..<w {
                let v = Int(ra.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)) + Int(rc.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                    - 2 * Int(rb.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                sum += abs(v)
            }
        } else {
            for x in 0..<w {
                let v = Int(a[x]) + Int(c[x]) - 2 * Int(b[x])
                sum += abs(v)
            }
        }
        return Int64(sum)
    }
}
