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

    /// Sets the presentation time (in the time base of the encoder it goes to).
    public mutating func setPTS(_ pts: Int64) {
        pointer.pointee.pts = pts
        pointer.pointee.pkt_dts = mf_av_nopts_value()
    }

    /// Tells the encoder this picture must be a keyframe, or (false) lets it choose the picture's type:
    /// decoders of raw video mark every picture as a keyframe, which an encoder would otherwise obey.
    public mutating func requestKeyframe(_ keyframe: Bool) {
        pointer.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        pointer.pointee.key_frame = keyframe ? 1 : 0
    }

    /// Says the picture is as the H.264 export writes it, whatever its source said: progressive, `duration`
    /// ticks long, and of no range said (limited, to its readers).
    public mutating func setAsExported(duration: Int64) {
        pointer.pointee.interlaced_frame = 0
        pointer.pointee.top_field_first = 0
        pointer.pointee.pkt_duration = duration
        pointer.pointee.color_range = AVCOL_RANGE_UNSPECIFIED
    }

    /// Makes this frame a new reference to `other`'s data (no pixel copy).
    public mutating func reference(_ other: borrowing Frame) throws(FFmpegError) {
        av_frame_unref(pointer)
        let r = av_frame_ref(pointer, other.pointer)
        if r < 0 { throw .capture(r, "av_frame_ref") }
    }

    /// Moves `other`'s data into this frame, leaving `other` empty.
    public mutating func take(_ other: inout Frame) {
        av_frame_unref(pointer)
        av_frame_move_ref(pointer, other.pointer)
    }

    /// Calls `body` with the 8-bit luma plane of a video frame (width, height, bytes per row) when
    /// the pixel format has one as its first plane (yuv*p, yuvj*p, nv12, nv21, gray); nil otherwise.
    /// The pointer is valid only inside `body`.
    public func withLumaPlane<T>(_ body: (UnsafePointer<UInt8>, Int, Int, Int) throws -> T) rethrows -> T? {
        let f = pointer.pointee
        guard f.width > 0, let data = f.data.0,
              let desc = av_pix_fmt_desc_get(AVPixelFormat(rawValue: f.format))?.pointee else { return nil }
        let notLuma = UInt64(AV_PIX_FMT_FLAG_RGB) | UInt64(AV_PIX_FMT_FLAG_PAL) | UInt64(AV_PIX_FMT_FLAG_BAYER)
        let isYUVorGray = desc.flags & notLuma == 0 && desc.comp.0.depth == 8
            && desc.comp.0.plane == 0 && desc.comp.0.step == 1
        guard isYUVorGray else { return nil }
        return try body(UnsafePointer(data), Int(f.width), Int(f.height), Int(f.linesize.0))
    }

    /// True when the frame holds data.
    public var hasData: Bool { pointer.pointee.buf.0 != nil }

    /// Crops the right and bottom edges of a picture to `width` x `height` (no copy: the planes are
    /// shared, the size shrinks). For encoders that need even sizes.
    public mutating func crop(toWidth width: Int, height: Int) throws(FFmpegError) {
        let f = pointer
        guard width > 0, height > 0, width <= Int(f.pointee.width), height <= Int(f.pointee.height) else {
            throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: "crop", detail: "\(width)x\(height) is not inside the picture")
        }
        f.pointee.crop_right += Int(f.pointee.width) - width
        f.pointee.crop_bottom += Int(f.pointee.height) - height
        let r = av_frame_apply_cropping(f, Int32(AV_FRAME_CROP_UNALIGNED))
        if r < 0 { throw .capture(r, "av_frame_apply_cropping") }
    }

    /// FFmpeg's name for the pixel format ("yuv420p"); nil for audio frames.
    public var pixelFormatName: String? {
        guard pointer.pointee.width > 0, let n = av_get_pix_fmt_name(AVPixelFormat(rawValue: pointer.pointee.format)) else { return nil }
        return String(cString: n)
    }



    /// The decoder's best estimate of the presentation time, in stream ticks; nil when unknown.
    public var pts: Int64? {
        let v = pointer.pointee.best_effort_timestamp
        if v != mf_av_nopts_value() { return v }
        let p = pointer.pointee.pts
        return p == mf_av_nopts_value() ? nil : p
    }
    /// How long the frame is shown, in stream ticks, as its packet said; 0 when unknown.
    public var duration: Int64 { max(pointer.pointee.pkt_duration, 0) }
    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    /// Audio samples per channel in this frame; 0 for video.
    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    /// Audio channels; 0 for video.
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    public var isKeyframe: Bool { pointer.pointee.key_frame != 0 }
    /// The decoder flagged this frame as damaged.
    public var isCorrupt: Bool { pointer.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 || pointer.pointee.decode_error_flags != 0 }

    /// A frame of planar 32-bit float audio holding `count` samples of `samples` from `offset`.
    public init(audio samples: AudioSamples, offset: Int, count: Int, sampleRate: Int) throws(FFmpegError) {
        self.init()
        guard offset >= 0, count >= 0, offset <= samples.count - count, samples.channelCount > 0 else {
            throw FFmpegError(code: FFmpegError.invalidArgument.code, operation: "Frame(audio:)",
                              detail: "samples \(offset)..<\(offset + count) outside 0..<\(samples.count)")
        }
        let f = pointer
        f.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        f.pointee.nb_samples = Int32(count)
        f.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&f.pointee.ch_layout, Int32(samples.channelCount))
        let r = av_frame_get_buffer(f, 0)
        if r < 0 { throw .capture(r, "av_frame_get_buffer") }
        for c in 0..<samples.channelCount {
            let dst = UnsafeMutableRawPointer(f.pointee.extended_data[c]!).assumingMemoryBound(to: Float.self)
            samples.channels[c].withUnsafeBufferPointer { src in
                dst.update(from: src.baseAddress! + offset, count: count)
            }
        }
    }
}

