internal import CFFmpeg
internal import CMediaShims
import MediaTime

/// How a picture's samples stand for colours: the matrix from Y'CbCr to R'G'B', the range of the samples,
/// and the transfer (SDR, or HDR's PQ and HLG), as the decoder found them in the stream.
public struct PictureColour: Sendable, Hashable {
    public enum Matrix: String, Sendable { case bt601, bt709, bt2020, rgb }
    public enum Transfer: String, Sendable { case sdr, pq, hlg }

    public var matrix: Matrix
    /// Full range (0-255) rather than limited (16-235).
    public var fullRange: Bool
    public var transfer: Transfer
    /// Whether the stream said which matrix it uses (a guess from the picture's size otherwise, as players make).
    public var matrixKnown: Bool
}

extension Frame {
    /// A video picture of `width` x `height` in `pixelFormat` ("rgb24", "yuvj420p"), with new buffers.
    public init(width: Int, height: Int, pixelFormat: String) throws(FFmpegError) {
        self.init()
        let format = av_get_pix_fmt(pixelFormat)
        guard format != AV_PIX_FMT_NONE, width > 0, height > 0 else {
            throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: "Frame", detail: "no \(width)x\(height) \(pixelFormat) picture")
        }
        pointer.pointee.width = Int32(width)
        pointer.pointee.height = Int32(height)
        pointer.pointee.format = format.rawValue
        let r = av_frame_get_buffer(pointer, 0)
        if r < 0 { throw .capture(r, "av_frame_get_buffer") }
    }

    /// The picture's colour description; for a picture that gives no matrix, BT.709 from 720 lines up and
    /// BT.601 below (as players guess), limited range unless the pixel format is a full-range (yuvj) one.
    public var colour: PictureColour {
        let f = pointer.pointee
        let format = av_get_pix_fmt_name(AVPixelFormat(rawValue: f.format)).map { String(cString: $0) } ?? ""
        let isRGB = av_pix_fmt_desc_get(AVPixelFormat(rawValue: f.format)).map { $0.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 } ?? false
        var matrix: PictureColour.Matrix
        var known = true
        switch f.colorspace {
        case AVCOL_SPC_BT709: matrix = .bt709
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M, AVCOL_SPC_FCC: matrix = .bt601
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: matrix = .bt2020
        case AVCOL_SPC_RGB: matrix = .rgb
        default:
            matrix = f.height >= 720 || f.width >= 1280 ? .bt709 : .bt601
            known = false
        }
        if isRGB { matrix = .rgb }
        let full = f.color_range == AVCOL_RANGE_JPEG || format.hasPrefix("yuvj") || isRGB
        let transfer: PictureColour.Transfer = switch f.color_trc {
        case AVCOL_TRC_SMPTE2084: .pq
        case AVCOL_TRC_ARIB_STD_B67: .hlg
        default: .sdr
        }
        return PictureColour(matrix: matrix, fullRange: full, transfer: transfer, matrixKnown: known)
    }

    /// Width over height of one sample (non-square pixels of anamorphic video); nil when the stream says nothing.
    public var sampleAspectRatio: Rational? {
        let sar = pointer.pointee.sample_aspect_ratio
        return sar.num > 0 && sar.den > 0 ? Rational(sar.num, sar.den) : nil
    }

    /// Calls `body` with plane `plane`'s bytes and bytes per row; valid only inside `body`.
    public func withPlane<T>(_ plane: Int, _ body: (UnsafePointer<UInt8>, Int) throws -> T) rethrows -> T? {
        let f = pointer.pointee
        let planes = [f.data.0, f.data.1, f.data.2, f.data.3]
        let strides = [f.linesize.0, f.linesize.1, f.linesize.2, f.linesize.3]
        guard (0..<4).contains(plane), let data = planes[plane] else { return nil }
        return try body(UnsafePointer(data), Int(strides[plane]))
    }

    /// Calls `body` with plane `plane`'s bytes to write, and bytes per row. The frame must own its buffers
    /// alone (one made by `init(width:height:pixelFormat:)`).
    public mutating func withMutablePlane<T>(_ plane: Int, _ body: (UnsafeMutablePointer<UInt8>, Int) throws -> T) rethrows -> T? {
        let f = pointer.pointee
        let planes = [f.data.0, f.data.1, f.data.2, f.data.3]
        let strides = [f.linesize.0, f.linesize.1, f.linesize.2, f.linesize.3]
        guard (0..<4).contains(plane), let data = planes[plane] else { return nil }
        return try body(data, Int(strides[plane]))
    }
}

