/// The picture checks' sums over one row of 8-bit samples, written as loops the compiler turns into vector
/// instructions (what FFmpeg's filters write by hand): 32-bit sums of a row, no branch, no trap on overflow
/// (a row of 510 at most per sample cannot overflow them). Each equals its plain loop (`RowSumsTests`).
/// Swift's SIMD types were tried first: their lane conversions made `fieldDifferences` twenty times slower.
enum RowSums {
    /// How many of `row`'s `width` samples are at most `threshold` (`blackdetect`'s count).
    static func countAtMost(_ row: UnsafePointer<UInt8>, _ width: Int, _ threshold: UInt8) -> Int {
        var count: Int32 = 0
        let t = Int32(threshold)
        // 1, less 1 when the sample is above the threshold (the difference's sign).
        for x in 0..<width { count &+= 1 &+ ((t &- Int32(row[x])) >> 31) }
        return Int(count)
    }

    /// Σ |a - b| over `width` samples (`freezedetect`'s difference).
    static func absoluteDifference(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ width: Int) -> UInt64 {
        var sum: Int32 = 0
        for x in 0..<width { sum &+= magnitude(Int32(a[x]) &- Int32(b[x])) }
        return UInt64(UInt32(bitPattern: sum))
    }

    /// `idet`'s three sums over a row: Σ |above + below - 2 × r| for r in `prev`, `next` and `cur` (the same
    /// row of the picture before, after, and this one).
    static func fieldDifferences(above: UnsafePointer<UInt8>, below: UnsafePointer<UInt8>, prev: UnsafePointer<UInt8>, next: UnsafePointer<UInt8>,
                                 cur: UnsafePointer<UInt8>, _ width: Int) -> (prev: Int64, next: Int64, cur: Int64) {
        var sp: Int32 = 0, sn: Int32 = 0, sc: Int32 = 0
        for x in 0..<width {
            let s = Int32(above[x]) &+ Int32(below[x])
            sp &+= magnitude(s &- 2 &* Int32(prev[x]))
            sn &+= magnitude(s &- 2 &* Int32(next[x]))
            sc &+= magnitude(s &- 2 &* Int32(cur[x]))
        }
        return (Int64(sp), Int64(sn), Int64(sc))
    }

    /// How many of a luma row's samples are outside `lo...hi`, or sit on chroma that is (`chroma[x]` 1, else 0,
    /// one per luma sample): `signalstats`' BRNG count.
    static func countOutside(_ row: UnsafePointer<UInt8>, _ width: Int, _ lo: UInt8, _ hi: UInt8, chroma: UnsafePointer<UInt8>?) -> Int {
        var count: Int32 = 0
        let l = Int32(lo), h = Int32(hi)
        // 1 when either difference is negative (its sign), or the chroma's 1.
        if let chroma {
            for x in 0..<width { let v = Int32(row[x]); count &+= (((v &- l) >> 31) | ((h &- v) >> 31)) & 1 | Int32(chroma[x]) }
        } else {
            for x in 0..<width { let v = Int32(row[x]); count &+= (((v &- l) >> 31) | ((h &- v) >> 31)) & 1 }
        }
        return Int(count)
    }

    /// |v| without a branch or a trap.
    @inline(__always)
    private static func magnitude(_ v: Int32) -> Int32 { (v ^ (v >> 31)) &- (v >> 31) }
}
