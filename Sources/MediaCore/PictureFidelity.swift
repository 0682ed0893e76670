import Foundation
import Synchronization

/// How close one picture is to its reference, as FFmpeg 5.1's `psnr` and `ssim` filters measure a pair: the
/// mean squared error of each plane and their pixel-weighted mean, its PSNR, and the structural similarity
/// of each plane over 8×8 windows stepped by 4 and their weighted mean (`All`).
public struct PictureFidelity: Sendable, Equatable {
    /// Weighted mean squared error over the planes (`mse_avg`).
    public var mse: Double
    /// `10 log10(max² / mse)` with `max` the weighted peak (255 at 8 bits); infinite when the pictures are equal.
    public var psnr: Double
    /// The weighted mean of the planes' SSIM (`All`).
    public var ssim: Double
    /// The weighted peak the PSNR is of (`average_max`).
    public var peak: Int

    /// The pair's fidelity, or nil when their formats or sizes differ (a caller converts first). The planes
    /// are measured in parallel, the luma plane in two halves.
    public static func measure(_ main: PicturePlanes, _ reference: PicturePlanes) -> PictureFidelity? {
        guard main.depth == reference.depth, main.planes.count == reference.planes.count,
              zip(main.planes, reference.planes).allSatisfy({ $0.width == $1.width && $0.height == $1.height }) else { return nil }
        let pixels = main.planes.map { Double($0.width * $0.height) }
        let total = pixels.reduce(0, +)
        guard total > 0 else { return nil }
        let weights = pixels.map { $0 / total }
        let max = (1 << main.depth) - 1
        let peak = Int((Double(max) * weights.reduce(0, +)).rounded(.toNearestOrEven))
        // Parts: each plane's pixel rows (for the squared error) and window rows (1..<blockRows, for SSIM), the
        // first plane's in two.
        var parts: [(plane: Int, pixels: Range<Int>, windows: Range<Int>)] = []
        for (p, plane) in main.planes.enumerated() {
            let blockRows = plane.height >> 2
            if p == 0 && blockRows > 8 {
                let middle = blockRows / 2
                parts += [(p, 0..<(4 * middle), 1..<middle), (p, (4 * middle)..<plane.height, middle..<blockRows)]
            } else {
                parts.append((p, 0..<plane.height, 1..<Swift.max(blockRows, 1)))
            }
        }
        // Each part reads its own rows of the two pictures (alive for this call) and writes its own slot.
        nonisolated(unsafe) let sums = UnsafeMutableBufferPointer<(sse: UInt64, ssim: Double)>.allocate(capacity: parts.count)
        defer { sums.deallocate() }
        nonisolated(unsafe) let pictures = (main, reference)  // read only, by every part, while this call holds the frames
        let wide = main.depth > 8, depth = main.depth, shares = parts
        DispatchQueue.concurrentPerform(iterations: shares.count) { i in
            let part = shares[i]
            let a = pictures.0.planes[part.plane], b = pictures.1.planes[part.plane]
            sums[i] = (squaredError(a, b, rows: part.pixels, wide: wide), windows(a, b, depth: depth, rows: part.windows))
        }
        var sse = [UInt64](repeating: 0, count: main.planes.count), ssim = [Double](repeating: 0, count: main.planes.count)
        for (i, part) in parts.enumerated() {
            sse[part.plane] &+= sums[i].sse
            ssim[part.plane] += sums[i].ssim
        }
        var mse = 0.0, all = 0.0
        for (p, plane) in main.planes.enumerated() {
            mse += Double(sse[p]) / pixels[p] * weights[p]
            let bw = plane.width >> 2, bh = plane.height >> 2
            all += (bw >= 2 && bh >= 2 ? ssim[p] / Double((bw - 1) * (bh - 1)) : 1) * weights[p]
        }
        return PictureFidelity(mse: mse, psnr: psnr(mse: mse, peak: peak), ssim: all, peak: peak)
    }

    /// The PSNR of a mean squared error (the mean of pictures' errors gives FFmpeg's `average`).
    public static func psnr(mse: Double, peak: Int) -> Double {
        mse == 0 ? .infinity : 10 * log10(Double(UInt32(truncatingIfNeeded: peak * peak)) / mse)
    }

