internal import CFFmpeg
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

    /// `width` and `height` nil keep each frame's own size.
    public init(outputFormat: String = "yuv420p", width: Int? = nil, height: Int? = nil) {
        self.outputFormat = outputFormat
        outputPixelFormat = av_get_pix_fmt(outputFormat)
        self.width = width.map { Int32($0) }
        self.height = height.map { Int32($0) }
    }

    deinit { sws_freeContext(context) }

    /// True when `frame` already has the output pixel format and size.
    public func isPassThrough(_ frame: borrowing Frame) -> Bool {
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
        let s = source.pointer
        let w = width ?? s.pointee.width, h = height ?? s.pointee.height
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
