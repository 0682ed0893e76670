import Foundation
import Logging
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

/// The audio of a composition as a pull stream of planar float samples: every piece of the time mapping
/// is read from its source, retimed by the time-pitch algorithm when scaled, and fitted to its exact
/// sample count; silence follows up to `totalDuration`. Memory is bounded by the longest scaled piece.
/// Blocking and thread-confined.
final class CompositionAudio {
    struct Source {
        var path: String
        /// nil: the segment has no audio (silence).
        var streamIndex: Int?
    }

    let sampleRate: Int
    let channels: Int
    /// Samples the stream holds in all: the total duration's, to the sample.
    let totalSamples: Int
    private let mapping: TimeMapping
    private let sources: [Source]
    private let algorithm: AudioTimePitchAlgorithm
    private let limits: SafetyLimits
    private let interrupter: Interrupter

    private var pieceIndex = 0
    /// Next sample of the current piece to produce, for unscaled pieces streamed in chunks.
    private var pieceOffset = 0
    private var readers: [Int: SegmentAudioReader] = [:]
    private var produced = 0
    private var ready: [AudioSamples] = []
    private(set) var pieces: [AudioPieceReport] = []

    /// `totalDuration` may exceed the mapping's duration: the rest is silence (to end with the video).
    init(mapping: TimeMapping, sources: [Source], sampleRate: Int, channels: Int, algorithm: AudioTimePitchAlgorithm,
         totalDuration: MediaTime, limits: SafetyLimits, interrupter: Interrupter) {
        self.mapping = mapping
        self.sources = sources
        self.sampleRate = sampleRate
        self.channels = channels
        self.algorithm = algorithm
        self.limits = limits
        self.interrupter = interrupter
        totalSamples = Int(totalDuration.count(in: Rational(1, Int32(sampleRate))) ?? 0)
    }

    /// Samples of all segments decoded with errors (damaged packets skipped).
    var decodeErrors: Int { readers.values.reduce(0) { $0 + $1.decodeErrors } + finishedDecodeErrors }
    private var finishedDecodeErrors = 0
    /// Samples produced so far.
    var position: Int { produced - ready.reduce(0) { $0 + $1.count } }

    /// The loudness of all of it (what is left of it), read to the end.
    func measure() throws -> LoudnessFigures {
        let meter = try LoudnessMeter(sampleRate: sampleRate, channelCount: channels, layoutName: nil)
        while let samples = try next() { try meter.add(samples) }
        return try meter.finish()
    }

    /// The next samples (about a second, or a retimed piece), nil at the end.
    func next() throws -> AudioSamples? {
        while ready.isEmpty {
            guard produced < totalSamples || pieceIndex < mapping.pieces.count else { return nil }
            try produceMore()
        }
        return ready.removeFirst()
    }

    private func index(_ t: MediaTime) -> Int { Int(t.count(in: Rational(1, Int32(sampleRate))) ?? 0) }

    private func emit(_ samples: AudioSamples) {
        guard samples.count > 0 else { return }
        produced += samples.count
        ready.append(samples)
    }

    private func produceMore() throws {
        try interruptCheck()
        guard pieceIndex < mapping.pieces.count else {
            // After the mapping: silence up to the total (so audio ends with the video), a second at a time.
            let rest = min(totalSamples - produced, sampleRate)
            if rest > 0 { emit(AudioSamples(channelCount: channels, count: rest)) } else { produced = totalSamples }
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
                emit(try read(segment: p.segment, from: srcStart + pieceOffset, count: chunk))
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
        // Emit exactly targetCount samples: the stretcher's output as it comes, cut at the target,
        // then silence if it fell short. The residual is what it produced beyond (or short of) that.
        var emitted = 0
        let sink: (AudioSamples) -> Void = { chunk in
            guard emitted < targetCount else { return }
            let take = min(chunk.count, targetCount - emitted)
            self.emit(take == chunk.count ? chunk : chunk.slice(from: 0, count: take))
            emitted += take
        }
        let producedByStage: Int
        let stageStarted = Date()
        defer {
            Logger(label: "mediafarm.audio").debug("retimed piece", metadata: [
                "algorithm": "\(algorithm)", "rate": "\(rate)", "inputSamples": "\(srcCount)",
                "seconds": "\(String(format: "%.3f", Date().timeIntervalSince(stageStarted)))"])
        }
        switch algorithm {
        case .spectral, .timeDomain:
            do {
                producedByStage = try TimeStretcher.stretch(input, sampleRate: sampleRate, timeRatio: rate.inverted.doubleValue,
                                                            engine: algorithm == .spectral ? .finer : .faster, output: sink)
            } catch {
                throw ExportError("audio time-pitch (\(algorithm.rawValue)): \(error.description)")
            }
        case .varispeed:
            var output = AudioSamples(channelCount: channels)
            let r = rate.reduced
            do {
                let resampler = try AudioResampler(inputRate: sampleRate * Int(r.numerator), inputChannels: channels,
                                                   outputRate: sampleRate * Int(r.denominator), outputChannels: channels)
                try resampler.convert(input, appendingTo: &output)
                try resampler.flush(appendingTo: &output)
            } catch {
                throw ExportError("varispeed resampling failed: \(error)")
            }
            producedByStage = output.count
            sink(output)
        }
        if emitted < targetCount { emit(AudioSamples(channelCount: channels, count: targetCount - emitted)) }
        pieces.append(AudioPieceReport(segment: p.segment, target: p.target, rate: rate.doubleValue,
                                       samples: targetCount, residual: producedByStage - targetCount))
        pieceIndex += 1
    }

    /// Called between chunks of samples produced: marks progress, then stops when cancelled or stalled.
    private func interruptCheck() throws {
        interrupter.progressed()
        if let reason = interrupter.reason { throw ExportError("audio time-pitch: " + MediaFileError.interrupted(path: "", reason).problem) }
    }

    private func read(segment: Int, from position: Int, count: Int) throws -> AudioSamples {
        guard count > 0 else { return AudioSamples(channelCount: channels) }
        guard let stream = sources[segment].streamIndex else { return AudioSamples(channelCount: channels, count: count) }
        if readers[segment] == nil {
            // Segments are visited in order: the previous one is done.
            for (key, reader) in readers where key <= segment { finishedDecodeErrors += reader.decodeErrors }
            readers = readers.filter { $0.key > segment }
            readers[segment] = try SegmentAudioReader(path: sources[segment].path, streamIndex: stream, sampleRate: sampleRate,
                                                      channels: channels, startingAt: position, limits: limits, interrupter: interrupter)
        }
        return try readers[segment]!.read(from: position, count: count)
    }
}

/// The output audio track of a composition as a pull stream of encoded AAC packets: the composition's
/// samples (`CompositionAudio`), measured when asked, brought to a loudness when asked
/// (`LoudnessNormalizer`), and encoded. Blocking and thread-confined.
final class AudioTrackRenderer {
    typealias Source = CompositionAudio.Source

