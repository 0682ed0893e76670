@testable import MediaInspect
import Testing

/// The checks' row sums, as vector loops, against their plain loops: random rows of every width
/// from 0 to 40 (the tails), about each narrow sum's stretch (128 and 255 samples), extreme values (0 and
/// 255, the largest sums) and rows up to 8,192 wide, and 70,000 for the count in 16-bit lanes.
@Suite struct RowSumsTests {
    var generator = SystemRandomNumberGenerator()

    static func rows(width: Int, count: Int, extreme: Bool, using g: inout SystemRandomNumberGenerator) -> [[UInt8]] {
        // One more than `width`: a row of none still has a pointer.
        (0..<count).map { _ in (0...width).map { _ in extreme ? (Bool.random(using: &g) ? 255 : 0) : UInt8.random(in: 0...255, using: &g) } }
    }

    static var widths: [Int] { Array(0...40) + [127, 128, 129, 254, 255, 256, 510, 1920, 4111, 8192] }

    @Test mutating func countsAtMostAThreshold() {
        for width in Self.widths {
            for extreme in [false, true] {
                let row = Self.rows(width: width, count: 1, extreme: extreme, using: &generator)[0]
                for t: UInt8 in [0, 32, 254, 255] {
                    let plain = row.prefix(width).filter { $0 <= t }.count
                    #expect(row.withUnsafeBufferPointer { RowSums.countAtMost($0.baseAddress!, width, t) } == plain, "width \(width), threshold \(t)")
                }
            }
        }
    }

    @Test mutating func sumsAbsoluteDifferences() {
        for width in Self.widths {
            for extreme in [false, true] {
                let r = Self.rows(width: width, count: 2, extreme: extreme, using: &generator)
                let plain = zip(r[0].prefix(width), r[1].prefix(width)).reduce(UInt64(0)) { $0 + UInt64(abs(Int($1.0) - Int($1.1))) }
                let fast = r[0].withUnsafeBufferPointer { a in r[1].withUnsafeBufferPointer { RowSums.absoluteDifference(a.baseAddress!, $0.baseAddress!, width) } }
                #expect(fast == plain, "width \(width)")
            }
        }
    }

    @Test mutating func sumsFieldDifferences() {
        for width in Self.widths {
            for extreme in [false, true] {
                let r = Self.rows(width: width, count: 5, extreme: extreme, using: &generator)
                func plain(_ k: Int) -> Int64 { Int64((0..<width).reduce(0) { $0 + abs(Int(r[0][$1]) + Int(r[1][$1]) - 2 * Int(r[k][$1])) }) }
                let p = r
                let fast = p[0].withUnsafeBufferPointer { a in p[1].withUnsafeBufferPointer { b in p[2].withUnsafeBufferPointer { pr in
                    p[3].withUnsafeBufferPointer { nx in p[4].withUnsafeBufferPointer { cu in
                        RowSums.fieldDifferences(above: a.baseAddress!, below: b.baseAddress!, prev: pr.baseAddress!, next: nx.baseAddress!, cur: cu.baseAddress!, width)
                    } } } } }
                #expect(fast.prev == plain(2) && fast.next == plain(3) && fast.cur == plain(4), "width \(width)")
            }
        }
    }

    @Test mutating func countsOutsideTheLegalRange() {
        for width in Self.widths {
            for extreme in [false, true] {
                let row = Self.rows(width: width, count: 1, extreme: extreme, using: &generator)[0]
                let chroma = (0...width).map { _ in UInt8.random(in: 0...1, using: &generator) }
                let alone = (0..<width).filter { row[$0] < 16 || row[$0] > 235 }.count
                let with = (0..<width).filter { row[$0] < 16 || row[$0] > 235 || chroma[$0] == 1 }.count
                row.withUnsafeBufferPointer { r in
                    chroma.withUnsafeBufferPointer { c in
                        #expect(RowSums.countOutside(r.baseAddress!, width, 16, 235, chroma: nil) == alone, "width \(width)")
                        #expect(RowSums.countOutside(r.baseAddress!, width, 16, 235, chroma: c.baseAddress!) == with, "width \(width), with chroma")
                    }
                }
            }
        }
    }

    @Test func countsRowsLongerThanASixteenBitSum() {
        for width in [65_535, 65_536, 70_000] {
            let row = [UInt8](repeating: 3, count: width + 1)
            #expect(row.withUnsafeBufferPointer { RowSums.countAtMost($0.baseAddress!, width, 3) } == width, "width \(width)")
            #expect(row.withUnsafeBufferPointer { RowSums.countAtMost($0.baseAddress!, width, 2) } == 0, "width \(width)")
        }
    }

    @Test mutating func spreadsChromaVerdictsOverTheLumaTheyCover() {
        for lumaWidth in Array(0...40) + [1919, 1920, 4111] {
            for shift in 0...2 {
                let width = (lumaWidth + (1 << shift) - 1) >> shift
                let u = (0...width).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let v = (0...width).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let plain = (0..<lumaWidth).map { x -> UInt8 in
                    let c = x >> shift
                    return u[c] < 16 || u[c] > 240 || v[c] < 16 || v[c] > 240 ? 1 : 0
                }
                var spread = [UInt8](repeating: 7, count: lumaWidth + 1)
                u.withUnsafeBufferPointer { pu in
                    v.withUnsafeBufferPointer { pv in
                        spread.withUnsafeMutableBufferPointer {
                            RowSums.spreadChromaVerdicts(u: pu.baseAddress!, v: pv.baseAddress!, width, 16, 240, horizontalShift: shift,
                                                         into: $0.baseAddress!, lumaWidth: lumaWidth)
                        }
                    }
                }
                #expect(Array(spread.prefix(lumaWidth)) == plain, "luma width \(lumaWidth), shift \(shift)")
                #expect(spread[lumaWidth] == 7, "luma width \(lumaWidth), shift \(shift): nothing written past the row")
            }
        }
    }
}
