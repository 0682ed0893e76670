import Foundation

/// A second decoder stack for cut outputs: GStreamer 1.22's own demuxers (`qtdemux` for MP4 and
/// QuickTime, `matroskademux`), which apply edit lists their own way, decoding through `avdec_*`.
public enum GStreamerProbe {
    /// MD5 of every frame GStreamer presents from the file's first video stream, as I420, in order
    /// (comparable with `EditListProbe.videoFrameHashes` for sizes whose rows need no padding).
    public static func videoFrameHashes(_ path: String) throws -> [String] {
        let demuxer = path.hasSuffix(".mkv") || path.hasSuffix(".webm") ? "matroskademux" : "qtdemux"
        let r = try ProcessRunner.run("gst-launch-1.0", ["-q", "filesrc", "location=\(path)", "!", demuxer, "!", "queue", "!",
                                                         "decodebin", "!", "videoconvert", "!", "video/x-raw,format=I420", "!",
                                                         "checksumsink", "hash=md5", "sync=false"])
        guard r.status == 0 else {
            throw GStreamerError(description: "gst-launch-1.0 could not play \(path) (status \(r.status)): \(r.stderr.prefix(600))")
        }
        // One line per buffer: "H:MM:SS.NNNNNNNNN HASH".
        return r.stdout.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            return parts.count == 2 && parts[0].contains(":") ? String(parts[1]) : nil
        }
    }

    public struct GStreamerError: Error, CustomStringConvertible {
        public let description: String
    }
}

extension GStreamerProbe {
    /// Seconds the discoverer may take: its default (10 s) ends it early on a busy machine, with no answer and
    /// status 0.
    public static let discovererTimeout = 300

    /// The duration GStreamer's discoverer gives the file (what a GStreamer-based player shows).
    public static func duration(_ path: String) throws -> Double {
        let r = try ProcessRunner.check("gst-discoverer-1.0", ["--timeout", String(discovererTimeout), path])
        guard let line = r.stdout.split(separator: "\n").first(where: { $0.contains("Duration: ") }),
              let text = line.split(separator: " ").last else {
            throw GStreamerError(description: "gst-discoverer-1.0 gives no duration for \(path): \(r.stdout.suffix(400))")
        }
        // H:MM:SS.NNNNNNNNN
        let parts = text.split(separator: ":").compactMap { Double($0) }
        guard parts.count == 3 else { throw GStreamerError(description: "gst-discoverer-1.0: unreadable duration \(text)") }
        return parts[0] * 3600 + parts[1] * 60 + parts[2]
    }
}
