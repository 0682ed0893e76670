internal import CRubberBand
import MediaTime

/// Changes the duration of audio without changing its pitch, with Rubber Band in offline mode (the
/// whole input is studied first, for the best quality). Blocking: call it from a `BlockingWorkPool`.
public enum TimeStretcher {
    public enum Engine: Sendable {
        /// Rubber Band's R3 engine: highest quality, for music.
        case finer
        /// Rubber Band's R2 engine: cheaper, for speech.
        case faster
    }

    /// Returns `input` stretched by `timeRatio` (output duration / input duration). The length is
    /// Rubber Band's; callers pad or trim to their exact target and report the difference.
    public static func stretch(_ input: AudioSamples, sampleRate: Int, timeRatio: Double, engine: Engine) -> AudioSamples {
        let channels = input.channelCount
        var output = AudioSamples(channelCount: channels)
        guard channels > 0, input.count > 0 else { return output }
        var options = UInt32(RubberBandOptionProcessOffline.rawValue)
        switch engine {
        case .finer: options |= UInt32(RubberBandOptionEngineFiner.rawValue)
        case .faster: options |= UInt32(RubberBandOptionEngineFaster.rawValue)
        }
        guard let state = rubberband_new(UInt32(sampleRate), UInt32(channels), Int32(bitPattern: options), timeRatio, 1.0) else {
            return input
        }
        defer { rubberband_delete(state) }
        let block = 8192
        rubberband_set_expected_input_duration(state, UInt32(input.count))
        rubberband_set_max_process_size(state, UInt32(block))
        let expected = Int(Double(input.count) * timeRatio) + block
        for c in 0..<channels { output.channels[c].reserveCapacity(expected) }

        let inBuffer = PlanarBuffer(channels: channels, capacity: block)
        let outBuffer = PlanarBuffer(channels: channels, capacity: block)
        func retrieve() {
            while true {
                let available = Int(rubberband_available(state))
                guard available > 0 else { return }
                let got = Int(rubberband_retrieve(state, outBuffer.pointers, UInt32(min(available, block))))
                outBuffer.store(got, appendingTo: &output)
            }
        }
        for pass in 0..<2 {
            var offset = 0
            while offset < input.count {
                let n = min(block, input.count - offset)
                inBuffer.load(input, offset: offset, count: n)
                let final: Int32 = offset + n >= input.count ? 1 : 0
                if pass == 0 {
                    rubberband_study(state, inBuffer.constFloatPointers, UInt32(n), final)
                } else {
                    rubberband_process(state, inBuffer.constFloatPointers, UInt32(n), final)
                    retrieve()
                }
                offset += n
            }
        }
        retrieve()
        return output
    }
}
