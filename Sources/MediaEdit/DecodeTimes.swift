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
        guard zip(sorted, sorted.dropFirst()).allSatisfy({ $0 < $1 }) else { return nil }
        // Before the first frame shown, one frame's step earlier per picture of delay.
        let step = sorted.count > 1 ? sorted[1] - sorted[0] : 1
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
