internal import CFFmpeg
internal import CMediaShims
import MediaTime

/// The codecs a streaming package's video rung is encoded in: H.264 (libx264), HEVC (libx265, Main; tagged
/// `hvc1`, as Apple's players ask) or AV1 (SVT-AV1, Main).
public enum RungCodec: String, Sendable, Hashable, Codable, CaseIterable {
    case h264, hevc, av1

    /// The profiles a rung may ask for, the default first.
    public var profiles: [String] { self == .h264 ? ["high", "main", "baseline"] : ["main"] }
    /// How reports and errors name it.
    public var name: String { switch self { case .h264: "H.264"; case .hevc: "HEVC"; case .av1: "AV1" } }
}

/// Encodes frames into packets: the owner of one AVCodecContext for an encoder, freed in `deinit`.
/// Packets come out in the encoder's `timeBase`. Thread-confined.
public final class Encoder {
    public enum SendResult: Sendable, Equatable { case accepted, full }
    public enum ReceiveResult: Sendable, Equatable { case packet, needsInput, endOfStream }

    let context: UnsafeMutablePointer<AVCodecContext>
    public let codecName: String

    init(codecName: String, configure: (UnsafeMutablePointer<AVCodecContext>) -> Void,
                 options: [String: String]) throws(FFmpegError) {
        guard let codec = avcodec_find_encoder_by_name(codecName) else { throw FFmpegError(code: FFmpegError.encoderNotFound.code, operation: "avcodec_find_encoder_by_name", detail: "no \(codecName) encoder in this FFmpeg") }
        try LeftOutCodecs.check(codec, decoder: false)
        guard let ctx = avcodec_alloc_context3(codec) else { throw .outOfMemory }
        configure(ctx)
        var dict: OpaquePointer? = nil
        for (k, v) in options { av_dict_set(&dict, k, v, 0) }
        FFmpegLog.clearLastError()
        let r = avcodec_open2(ctx, codec, &dict)
        av_dict_free(&dict)
        if r < 0 {
            var owned: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&owned)
            throw .capture(r, "avcodec_open2(\(codecName))")
        }
        context = ctx
        self.codecName = codecName
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
    }

    /// H.264 through libx264, yuv420p, one frame per `frameDuration` (the time base).
    public static func h264(width: Int, height: Int, frameDuration: MediaTime, crf: Int, preset: String,
                            threads: Int, globalHeader: Bool) throws(FFmpegError) -> Encoder {
        let tb = Rational(Int32(clamping: frameDuration.value), frameDuration.timescale).reduced
        return try Encoder(codecName: "libx264", configure: { c in
            square(c, width: width, height: height, frameDuration: tb, threads: threads)
            if globalHeader { c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        }, options: ["crf": String(crf), "preset": preset])
    }

    /// Square yuv420p pictures of `width` x `height`, one every `frameDuration` (the time base).
    private static func square(_ c: UnsafeMutablePointer<AVCodecContext>, width: Int, height: Int, frameDuration tb: Rational, threads: Int) {
        c.pointee.width = Int32(width)
        c.pointee.height = Int32(height)
        c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        c.pointee.time_base = tb.avRational
        c.pointee.framerate = tb.inverted.avRational
        c.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        c.pointee.thread_count = Int32(threads)
    }

    /// A rung of a streaming package: `width` x `height` yuv420p at one frame a `frameDuration`, a keyframe every
    /// `gop` frames and at no other (no scene cuts), each a closed GOP's IDR (H.264, HEVC) or key frame (AV1),
    /// rate-controlled to `bitRate` with `maxBitRate` and `bufferSize` as its buffer model, at `level` (41 for 4.1),
    /// headers global (the CMAF initialization carries them). `preset`: x264's names, which x265 shares and which
    /// map onto SVT-AV1's numbers (veryfast is 10).
    public static func rung(_ codec: RungCodec, width: Int, height: Int, frameDuration: MediaTime, bitRate: Int, maxBitRate: Int, bufferSize: Int,
                            profile: String, level: Int, gop: Int, preset: String, threads: Int) throws(FFmpegError) -> Encoder {
        let tb = Rational(Int32(clamping: frameDuration.value), frameDuration.timescale).reduced
        let configure = { (c: UnsafeMutablePointer<AVCodecContext>) in
            square(c, width: width, height: height, frameDuration: tb, threads: threads)
            c.pointee.bit_rate = Int64(bitRate)
            c.pointee.rc_max_rate = Int64(maxBitRate)
            c.pointee.rc_buffer_size = Int32(clamping: bufferSize)
            c.pointee.gop_size = Int32(gop)
            c.pointee.keyint_min = Int32(gop)
            c.pointee.level = Int32(level)
            c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        }
        switch codec {
        case .h264:
            // x264 closes its GOPs unless told otherwise.
            return try Encoder(codecName: "libx264", configure: configure, options: ["preset": preset, "profile": profile, "forced-idr": "1", "sc_threshold": "0"])
        case .hevc:
            return try Encoder(codecName: "libx265", configure: configure, options: [
                "preset": preset, "profile": profile, "forced-idr": "1",
                "x265-params": "keyint=\(gop):min-keyint=\(gop):scenecut=0:open-gop=0:level-idc=\(level):high-tier=0:log-level=error"])
        case .av1:
            // SVT-AV1 closes its GOPs (key frames) by default; its level is 31 for 3.1.
            let presets = ["ultrafast": 12, "superfast": 11, "veryfast": 10, "faster": 9, "fast": 8, "medium": 7, "slow": 6, "slower": 5, "veryslow": 4]
            return try Encoder(codecName: "libsvtav1", configure: configure, options: [
                "preset": String(presets[preset] ?? 10), "svtav1-params": "level=\(level):scd=0"])
        }
    }

    /// A video encoder (`codecName`: "libx264", "libx265") for pictures like `frame`: its size, pixel
    /// format, sample aspect ratio and colour description. Frames are timed in `timeBase`; `frameRate`
    /// guides rate control. Headers go in-band (no global header).
    public static func video(codecName: String, like frame: borrowing Frame, timeBase: Rational, frameRate: Rational?,
                             level: Int?, threads: Int, options: [String: String]) throws(FFmpegError) -> Encoder {
        let f = frame.pointer.pointee
        return try Encoder(codecName: codecName, configure: { c in
            c.pointee.width = f.width
            c.pointee.height = f.height
            c.pointee.pix_fmt = AVPixelFormat(rawValue: f.format)
            c.pointee.sample_aspect_ratio = f.sample_aspect_ratio.num > 0 ? f.sample_aspect_ratio : AVRational(num: 1, den: 1)
            c.pointee.color_range = f.color_range
            c.pointee.color_primaries = f.color_primaries
            c.pointee.color_trc = f.color_trc
            c.pointee.colorspace = f.colorspace
            c.pointee.chroma_sample_location = f.chroma_location
            c.pointee.time_base = timeBase.avRational
            if let frameRate { c.pointee.framerate = frameRate.avRational }
            if let level, level > 0 { c.pointee.level = Int32(level) }
            c.pointee.thread_count = Int32(threads)
        }, options: options)
    }

    /// AAC (FFmpeg's native encoder), planar float input. `noiseSubstitution` false turns off perceptual
    /// noise substitution: noisy bands are then coded as a waveform, not as noise each decoder makes up
    /// with its own random numbers, so that every decoder, and a decoder started anywhere in the stream,
    /// gives the same samples and the same true peak.
    public static func aac(sampleRate: Int, channelCount: Int, bitRate: Int, globalHeader: Bool,
                           noiseSubstitution: Bool = true) throws(FFmpegError) -> Encoder {
        try Encoder(codecName: "aac", configure: { c in
            c.pointee.sample_rate = Int32(sampleRate)
            c.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            av_channel_layout_default(&c.pointee.ch_layout, Int32(channelCount))
            c.pointee.bit_rate = Int64(bitRate)
            c.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
            if globalHeader { c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        }, options: noiseSubstitution ? [:] : ["aac_pns": "0"])
    }

    /// The codec's global header (an `avcC` record for H.264, an AudioSpecificConfig for AAC).
    public var extradata: [UInt8] {
        guard let data = context.pointee.extradata, context.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(context.pointee.extradata_size)))
    }

    /// The stream's `CODECS` name (RFC 6381) as HLS and DASH write it, read from what the encoder made
    /// (`CodecsName`). nil for other codecs.
    public var codecsName: String? { CodecsName.of(codecName, extradata: extradata) }

    public var timeBase: Rational { Rational(context.pointee.time_base) }
    /// Samples per audio frame the encoder wants (1024 for AAC); 0 for video.
    public var frameSize: Int { Int(context.pointee.frame_size) }

    public func send(_ frame: borrowing Frame) throws(FFmpegError) -> SendResult {
        let r = avcodec_send_frame(context, frame.pointer)
        if r >= 0 { return .accepted }
        if r == mf_averror_eagain() { return .full }
        throw .capture(r, "avcodec_send_frame")
    }

    public func sendEndOfStream() throws(FFmpegError) {
        let r = avcodec_send_frame(context, nil)
        if r < 0 && r != mf_averror_eof() { throw .capture(r, "avcodec_send_frame") }
    }

    public func receive(into packet: inout Packet) throws(FFmpegError) -> ReceiveResult {
        packet.reset()
        let r = avcodec_receive_packet(context, packet.pointer)
        if r >= 0 { return .packet }
        if r == mf_averror_eagain() { return .needsInput }
        if r == mf_averror_eof() { return .endOfStream }
        throw .capture(r, "avcodec_receive_packet")
    }
}
