import Foundation

/// Measurements of output files through ffmpeg and ffprobe, the oracles export tests trust.
public enum MediaProbe {
    /// Per-stream MD5 of the packet data ("0,v,MD5=..."), timestamps not included.
    public static func streamHashes(_ path: String) throws -> [String] {
        try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0", "-c", "copy", "-f", "streamhash", "-hash", "md5", "-"])
            .stdout.split(separator: "\n").map(String.init)
    }

    /// Presentation times (seconds, sorted) and durations of the packets of the first stream of `type` ("v", "a").
    public static func packets(_ path: String, stream type: String) throws -> [(pts: Double, duration: Double)] {
        let r = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "\(type):0", "-show_entries",
                                                    "packet=pts_time,duration_time", "-of", "csv=p=0", path])
        return r.stdout.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",").map { Double($0) }
            guard f.count >= 1, let pts = f[0] else { return nil }
            return (pts, f.count > 1 ? (f[1] ?? 0) : 0)
        }.sorted { $0.pts < $1.pts }
    }

    /// The first audio stream (or the `audio`-th) decoded to mono 16-bit samples at its own rate, edit lists applied.
    public static func monoSamples(_ path: String, audio: Int = 0) throws -> (samples: [Int16], rate: Int) {
        let rate = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a:\(audio)", "-show_entries", "stream=sample_rate",
                                                       "-of", "csv=p=0", path]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let r = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:\(audio)", "-ac", "1", "-f", "s16le", "-"])
        let samples = r.stdoutData.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        return (samples, Int(rate) ?? 0)
    }

    /// The first audio stream's length as the container declares it, in samples (its duration_ts
    /// with a 1/sample-rate time base): exact, unlike decoding, which keeps the padding of a last
    /// partial AAC frame (FFmpeg 5.1 does not trim it).
    public static func declaredAudioSamples(_ path: String) throws -> Int? {
        let r = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                                    "stream=duration_ts,time_base,sample_rate", "-of", "json", path])
        guard let json = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any],
              let stream = (json["streams"] as? [[String: Any]])?.first,
              stream["time_base"] as? String == "1/\(stream["sample_rate"] as? String ?? "")" else { return nil }
        return stream["duration_ts"] as? Int
    }

    /// Audio samples per channel after decoding (edit lists applied).
    public static func decodedSampleCount(_ path: String) throws -> Int {
        try monoSamples(path).samples.count
    }

    /// The dominant frequency of a pure tone between two times, by counting rising zero crossings.
    public static func toneFrequency(_ audio: (samples: [Int16], rate: Int), from: Double, to: Double) -> Double {
        let lo = Int(from * Double(audio.rate)), hi = min(Int(to * Double(audio.rate)), audio.samples.count)
        guard hi > lo + 1 else { return 0 }
        var crossings = 0
        var first: Int?, last = 0
        for i in (lo + 1)..<hi where audio.samples[i - 1] < 0 && audio.samples[i] >= 0 {
            crossings += 1
            if first == nil { first = i }
            last = i
        }
        guard let first, crossings > 1 else { return 0 }
        return Double(crossings - 1) * Double(audio.rate) / Double(last - first)
    }

    /// Chapter (title, start, end) as ffprobe reads them.
    public static func chapters(_ path: String) throws -> [(title: String?, start: Double, end: Double)] {
        try FFprobeReport(path: path).chapters.map {
            (FFprobeReport.tag($0, "title"), FFprobeReport.double($0, "start_time") ?? -1, FFprobeReport.double($0, "end_time") ?? -1)
        }
    }
}