    /// The encoder whose parameters the output stream takes.
    let encoder: Encoder
    var sampleRate: Int { audio.sampleRate }
    var channels: Int { audio.channels }
    private let audio: CompositionAudio
    private let bitRate: Int
    private let globalHeader: Bool
    private let loudness: LoudnessGoal?
    private let progress: (@Sendable (ExportProgress) -> Void)?
    private let interrupter: Interrupter
    /// Plain rendering: the encoder's thread, and the meters of measure-only.
    private var encoderThread: AACEncoderThread?
    private var meter: LoudnessMeter?
    private var encodedMeter: EncodedAudioMeter?
    /// Normalizing: every packet, encoded before the first is written.
    private var normalized: [PacketBox]?
    private(set) var loudnessReport: LoudnessDelivery?

    /// `totalDuration` may exceed the mapping's duration: the rest is silence (to end with the video).
    init(mapping: TimeMapping, sources: [Source], sampleRate: Int, channels: Int, algorithm: AudioTimePitchAlgorithm,
         bitRate: Int, totalDuration: MediaTime, globalHeader: Bool, loudness: LoudnessGoal? = nil, limits: SafetyLimits,
         interrupter: Interrupter, progress: (@Sendable (ExportProgress) -> Void)? = nil) throws(ExportError) {
        audio = CompositionAudio(mapping: mapping, sources: sources, sampleRate: sampleRate, channels: channels, algorithm: algorithm,
                                 totalDuration: totalDuration, limits: limits, interrupter: interrupter)
        self.bitRate = bitRate
        self.globalHeader = globalHeader
        self.loudness = loudness
        self.progress = progress
        self.interrupter = interrupter
        do {
            encoder = try Encoder.aac(sampleRate: sampleRate, channelCount: channels, bitRate: bitRate, globalHeader: globalHeader)
            if loudness?.measureOnly ?? true {
                encoderThread = AACEncoderThread(encoder: encoder, sampleRate: sampleRate)
            }
            if loudness?.measureOnly == true {
                meter = try LoudnessMeter(sampleRate: sampleRate, channelCount: channels, layoutName: nil)
                encodedMeter = try EncodedAudioMeter(encoder: encoder)
            }
        } catch {
            throw ExportError("cannot set up the AAC encoder: \(error)")
        }
    }

    deinit { encoderThread?.stop() }

    var decodeErrors: Int { audio.decodeErrors }
    var samplesWritten: Int { audio.totalSamples }
    var pieces: [AudioPieceReport] { audio.pieces }

    /// The next encoded packet (time base 1/sampleRate), nil at the end. Decoding and time-stretching
    /// run here; AAC encoding runs meanwhile on the encoder's own thread.
    func nextPacket() throws -> PacketBox? {
        if let loudness, !loudness.measureOnly {
            if normalized == nil {
                let normalizer = LoudnessNormalizer(audio: audio, goal: loudness, bitRate: bitRate, globalHeader: globalHeader,
                                                    interrupter: interrupter, progress: progress)
                let (packets, report) = try normalizer.run()
                normalized = packets.reversed()
                loudnessReport = report
            }
            return normalized!.popLast()
        }
        guard let encoderThread else { return nil }
        while true {
            if let p = try encoderThread.next(wait: false) { return try measured(p) }
            if let samples = try audio.next() {
                try meter?.add(samples)
                try encoderThread.submit(samples)
            } else {
                encoderThread.finishInput()
                if let p = try encoderThread.next(wait: true) { return try measured(p) }
                try finishMeasuring()
                return nil
            }
        }
    }

    private func measured(_ box: PacketBox) throws -> PacketBox {
        do { try encodedMeter?.add(box.packet) } catch { throw ExportError("measuring the encoded audio: \(error)") }
        return box
    }

    private func finishMeasuring() throws {
        guard let meter, loudnessReport == nil, let loudness else { return }
        let before = try meter.finish()
        let after = try encodedMeter?.finish()
        loudnessReport = LoudnessDelivery(measuredOnly: loudness, before: before, after: after)
    }
}
