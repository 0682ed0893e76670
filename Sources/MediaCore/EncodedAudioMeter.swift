internal import CFFmpeg
internal import CMediaShims

/// Measures the loudness of what an audio `Encoder` produced, as a reader will hear it: its packets are
/// decoded again (a decoder made from the encoder's own parameters) and measured, without the encoder's
/// priming samples at the start. The owner of one decoder context, freed in `deinit`. Thread-confined;
/// packets go in in the order the encoder gave them, timed in the encoder's time base.
///
/// A part of a stream is measured as it decodes in the whole: `after` is the packet before the part's
/// first, which the decoder needs to overlap with it; its own samples are not measured.
public final class EncodedAudioMeter {
    private let context: UnsafeMutablePointer<AVCodecContext>
    /// What was measured, to be pooled with other parts' (`LoudnessMeter.figures(of:)`).
    public let meter: LoudnessMeter
    private var frame = Frame()
    /// Priming samples still to drop.
    private var skip: Int

    public init(encoder: Encoder, after previous: PacketBox? = nil) throws(FFmpegError) {
        let e = encoder.context
        guard let codec = avcodec_find_decoder(e.pointee.codec_id) else { throw .decoderNotFound }
        try LeftOutCodecs.check(codec, decoder: true)
        guard let parameters = avcodec_parameters_alloc() else { throw .outOfMemory }
        var owned: UnsafeMutablePointer<AVCodecParameters>? = parameters
        defer { avcodec_parameters_free(&owned) }
        var r = avcodec_parameters_from_context(parameters, e)
        if r < 0 { throw .capture(r, "avcodec_parameters_from_context") }
        guard let ctx = avcodec_alloc_context3(codec) else { throw .outOfMemory }
        var decoder: UnsafeMutablePointer<AVCodecContext>? = ctx
        r = avcodec_parameters_to_context(ctx, parameters)
        if r >= 0 {
            ctx.pointee.pkt_timebase = e.pointee.time_base
            r = avcodec_open2(ctx, codec, nil)
        }
        if r < 0 {
            avcodec_free_context(&decoder)
            throw .capture(r, "avcodec_open2(\(encoder.codecName) decoder)")
        }
        context = ctx
        skip = Int(e.pointee.initial_padding)
        do {
            meter = try LoudnessMeter(sampleRate: Int(e.pointee.sample_rate), channelCount: Int(e.pointee.ch_layout.nb_channels), layoutName: nil)
        } catch {
            avcodec_free_context(&decoder)
            throw error
        }
        if let previous {
            // Its decoded samples are the part before: dropped, the priming with them.
            skip = Int(e.pointee.frame_size)
            try add(previous.packet)
        }
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
    }

    /// Decodes and measures one packet.
    public func add(_ packet: borrowing Packet) throws(FFmpegError) {
        while true {
            let r = avcodec_send_packet(context, packet.pointer)
            if r == mf_averror_eagain() { try drain(); continue }
            if r < 0 { throw .capture(r, "avcodec_send_packet") }
            break
        }
        try drain()
    }

    /// The figures of everything decoded, once the decoder's last frames are out.
    public func finish() throws(FFmpegError) -> LoudnessFigures {
        let r = avcodec_send_packet(context, nil)
        if r < 0 && r != mf_averror_eof() { throw .capture(r, "avcodec_send_packet") }
        try drain()
        return try meter.finish()
    }

    private func drain() throws(FFmpegError) {
        while true {
            frame.reset()
            let r = avcodec_receive_frame(context, frame.pointer)
            if r == mf_averror_eagain() || r == mf_averror_eof() { return }
            if r < 0 { throw .capture(r, "avcodec_receive_frame") }
            let count = Int(frame.pointer.pointee.nb_samples)
            if skip >= count { skip -= count; continue }
            if skip > 0 {
                // Drop the priming: move the rest of each plane to its start.
                let bytes = Int(av_get_bytes_per_sample(AVSampleFormat(rawValue: frame.pointer.pointee.format)))
                let planar = av_sample_fmt_is_planar(AVSampleFormat(rawValue: frame.pointer.pointee.format)) != 0
                let channels = Int(frame.pointer.pointee.ch_layout.nb_channels)
                let stride = planar ? bytes : bytes * channels
                for plane in 0..<(planar ? channels : 1) {
                    let base = frame.pointer.pointee.extended_data[plane]!
                    base.update(from: base + skip * stride, count: (count - skip) * stride)
                }
                frame.pointer.pointee.nb_samples = Int32(count - skip)
                skip = 0
            }
            try meter.add(frame)
        }
    }
}
