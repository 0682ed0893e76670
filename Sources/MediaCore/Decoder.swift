internal import CFFmpeg
internal import CMediaShims
import MediaTime

/// Decodes one stream of an `InputFile`: the owner of one AVCodecContext, freed in `deinit`.
///
/// Use `send` / `receive` in FFmpeg's loop; they return small enums instead of throwing for control
/// flow. Thread-confined like the file it reads from. Timestamps stay in the stream's time base.
public final class Decoder {
    public enum SendResult: Sendable, Equatable { case accepted, full, endOfStream }
    public enum ReceiveResult: Sendable, Equatable { case frame, needsInput, endOfStream }

    public let stream: StreamInfo
    let context: UnsafeMutablePointer<AVCodecContext>

    /// Opens a decoder for `streamIndex` of `file`. `threads` 0 lets FFmpeg choose; 1 gives the lowest
    /// latency (first frame soonest). Frames bigger than the file's pixel limit are refused.
    public init(file: InputFile, streamIndex: Int, threads: Int = 0) throws(MediaFileError) {
        let stream = file.streams[streamIndex]
        self.stream = stream
        let avStream = file.context.pointee.streams[streamIndex]!
        func failure(_ error: FFmpegError) -> MediaFileError {
            MediaFileError(path: file.path, reason: .undecodable(track: streamIndex, codec: stream.codecName, error))
        }
        guard let codec = avcodec_find_decoder(avStream.pointee.codecpar.pointee.codec_id) else {
            throw failure(.decoderNotFound)
        }
        do throws(FFmpegError) { try LeftOutCodecs.check(codec, decoder: true) } catch { throw failure(error) }
        guard let ctx = avcodec_alloc_context3(codec) else { throw failure(.outOfMemory) }
        var owned: UnsafeMutablePointer<AVCodecContext>? = ctx
        var r = avcodec_parameters_to_context(ctx, avStream.pointee.codecpar)
        if r < 0 {
            avcodec_free_context(&owned)
            throw failure(.capture(r, "avcodec_parameters_to_context"))
        }
        ctx.pointee.pkt_timebase = avStream.pointee.time_base
        var options: OpaquePointer? = nil
        av_dict_set(&options, "threads", threads == 0 ? "auto" : String(threads), 0)
        av_dict_set(&options, "max_pixels", String(file.limits.maxPixels), 0)
        FFmpegLog.clearLastError()
        r = avcodec_open2(ctx, codec, &options)
        av_dict_free(&options)
        if r < 0 {
            avcodec_free_context(&owned)
            throw failure(.capture(r, "avcodec_open2"))
        }
        context = ctx
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
    }

    /// Feeds one packet. `.full` means receive frames first, then send the same packet again.
    public func send(_ packet: borrowing Packet) throws(FFmpegError) -> SendResult {
        let sequence = FFmpegLog.errorSequence
        let r = avcodec_send_packet(context, packet.pointer)
        if r >= 0 { return .accepted }
        if r == mf_averror_eagain() { return .full }
        if r == mf_averror_eof() { return .endOfStream }
        throw .capture(r, "avcodec_send_packet", since: sequence)
    }

    /// Signals the end of input, so that `receive` drains the frames still buffered.
    public func sendEndOfStream() throws(FFmpegError) {
        let sequence = FFmpegLog.errorSequence
        let r = avcodec_send_packet(context, nil)
        if r < 0 && r != mf_averror_eof() { throw .capture(r, "avcodec_send_packet", since: sequence) }
    }

    /// Takes the next decoded frame into `frame` (reset first).
    public func receive(into frame: inout Frame) throws(FFmpegError) -> ReceiveResult {
        frame.reset()
        let sequence = FFmpegLog.errorSequence
        let r = avcodec_receive_frame(context, frame.pointer)
        if r >= 0 { return .frame }
        if r == mf_averror_eagain() { return .needsInput }
        if r == mf_averror_eof() { return .endOfStream }
        throw .capture(r, "avcodec_receive_frame", since: sequence)
    }

    /// Drops buffered frames, for a seek.
    public func flush() { avcodec_flush_buffers(context) }
}
