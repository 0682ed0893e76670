import Foundation

/// ffprobe's view of a file: the oracle inspection results are compared with.
public struct FFprobeReport: @unchecked Sendable {
    public let format: [String: Any]
    public let streams: [[String: Any]]
    public let chapters: [[String: Any]]

    public init(path: String, countFrames: Bool = false) throws {
        var args = ["-v", "error", "-of", "json", "-show_format", "-show_streams", "-show_chapters"]
        if countFrames { args += ["-count_packets"] }
        let r = try ProcessRunner.run("ffprobe", args + [path])
        guard let json = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any] else {
            throw FixtureError("ffprobe printed no JSON for \(path): \(r.stderr)")
        }
        format = json["format"] as? [String: Any] ?? [:]
        streams = json["streams"] as? [[String: Any]] ?? []
        chapters = json["chapters"] as? [[String: Any]] ?? []
    }

    /// A numeric field given as a string by ffprobe ("1.024000"); nil when absent or "N/A".
    public static func double(_ dict: [String: Any], _ key: String) -> Double? {
        if let s = dict[key] as? String { return Double(s) }
        return (dict[key] as? NSNumber)?.doubleValue
    }

    public static func int(_ dict: [String: Any], _ key: String) -> Int? {
        if let i = dict[key] as? Int { return i }
        if let s = dict[key] as? String { return Int(s) }
        return nil
    }

    /// "30000/1001" -> 29.97...; nil for "0/0".
    public static func rate(_ dict: [String: Any], _ key: String) -> Double? {
        guard let s = dict[key] as? String else { return nil }
        let parts = s.split(separator: "/").compactMap { Double($0) }
        guard parts.count == 2, parts[1] != 0, parts[0] != 0 else { return nil }
        return parts[0] / parts[1]
    }

    public static func tag(_ dict: [String: Any], _ key: String) -> String? {
        guard let tags = dict["tags"] as? [String: Any] else { return nil }
        return (tags[key] ?? tags[key.uppercased()]) as? String
    }

    /// The rotation ffprobe reads from the display matrix side data (counter-clockwise degrees).
    public static func rotation(_ stream: [String: Any]) -> Double? {
        guard let list = stream["side_data_list"] as? [[String: Any]] else { return nil }
        for entry in list { if let r = entry["rotation"] as? Int { return Double(r) } }
        return nil
    }
}
