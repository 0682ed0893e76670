/// The picture checks' sums over one row of 8-bit samples, sixteen at a time (what FFmpeg's filters do with
/// their SIMD versions), the last few one by one. Each equals its plain loop (`RowSumsTests`).
enum RowSums {
    typealias Bytes = SIMD16<UInt8>

    @inline(__always)
    private static func load(_ p: UnsafePointer<UInt8>, _ x: Int) -> Bytes {
        UnsafeRawPointer(p + x).loadUnaligned(as: Bytes.self)
    }

    /// How many of `row`'s `width` samples are at most `threshold` (`blackdetect`'s count).
    static func countAtMost(_ row: UnsafePointer<UInt8>, _ width: Int, _ threshold: UInt8) -> Int {
        var count = 0, x = 0
        let t = Bytes(repeating: threshold), one = Bytes(repeating: 1)
        while x + 16 <= width {
            // Up to 255 steps in byte lanes, then into the total.
            var lanes = Bytes()
            let stop = min(width, x + 255 * 16)
            while x + 16 <= stop {
                lanes &+= one.replacing(with: 0, where: load(row, x) .> t)
                x += 16
            }
            count += lanes.widenedSum
        }
        while x < width { if row[x] <= threshold { count += 1 }; x += 1 }
        return count
    }

    /// Σ |a - b| over `width` samples (`freezedetect`'s difference).
    static func absoluteDifference(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ width: Int) -> UInt64 {
        var sum: UInt64 = 0, x = 0
        while x + 16 <= width {
            // Up to 257 steps of at most 255 in 16-bit lanes.
            var lanes = SIMD16<UInt16>()
            let stop = min(width, x + 256 * 16)
            while x + 16 <= stop {
                let u = load(a, x), v = load(b, x)
                lanes &+= SIMD16<UInt16>(truncatingIfNeeded: pointwiseMax(u, v) &- pointwiseMin(u, v))
                x += 16
            }
            sum &+= UInt64(lanes.widenedSum)
        }
        while x < width { let u = a[x], v = b[x]; sum &+= UInt64(u > v ? u - v : v - u); x += 1 }
        return sum
    }

    /// `idet`'s three sums over a row: Σ |above + below - 2 × r| for r in `prev`, `next` and `cur` (the same
    /// row of the picture before, after, and this one).
    static func fieldDifferences(above: UnsafePointer<UInt8>, below: UnsafePointer<UInt8>, prev: UnsafePointer<UInt8>, next: UnsafePointer<UInt8>,
                                 cur: UnsafePointer<UInt8>, _ width: Int) -> (prev: Int64, next: Int64, cur: Int64) {
        var sp: Int64 = 0, sn: Int64 = 0, sc: Int64 = 0, x = 0
        @inline(__always) func magnitude(_ s: SIMD16<Int16>, _ r: Bytes) -> SIMD16<Int16> {
            let d = s &- (SIMD16<Int16>(truncatingIfNeeded: r) &<< 1)
            return d.replacing(with: 0 &- d, where: d .< 0)
        }
        while x + 16 <= width {
            // Up to 64 steps of at most 510 in 16-bit lanes.
            var lp = SIMD16<Int16>(), ln = SIMD16<Int16>(), lc = SIMD16<Int16>()
            let stop = min(width, x + 64 * 16)
            while x + 16 <= stop {
                let s = SIMD16<Int16>(truncatingIfNeeded: load(above, x)) &+ SIMD16<Int16>(truncatingIfNeeded: load(below, x))
                lp &+= magnitude(s, load(prev, x))
                ln &+= magnitude(s, load(next, x))
                lc &+= magnitude(s, load(cur, x))
                x += 16
            }
            sp += Int64(SIMD16<UInt16>(truncatingIfNeeded: lp).widenedSum)
            sn += Int64(SIMD16<UInt16>(truncatingIfNeeded: ln).widenedSum)
            sc += Int64(SIMD16<UInt16>(truncatingIfNeeded: lc).widenedSum)
        }
        while x < width {
            let s = Int(above[x]) + Int(below[x])
            sp += Int64(abs(s - 2 * Int(prev[x])))
            sn += Int64(abs(s - 2 * Int(next[x])))
            sc += Int64(abs(s - 2 * Int(cur[x])))
            x += 1
        }
        return (sp, sn, sc)
    }

    /// How many of a luma row's samples are outside `lo...hi`, or sit on chroma that is (`chroma[x]` 1, else 0,
    /// one per luma sample): `signalstats`' BRNG count.
    static func countOutside(_ row: UnsafePointer<UInt8>, _ width: Int, _ lo: UInt8, _ hi: UInt8, chroma: UnsafePointer<UInt8>?) -> Int {
        var count = 0, x = 0
        let l = Bytes(repeating: lo), h = Bytes(repeating: hi), one = Bytes(repeating: 1)
        while x + 16 <= width {
            var lanes = Bytes()
            let stop = min(width, x + 255 * 16)
            while x + 16 <= stop {
                let v = load(row, x)
                var bad = one.replacing(with: 0, where: (v .>= l) .& (v .<= h))
                if let chroma { bad |= load(chroma, x) }
                lanes &+= bad
                x += 16
            }
            count += lanes.widenedSum
        }
        while x < width {
            let v = row[x]
            if v < lo || v > hi || (chroma.map { $0[x] != 0 } ?? false) { count += 1 }
            x += 1
        }
        return count
    }
}

extension SIMD16 where Scalar: FixedWidthInteger & UnsignedInteger {
    /// The lanes' sum, each widened to `Int` first.
    @inline(__always)
    var widenedSum: Int {
        var total = 0
        for i in 0..<16 { total &+= Int(self[i]) }
        return total
    }
}
