import Foundation
import MediaCore
import MediaTime
import QualityModel

/// A file held to a spec (`CheckPlan.Spec`): each field it names against what the file has, the rates
/// measured from the packets of the pass. Every field that differs is said as its path, what was expected
/// and what was found.
struct SpecCheck {
    let spec: CheckPlan.Spec
    let file: InputFile

    /// What the pass measured besides the streams' headers.
    struct Measured {
        var bytes: [Int: Int64]
        var duration: Double
        var videoDuration: Double?
        var audioDurations: [Int: Double]
        /// Any picture said it was interlaced (nil: no picture was decoded).
        var interlaced: Bool?
    }

    func result(video: StreamInfo?, audio: [StreamInfo], measured m: Measured) -> CheckResult {
        var problems: [String] = []
        func said(_ list: [String]) -> String { list.count == 1 ? list[0] : "one of " + list.joined(separator: ", ") }
        func text(_ path: String, _ expected: [String]?, _ found: String?) {
            guard let expected else { return }
            guard let found, expected.contains(where: { $0.caseInsensitiveCompare(found) == .orderedSame }) else {
                problems.append("\(path): expected \(said(expected)), found \(found ?? "none")")
                return
            }
        }
        func number(_ path: String, _ range: SpecRange?, _ found: Double?, unit: String = "") {
            guard let range else { return }
            guard let found, found.isFinite else { problems.append("\(path): expected \(range)\(unit), found none"); return }
            if !range.contains(found) {
                let shown = found == found.rounded() && abs(found) < 1e15 ? String(Int64(found)) : String(format: "%.3f", found)
                problems.append("\(path): expected \(range)\(unit), found \(shown)\(unit)")
            }
        }
        func rate(_ bytes: Int64?, _ seconds: Double?) -> Double? {
            guard let bytes, let seconds, seconds > 0 else { return nil }
            return Double(bytes) * 8 / seconds
        }
        if let containers = spec.container {
            let names = file.container.formatName.split(separator: ",").map(String.init)
            if !containers.contains(where: { c in names.contains { $0.caseInsensitiveCompare(c) == .orderedSame } }) {
                problems.append("container: expected \(said(containers)), found \(file.container.formatName)")
            }
        }
        number("size", spec.size, Double(file.container.fileSize), unit: " bytes")
        number("bitRate", spec.bitRate, rate(file.container.fileSize, m.duration), unit: " b/s")
        if let v = spec.video {
            if let stream = video {
                text("video.codec", v.codec, stream.codecName)
                text("video.profile", v.profile, stream.profile)
                number("video.level", v.level, Self.level(stream))
                number("video.width", v.width, Double(stream.width))
                number("video.height", v.height, Double(stream.height))
                text("video.pixelFormat", v.pixelFormat, stream.pixelFormat)
                if let rates = v.frameRate {
                    let found = (stream.realFrameRate ?? stream.averageFrameRate).map(\.doubleValue)
                    if found.map({ f in !rates.contains { abs(f / $0 - 1) <= 0.001 } }) ?? true {
                        problems.append("video.frameRate: expected \(said(rates.map { String(format: "%g", $0) })), found "
                                        + (found.map { String(format: "%g", $0) } ?? "none"))
                    }
                }
                if let scan = v.scanType {
                    let found = m.interlaced.map { $0 ? "interlaced" : "progressive" }
                    if found != scan { problems.append("video.scanType: expected \(scan), found \(found ?? "no picture")") }
                }
                number("video.bitRate", v.bitRate, rate(m.bytes[stream.index], m.videoDuration), unit: " b/s")
            } else {
                problems.append("video: expected a video track, found none")
            }
        }
        if let a = spec.audio {
            if audio.isEmpty { problems.append("audio: expected an audio track, found none") }
            for stream in audio {
                let p = audio.count > 1 ? "audio[track \(stream.index + 1)]" : "audio"
                text("\(p).codec", a.codec, stream.codecName)
                text("\(p).profile", a.profile, stream.profile)
                if let rates = a.sampleRate, !rates.contains(stream.sampleRate) {
                    problems.append("\(p).sampleRate: expected \(said(rates.map(String.init))), found \(stream.sampleRate)")
                }
                number("\(p).channels", a.channels, Double(stream.channelCount))
                text("\(p).channelLayout", a.channelLayout, stream.channelLayout)
                number("\(p).bitRate", a.bitRate, rate(m.bytes[stream.index], m.audioDurations[stream.index]), unit: " b/s")
            }
        }
        let summary = problems.isEmpty ? "every field the spec names is as it says" : problems.joined(separator: "; ")
        return CheckResult(check: "spec", severity: spec.severity, found: !problems.isEmpty, summary: summary, thresholds: [:],
                           figures: ["bitRate": rate(file.container.fileSize, m.duration) ?? 0, "size": Double(file.container.fileSize)])
    }

    /// The level as the codec numbers it: FFmpeg keeps H.264's ×10 and HEVC's ×30.
    static func level(_ stream: StreamInfo) -> Double? {
        guard stream.level > 0 else { return nil }
        switch stream.codecName {
        case "h264": return Double(stream.level) / 10
        case "hevc": return Double(stream.level) / 30
        default: return Double(stream.level)
        }
    }
}
