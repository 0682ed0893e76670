internal import CFFmpeg
internal import CMediaShims
import MediaTime

/// Converts decoded audio to planar float at a chosen rate and channel count (libswresample); also
/// does varispeed by declaring a different input rate. The owner of one SwrContext. Thread-confined.
public final class AudioResampler {
    private var context: OpaquePointer?
    public let outputRate: Int
    public let outputChannels: Int
    private let inputRate: Int
    private var inputLayout = AVChannelLayout()
    private var inputFormat: Int32

    /// `inputRate` may differ from the audio's real rate: declaring rate x r and outputting at the
    /// real rate plays the audio 1/r times as long with the pitch following (varispeed).
    public init(inputRate: Int, inputChannels: Int, outputRate: Int, outputChannels: Int) throws(FFmpegError) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.outputChannels = outputChannels
        av_channel_layout_default(&inputLayout, Int32(inputChannels))
        inputFormat = AV_SAMPLE_FMT_FLTP.rawValue
        try configure()
    }

    deinit {
        swr_free(&context)
        av_channel_layout_uninit(&inputLayout)
    }

    private func configure() throws(FFmpegError) {
        swr_free(&context)
        var outLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, Int32(outputChannels))
        var ctx: OpaquePointer?
        var r = swr_alloc_set_opts2(&ctx, &outLayout, AV_SAMPLE_FMT_FLTP, Int32(outputRate),
                                    &inputLayout, AVSampleFormat(rawValue: inputFormat), Int32(inputRate), 0, nil)
        if r < 0 { throw .capture(r, "swr_alloc_set_opts2") }
        r = swr_init(ctx)
        if r < 0 { swr_free(&ctx); throw .capture(r, "swr_init") }
        context = ctx
    }

    /// Converts one decoded frame (whatever its sample format and layout) and appends the result.
    public func convert(_ frame: borrowing Frame, appendingTo output: inout AudioSamples) throws(FFmpegError) {
        let f = frame.pointer
        if f.pointee.format != inputFormat || av_channel_layout_compare(&f.pointee.ch_layout, &inputLayout) != 0 {
            inputFormat = f.pointee.format
            av_channel_layout_uninit(&inputLayout)
            av_channel_layout_copy(&inputLayout, &f.pointee.ch_layout)
            try configure()
        }
        let input = UnsafeMutableRawPointer(f.pointee.extended_data!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
        try run(input: input, count: Int(f.pointee.nb_samples), into: &output)
    }

    /// Converts planar float samples given at the declared input rate and appends the result.
    public func convert(_ samples: AudioSamples, appendingTo output: inout AudioSamples) throws(FFmpegError) {
        guard samples.count > 0 else { return }
        if inputFormat != AV_SAMPLE_FMT_FLTP.rawValue {
            inputFormat = AV_SAMPLE_FMT_FLTP.rawValue
            try configure()
        }
        let buffer = PlanarBuffer(channels: samples.channelCount, capacity: samples.count)
        buffer.load(samples, offset: 0, count: samples.count)
        try run(input: buffer.bytePointers, count: samples.count, into: &output)
    }

    /// Drains the samples still buffered inside the resampler.
    public func flush(appendingTo output: inout AudioSamples) throws(FFmpegError) {
        try run(input: nil, count: 0, into: &output)
    }

    private func run(input: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, count: Int, into output: inout AudioSamples) throws(FFmpegError) {
        let capacity = Int(swr_get_out_samples(context, Int32(count))) + 256
        let out = PlanarBuffer(channels: outputChannels, capacity: capacity)
        let produced = swr_convert(context, out.mutableBytePointers, Int32(capacity), input, Int32(count))
        if produced < 0 { throw .capture(produced, "swr_convert") }
        if output.channelCount == 0 { output = AudioSamples(channelCount: outputChannels) }
        out.store(Int(produced), appendingTo: &output)
    }
}
