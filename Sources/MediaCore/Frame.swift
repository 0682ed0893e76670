internal import CFFmpeg
internal import CMediaShims
import MediaTime

/// One decoded frame (video picture or block of audio samples): the sole owner of an AVFrame.
/// `pts` is in the time base of the stream it was decoded from. Reused across receives.
public struct Frame: ~Copyable {
    let pointer: UnsafeMutablePointer<AVFrame>

    public init() {
        guard let p = av_frame_alloc() else { fatalError("out of memory allocating an AVFrame") }
        pointer = p
    }

    deinit {
        var p: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&p)
    }

    public mutating func reset() { av_frame_unref(pointer) }

    /// The decoder's best estimate of the presentation time, in stream ticks; nil when unknown.
    public var pts: Int64? {
        let v = pointer.pointee.best_effort_timestamp
        if v != mf_av_nopts_value() { return v }
        let p = pointer.pointee.pts
        return p == mf_av_nopts_value() ? nil : p
    }
    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    /// Audio samples per channel in this frame; 0 for video.
    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var isKeyframe: Bool { pointer.pointee.key_frame != 0 }
    /// The decoder flagged this frame as damaged.
    public var isCorrupt: Bool { pointer.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 || pointer.pointee.decode_error_flags != 0 }
}
