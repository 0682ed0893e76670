import Foundation
import MediaCore
import MediaTime
import QualityModel

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
            for y in 0..<luma.height { count += RowSums.countAtMost(luma.base + y * luma.bytesPerRow, luma.width, t) }
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
                line = RowSums.absoluteDifference(a.base + y * a.bytesPerRow, b.base + y * b.bytesPerRow, a.width)
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
    /// Whether each chroma sample of a row is out of range (1) or not (0), and each luma sample of a row sits
    /// on such chroma: 8-bit pictures.
    private var spread: [UInt8] = []

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
            if !wide {
                for y in 0..<luma.height { count += RowSums.countOutside(luma.base + y * luma.bytesPerRow, luma.width, UInt8(lo), UInt8(hi), chroma: nil) }
                return count
            }
            for y in 0..<luma.height {
                let row = luma.base + y * luma.bytesPerRow
                for x in 0..<luma.width { let v = value(row, x); if v < lo || v > hi { count += 1 } }
            }
            return count
        }
        let u = planes.planes[1], v = planes.planes[2]
        let (hs, vs) = planes.chromaShift
        if !wide { return outOfRange8(luma: luma, u: u, v: v, shift: (hs, vs)) }
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

    /// The same for 8-bit samples: each chroma row's verdict spread to a byte per luma sample, each luma row counted sixteen at a time.
    private mutating func outOfRange8(luma: PicturePlanes.Plane, u: PicturePlanes.Plane, v: PicturePlanes.Plane, shift: (horizontal: Int, vertical: Int)) -> Int {
        let (lo, hi) = (UInt8(legal.lumaMin), UInt8(legal.lumaMax))
        let (clo, chi) = (UInt8(legal.chromaMin), UInt8(legal.chromaMax))
        if spread.count != luma.width { spread = Array(repeating: 0, count: luma.width) }
        var count = 0, chromaRow = -1
        return spread.withUnsafeMutableBufferPointer { bad in
            for y in 0..<luma.height {
                let cy = y >> shift.vertical
                if cy != chromaRow {
                    chromaRow = cy
                    RowSums.spreadChromaVerdicts(u: u.base + cy * u.bytesPerRow, v: v.base + cy * v.bytesPerRow, u.width, clo, chi,
                                                 horizontalShift: shift.horizontal, into: bad.baseAddress!, lumaWidth: luma.width)
                }
                count += RowSums.countOutside(luma.base + y * luma.bytesPerRow, luma.width, lo, hi, chroma: UnsafePointer(bad.baseAddress!))
            }
            return count
        }
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

