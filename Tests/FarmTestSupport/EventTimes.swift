import Foundation

/// When an event (a line of `coordinator --json`, the data of a server-sent event) happened: its `at`, an
/// ISO 8601 time with milliseconds, as seconds since 1970; nil when it has none or it is no such time.
public func eventTime(_ event: [String: Any]) -> Double? {
    guard let text = event["at"] as? String else { return nil }
    let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    return (try? style.parse(text))?.timeIntervalSince1970  // not a time: nil, which the caller's expectation reports
}
