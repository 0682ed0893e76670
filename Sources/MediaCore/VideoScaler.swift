internal import CFFmpeg
internal import CMediaShims
import MediaTime

/// Converts decoded pictures to the pixel format and size an encoder wants (libswscale).
/// The owner of one SwsContext, rebuilt when the input changes. Thread-confined.
public final class VideoScaler {
    private var context: OpaquePointer?
    private var key: (Int32, Int32, Int32) = (0, 0, -1)
    public let outputFormat: String
    private let outputPixelFormat: AVPixelFormat
    private let width: Int32?
    private let height: Int32?
    /// Clockwise quarter turns applied after scaling (0 to 3): a phone's portrait clip, stored on its side,
    /// comes out upright. The output is `width` x `height` after turning.
    public let quarterTurns: Int
    private var unturned = Frame()

    /// `width` and `height` nil keep each frame's own size. With `quarterTurns`, only 8-bit planar formats
    /// (yuv420p, the encoders' format) and both sizes given.
    public init(outputFormat: String = "yuv420p", width: Int? = nil, height: Int? = nil, quarterTurns: Int = 0) {
        self.outputFormat = outputFormat
        outputPixelFormat = av_get_pix_fmt(outputFormat)
        self.width = width.map { Int32($0) }
        self.height = height.map { Int32($0) }
        self.quarterTurns = ((quarterTurns % 4) + 4) % 4
    }

    deinit { sws_freeContext(context) }

    /// True when `frame` already has the output pixel format and size.
    public func isPassThrough(_ frame: borrowing Frame) -> Bool {
        guard quarterTurns == 0 else { return false }
        let f = frame.pointer.pointee
        return f.format == outputPixelFormat.rawValue && (width ?? f.width) == f.width && (height ?? f.height) == f.height
    }

    /// `destination` becomes `source` in the output format: a new reference when nothing needs
    /// converting, a converted copy otherwise.
    public func prepare(_ source: borrowing Frame, into destination: inout Frame) throws(FFmpegError) {
        if isPassThrough(source) { try destination.reference(source) } else { try convert(source, into: &destination) }
    }

    /// Writes `source` converted into `destination` (reset first), with the same size and timestamps.
    public func convert(_ source: borrowing Frame, into destination: inout Frame) throws(FFmpegError) {
        guard quarterTurns != 0 else { return try scale(source, into: &destination) }
        try scale(source, into: &unturned)
        try Self.turn(unturned, quarterTurns: quarterTurns, into: &destination)
    }

    /// `source`'s planes turned clockwise by `quarterTurns` into `destination` (reset first), with its
    /// timestamps; 8-bit planar formats only (the chroma planes' sizes come from the format).
    static func turn(_ source: borrowing Frame, quarterTurns: Int, into destination: inout Frame) throws(FFmpegError) {
        let s = source.pointer
        guard let descriptor = av_pix_fmt_desc_get(AVPixelFormat(rawValue: s.pointee.format)),
              descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_PLANAR) != 0, descriptor.pointee.comp.0.depth == 8,
              descriptor.pointee.log2_chroma_w == descriptor.pointee.log2_chroma_h,
              Int(av_pix_fmt_count_planes(AVPixelFormat(rawValue: s.pointee.format))) == Int(descriptor.pointee.nb_components) else {
            throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: "turn",
                              detail: "only 8-bit planar pictures with a plane per component and square chroma (4:2:0, 4:4:4) can be turned")
        }
        let odd = quarterTurns % 2 == 1
        destination.reset()
        let d = destination.pointer
        (d.pointee.width, d.pointee.height) = odd ? (s.pointee.height, s.pointee.width) : (s.pointee.width, s.pointee.height)
        d.pointee.format = s.pointee.format
        let r = av_frame_get_buffer(d, 0)
        if r < 0 { throw .capture(r, "av_frame_get_buffer") }
        let planes = Int(av_pix_fmt_count_planes(AVPixelFormat(rawValue: s.pointee.format)))
        let (cw, ch) = (Int32(descriptor.pointee.log2_chroma_w), Int32(descriptor.pointee.log2_chroma_h))
        withUnsafeMutablePointer(to: &s.pointee.data) { sourceData in
            withUnsafeMutablePointer(to: &d.pointee.data) { destinationData in
                let from = UnsafeMutableRawPointer(sourceData).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
                let to = UnsafeMutableRawPointer(destinationData).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
                for plane in 0..<planes {
                    let chroma = plane == 1 || plane == 2
                    // A chroma plane's size is the luma's shifted, rounded up (AV_CEIL_RSHIFT).
                    let w = chroma ? -((-s.pointee.width) >> cw) : s.pointee.width
                    let h = chroma ? -((-s.pointee.height) >> ch) : s.pointee.height
                    let sourceStride = withUnsafePointer(to: &s.pointee.linesize) { $0.withMemoryRebound(to: Int32.self, capacity: 8) { $0[plane] } }
                    let destinationStride = withUnsafePointer(to: &d.pointee.linesize) { $0.withMemoryRebound(to: Int32.self, capacity: 8) { $0[plane] } }
                    mf_turn_plane(from[plane], sourceStride, w, h, to[plane], destinationStride, Int32(quarterTurns))
                }
            }
        }
        av_frame_copy_props(d, s)
    }

    private func scale(_ source: borrowing Frame, into destination: inout Frame) throws(FFmpegError) {
        let s = source.pointer
        var w = width ?? s.pointee.width, h = height ?? s.pointee.height
        // The sizes asked for are after turning; the picture's own are before.
        if quarterTurns % 2 == 1, width != nil || height != nil { swap(&w, &h) }
        let k = (s.pointee.width, s.pointee.height, s.pointee.format)
        if context == nil || key != k {
            sws_freeContext(context)
            context = sws_getContext(s.pointee.width, s.pointee.height, AVPixelFormat(rawValue: s.pointee.format),
                                     w, h, outputPixelFormat, SWS_BICUBIC, nil, nil, nil)
            key = k
            guard context != nil else { throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: "sws_getContext", detail: nil) }
        }
        destination.reset()
        let d = destination.pointer
        d.pointee.width = w
        d.pointee.height = h
        d.pointee.format = outputPixelFormat.rawValue
        var r = av_frame_get_buffer(d, 0)
        if r < 0 { throw .capture(r, "av_frame_get_buffer") }
        r = sws_scale_frame(context, d, s)
        if r < 0 { throw .capture(r, "sws_scale_frame") }
        av_frame_copy_props(d, s)
    }
}
