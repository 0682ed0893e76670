import MediaCore
import MediaTime

/// What happened to one piece of the output audio.
public struct AudioPieceReport: Sendable, Codable {
    public var segment: Int
    public var target: TimeRange
    public var rate: Double
    /// Samples in the output for this piece: exactly round(end x rate) - round(start x rate).
    public var samples: Int
    /// For retimed pieces: samples the time-pitch stage produced minus `samples`, before padding or
    /// trimming to the exact count.
    public var residual: Int?
}

/// The output audio track of a composition as a pull stream of encoded AAC packets: every piece of
/// the time mapping is read from its source, retimed by the time-pitch algorithm when scaled, fitted
/// to its exact sample count, and encoded. Memory is bounded by the longest scaled piece.
/// Blocking and thread-confined.
final class AudioTrackRenderer {
    struct Source {
        var path: String
        /// nil: the segment has no audio (silence).
        var streamIndex: Int?
    }

    let encoder: Encoder
    let sampleRate: Int
    let channels: Int
    private let mapping: TimeMapping
    private let sources: [Source]
    private let algorithm: AudioTimePitchAlgorithm
    private let totalSamples: Int
    private let limits: SafetyLimits
    private let interrupter: Interrupter

    private var pieceIndex = 0
    /// Next sample of the current piece to produce, for unscaled pieces streamed in chunks.
    private var pieceOffset = 0
    private var readers: [Int: SegmentAudioReader] = [:]
    private var pending = AudioSamples(channelCount: 0)
    private var produced = 0
    private var encodedSamples = 0
    private var queue: [PacketBox] = []
    private var flushed = false
    private(set) var pieces: [AudioPieceReport] = []

    /// `totalDuration` may exceed the mapping's duration: the rest is silence (to end with the video).
    init(mapping: TimeMapping, sources: [Source], sampleRate: Int, channels: Int, algorithm: AudioTimePitchAlgorithm,
         bitRate: Int, totalDuration: MediaTime, globalHeader: Bool, limits: SafetyLimits, interrupter: Interrupter) throws(ExportError) {
        self.mapping = mapping
        self.sources = sources
        self.sampleRate = sampleRate
        self.channels = channels
        self.algorithm = algorithm
        self.limits = limits
        self.interrupter = interrupter
        totalSamples = Int(totalDuration.count(in: Rational(1, Int32(sampleRate))) ?? 0)
        pending = AudioSamples(channelCount: channels)
        do {
            encoder = try Encoder.aac(sampleRate: sampleRate, channelCount: channels, bitRate: bitRate, globalHeader: globalHeader)
        } catch {
            throw ExportError("cannot set up the AAC encoder: \(error)")
        }
    }

    /// Samples of all segments decoded with errors (damaged packets skipped).
    var decodeErrors: Int { readers.values.reduce(0) { $0 + $1.decodeErrors } }
    var samplesWritten: Int { totalSamples }

    /// The next encoded packet (time base 1/sampleRate), nil at the end.
    func nextPacket() throws -> PacketBox? {
        while queue.isEmpty && !flushed {
            try produceMore()
            try encodeAvailable(final: produced >= totalSamples && pieceIndex >= mapping.pieces.count)
        }
        return queue.isEmpty ? nil : queue.removeFirst()
    }

    private func index(_ t: MediaTime) -> Int { Int(t.count(in: Rational(1, Int32(sampleRate))) ?? 0) }

    private func produceMore() throws {
        guard pieceIndex < mapping.pieces.count else {
            // After the mapping: silence up to the total (so audio ends with the video).
            let rest = totalSamples - produced
            if rest > 0 { pending.appendSilence(rest); produced += rest }
            return
        }
        let p = mapping.pieces[pieceIndex]
        let targetCount = index(p.target.end) - index(p.target.start)
        let srcStart = index(p.source.start)
        let srcCount = index(p.source.end) - srcStart
        let rate = p.rate ?? Rational(1, 1)
        if !p.isScaled {
            // Stream unscaled audio in chunks of about a second.
            let chunk = min(sampleRate, targetCount - pieceOffset)
            if chunk > 0 {
                pending.append(try read(segment: p.segment, from: srcStart + pieceOffset, count: chunk))
                produced += chunk
                pieceOffset += chunk
            }
            if pieceOffset >= targetCount {
                pieces.append(AudioPieceReport(segment: p.segment, target: p.target, rate: 1, samples: targetCount, residual: nil))
                pieceIndex += 1
                pieceOffset = 0
            }
            return
        }
        let input = try read(segment: p.segment, from: srcStart, count: srcCount)
        var output: AudioSamples
        switch algorithm {
        case .spectral, .timeDomain:
            output = TimeStretcher.stretch(input, sampleRate: sampleRate, timeRatio: rate.inverted.doubleValue,
                                           engine: algorithm == .spectral ? .finer : .faster)
        case .varispeed:
            output = AudioSamples(channelCount: channels)
            let r = rate.reduced
            do {
                let resampler = try AudioResampler(inputRate: sampleRate * Int(r.numerator), inputChannels: channels,
                                                   outputRate: sampleRate * Int(r.denominator), outputChannels: channels)
                try resampler.convert(input, appendingTo: &output)
                try resampler.flush(appendingTo: &output)
            } catch {
                throw ExportError("varispeed resampling failed: \(error)")
            }
        }
        let residual = output.count - targetCount
        output.fit(to: targetCount)
        pending.append(output)
        produced += targetCount
        pieces.append(AudioPieceReport(segment: p.segment, target: p.target, rate: rate.doubleValue,
                                       samples: targetCount, residual: residual))
        pieceIndex += 1
    }

    private func read(segment: Int, from position: Int, count: Int) throws -> AudioSamples {
        guard count > 0 else { return AudioSamples(channelCount: channels) }
        guard let stream = sources[segment].streamIndex else { return AudioSamples(channelCount: channels, count: count) }
        if readers[segment] == nil {
            // Segments are visited in order: the previous one is done.
            readers = readers.filter { $0.key > segment }
            readers[segment] = try SegmentAudioReader(path: sources[segment].path, streamIndex: stream, sampleRate: sampleRate,
                                                      channels: channels, startingAt: position, limits: limits, interrupter: interrupter)
        }
        return try readers[segment]!.read(from: position, count: count)
    }

    private func encodeAvailable(final: Bool) throws {
        let size = max(encoder.frameSize, 1)
        while pending.count >= size || (final && pending.count > 0) {
            let n = min(size, pending.count)
            var frame = try Frame(audio: pending, offset: 0, count: n, sampleRate: sampleRate)
            frame.setPTS(Int64(encodedSamples))
            encodedSamples += n
            pending.removeFirst(n)
            while try encoder.send(frame) == .full { try receive() }
            try receive()
        }
        if final && !flushed {
            try encoder.sendEndOfStream()
            try receive()
            flushed = true
        }
    }

    private func receive() throws {
        while true {
            let box = PacketBox()
            guard try encoder.receive(into: &box.packet) == .packet else { return }
            queue.append(box)
        }
    }
}
