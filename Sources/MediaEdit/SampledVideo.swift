import MediaCore
import MediaTime

/// A composition's pictures at a constant rate, sample and hold: frame k is the source frame on screen
/// at composition time k x frameDuration. Frames are asked for in increasing order; each source segment
/// is decoded once, from the keyframe before its first asked time. Thread-confined.
final class SampledVideo {
    let mapping: TimeMapping
    let sources: [ExportSource]
    let frameDuration: MediaTime
    private let threads: Int
    private let limits: SafetyLimits
    private let interrupter: Interrupter
    private let observer: DecodedFrameObserver?
    private var reader: SegmentVideoReader?
    private var readerSegment = -1
    private var finishedDecoded = 0, finishedErrors = 0

    init(mapping: TimeMapping, sources: [ExportSource], frameDuration: MediaTime, threads: Int, limits: SafetyLimits,
         interrupter: Interrupter, observer: DecodedFrameObserver?) {
        self.mapping = mapping
        self.sources = sources
        self.frameDuration = frameDuration
        self.threads = threads
        self.limits = limits
        self.interrupter = interrupter
        self.observer = observer
    }

    /// How many frames the composition has at this rate (its duration rounded up).
    var frameCount: Int {
        let tb = Rational(Int32(clamping: frameDuration.value), frameDuration.timescale)
        return Int(mapping.duration.count(in: tb, rounding: .up) ?? 0)
    }

    /// Source frames decoded so far, and those that decoded with errors.
    var decoded: Int { finishedDecoded + (reader?.framesDecoded ?? 0) }
    var decodeErrors: Int { finishedErrors + (reader?.decodeErrors ?? 0) }

    /// Calls `body` with frame `k`, or returns nil when the mapping has no time for it.
    func withFrame<T>(_ k: Int, _ body: (borrowing Frame) throws -> T) throws -> T? {
        let t = frameDuration.multiplied(by: Int32(clamping: k))
        guard let (segment, s) = mapping.sourceTime(at: t) ?? mapping.pieces.last.map({ ($0.segment, $0.source.end) }) else { return nil }
        if segment != readerSegment {
            if let reader { finishedDecoded += reader.framesDecoded; finishedErrors += reader.decodeErrors }
            reader = try SegmentVideoReader(source: sources[segment], segment: segment, startingAt: s, threads: threads,
                                            limits: limits, interrupter: interrupter, observer: observer)
            readerSegment = segment
        }
        let shown = try reader!.advance(to: s)
        if let failure = reader!.failure { throw failure }
        guard shown else {
            throw ExportError("\(sources[segment].path): no video frame could be decoded")
        }
        return try body(reader!.current)
    }
}
