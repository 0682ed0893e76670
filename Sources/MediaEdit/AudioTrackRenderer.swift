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

    var encoder: Encoder { encoderThread.encoder }
    let sampleRate: Int
    let channels: Int
    private let mapping: TimeMapping
    private let sources: [Source]
    private let algorithm: AudioTimePitchAlgorithm
    private let totalSamples: Int
    private let limits: SafetyLimits
    private let interrupter: Interrupter
    private let encoderThread: AACEncoderThread

    private var pieceIndex = 0
    /// Next sample of the current piece to produce, for unscaled pieces streamed in chunks.
    private var pieceOffset = 0
    private var readers: [Int: SegmentAudioReader] = [:]
    private var produced = 0
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
        do {
            let encoder = try Encoder.aac(sampleRate: sampleRate, channelCount: channels, bitRate: bitRate, globalHeader: globalHeader)
            encoderThread = AACEncoderThread(encoder: encoder, sampleRate: sampleRate)
        } catch {
            throw ExportError("cannot set up the AAC encoder: \(error)")
        }
    }

    deinit { encoderThread.stop() }

    /// Samples of all segments decoded with errors (damaged packets skipped).
    var decodeErrors: Int { readers.values.reduce(0) { $0 + $1.decodeErrors } }
    var samplesWritten: Int { totalSamples }

    /// The next encoded packet (time base 1/sampleRate), nil at the end. Decoding and time-stretching
    /// run here; AAC encoding runs meanwhile on the encoder's own thread.
    func nextPacket() throws -> PacketBox? {
        while true {
            if let p = try encoderThread.next(wait: false) { return p }
            if produced < totalSamples || pieceIndex < mapping.pieces.count {
                try produceMore()
                if produced >= totalSamples && pieceIndex >= mapping.pieces.count { encoderThread.finishInput() }
            } else {
                encoderThread.finishInput()
                return try encoderThread.next(wait: true)
            }
        }
    }

    private func index(_ t: MediaTime) -> Int { Int(t.count(in: Rational(1, Int32(sampleRate))) ?? 0) }

    private func emit(_ samples: AudioSamples) throws {
        produced += samples.count
        try encoderThread.submit(samples)
    }

    private func produceMore() throws {
        try interruptCheck()
        guard pieceIndex < mapping.pieces.count else {
            // After the mapping: silence up to the total (so audio ends with the video).
            let rest = totalSamples - produced
            if rest > 0 { try emit(AudioSamples(channelCount: channels, count: rest)) }
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
                try emit(try read(segment: p.segment, from: srcStart + pieceOffset, count: chunk))
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
        var failure: (any Error)?
        let sink: (AudioSamples) -> Void = { chunk in
            guard failure == nil, emitted < targetCount else { return }
            let take = min(chunk.count, targetCount - emitted)
            do { try self.emit(take == chunk.count ? chunk : chunk.slice(from: 0, count: take)) } catch { failure = error }
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
        if let failure { throw failure }
        if emitted < targetCount { try emit(AudioSamples(channelCount: channels, count: targetCount - emitted)) }
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
            readers = readers.filter { $0.key > segment }
            readers[segment] = try SegmentAudioReader(path: sources[segment].path, streamIndex: stream, sampleRate: sampleRate,
                                                      channels: channels, startingAt: position, limits: limits, interrupter: interrupter)
        }
        return try readers[segment]!.read(from: position, count: count)
    }
}
