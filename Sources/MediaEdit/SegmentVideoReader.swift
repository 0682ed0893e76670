import MediaCore
import MediaTime

/// Decodes one source's video track in presentation order, for sample and hold: `advance(to:)` makes
/// `current` the last frame whose presentation time is at or before a source time.
/// Blocking and thread-confined.
final class SegmentVideoReader {
    private let file: InputFile
    private let decoder: Decoder
    private let source: ExportSource
    private let stream: StreamInfo
    /// Half the stream's tick, at most half a millisecond.
    private let halfTick: MediaTime
    private var packet = Packet()
    /// The frame shown at the last time asked for.
    var current = Frame()
    private var next = Frame()
    private var nextTime: MediaTime?
    private var currentTime: MediaTime?
    private var inputFinished = false
    private var decoderFinished = false
    private(set) var framesDecoded = 0
    private(set) var decodeErrors = 0
    private var lastError: FFmpegError?

    private let segment: Int
    private let observer: DecodedFrameObserver?
    private var observerFailure: (any Error)?

    init(source: ExportSource, segment: Int, startingAt time: MediaTime, threads: Int, limits: SafetyLimits,
         interrupter: Interrupter, observer: DecodedFrameObserver?) throws(MediaFileError) {
        self.source = source
        self.segment = segment
        self.observer = observer
        stream = source.video!
        halfTick = MediaTime.min(MediaTime(value: Int64(stream.timeBase.numerator), timescale: Int32(clamping: Int64(stream.timeBase.denominator) * 2)),
                                 MediaTime(value: 1, timescale: 2000))
        file = try InputFile(path: source.path, limits: limits, interrupter: interrupter)
        file.discardAll(except: [stream.index])
        decoder = try Decoder(file: file, streamIndex: stream.index, threads: threads)
        if time > .zero { try file.seek(stream: stream.index, toKeyframeBefore: source.ticks(time, in: stream)) }
        try fetchNext()
    }

    /// The first error the frame observer threw, if any.
    var failure: (any Error)? { observerFailure }

    /// Makes `current` the frame on screen at source time `s`; false when the track has no frame at all.
    func advance(to s: MediaTime) throws(MediaFileError) -> Bool {
        // A time stamp is rounded to its stream's tick (Matroska's millisecond: the third picture of 30 fps is
        // at 67 ms, not 66.67): a picture within half a tick of `s`, at most half a millisecond, is on screen at
        // `s` (a coarser tick, an AVI's 1/25 s, is the picture's own time, not a rounding).
        let shown = s + halfTick
        while let t = nextTime, !(shown < t) || currentTime == nil {
            current.take(&next)
            currentTime = t
            nextTime = nil
            try fetchNext()
        }
        return currentTime != nil
    }

    /// Decodes until a frame is waiting in `next` or the stream ends.
    private func fetchNext() throws(MediaFileError) {
        while nextTime == nil && !decoderFinished {
            do {
                switch try decoder.receive(into: &next) {
                case .frame:
                    framesDecoded += 1
                    let t = next.pts.map { source.time($0, in: stream) } ?? (currentTime ?? .zero)
                    nextTime = t
                    if let observer, observerFailure == nil {
                        do { try observer(segment, t, next) } catch { observerFailure = error }
                    }
                    continue
                case .endOfStream:
                    decoderFinished = true
                    continue
                case .needsInput:
                    break
                }
            } catch {
                decodeErrors += 1
                lastError = error
            }
            if inputFinished {
                try? decoder.sendEndOfStream()  // draining at the end: nothing more to decode
                if decodeErrors > 0 && framesDecoded == 0 { break }
                continue
            }
            try file.checkInterrupt()
            if try file.read(into: &packet) == .endOfFile {
                inputFinished = true
                try? decoder.sendEndOfStream()  // draining at the end: nothing more to decode
                continue
            }
            if packet.isEncrypted {
                throw MediaFileError(path: source.path, reason: .protectedContent(track: stream.index))
            }
            do {
                if try decoder.send(packet) == .full { continue }
            } catch {
                decodeErrors += 1
                lastError = error
                if decodeErrors > 100 && framesDecoded == 0 {
                    throw MediaFileError(path: source.path, reason: .undecodable(track: stream.index, codec: stream.codecName, error))
                }
            }
        }
        if decoderFinished || inputFinished, framesDecoded == 0, let lastError {
            throw MediaFileError(path: source.path, reason: .undecodable(track: stream.index, codec: stream.codecName, lastError))
        }
    }
}
