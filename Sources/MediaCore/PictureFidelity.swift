import Foundation

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

    /// The pair's fidelity, or nil when their formats or sizes differ (a caller converts first).
    public static func measure(_ main: PicturePlanes, _ reference: PicturePlanes) -> PictureFidelity? {
        guard main.depth == reference.depth, main.planes.count == reference.planes.count,
              zip(main.planes, reference.planes).allSatisfy({ $0.width == $1.width && $0.height == $1.height }) else { return nil }
        let pixels = main.planes.map { Double($0.width * $0.height) }
        let total = pixels.reduce(0, +)
        guard total > 0 else { return nil }
        let weights = pixels.map { $0 / total }
        let max = (1 << main.depth) - 1
        let peak = Int((Double(max) * weights.reduce(0, +)).rounded(.toNearestOrEven))
        var mse = 0.0, ssim = 0.0
        for p in 0..<main.planes.count {
            let a = main.planes[p], b = reference.planes[p]
            mse += Double(squaredError(a, b, wide: main.depth > 8)) / pixels[p] * weights[p]
            ssim += planeSSIM(a, b, depth: main.depth) * weights[p]
        }
        return PictureFidelity(mse: mse, psnr: psnr(mse: mse, peak: peak), ssim: ssim, peak: peak)
    }

    /// The PSNR of a mean squared error (the mean of pictures' errors gives FFmpeg's `average`).
    public static func psnr(mse: Double, peak: Int) -> Double {
        mse == 0 ? .infinity : 10 * log10(Double(UInt32(truncatingIfNeeded: peak * peak)) / mse)
    }

    private static func squaredError(_ a: PicturePlanes.Plane, _ b: PicturePlanes.Plane, wide: Bool) -> UInt64 {
        var sum: UInt64 = 0
        for y in 0..<a.height {
            let ra = a.base + y * a.bytesPerRow, rb = b.base + y * b.bytesPerRow
            var line: UInt64 = 0
            if wide {
                let wa = UnsafeRawPointer(ra), wb = UnsafeRawPointer(rb)
                for x in 0..<a.width {
                    let d = Int64(wa.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)) - Int64(wb.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                    line &+= UInt64(d * d)
                }
            } else {
                var l: UInt32 = 0  // at most 65,025 a sample: a row of 66,000 fits
                for x in 0..<a.width {
                    let d = Int32(ra[x]) - Int32(rb[x])
                    l &+= UInt32(d * d)
                }
                line = UInt64(l)
            }
            sum &+= line
        }
        return sum
    }

    /// Σ a, Σ b, Σ a² + b², Σ ab of each 4×4 block of a row of blocks.
    private struct BlockSums { var s1 = 0, s2 = 0, ss = 0, s12 = 0 }

    /// The plane's SSIM: each 8×8 window (2×2 blocks of 4×4, stepped by one block) scored with x264's integer
    /// constants as `vf_ssim` scores it, in single precision; their mean. Pixels past the last whole block are not read.
    private static func planeSSIM(_ a: PicturePlanes.Plane, _ b: PicturePlanes.Plane, depth: Int) -> Double {
        let bw = a.width >> 2, bh = a.height >> 2
        guard bw >= 2, bh >= 2 else { return 1 }
        let max = Double((1 << depth) - 1)
        let c1 = Int(0.01 * 0.01 * max * max * 64 + 0.5), c2 = Int(0.03 * 0.03 * max * max * 64 * 63 + 0.5)
        let wide = depth > 8
        var above = [BlockSums](repeating: BlockSums(), count: bw), current = above
        func sums(row by: Int, into out: inout [BlockSums]) {
            for bx in 0..<bw {
                var s = BlockSums()
                for y in 0..<4 {
                    let ra = a.base + (4 * by + y) * a.bytesPerRow, rb = b.base + (4 * by + y) * b.bytesPerRow
                    for x in (4 * bx)..<(4 * bx + 4) {
                        let u: Int, v: Int
                        if wide {
                            u = Int(UnsafeRawPointer(ra).loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                            v = Int(UnsafeRawPointer(rb).loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                        } else {
                            u = Int(ra[x]); v = Int(rb[x])
                        }
                        s.s1 += u; s.s2 += v; s.ss += u * u + v * v; s.s12 += u * v
                    }
                }
                out[bx] = s
            }
        }
        sums(row: 0, into: &above)
        var total = 0.0
        for by in 1..<bh {
            sums(row: by, into: &current)
            var row = 0.0
            var rowFloat: Float = 0
            for bx in 0..<(bw - 1) {
                let s1 = above[bx].s1 + above[bx + 1].s1 + current[bx].s1 + current[bx + 1].s1
                let s2 = above[bx].s2 + above[bx + 1].s2 + current[bx].s2 + current[bx + 1].s2
                let ss = above[bx].ss + above[bx + 1].ss + current[bx].ss + current[bx + 1].ss
                let s12 = above[bx].s12 + above[bx + 1].s12 + current[bx].s12 + current[bx + 1].s12
                let vars = ss * 64 - s1 * s1 - s2 * s2, covar = s12 * 64 - s1 * s2
                let value = Float(2 * s1 * s2 + c1) * Float(2 * covar + c2) / (Float(s1 * s1 + s2 * s2 + c1) * Float(vars + c2))
                // 8 bits add each window into a double; deeper pictures add a row's windows in single precision first.
                if wide { rowFloat += value } else { row += Double(value) }
            }
            total += wide ? Double(rowFloat) : row
            swap(&above, &current)
        }
        return total / Double((bw - 1) * (bh - 1))
    }
}

/// Each picture's fidelity, in order, as an export or a comparison measures them: kept whole (32 bytes a
/// picture: 10 hours at 30 fps is 35 MB) so the report can give the worst pictures and the runs below a
/// threshold. Filled on the export's thread, read after it; locked for the hand-over.
public final class FidelityLog: @unchecked Sendable {
    public struct Entry: Sendable, Equatable {
        /// Seconds from the export's start.
        public var time: Double
        public var fidelity: PictureFidelity
    }
    private let lock = NSLock()
    private var kept: [Entry] = []
    /// Seconds each picture lasts, for the runs' ends.
    public private(set) var frameDuration = 0.0

    public init() {}

    public func add(time: Double, fidelity: PictureFidelity, frameDuration: Double) {
        lock.withLock {
            kept.append(Entry(time: time, fidelity: fidelity))
            self.frameDuration = frameDuration
        }
    }

    public var entries: [Entry] { lock.withLock { kept } }
}