    private static func squaredError(_ a: PicturePlanes.Plane, _ b: PicturePlanes.Plane, rows: Range<Int>, wide: Bool) -> UInt64 {
        var sum: UInt64 = 0
        for y in rows {
            let ra = a.base + y * a.bytesPerRow, rb = b.base + y * b.bytesPerRow
            if wide {
                let wa = UnsafeRawPointer(ra), wb = UnsafeRawPointer(rb)
                var line: UInt64 = 0
                for x in 0..<a.width {
                    let d = Int64(wa.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)) - Int64(wb.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                    line &+= UInt64(d * d)
                }
                sum &+= line
            } else {
                // 32 bits hold a row of 65,025 at most a sample; wrapping arithmetic lets the loop be vectorized.
                var line: UInt32 = 0
                for x in 0..<a.width {
                    let d = Int32(ra[x]) &- Int32(rb[x])
                    line &+= UInt32(bitPattern: d &* d)
                }
                sum &+= UInt64(line)
            }
        }
        return sum
    }

    /// The sum of the SSIM of each 8×8 window (2×2 blocks of 4×4, stepped by one block) whose lower block row
    /// is in `rows`, scored with x264's integer constants as `vf_ssim` scores them, in single precision.
    /// Pixels past the last whole block are not read.
    private static func windows(_ a: PicturePlanes.Plane, _ b: PicturePlanes.Plane, depth: Int, rows: Range<Int>) -> Double {
        let bw = a.width >> 2
        guard bw >= 2, !rows.isEmpty else { return 0 }
        let max = Double((1 << depth) - 1)
        let c1 = Int(0.01 * 0.01 * max * max * 64 + 0.5), c2 = Int(0.03 * 0.03 * max * max * 64 * 63 + 0.5)
        if depth <= 8 { return windows8(a, b, blocks: bw, rows: rows, c1: Int32(c1), c2: Int32(c2)) }
        // Σa, Σb, Σa²+Σb², Σab of each block of a block row, four Ints a block.
        var above = UnsafeMutableBufferPointer<Int>.allocate(capacity: 4 * bw), current = UnsafeMutableBufferPointer<Int>.allocate(capacity: 4 * bw)
        defer { above.deallocate(); current.deallocate() }
        func sums(row by: Int, into out: UnsafeMutableBufferPointer<Int>) {
            out.initialize(repeating: 0)
            for y in (4 * by)..<(4 * by + 4) {
                let ra = UnsafeRawPointer(a.base + y * a.bytesPerRow), rb = UnsafeRawPointer(b.base + y * b.bytesPerRow)
                for bx in 0..<bw {
                    var s1 = 0, s2 = 0, ss = 0, s12 = 0
                    for x in (4 * bx)..<(4 * bx + 4) {
                        let u = Int(ra.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)), v = Int(rb.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                        s1 += u; s2 += v; ss += u * u + v * v; s12 += u * v
                    }
                    out[4 * bx] += s1; out[4 * bx + 1] += s2; out[4 * bx + 2] += ss; out[4 * bx + 3] += s12
                }
            }
        }
        sums(row: rows.lowerBound - 1, into: above)
        var total = 0.0
        for by in rows {
            sums(row: by, into: current)
            // Deeper pictures add a row's windows in single precision first.
            var row: Float = 0
            for bx in 0..<(bw - 1) {
                let i = 4 * bx, j = 4 * bx + 4
                let s1 = above[i] + above[j] + current[i] + current[j]
                let s2 = above[i + 1] + above[j + 1] + current[i + 1] + current[j + 1]
                let ss = above[i + 2] + above[j + 2] + current[i + 2] + current[j + 2]
                let s12 = above[i + 3] + above[j + 3] + current[i + 3] + current[j + 3]
                let vars = ss * 64 - s1 * s1 - s2 * s2, covar = s12 * 64 - s1 * s2
                row += Float(2 * s1 * s2 + c1) * Float(2 * covar + c2) / (Float(s1 * s1 + s2 * s2 + c1) * Float(vars + c2))
            }
            total += Double(row)
            swap(&above, &current)
        }
        return total
    }

