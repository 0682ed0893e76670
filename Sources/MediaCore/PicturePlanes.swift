internal import CFFmpeg
import MediaTime

/// The planes of a planar YUV or grey picture, as quality measurements read them: one entry per
/// component (Y, then U and V, then alpha), each with its own size in samples, bytes per row and sample
/// width (1 byte up to 8 bits, 2 above). Valid only inside `Frame.withPlanes`.
public struct PicturePlanes {
    public struct Plane {
        public let base: UnsafePointer<UInt8>
        /// Samples per row and rows: a chroma plane's are the luma's shifted, rounded up, as FFmpeg sizes it.
        public let width: Int
        public let height: Int
        public let bytesPerRow: Int
    }

    /// Y, U, V (absent for grey) and alpha (when the format has it).
    public let planes: [Plane]
    /// Bits per sample (8, 10, 12, 16).
    public let depth: Int
    /// log2 of the chroma subsampling: (1, 1) for 4:2:0, (1, 0) for 4:2:2, (0, 0) for 4:4:4.
    public let chromaShift: (horizontal: Int, vertical: Int)
    /// The picture says its samples use the full range (yuvj formats, or `color_range` pc/jpeg).
    public let isFullRange: Bool
    /// The format has chroma planes (not grey).
    public var hasChroma: Bool { planes.count >= 3 }

    /// Sample `x` of row `y` of plane `p` (no bounds check beyond the caller's).
    @inline(__always)
    public func sample(_ p: Int, _ x: Int, _ y: Int) -> Int {
        let plane = planes[p]
        let row = plane.base + y * plane.bytesPerRow
        if depth > 8 { return Int(UnsafeRawPointer(row).loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)) }
        return Int(row[x])
    }
}

extension Frame {
    /// Calls `body` with the picture's planes when its format is planar YUV or grey at 8 to 16 bits
    /// in native byte order, one plane per component; nil for other formats (packed, semi-planar,
    /// RGB, audio), which a caller converts first.
    public func withPlanes<T>(_ body: (PicturePlanes) throws -> T) rethrows -> T? {
        let f = pointer.pointee
        guard f.width > 0, f.height > 0, let descriptor = av_pix_fmt_desc_get(AVPixelFormat(rawValue: f.format))?.pointee else { return nil }
        let unsupported = UInt64(AV_PIX_FMT_FLAG_RGB) | UInt64(AV_PIX_FMT_FLAG_PAL) | UInt64(AV_PIX_FMT_FLAG_BAYER)
            | UInt64(AV_PIX_FMT_FLAG_BE) | UInt64(AV_PIX_FMT_FLAG_FLOAT) | UInt64(AV_PIX_FMT_FLAG_HWACCEL)
        let components = Int(descriptor.nb_components)
        guard descriptor.flags & unsupported == 0, descriptor.flags & UInt64(AV_PIX_FMT_FLAG_PLANAR) != 0 || components == 1,
              Int(av_pix_fmt_count_planes(AVPixelFormat(rawValue: f.format))) == components else { return nil }
        let comps = [descriptor.comp.0, descriptor.comp.1, descriptor.comp.2, descriptor.comp.3]
        let depth = Int(comps[0].depth)
        guard (8...16).contains(depth), comps.prefix(components).allSatisfy({ Int($0.depth) == depth && Int($0.shift) == 0 }) else { return nil }
        let data = [f.data.0, f.data.1, f.data.2, f.data.3]
        let lines = [f.linesize.0, f.linesize.1, f.linesize.2, f.linesize.3]
        let hsub = Int(descriptor.log2_chroma_w), vsub = Int(descriptor.log2_chroma_h)
        var planes: [PicturePlanes.Plane] = []
        for c in 0..<components {
            let p = Int(comps[c].plane)
            guard let base = data[p], lines[p] > 0 else { return nil }
            let chroma = components >= 3 && (c == 1 || c == 2)
            // Rounded up, as AV_CEIL_RSHIFT sizes chroma planes.
            let width = chroma ? -((-Int(f.width)) >> hsub) : Int(f.width)
            let height = chroma ? -((-Int(f.height)) >> vsub) : Int(f.height)
            planes.append(.init(base: UnsafePointer(base), width: width, height: height, bytesPerRow: Int(lines[p])))
        }
        let fullRange = f.color_range == AVCOL_RANGE_JPEG || String(cString: descriptor.name).hasPrefix("yuvj")
        return try body(PicturePlanes(planes: planes, depth: depth, chromaShift: (hsub, vsub), isFullRange: fullRange))
    }

    /// The picture's field order as its decoder saw it: "progressive", "tff", "bff", or nil for
    /// audio; a picture with `interlaced_frame` unset is progressive.
    public var scanType: String? {
        let f = pointer.pointee
        guard f.width > 0 else { return nil }
        if f.interlaced_frame == 0 { return "progressive" }
        return f.top_field_first != 0 ? "tff" : "bff"
    }
}
