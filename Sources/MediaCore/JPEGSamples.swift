internal import CFFmpeg

/// 8-bit 4:2:0 pictures made into JPEG's samples (full-range BT.601 4:2:0) at the same size, sample by
/// sample: the range stretched and the matrix changed with tables, where libswscale takes its general
/// path through its scaler (a third of a 1080p poster's time). Each luma sample is corrected with the
/// chroma of its own 2x2 block, as a player shows it.
enum JPEGSamples {
    /// The source's luma and chroma as fractions: (Y - offset) / range, (C - 128) / range.
    struct Range {
        var lumaOffset: Double, lumaRange: Double, chromaRange: Double
        init(full: Bool) { (lumaOffset, lumaRange, chromaRange) = full ? (0, 255, 255) : (16, 219, 224) }
    }

    /// The matrix from the source's (luma, Cb, Cr) to BT.601's, as fractions: luma' = luma + a Cb + b Cr,
    /// Cb' = c Cb + d Cr, Cr' = e Cb + f Cr (grey stays grey, so luma enters only itself).
    struct Mix {
        var a = 0.0, b = 0.0, c = 1.0, d = 0.0, e = 0.0, f = 1.0

        init(from matrix: PictureColour.Matrix) {
            let (kr, kb): (Double, Double) = switch matrix {
            case .bt709: (0.2126, 0.0722)
            case .bt2020: (0.2627, 0.0593)
            case .bt601, .rgb: (0.299, 0.114)
            }
            guard matrix == .bt709 || matrix == .bt2020 else { return }
            let (kr6, kb6) = (0.299, 0.114)
            func to601(_ cb: Double, _ cr: Double) -> (Double, Double, Double) {
                let r = 2 * (1 - kr) * cr, b = 2 * (1 - kb) * cb
                let g = (-kr * r - kb * b) / (1 - kr - kb)
                let y = kr6 * r + (1 - kr6 - kb6) * g + kb6 * b
                return (y, (b - y) / (2 * (1 - kb6)), (r - y) / (2 * (1 - kr6)))
            }
            let cb = to601(1, 0), cr = to601(0, 1)
            (a, c, e) = cb
            (b, d, f) = cr
        }
    }

    /// Whether `source` can be converted here: 8-bit 4:2:0 planar, to `width` x `height` its own size.
    static func applies(to source: borrowing Frame, width: Int, height: Int) -> Bool {
        let format = AVPixelFormat(rawValue: source.pointer.pointee.format)
        return [AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P].contains(format) && source.width == width && source.height == height
            && width > 0 && height > 0
    }

    /// `source` (8-bit 4:2:0, `range` and `matrix` as it says) into `destination`, a yuvj420p frame of its size.
    static func convert(_ source: borrowing Frame, colour: PictureColour, into destination: borrowing Frame) {
        let range = Range(full: colour.fullRange || AVPixelFormat(rawValue: source.pointer.pointee.format) == AV_PIX_FMT_YUVJ420P)
        let mix = Mix(from: colour.matrix)
        let (width, height) = (source.width, source.height)
        let (chromaWidth, chromaHeight) = ((width + 1) / 2, (height + 1) / 2)
        // Q16 factors: 255 out per unit of each fraction. Luma' = Y kY + its block's part (the offset, the
        // chroma's mix, the rounding); Cb' and Cr' from their centred values. Arithmetic the compiler
        // turns into vector instructions: no tables in the inner loops.
        let q = { (value: Double) in Int32((value * 65536 * 255).rounded()) }
        let kY = q(1 / range.lumaRange)
        let lumaBase = q(-range.lumaOffset / range.lumaRange) &+ 32768
        let (a, b) = (q(mix.a / range.chromaRange), q(mix.b / range.chromaRange))
        let (c, d) = (q(mix.c / range.chromaRange), q(mix.d / range.chromaRange))
        let (e, f) = (q(mix.e / range.chromaRange), q(mix.f / range.chromaRange))
        let chromaBase = Int32(128 << 16 + 32768)
        let offsets = UnsafeMutablePointer<Int32>.allocate(capacity: 2 * chromaWidth)
        defer { offsets.deallocate() }
        @inline(__always) func clamp(_ q16: Int32) -> UInt8 { UInt8(truncatingIfNeeded: min(max(q16 >> 16, 0), 255)) }
        let (from, to) = (source.pointer.pointee, destination.pointer.pointee)
        guard let sy = from.data.0, let su = from.data.1, let sv = from.data.2, let dy = to.data.0, let du = to.data.1, let dv = to.data.2 else { return }
        let (syStride, suStride, svStride) = (Int(from.linesize.0), Int(from.linesize.1), Int(from.linesize.2))
        let (dyStride, duStride, dvStride) = (Int(to.linesize.0), Int(to.linesize.1), Int(to.linesize.2))
        for row in 0..<chromaHeight {
            let (u, v) = (su + row * suStride, sv + row * svStride)
            let (ou, ov) = (du + row * duStride, dv + row * dvStride)
            for x in 0..<chromaWidth {
                let (cb, cr) = (Int32(u[x]) &- 128, Int32(v[x]) &- 128)
                let offset = lumaBase &+ cb &* a &+ cr &* b
                offsets[2 * x] = offset
                offsets[2 * x + 1] = offset
                ou[x] = clamp(chromaBase &+ cb &* c &+ cr &* d)
                ov[x] = clamp(chromaBase &+ cb &* e &+ cr &* f)
            }
            for y in (2 * row)..<min(2 * row + 2, height) {
                let (line, out) = (sy + y * syStride, dy + y * dyStride)
                for x in 0..<width {
                    out[x] = clamp(Int32(line[x]) &* kY &+ offsets[x])
                }
            }
        }
    }
}
