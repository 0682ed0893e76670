/// The picture checks' sums over one row of 8-bit samples, written as loops the compiler turns into vector
/// instructions (what FFmpeg's filters write by hand): no branch, no trap on overflow, and lanes as narrow as
/// the sums allow (a vector holds sixteen 8-bit lanes, eight 16-bit ones, four 32-bit ones), each narrow sum
/// taken over a stretch of the row short enough that it cannot wrap, then widened. Each equals its plain loop
/// (`RowSumsTests`). Swift's SIMD types were tried first: their lane conversions made `fieldDifferences`
/// twenty times slower.
enum RowSums {
    /// How many of `row`'s `width` samples are at most `threshold` (`blackdetect`'s count), in 16-bit lanes.
    static func countAtMost(_ row: UnsafePointer<UInt8>, _ width: Int, _ threshold: UInt8) -> Int {
        var total = 0
        let t = Int16(threshold)
        for start in stride(from: 0, to: width, by: Int(UInt16.max)) {
            var count: UInt16 = 0
            // 1, less 1 when the sample is above the threshold (the difference's sign).
            for x in start..<min(start + Int(UInt16.max), width) { count &+= UInt16(bitPattern: 1 &+ ((t &- Int16(row[x])) >> 15)) }
            total += Int(count)
        }
        return total
    }

    /// Σ |a - b| over `width` samples (`freezedetect`'s difference): the compiler makes it a sum of absolute
    /// differences of 8-bit lanes.
    static func absoluteDifference(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ width: Int) -> UInt64 {
        var sum: Int32 = 0
        for x in 0..<width { sum &+= magnitude(Int32(a[x]) &- Int32(b[x])) }
        return UInt64(UInt32(bitPattern: sum))
    }

    /// `idet`'s three sums over a row: Σ |above + below - 2 × r| for r in `prev`, `next` and `cur` (the same
    /// row of the picture before, after, and this one), in 16-bit lanes: each term is at most 510, so 128 of
    /// them fit a 16-bit sum.
    static func fieldDifferences(above: UnsafePointer<UInt8>, below: UnsafePointer<UInt8>, prev: UnsafePointer<UInt8>, next: UnsafePointer<UInt8>,
                                 cur: UnsafePointer<UInt8>, _ width: Int) -> (prev: Int64, next: Int64, cur: Int64) {
        var tp: Int64 = 0, tn: Int64 = 0, tc: Int64 = 0
        for start in stride(from: 0, to: width, by: 128) {
            var sp: UInt16 = 0, sn: UInt16 = 0, sc: UInt16 = 0
            for x in start..<min(start + 128, width) {
                let s = Int16(above[x]) &+ Int16(below[x])
                sp &+= magnitude(s &- 2 &* Int16(prev[x]))
                sn &+= magnitude(s &- 2 &* Int16(next[x]))
                sc &+= magnitude(s &- 2 &* Int16(cur[x]))
            }
            tp += Int64(sp); tn += Int64(sn); tc += Int64(sc)
        }
        return (tp, tn, tc)
    }

    /// How many of a luma row's samples are outside `lo...hi`, or sit on chroma that is (`chroma[x]` 1, else 0,
    /// one per luma sample): `signalstats`' BRNG count, in 8-bit lanes over 255 samples at a time.
    static func countOutside(_ row: UnsafePointer<UInt8>, _ width: Int, _ lo: UInt8, _ hi: UInt8, chroma: UnsafePointer<UInt8>?) -> Int {
        var total = 0
        for start in stride(from: 0, to: width, by: 255) {
            var count: UInt8 = 0
            let end = min(start + 255, width)
            if let chroma {
                for x in start..<end { let v = row[x]; count &+= (v < lo || v > hi ? 1 : 0) | chroma[x] }
            } else {
                for x in start..<end { let v = row[x]; count &+= v < lo || v > hi ? 1 : 0 }
            }
            total += Int(count)
        }
        return total
    }

    /// For each of a chroma row's `width` samples, 1 when its U or its V is outside `lo...hi`, else 0, written
    /// once for each of the `1 << horizontalShift` luma samples it covers (`spread` holds the luma row's width).
    static func spreadChromaVerdicts(u: UnsafePointer<UInt8>, v: UnsafePointer<UInt8>, _ width: Int, _ lo: UInt8, _ hi: UInt8,
                                     horizontalShift: Int, into spread: UnsafeMutablePointer<UInt8>, lumaWidth: Int) {
        @inline(__always) func bad(_ c: Int) -> UInt8 { let a = u[c], b = v[c]; return a < lo || a > hi || b < lo || b > hi ? 1 : 0 }
        guard width > 0 else { spread.update(repeating: 0, count: lumaWidth); return }
        switch horizontalShift {
        case 0 where lumaWidth <= width:
            for c in 0..<lumaWidth { spread[c] = bad(c) }
        case 1 where (lumaWidth + 1) / 2 <= width:
            // Two bytes at a time: the vectorizer widens a verdict to 0x0101 with no shuffle.
            let pairs = UnsafeMutableRawPointer(spread)
            for c in 0..<lumaWidth / 2 { pairs.storeBytes(of: UInt16(bad(c)) &* 0x0101, toByteOffset: 2 * c, as: UInt16.self) }
            if lumaWidth & 1 == 1 { spread[lumaWidth - 1] = bad(lumaWidth / 2) }
        default:
            for x in 0..<lumaWidth { spread[x] = bad(min(x >> horizontalShift, width - 1)) }
        }
    }

    /// |v| without a branch or a trap.
    @inline(__always)
    private static func magnitude(_ v: Int32) -> Int32 { (v ^ (v >> 31)) &- (v >> 31) }

    /// |v| of a 16-bit difference, as the unsigned value it is.
    @inline(__always)
    private static func magnitude(_ v: Int16) -> UInt16 { UInt16(bitPattern: (v ^ (v >> 15)) &- (v >> 15)) }
}
