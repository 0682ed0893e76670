import MediaCore
import MediaTime

/// Decodes one source's audio track and hands out samples by position: sample `i` is the sample at
/// `i / sampleRate` seconds after the asset's start. Positions with no audio read as silence.
/// Blocking and thread-confined.
final class SegmentAudioReader {
    private let file: InputFile
    private let decoder: Decoder
    private let resampler: AudioResampler
    private let stream: StreamInfo
    private let origin: MediaTime
    private let sampleRate: Int
    private var fifo: AudioSamples
    /// Position of `fifo`'s first sample; nil before the first frame arrives.
    private var fifoStart: Int?
    private var finished = false
    private var packet = Packet()
    private var frame = Frame()
    private(set) var decodeErrors = 0

    init(path: String, streamIndex: Int, sampleRate: Int, channels: Int, startingAt position: Int,
         limits: SafetyLimits, interrupter: Interrupter) throws(MediaFileError) {
        file = try InputFile(path: path, limits: limits, interrupter: interrupter)
        stream = file.streams[streamIndex]
        origin = file.container.startTime.isNumeric ? file.container.startTime : .zero
        self.sampleRate = sampleRate
        file.discardAll(except: [streamIndex])
        decoder = try Decoder(file: file, streamIndex: streamIndex)
        do {
            resampler = try AudioResampler(inputRate: max(stream.sampleRate, 1), inputChannels: max(stream.channelCount, 1),
                                           outputRate: sampleRate, outputChannels: channels)
        } catch {
            throw MediaFileError(path: path, reason: .ffmpeg(error, while: "setting up audio conversion"))
        }
        fifo = AudioSamples(channelCount: channels)
        // Start a second early so that the first sample asked for is decoded, not skipped by the seek.
        let seekTime = origin + MediaTime(value: Int64(max(position - sampleRate, 0)), timescale: Int32(sampleRate))
        if position > 2 * sampleRate, let ticks = seekTime.count(in: stream.timeBase, rounding: .down) {
            try file.seek(stream: streamIndex, toKeyframeBefore: ticks)
        }
    }

    /// Exactly `count` samples starting at `position`.
    func read(from position: Int, count: Int) throws(MediaFileError) -> AudioSamples {
        while !finished && (fifoStart == nil || fifoStart! + fifo.count < position + count) {
            try decodeMore()
            // Keep memory bounded: drop what lies before the position asked for.
            if let start = fifoStart, position > start {
                let drop = min(position - start, fifo.count)
                fifo.removeFirst(drop)
                fifoStart = start + drop
            }
        }
        guard let start = fifoStart else { return AudioSamples(channelCount: fifo.channelCount, count: count) }
        let out = fifo.slice(from: position - start, count: count)
        let consumed = min(max(position + count - start, 0), fifo.count)
        fifo.removeFirst(consumed)
        fifoStart = start + consumed
        return out
    }

    private func decodeMore() throws(MediaFileError) {
        try file.checkInterrupt()
        guard try file.read(into: &packet) == .packet else {
            try? decoder.sendEndOfStream()  // draining at the end: nothing more to decode
            drain()
            try? resampler.flush(appendingTo: &fifo)  // at the end: what could not be flushed is lost samples
            finished = true
            return
        }
        guard packet.streamIndex == stream.index else { return }
        do {
            if try decoder.send(packet) == .full { drain(); _ = try decoder.send(packet) }
        } catch {
            decodeErrors += 1
        }
        drain()
    }

    private func drain() {
        while true {
            do {
                guard try decoder.receive(into: &frame) == .frame else { return }
            } catch {
                decodeErrors += 1
                return
            }
            if fifoStart == nil {
                let pts = frame.pts.map { MediaTime(count: $0, timeBase: stream.timeBase) } ?? origin
                fifoStart = Int((pts - origin).count(in: Rational(1, Int32(sampleRate))) ?? 0)
            }
            do { try resampler.convert(frame, appendingTo: &fifo) } catch { decodeErrors += 1 }
        }
    }
}
