import Foundation

/// Loudness as FFmpeg's `ebur128` filter measures it: a peer's implementation of BS.1770-4, the oracle
/// loudness tests trust.
public enum EBUR128Probe {
    public struct Summary: Sendable {
        public var integrated: Double
        public var range: Double
        public var truePeak: Double
        public var momentaryMax: Double
        public var shortTermMax: Double
    }

    /// The filter's summary of the first audio stream of `path` (edit lists applied, as ffmpeg reads
    /// them): integrated, range and true peak; and the highest momentary and short-term loudness of its
    /// lines every 100 ms.
    public static func summary(_ path: String) throws -> Summary {
        let r = try ProcessRunner.run("/usr/bin/ffmpeg", ["-nostdin", "-hide_banner", "-i", path, "-map", "0:a:0", "-af", "ebur128=peak=true", "-f", "null", "-"])
        let summary = r.stderr.components(separatedBy: "Summary:").last ?? ""
        func value(_ label: String) -> Double? {
            guard let line = summary.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }) else { return nil }
            return line.split(separator: " ").compactMap { Double($0) }.first
        }
        guard let i = value("I:"), let lra = value("LRA:"), let peak = value("Peak:") else { throw FixtureError("no ebur128 summary: \(r.stderr.suffix(800))") }
        // Lines such as "[Parsed_ebur128_0 @ 0x...] t: 3.1  TARGET:-23 LUFS  M: -24.1 S: -25.0  I: ..."
        func highest(_ label: String) -> Double {
            r.stderr.split(separator: "\n").compactMap { line -> Double? in
                guard let at = line.range(of: " \(label) ") else { return nil }
                return line[at.upperBound...].split(separator: " ").first.flatMap { Double($0) }
            }.max() ?? -.infinity
        }
        return Summary(integrated: i, range: lra, truePeak: peak, momentaryMax: highest("M:"), shortTermMax: highest("S:"))
    }
}