    /// The same for 8-bit samples, in 32-bit lanes (a window's Σa² + Σb² is at most 64 × 2 × 255², its products
    /// with 64 at most 2³⁰, as `vf_ssim`'s 8-bit sums are `int`s), in loops the compiler vectorizes: each
    /// column's sums over the block row's four rows at once, each block's four columns, then every window's score
    /// into an array. Each window's score is added into a double, in order.
    private static func windows8(_ a: PicturePlanes.Plane, _ b: PicturePlanes.Plane, blocks bw: Int, rows: Range<Int>, c1: Int32, c2: Int32) -> Double {
        let n = 4 * bw
        // Four columns' sums (Σa, Σb, Σa²+Σb², Σab), then two block rows' four block sums, then the scores.
        let columns = UnsafeMutablePointer<Int32>.allocate(capacity: 4 * n)
        var above = UnsafeMutablePointer<Int32>.allocate(capacity: 4 * bw), current = UnsafeMutablePointer<Int32>.allocate(capacity: 4 * bw)
        let scores = UnsafeMutablePointer<Float>.allocate(capacity: bw)
        defer { columns.deallocate(); above.deallocate(); current.deallocate(); scores.deallocate() }
        func sums(row by: Int, into out: UnsafeMutablePointer<Int32>) {
            let k1 = columns, k2 = k1 + n, kss = k2 + n, k12 = kss + n
            let r0 = a.base + 4 * by * a.bytesPerRow, r1 = r0 + a.bytesPerRow, r2 = r1 + a.bytesPerRow, r3 = r2 + a.bytesPerRow
            let q0 = b.base + 4 * by * b.bytesPerRow, q1 = q0 + b.bytesPerRow, q2 = q1 + b.bytesPerRow, q3 = q2 + b.bytesPerRow
            for x in 0..<n {
                let u0 = Int32(r0[x]), u1 = Int32(r1[x]), u2 = Int32(r2[x]), u3 = Int32(r3[x])
                let v0 = Int32(q0[x]), v1 = Int32(q1[x]), v2 = Int32(q2[x]), v3 = Int32(q3[x])
                k1[x] = u0 &+ u1 &+ u2 &+ u3
                k2[x] = v0 &+ v1 &+ v2 &+ v3
                kss[x] = u0 &* u0 &+ u1 &* u1 &+ u2 &* u2 &+ u3 &* u3 &+ v0 &* v0 &+ v1 &* v1 &+ v2 &* v2 &+ v3 &* v3
                k12[x] = u0 &* v0 &+ u1 &* v1 &+ u2 &* v2 &+ u3 &* v3
            }
            let o1 = out, o2 = o1 + bw, oss = o2 + bw, o12 = oss + bw
            for bx in 0..<bw {
                let k = 4 * bx
                o1[bx] = k1[k] &+ k1[k + 1] &+ k1[k + 2] &+ k1[k + 3]
                o2[bx] = k2[k] &+ k2[k + 1] &+ k2[k + 2] &+ k2[k + 3]
                oss[bx] = kss[k] &+ kss[k + 1] &+ kss[k + 2] &+ kss[k + 3]
                o12[bx] = k12[k] &+ k12[k + 1] &+ k12[k + 2] &+ k12[k + 3]
            }
        }
        sums(row: rows.lowerBound - 1, into: above)
        var total = 0.0
        for by in rows {
            sums(row: by, into: current)
            let a1 = above, a2 = a1 + bw, ass = a2 + bw, a12 = ass + bw
            let b1 = current, b2 = b1 + bw, bss = b2 + bw, b12 = bss + bw
            for bx in 0..<(bw - 1) {
                let s1 = a1[bx] &+ a1[bx + 1] &+ b1[bx] &+ b1[bx + 1]
                let s2 = a2[bx] &+ a2[bx + 1] &+ b2[bx] &+ b2[bx + 1]
                let ss = ass[bx] &+ ass[bx + 1] &+ bss[bx] &+ bss[bx + 1]
                let s12 = a12[bx] &+ a12[bx + 1] &+ b12[bx] &+ b12[bx + 1]
                let vars = ss &* 64 &- s1 &* s1 &- s2 &* s2, covar = s12 &* 64 &- s1 &* s2
                scores[bx] = Float(2 &* s1 &* s2 &+ c1) * Float(2 &* covar &+ c2) / (Float(s1 &* s1 &+ s2 &* s2 &+ c1) * Float(vars &+ c2))
            }
            var row = 0.0
            for bx in 0..<(bw - 1) { row += Double(scores[bx]) }
            total += row
            swap(&above, &current)
        }
        return total
    }
}

/// Each picture's fidelity, in order, as an export or a comparison measures them: kept whole (40 bytes a
/// picture: 10 hours at 30 fps is 43 MB) so the report can give the worst pictures and the runs below a
/// threshold. Filled on the export's thread, read after it.
public final class FidelityLog: Sendable {
    public struct Entry: Sendable, Equatable {
        /// Seconds from the export's start.
        public var time: Double
        public var fidelity: PictureFidelity
    }
    private struct State { var entries: [Entry] = []; var frameDuration = 0.0 }
    private let state = Mutex(State())

    public init() {}

    public func add(time: Double, fidelity: PictureFidelity, frameDuration: Double) {
        state.withLock {
            $0.entries.append(Entry(time: time, fidelity: fidelity))
            $0.frameDuration = frameDuration
        }
    }

    public var entries: [Entry] { state.withLock { $0.entries } }
    /// Seconds each picture lasts, for the runs' ends.
    public var frameDuration: Double { state.withLock { $0.frameDuration } }
}
