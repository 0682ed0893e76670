import MediaCore
import MediaInspect
import MediaTime

/// The human-readable form of `inspect`: one block per input, one line per track.
enum InspectText {
    static func render(_ reports: [AssetReport]) -> String {
        var out = ""
        for r in reports {
            guard r.error == nil || r.tracks != nil else {
                out += "\(r.path)\n  ERROR \(r.error ?? "")\n\n"
                continue
            }
            var head = [r.path]
            if let d = r.duration, d.isNumeric { head.append("\(MediaTime.formatSeconds(d.seconds)) s") }
            if let f = r.format { head.append(f.name) }
            var flags: [String] = []
            if r.isReadable == true { flags.append("readable") }
            if r.isPlayable == true { flags.append("playable") }
            if r.isExportable == true { flags.append("exportable") }
            if r.isComposable == true { flags.append("composable") }
            if !flags.isEmpty { head.append(flags.joined(separator: ",")) }
            out += head.joined(separator: "  ") + "\n"
            if let title = r.metadata?.title { out += "  title: \(title)\n" }
            for t in r.tracks ?? [] { out += "  " + trackLine(t) + "\n" }
            if let chapters = r.chapters, !chapters.isEmpty {
                out += "  chapters: " + chapters.map { "\($0.title ?? "?")@\(MediaTime.formatSeconds($0.start.seconds))" }
                    .joined(separator: ", ") + "\n"
            }
            if let loudness = r.loudness {
                if loudness.tracks.isEmpty { out += "  loudness: no audio track\n" }
                for t in loudness.tracks {
                    let f = t.loudness
                    out += "  loudness #\(t.trackID): integrated \(LoudnessCommand.number(f.integrated, "LUFS"))  range \(LoudnessCommand.number(f.range, "LU"))"
                        + "  true peak \(LoudnessCommand.number(f.truePeak, "dBTP"))\(f.note.map { "  (\($0))" } ?? "")\n"
                }
            }
            if let e = r.error { out += "  ERROR \(e)\n" }
            out += "\n"
        }
        return out
    }

    static func trackLine(_ t: AssetReport.TrackReport) -> String {
        var parts = ["#\(t.trackID)", t.mediaType.rawValue, t.codec]
        if let s = t.naturalSize { parts.append("\(s.width)x\(s.height)") }
        if let r = t.rotation, r != 0 { parts.append("rot \(MediaTime.formatSeconds(r))") }
        if let f = t.nominalFrameRate, f > 0 { parts.append("\(MediaTime.formatSeconds((f * 1000).rounded() / 1000)) fps") }
        if let sr = t.sampleRate { parts.append("\(sr) Hz") }
        if let ch = t.channelCount { parts.append("\(ch) ch") }
        if let range = t.timeRange, range.isValid {
            parts.append("\(MediaTime.formatSeconds(range.start.seconds))+\(MediaTime.formatSeconds(range.duration.seconds)) s")
        }
        if let rate = t.estimatedDataRate, rate > 0 { parts.append("\(rate / 1000) kb/s") }
        parts.append(t.languageCode)
        if t.isDecodable == false { parts.append("NOT DECODABLE") }
        return parts.joined(separator: "  ")
    }
}
