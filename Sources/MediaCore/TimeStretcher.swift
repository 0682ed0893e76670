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

    /// Rubber Band refused the settings: the audio is not stretched, so the export must fail.
    public struct Refused: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Streams `input` stretched by `timeRatio` (output duration / input duration) to `output` block by
    /// block as Rubber Band produces it (so that a consumer, an encoder, can work meanwhile). Returns how
    /// many samples it produced: Rubber Band's count, which callers fit to their exact target. Throws
    /// `Refused` when Rubber Band will not take the settings: never hands back unstretched audio.
    public static func stretch(_ input: AudioSamples, sampleRate: Int, timeRatio: Double, engine: Engine,
                               output emit: (AudioSamples) -> Void) throws(Refused) -> Int {
        let channels = input.channelCount
        var produced = 0
        guard channels > 0, input.count > 0 else { return 0 }
        guard sampleRate > 0, timeRatio.isFinite, timeRatio > 0 else {
            throw Refused(description: "Rubber Band cannot stretch \(sampleRate) Hz audio by a time ratio of \(timeRatio)")
        }
        var options = UInt32(RubberBandOptionProcessOffline.rawValue)
        switch engine {
        case .finer: options |= UInt32(RubberBandOptionEngineFiner.rawValue)
        case .faster: options |= UInt32(RubberBandOptionEngineFaster.rawValue)
        }
        guard let state = rubberband_new(UInt32(sampleRate), UInt32(channels), Int32(bitPattern: options), timeRatio, 1.0) else {
            throw Refused(description: "Rubber Band refused \(channels)-channel \(sampleRate) Hz audio at a time ratio of \(timeRatio)")
        }
        defer { rubberband_delete(state) }
        let block = 8192
        rubberband_set_expected_input_duration(state, UInt32(input.count))
        rubberband_set_max_process_size(state, UInt32(block))
        let inBuffer = PlanarBuffer(channels: channels, capacity: block)
        let outBuffer = PlanarBuffer(channels: channels, capacity: block)
        func retrieve() {
            while true {
                let available = Int(rubberband_available(state))
                guard available > 0 else { return }
                let got = Int(rubberband_retrieve(state, outBuffer.pointers, UInt32(min(available, block))))
                var chunk = AudioSamples(channelCount: channels)
                outBuffer.store(got, appendingTo: &chunk)
                produced += got
                emit(chunk)
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
        return produced
    }
}
