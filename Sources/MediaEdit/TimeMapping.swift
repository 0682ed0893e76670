import MediaTime

/// Piecewise-linear mapping from composition (output) time to source time: the single source of truth
/// that video and audio both follow, so they cannot drift apart. All times are exact rationals.
///
/// Pieces are contiguous in target time, start at zero, and each maps `target` linearly onto `source`
/// of one segment (rate = source.duration / target.duration; 1 means unscaled).
public struct TimeMapping: Sendable, Hashable {
    public struct Piece: Sendable, Hashable, CustomStringConvertible {
        /// Index of the composition segment (and so the source asset) this piece plays.
        public var segment: Int
        /// Output time.
        public var target: TimeRange
        /// Source time, relative to the start of the source asset.
        public var source: TimeRange

        public var isScaled: Bool { source.duration != target.duration }
        /// Playback rate: source seconds per output second (0.25 plays four times slower).
        public var rate: Rational? { MediaTime.ratio(source.duration, target.duration) }

        /// Source time for a target time inside (or at the ends of) this piece.
        public func sourceTime(at t: MediaTime) -> MediaTime {
            if !isScaled { return source.start + (t - target.start) }
            return source.start + (t - target.start).multiplied(by: rate ?? Rational(1, 1))
        }

        /// Target time for a source time, extended linearly beyond the piece's ends.
        public func targetTime(at s: MediaTime) -> MediaTime {
            if !isScaled { return target.start + (s - source.start) }
            return target.start + (s - source.start).multiplied(by: (rate ?? Rational(1, 1)).inverted)
        }

        public var description: String { "segment \(segment) \(source) -> \(target)" }
    }

    public var pieces: [Piece]

    public init(pieces: [Piece]) { self.pieces = pieces }

    public var duration: MediaTime { pieces.last?.target.end ?? .zero }
    public var isScaled: Bool { pieces.contains(where: \.isScaled) }

    /// The piece playing at target time `t` (the last piece for `t` at the very end).
    public func piece(at t: MediaTime) -> Piece? {
        guard let last = pieces.last else { return nil }
        if !(t < last.target.end) { return t == last.target.end ? last : nil }
        var lo = 0, hi = pieces.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if pieces[mid].target.start > t { hi = mid - 1 } else { lo = mid }
        }
        return pieces[lo]
    }

    /// Which segment and source time play at target time `t`.
    public func sourceTime(at t: MediaTime) -> (segment: Int, time: MediaTime)? {
        guard let p = piece(at: t) else { return nil }
        return (p.segment, p.sourceTime(at: t))
    }

    /// The pieces that play `segment`, found by binary search (pieces are in segment order: segments
    /// play end to end), so per-packet look-ups cost O(log n) in the number of edits.
    public func pieces(of segment: Int) -> ArraySlice<Piece> {
        func firstIndex(atLeast value: Int) -> Int {
            var lo = 0, hi = pieces.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if pieces[mid].segment < value { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        return pieces[firstIndex(atLeast: segment)..<firstIndex(atLeast: segment + 1)]
    }

    /// Target time of source time `s` of `segment`: continuous and increasing across the segment's
    /// pieces, extended linearly before its first piece and after its last (for packets that
    /// straddle a cut).
    public func targetTime(segment: Int, source s: MediaTime) -> MediaTime? {
        let own = pieces(of: segment)
        guard let first = own.first, let last = own.last else { return nil }
        if s < first.source.start { return first.targetTime(at: s) }
        for p in own where s < p.source.end { return p.targetTime(at: s) }
        return last.targetTime(at: s)
    }

    /// The rate in force at source time `s` of `segment` (for retiming packet durations).
    public func rate(segment: Int, source s: MediaTime) -> Rational {
        let own = pieces(of: segment)
        let p = own.first { s < $0.source.end } ?? own.last
        return p?.rate ?? Rational(1, 1)
    }

    /// Every scaled piece's rate denominator and numerator, for choosing an exact output time base.
    public var rates: [Rational] { pieces.compactMap(\.rate).map(\.reduced) }
}
