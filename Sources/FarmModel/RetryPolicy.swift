import Foundation

/// When a failed attempt runs again: exponential backoff with jitter, at most `maxAttempts` attempts.
/// Pure: the random draw is passed in, so a test can pin it.
public struct RetryPolicy: Sendable, Hashable, Codable {
    public var maxAttempts: Int
    /// Delay before the second attempt, seconds.
    public var baseDelay: Double
    /// Cap of any one delay, seconds.
    public var maxDelay: Double
    /// Fraction of the delay drawn at random: 0.2 gives delay x [0.8, 1.2].
    public var jitter: Double

    public static let `default` = RetryPolicy(maxAttempts: 3, baseDelay: 1, maxDelay: 300, jitter: 0.2)

    public init(maxAttempts: Int = 3, baseDelay: Double = 1, maxDelay: Double = 300, jitter: Double = 0.2) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = max(0, baseDelay)
        self.maxDelay = max(self.baseDelay, maxDelay)
        self.jitter = min(max(0, jitter), 1)
    }

    /// Whether a job that has used `attempt` attempts may have another.
    public func allowsRetry(after attempt: Int, maxAttempts: Int? = nil) -> Bool {
        attempt < (maxAttempts ?? self.maxAttempts)
    }

    /// Seconds to wait after failed attempt number `attempt` (1-based): baseDelay x 2^(attempt-1),
    /// capped, then scaled by 1 + jitter x (2u - 1) for `unit` u in [0, 1].
    public func delay(afterAttempt attempt: Int, unit: Double) -> Double {
        let exponent = Double(max(0, min(attempt - 1, 62)))
        let raw = min(maxDelay, baseDelay * pow(2, exponent))
        let u = min(max(unit, 0), 1)
        return max(0, raw * (1 + jitter * (2 * u - 1)))
    }
}
