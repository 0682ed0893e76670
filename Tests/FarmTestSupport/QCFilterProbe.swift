import Foundation

/// FFmpeg's own quality-control filters on a file, the reference the farm's checks are held to:
/// `blackdetect`, `freezedetect`, `silencedetect` (each channel on its own with `mono`), `signalstats`' BRNG
/// per picture and `astats`' peak counts, from one `ffmpeg -f null` run and its log.
public struct QCFilterProbe: Sendable {
    public struct Run: Sendable, CustomStringConvertible {
        public var start: Double
        public var end: Double?
        /// 1-based, for silence in `mono` mode.
        public var channel: Int?
        public var description: String { "\(channel.map { "ch\($0) " } ?? "")\(start)–\(end.map { "\($0)" } ?? "open")" }
    }

    public var black: [Run] = []
    public var freeze: [Run] = []
    public var silence: [Run] = []
    /// Each picture's share of pixels out of range, in order.
    public var brng: [Double] = []
    /// `astats`' Peak count of each channel, in order.
    public var peakCounts: [Int] = []

    /// Runs the filters with these options (`blackdetect=d=1`, …); `video` or `audio` false leaves those out.
    public static func run(_ path: String, black: String = "", freeze: String = "", silence: String = "", video: Bool = true,
                           audio: Bool = true) throws -> QCFilterProbe {
        let folder = try TestPaths.makeTemporaryFolder("qcprobe")
        let brngFile = folder.appendingPathComponent("brng.txt").path
        var arguments = ["-hide_banner", "-nostdin", "-nostats", "-i", path]
        if video {
            arguments += ["-vf", "blackdetect\(black.isEmpty ? "" : "=" + black),freezedetect\(freeze.isEmpty ? "" : "=" + freeze),"
                          + "signalstats=stat=brng,metadata=mode=print:key=lavfi.signalstats.BRNG:file=\(brngFile)"]
        } else {
            arguments.append("-vn")
        }
        if audio { arguments += ["-af", "silencedetect\(silence.isEmpty ? "" : "=" + silence),astats"] } else { arguments.append("-an") }
        arguments += ["-f", "null", "-"]
        let r = try ProcessRunner.run("/usr/bin/ffmpeg", arguments)
        guard r.status == 0 else { throw FixtureError("ffmpeg \(arguments): \(r.stderr)") }
        var probe = QCFilterProbe()
        func value(_ line: String, after key: String) -> Double? {
            guard let range = line.range(of: key) else { return nil }
            return Double(line[range.upperBound...].prefix { !$0.isWhitespace && $0 != "|" })
        }
        for line in r.stderr.split(separator: "\n").map(String.init) {
            if line.contains("[blackdetect"), let s = value(line, after: "black_start:"), let e = value(line, after: "black_end:") {
                probe.black.append(Run(start: s, end: e))
            } else if line.contains("[freezedetect") {
                if let s = value(line, after: "freeze_start: ") { probe.freeze.append(Run(start: s)) }
                if let e = value(line, after: "freeze_end: "), !probe.freeze.isEmpty { probe.freeze[probe.freeze.count - 1].end = e }
            } else if line.contains("[silencedetect") {
                let channel = value(line, after: "channel: ").map { Int($0) + 1 }
                if let s = value(line, after: "silence_start: ") { probe.silence.append(Run(start: s, channel: channel)) }
                if let e = value(line, after: "silence_end: "), let i = probe.silence.lastIndex(where: { $0.channel == channel && $0.end == nil }) {
                    probe.silence[i].end = e
                }
            } else if line.contains("astats"), line.contains("Peak count:"), let n = value(line, after: "Peak count: "), !line.contains(".") {
                probe.peakCounts.append(Int(n))
            }
        }
        if video, let text = try? String(contentsOfFile: brngFile, encoding: .utf8) {  // no file: no pictures
            probe.brng = text.split(separator: "\n").compactMap { $0.hasPrefix("lavfi.signalstats.BRNG=") ? Double($0.dropFirst(23)) : nil }
        }
        return probe
    }

    /// `idet`'s counts (at the checks' threshold, `intl_thres=1.2`): single-frame and multi-frame detection, each TFF, BFF, progressive, undetermined.
    public static func idet(_ path: String, threshold: Double = 1.2) throws -> (single: [Int], multi: [Int]) {
        let r = try ProcessRunner.run("/usr/bin/ffmpeg", ["-hide_banner", "-nostdin", "-nostats", "-i", path, "-an", "-vf", "idet=intl_thres=\(threshold)", "-f", "null", "-"])
        guard r.status == 0 else { throw FixtureError("ffmpeg idet \(path): \(r.stderr)") }
        func counts(_ label: String) -> [Int] {
            guard let line = r.stderr.split(separator: "\n").first(where: { $0.contains(label) }) else { return [] }
            return ["TFF:", "BFF:", "Progressive:", "Undetermined:"].compactMap { key in
                line.range(of: key).flatMap { Int(line[$0.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }) }
            }
        }
        return (counts("Single frame detection"), counts("Multi frame detection"))
    }
}
