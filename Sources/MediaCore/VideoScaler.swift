internal import CFFmpeg
import MediaTime

/// Converts decoded pictures to the pixel format an encoder wants (libswscale), keeping the size.
/// The owner of one SwsContext, rebuilt when the input changes. Thread-confined.
public final class VideoScaler {
    private var context: OpaquePointer?
    private var key: (Int32, Int32, Int32) = (0, 0, -1)
    public let outputFormat: String
    private let outputPixelFormat: AVPixelFormat

    public init(outputFormat: String = "yuv420p") {
        self.outputFormat = outputFormat
        outputPixelFormat = av_get_pix_fmt(outputFormat)
    }

    deinit { sws_freeContext(context) }

    /// True when `frame` already has the output pixel format.
    public func isPassThrough(_ frame: borrowing Frame) -> Bool {
        frame.pointer.pointee.format == outputPixelFormat.rawValue
    }

    /// Writes `source` converted into `destination` (reset first), with the same size and timestamps.
    public func convert(_ source: borrowing Frame, into destination: inout Frame) throws(FFmpegError) {
        let s = source.pointer
        let k = (s.pointee.width, s.pointee.height, s.pointee.format)
        if context == nil || key != k {
            sws_freeContext(context)
            context = sws_getContext(s.pointee.width, s.pointee.height, AVPixelFormat(rawValue: s.pointee.format),
                                     s.pointee.width, s.pointee.height, outputPixelFormat, SWS_BICUBIC, nil, nil, nil)
            key = k
            guard context != nil else { throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: "sws_getContext", detail: nil) }
        }
        destination.reset()
        let d = destination.pointer
        d.pointee.width = s.pointee.width
        d.pointee.height = s.pointee.height
        d.pointee.format = outputPixelFormat.rawValue
        var r = av_frame_get_buffer(d, 0)
        if r < 0 { throw .capture(r, "av_frame_get_buffer") }
        r = sws_scale_frame(context, d, s)
        if r < 0 { throw .capture(r, "sws_scale_frame") }
        av_frame_copy_props(d, s)
    }
}
