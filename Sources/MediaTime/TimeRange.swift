/// A half-open range of media time `[start, start + duration)`, like CMTimeRange.
public struct TimeRange: Sendable, Hashable, CustomStringConvertible {
    public var start: MediaTime
    public var duration: MediaTime

    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration
    }

    public init(start: MediaTime, end: MediaTime) {
        self.start = start
        self.duration = end - start
    }

    public static let invalid = TimeRange(start: .invalid, duration: .invalid)

    public var end: MediaTime { start + duration }
    public var isValid: Bool { start.isValid && duration.isValid && !(duration < .zero) }
    public var isEmpty: Bool { duration == .zero }

    public func contains(_ time: MediaTime) -> Bool {
        isValid && !(time < start) && time < end
    }

    /// The overlap of two ranges; nil when they do not overlap.
    public func intersection(_ other: TimeRange) -> TimeRange? {
        let s = MediaTime.max(start, other.start)
        let e = MediaTime.min(end, other.end)
        guard s < e else { return nil }
        return TimeRange(start: s, end: e)
    }

    /// The smallest range containing both.
    public func union(_ other: TimeRange) -> TimeRange {
        TimeRange(start: MediaTime.min(start, other.start), end: MediaTime.max(end, other.end))
    }

    public var description: String { "[\(start), \(end))" }
}
