import Foundation
import MediaCore
import MediaTime
import QualityModel

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
        let (a0, a1, delta) = (Float(sums.0), Float(sums.1), Float(sums.2))
        let intl = Float(settings.threshold), prog: Float = 1.5
        let type: Kind = a0 > intl * a1 ? .tff : a1 > intl * a0 ? .bff : a1 > prog * delta ? .progressive : .undetermined
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

    /// alpha[0], alpha[1] and delta over every plane, rows 2 to height - 3 (idet's gamma, its repeated fields, is not a finding here).
    static func sums(_ p: borrowing Frame, _ c: borrowing Frame, _ n: borrowing Frame) -> (Int64, Int64, Int64)? {
        p.withPlanes { pp in
            c.withPlanes { cp in
                n.withPlanes { np -> (Int64, Int64, Int64)? in
                    guard pp.planes.count == cp.planes.count, np.planes.count == cp.planes.count, pp.depth == cp.depth, np.depth == cp.depth,
                          zip(pp.planes, cp.planes).allSatisfy({ $0.width == $1.width && $0.height == $1.height }),
                          zip(np.planes, cp.planes).allSatisfy({ $0.width == $1.width && $0.height == $1.height }) else { return nil }
                    var alpha: (Int64, Int64) = (0, 0), delta: Int64 = 0
                    let wide = cp.depth > 8
                    for i in 0..<cp.planes.count {
                        let plane = cp.planes[i], w = plane.width
                        guard plane.height > 4 else { continue }
                        for y in 2..<(plane.height - 2) {
                            let prev = pp.planes[i].base + y * pp.planes[i].bytesPerRow
                            let cur = plane.base + y * plane.bytesPerRow
                            let next = np.planes[i].base + y * np.planes[i].bytesPerRow
                            let above = cur - plane.bytesPerRow, below = cur + plane.bytesPerRow
                            let (a, b, d) = wide ? (line(above, prev, below, w), line(above, next, below, w), line(above, cur, below, w))
                                : RowSums.fieldDifferences(above: above, below: below, prev: prev, next: next, cur: cur, w)
                            if y & 1 == 0 { alpha.0 += a; alpha.1 += b } else { alpha.1 += a; alpha.0 += b }
                            delta += d
                        }
                    }
                    return (alpha.0, alpha.1, delta)
                } ?? nil
            } ?? nil
        } ?? nil
    }

    /// Σ |a + c - 2b| over a row of 16-bit samples.
    static func line(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ c: UnsafePointer<UInt8>, _ w: Int) -> Int64 {
        var sum = 0
        let ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b), rc = UnsafeRawPointer(c)
        for x in 0..<w {
            let v = Int(ra.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)) + Int(rc.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                - 2 * Int(rb.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
            sum += abs(v)
        }
        return Int64(sum)
    }
}
