/// Decode times made from presentation times, for a container that stores none (Matroska): the i-th
/// smallest presentation time, moved earlier by the depth of the reordering, so that every frame is decoded
/// no later than it is shown and decode times only grow, as the encoder's did.
enum DecodeTimes {
    /// The deepest reordering made good: H.264 allows 16 reference pictures.
    static let deepest = 16

    /// The decode time of each frame of `presentation` (presentation times in decoding order); nil when two
    /// frames share a presentation time or the reordering is deeper than `deepest` pictures.
    static func make(_ presentation: [Int64]) -> [Int64]? {
        let sorted = presentation.sorted()
        // Times a file gives: far enough from the ends of Int64 that no step below can overflow.
        let bound = Int64.max / 4
        guard zip(sorted, sorted.dropFirst()).allSatisfy({ $0 < $1 }), sorted.allSatisfy({ abs($0) < bound }) else { return nil }
        // Before the first frame shown, one shortest frame earlier per picture of delay.
        let step = zip(sorted, sorted.dropFirst()).map { $1 - $0 }.min() ?? 1
        guard step <= bound / Int64(deepest + 1) else { return nil }
        for depth in 0...deepest {
            var times: [Int64] = []
            times.reserveCapacity(sorted.count)
            for i in presentation.indices {
                let time = i >= depth ? sorted[i - depth] : sorted[0] - Int64(depth - i) * step
                guard time <= presentation[i] else { break }
                times.append(time)
            }
            if times.count == presentation.count { return times }
        }
        return nil
    }
}
