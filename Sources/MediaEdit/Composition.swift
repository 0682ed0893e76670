import MediaTime

/// Why a composition cannot be built as asked.
public struct CompositionError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Pieces of source assets placed end to end, with ranges of composition time rescaled
/// (AVMutableComposition.insertTimeRange and scaleTimeRange(_:toDuration:)).
public struct Composition: Sendable {
    public struct Segment: Sendable, Hashable {
        /// The source asset's path.
        public var source: String
        /// The range of the source, relative to the asset's start.
        public var sourceRange: TimeRange

        public init(source: String, sourceRange: TimeRange) {
            self.source = source
            self.sourceRange = sourceRange
        }
    }

    public private(set) var segments: [Segment] = []
    /// The scale operations applied so far, in order.
    public private(set) var scaleOperations: [(range: TimeRange, toDuration: MediaTime)] = []
    /// The current mapping; starts as identity over the inserted segments.
    public private(set) var timeMapping = TimeMapping(pieces: [])

    public init() {}

    public var duration: MediaTime { timeMapping.duration }

    /// Appends `range` of `source` at the end of the composition.
    public mutating func insert(_ range: TimeRange, of source: String) throws(CompositionError) {
        guard range.isValid, range.duration > .zero else {
            throw CompositionError("cannot insert an empty or invalid range \(range) of \(source)")
        }
        let at = duration
        segments.append(Segment(source: source, sourceRange: range))
        timeMapping.pieces.append(.init(segment: segments.count - 1,
                                        target: TimeRange(start: at, duration: range.duration), source: range))
    }

    /// Rescales `range` of composition time to last `toDuration` (rate = range.duration / toDuration,
    /// 1/32...32). Later composition time shifts accordingly.
    public mutating func scale(_ range: TimeRange, toDuration: MediaTime) throws(CompositionError) {
        guard range.isValid, range.duration > .zero, toDuration.isNumeric, toDuration > .zero else {
            throw CompositionError("cannot scale \(range) to \(toDuration)")
        }
        guard !(duration < range.end) else {
            throw CompositionError("the scaled range \(Self.seconds(range.start)) s to \(Self.seconds(range.end)) s extends past the end of the composition (\(Self.seconds(duration)) s)")
        }
        guard let rate = MediaTime.ratio(range.duration, toDuration),
              rate.doubleValue >= 1.0 / 32 - 1e-12, rate.doubleValue <= 32 + 1e-12 else {
            throw CompositionError("rate \(Self.seconds(range.duration)) s / \(Self.seconds(toDuration)) s is outside 1/32...32")
        }
        scaleOperations.append((range, toDuration))
        split(at: range.start)
        split(at: range.end)
        let factor = rate.inverted   // target durations grow by 1 / rate
        var cursor = MediaTime.zero
        var pieces: [TimeMapping.Piece] = []
        for var p in timeMapping.pieces {
            let inside = !(p.target.start < range.start) && !(range.end < p.target.end)
            let length = inside ? p.target.duration.multiplied(by: factor) : p.target.duration
            p.target = TimeRange(start: cursor, duration: length)
            cursor = cursor + length
            pieces.append(p)
        }
        // Make the scaled span exactly toDuration, whatever rounding the pieces needed.
        timeMapping.pieces = pieces
    }

    /// The same composition with segments starting earlier (a passthrough cut snapped back to a
    /// keyframe): each scaled range keeps the source content it covered, so the lead-in that snapping
    /// adds plays unscaled before it.
    public func withSegmentStarts(_ starts: [MediaTime]) throws(CompositionError) -> Composition {
        precondition(starts.count == segments.count)
        var old = Composition()
        var new = Composition()
        for (segment, start) in zip(segments, starts) {
            try old.insert(segment.sourceRange, of: segment.source)
            try new.insert(TimeRange(start: start, end: segment.sourceRange.end), of: segment.source)
        }
        for op in scaleOperations {
            guard let a = old.timeMapping.sourceTime(at: op.range.start),
                  let newStart = new.timeMapping.targetTime(segment: a.segment, source: a.time) else { continue }
            // The end is the last source moment inside the range: take it from the piece ending there.
            let endPiece = old.timeMapping.pieces.last { $0.target.start < op.range.end }!
            let endSource = endPiece.sourceTime(at: op.range.end)
            guard let newEnd = new.timeMapping.targetTime(segment: endPiece.segment, source: endSource) else { continue }
            try old.scale(op.range, toDuration: op.toDuration)
            try new.scale(TimeRange(start: newStart, end: newEnd), toDuration: op.toDuration)
        }
        return new
    }

    /// Splits the piece containing composition time `t` so that a piece boundary falls on `t`.
    private mutating func split(at t: MediaTime) {
        guard let i = timeMapping.pieces.firstIndex(where: { $0.target.start < t && t < $0.target.end }) else { return }
        let p = timeMapping.pieces[i]
        let s = p.sourceTime(at: t)
        let first = TimeMapping.Piece(segment: p.segment, target: TimeRange(start: p.target.start, end: t),
                                      source: TimeRange(start: p.source.start, end: s))
        let second = TimeMapping.Piece(segment: p.segment, target: TimeRange(start: t, end: p.target.end),
                                       source: TimeRange(start: s, end: p.source.end))
        timeMapping.pieces.replaceSubrange(i...i, with: [first, second])
    }

    static func seconds(_ t: MediaTime) -> String { MediaTime.formatSeconds(t.seconds) }
}
