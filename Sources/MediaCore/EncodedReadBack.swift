internal import CFFmpeg
internal import CMediaShims

/// Decodes what an `Encoder` makes as its packets come out, to measure them against the pictures that went
/// in (an export's fidelity, its checks), without reading the written file again. Frames are timed in the encoder's
/// time base. One thread: frame threads would hold pictures back. Thread-confined, like the encoder.
public final class EncodedReadBack {
    let context: UnsafeMutablePointer<AVCodecContext>
    private var frame = Frame()
    /// Samples an audio encoder primes its output with (its first packet's time is minus this many).
    public let leadingSamples: Int

    public init(_ encoder: Encoder) throws(FFmpegError) {
        let source = encoder.context
        guard let codec = avcodec_find_decoder(source.pointee.codec_id) else { throw .decoderNotFound }
        guard let ctx = avcodec_alloc_context3(codec) else { throw .outOfMemory }
        var owned: UnsafeMutablePointer<AVCodecContext>? = ctx
        guard let parameters = avcodec_parameters_alloc() else { avcodec_free_context(&owned); throw .outOfMemory }
        var ownedParameters: UnsafeMutablePointer<AVCodecParameters>? = parameters
        defer { avcodec_parameters_free(&ownedParameters) }
        var r = avcodec_parameters_from_context(parameters, source)
        if r >= 0 { r = avcodec_parameters_to_context(ctx, parameters) }
        if r < 0 { avcodec_free_context(&owned); throw .capture(r, "avcodec_parameters_to_context") }
        ctx.pointee.pkt_timebase = source.pointee.time_base
        var options: OpaquePointer? = nil
        av_dict_set(&options, "threads", "1", 0)
        FFmpegLog.clearLastError()
        r = avcodec_open2(ctx, codec, &options)
        av_dict_free(&options)
        if r < 0 { avcodec_free_context(&owned); throw .capture(r, "avcodec_open2 (reading the encoder's packets back)") }
        context = ctx
        leadingSamples = Int(source.pointee.initial_padding)
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
    }

    /// Decodes one packet, calling `body` with each picture it completes.
    public func decode(_ packet: borrowing Packet, _ body: (borrowing Frame) throws -> Void) throws {
        try send(packet.pointer, body)
    }

    /// Drains the pictures still held, at the end of the stream.
    public func finish(_ body: (borrowing Frame) throws -> Void) throws {
        try send(nil, body)
    }

    private func send(_ packet: UnsafeMutablePointer<AVPacket>?, _ body: (borrowing Frame) throws -> Void) throws {
        let sequence = FFmpegLog.errorSequence
        while true {
            let r = avcodec_send_packet(context, packet)
            if r >= 0 || r == mf_averror_eof() { break }
            guard r == mf_averror_eagain() else { throw FFmpegError.capture(r, "avcodec_send_packet (reading the encoder's packets back)", since: sequence) }
            try receive(body)
        }
        try receive(body)
    }

    private func receive(_ body: (borrowing Frame) throws -> Void) throws {
        while true {
            frame.reset()
            let r = avcodec_receive_frame(context, frame.pointer)
            if r == mf_averror_eagain() || r == mf_averror_eof() { return }
            if r < 0 { throw FFmpegError.capture(r, "avcodec_receive_frame (reading the encoder's packets back)") }
            try body(frame)
        }
    }
}