/// Converts decoded pictures for still images (libswscale): to packed RGB at a size, reading the source
/// with its own matrix and range (as a player does), and from RGB to what an image encoder takes.
/// Thread-confined; one SwsContext kept while the conversion stays the same.
public final class PictureConverter {
    private var context: OpaquePointer?
    private var key: [Int32] = []

    public init() {}

    deinit { sws_freeContext(context) }

    /// `source` scaled to `width` x `height` into `destination` as packed RGB (rgb24), with the source's
    /// colour matrix and range applied. Lanczos: these are pictures to look at, not frames to encode.
    public func rgb(_ source: borrowing Frame, width: Int, height: Int, into destination: inout Frame) throws(FFmpegError) {
        try convert(source, to: "rgb24", width: width, height: height, colour: source.colour, into: &destination)
        destination.pointer.pointee.color_range = AVCOL_RANGE_JPEG
    }

    /// `source` scaled to `width` x `height` as JPEG's samples (yuvj420p: full-range BT.601), read with its
    /// own matrix and range: one conversion for a JPEG of a picture that is not turned.
    public func jpegSamples(_ source: borrowing Frame, width: Int, height: Int, into destination: inout Frame) throws(FFmpegError) {
        if JPEGSamples.applies(to: source, width: width, height: height) {
            destination = try Frame(width: width, height: height, pixelFormat: "yuvj420p")
            JPEGSamples.convert(source, colour: source.colour, into: destination)
        } else {
            try convert(source, to: "yuvj420p", width: width, height: height, colour: source.colour, into: &destination)
        }
        destination.pointer.pointee.color_range = AVCOL_RANGE_JPEG
        destination.pointer.pointee.colorspace = AVCOL_SPC_BT470BG
    }

    /// `source` (packed RGB) as `format` ("yuvj420p": JPEG's full-range BT.601; "bgra") at the same size.
    public func fromRGB(_ source: borrowing Frame, to format: String, into destination: inout Frame) throws(FFmpegError) {
        let sRGB = PictureColour(matrix: .rgb, fullRange: true, transfer: .sdr, matrixKnown: true)
        try convert(source, to: format, width: source.width, height: source.height, colour: sRGB, into: &destination)
        if format.hasPrefix("yuvj") {
            destination.pointer.pointee.color_range = AVCOL_RANGE_JPEG
            destination.pointer.pointee.colorspace = AVCOL_SPC_BT470BG
        }
    }

    private func convert(_ source: borrowing Frame, to format: String, width: Int, height: Int, colour: PictureColour,
                         into destination: inout Frame) throws(FFmpegError) {
        let s = source.pointer
        let output = av_get_pix_fmt(format)
        let k: [Int32] = [s.pointee.width, s.pointee.height, s.pointee.format, Int32(width), Int32(height), output.rawValue,
                          Int32(colour.fullRange ? 1 : 0), Int32(Self.swsMatrix(colour.matrix))]
        if context == nil || key != k {
            sws_freeContext(context)
            // 8-bit 4:2:0 to 4:2:0 at the same size only changes each sample's range and matrix: no filter is
            // needed (Lanczos at 1:1 gives the same samples, at several times the cost: most of a 1080p poster's).
            let sourceFormat = AVPixelFormat(rawValue: s.pointee.format)
            let identity = Int(s.pointee.width) == width && Int(s.pointee.height) == height
                && [AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P].contains(sourceFormat) && [AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P].contains(output)
            let flags = identity ? SWS_POINT | SWS_ACCURATE_RND : SWS_LANCZOS | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT
            context = sws_getContext(s.pointee.width, s.pointee.height, sourceFormat,
                                     Int32(width), Int32(height), output, flags, nil, nil, nil)
            key = k
            guard let context else {
                throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: "sws_getContext", detail: "cannot convert to \(width)x\(height) \(format)")
            }
            // The source's matrix and range; the destination's table matters for YUV output only (JPEG's BT.601).
            let table = sws_getCoefficients(Self.swsMatrix(colour.matrix == .rgb ? .bt601 : colour.matrix))
            let jpeg = sws_getCoefficients(SWS_CS_ITU601)
            _ = sws_setColorspaceDetails(context, table, colour.fullRange ? 1 : 0, jpeg, 1, 0, 1 << 16, 1 << 16)
        }
        destination = try Frame(width: width, height: height, pixelFormat: format)
        let r = sws_scale_frame(context, destination.pointer, s)
        if r < 0 { throw .capture(r, "sws_scale_frame") }
    }

    static func swsMatrix(_ matrix: PictureColour.Matrix) -> Int32 {
        switch matrix {
        case .bt709: SWS_CS_ITU709
        case .bt2020: SWS_CS_BT2020
        case .bt601, .rgb: SWS_CS_ITU601
        }
    }
}