/// Planar 32-bit float audio: one array per channel, all the same length.
public struct AudioSamples: Sendable, Equatable {
    public var channels: [[Float]]

    public init(channels: [[Float]]) { self.channels = channels }
    public init(channelCount: Int, count: Int = 0) {
        channels = Array(repeating: [Float](repeating: 0, count: count), count: channelCount)
    }

    public var channelCount: Int { channels.count }
    public var count: Int { channels.first?.count ?? 0 }

    public mutating func append(_ other: AudioSamples) {
        for c in channels.indices { channels[c].append(contentsOf: other.channels[c]) }
    }

    /// Appends `count` samples of silence.
    public mutating func appendSilence(_ count: Int) {
        guard count > 0 else { return }
        for c in channels.indices { channels[c].append(contentsOf: repeatElement(0, count: count)) }
    }

    /// Samples `[from, from + count)`; positions outside the buffer are silence.
    public func slice(from: Int, count: Int) -> AudioSamples {
        var out = AudioSamples(channelCount: channelCount, count: count)
        let lo = max(from, 0), hi = min(from + count, self.count)
        if lo < hi {
            for c in channels.indices {
                out.channels[c].replaceSubrange((lo - from)..<(hi - from), with: channels[c][lo..<hi])
            }
        }
        return out
    }

    /// Drops the first `count` samples.
    public mutating func removeFirst(_ count: Int) {
        let n = min(count, self.count)
        for c in channels.indices { channels[c].removeFirst(n) }
    }

    /// Planar samples from `count` interleaved frames (frame by frame, channel after channel).
    public init(interleaved: UnsafeBufferPointer<Float>, channelCount: Int, count: Int) {
        self.init(channelCount: channelCount, count: count)
        for c in 0..<channelCount {
            channels[c].withUnsafeMutableBufferPointer { plane in
                var at = c
                for i in 0..<count { plane[i] = interleaved[at]; at += channelCount }
            }
        }
    }

    /// Writes samples `offset ..< offset + count` interleaved into `out`, from its element `start`.
    public func interleave(from offset: Int, count: Int, into out: UnsafeMutableBufferPointer<Float>, at start: Int = 0) {
        for c in channels.indices {
            channels[c].withUnsafeBufferPointer { plane in
                var at = start + c
                for i in offset..<(offset + count) { out[at] = plane[i]; at += channels.count }
            }
        }
    }

    /// Pads with silence or trims to exactly `count` samples.
    public mutating func fit(to count: Int) {
        if self.count < count { appendSilence(count - self.count) }
        else if self.count > count { for c in channels.indices { channels[c].removeLast(self.count - count) } }
    }
}