/// The still-image formats: JPEG (FFmpeg's mjpeg), PNG and WebP (libwebp).
public enum StillImageFormat: String, Sendable, Hashable, Codable, CaseIterable {
    case jpeg, png, webp

    public var fileExtension: String { self == .jpeg ? "jpg" : rawValue }
    public var mimeType: String { "image/\(rawValue)" }
}

/// Encodes one RGB picture (rgb24) as a still image.
public enum StillImageEncoder {
    /// `quality` from 0 to 1 (JPEG and WebP; PNG is lossless and ignores it). A JPEG may also be given
    /// its samples already (`PictureConverter.jpegSamples`).
    public static func encode(_ rgb: borrowing Frame, as format: StillImageFormat, quality: Double,
                              converter: PictureConverter) throws(FFmpegError) -> [UInt8] {
        let q = min(max(quality.isFinite ? quality : 0.85, 0), 1)
        var input = Frame()
        let codecName: String
        var options: [String: String] = [:]
        switch format {
        case .png:
            codecName = "png"
            try input.reference(rgb)
        case .jpeg:
            codecName = "mjpeg"
            if rgb.pixelFormatName == "yuvj420p" { try input.reference(rgb) } else { try converter.fromRGB(rgb, to: "yuvj420p", into: &input) }
            // qscale 2 (best) to 31, as `ffmpeg -q:v`; the frame carries it to the encoder.
            input.pointer.pointee.quality = Int32((2 + (1 - q) * 29).rounded()) * FF_QP2LAMBDA
        case .webp:
            codecName = "libwebp"
            try converter.fromRGB(rgb, to: "bgra", into: &input)
            options = ["quality": String(Int((q * 100).rounded())), "lossless": "0"]
        }
        let codec = try Encoder.still(codecName: codecName, like: input, qscale: format == .jpeg, options: options)
        input.setPTS(0)
        var packet = Packet()
        var out: [UInt8] = []
        _ = try codec.send(input)
        try codec.sendEndOfStream()
        while try codec.receive(into: &packet) == .packet { out += packet.bytes }
        guard !out.isEmpty else { throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: codecName, detail: "no picture came out") }
        return out
    }
}

extension Encoder {
    /// An encoder of one still picture like `frame` (its size and pixel format).
    static func still(codecName: String, like frame: borrowing Frame, qscale: Bool, options: [String: String]) throws(FFmpegError) -> Encoder {
        let f = frame.pointer.pointee
        return try Encoder(codecName: codecName, configure: { c in
            c.pointee.width = f.width
            c.pointee.height = f.height
            c.pointee.pix_fmt = AVPixelFormat(rawValue: f.format)
            c.pointee.time_base = AVRational(num: 1, den: 25)
            c.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
            c.pointee.color_range = f.color_range
            c.pointee.colorspace = f.colorspace
            if qscale {
                c.pointee.flags |= AV_CODEC_FLAG_QSCALE
                c.pointee.global_quality = f.quality
            }
        }, options: options)
    }
}
