import Foundation
import MediaCore
import MediaTime

/// A package's subtitles in one language: the cues of each source's text track in it, placed on the
/// composition's timeline through the mapping (cut where the pieces are, retimed where they are scaled),
/// then written as WebVTT segments at the video's boundaries (a cue that spans a boundary is in both
/// segments, as HLS asks) with `X-TIMESTAMP-MAP` tying their times to the media's, and as one whole file
/// that the MPD names.
struct SubtitleRendition {
    let language: String
    /// The language tag of the first source's track (`eng` where `en` was asked), which a movie's track keeps.
    let trackLanguage: String?
    /// The cues in composition time, in order.
    let cues: [TextCue]

    /// Reads each source's first text track in `language` (every source must have one), once a file
    /// however many pieces of the composition come from it.
    init(language: String, sources: [ExportSource], mapping: TimeMapping, limits: SafetyLimits, interrupter: Interrupter) throws {
        self.language = language
        var read: [String: (cues: [TextCue], language: String?)] = [:]
        var placed: [TextCue] = []
        var trackLanguage: String?
        for (segment, source) in sources.enumerated() where !mapping.pieces(of: segment).isEmpty {
            let track = try read[source.path] ?? Self.cues(of: source.path, in: language, limits: limits, interrupter: interrupter)
            read[source.path] = track
            if read.count == 1 { trackLanguage = track.language }
            for cue in track.cues {
                for piece in mapping.pieces(of: segment) where cue.start < piece.source.end && cue.end > piece.source.start {
                    let from = piece.targetTime(at: max(cue.start, piece.source.start)), to = piece.targetTime(at: min(cue.end, piece.source.end))
                    if from < to { placed.append(TextCue(start: from, end: to, text: cue.text)) }
                }
            }
        }
        // A cue cut where two pieces meet is one cue again.
        var merged: [TextCue] = []
        for cue in placed.sorted(by: { $0.start < $1.start }) {
            if let last = merged.last, last.text == cue.text, last.end == cue.start { merged[merged.count - 1].end = cue.end } else { merged.append(cue) }
        }
        cues = merged
        self.trackLanguage = trackLanguage
    }

    /// The cues of the first text track in `language` of the file at `path`, timed from its start, and the track's tag.
    static func cues(of path: String, in language: String, limits: SafetyLimits, interrupter: Interrupter) throws -> (cues: [TextCue], language: String?) {
        let file = try InputFile(path: path, limits: limits, interrupter: interrupter)
        let tracks = file.streams.filter { $0.mediaType == .subtitle && LanguageMatch.matches(language, track: $0.language) }
        guard let track = tracks.first(where: TextSubtitles.isText) else {
            let has = file.streams.filter { $0.mediaType == .subtitle }.map { "\($0.language ?? "und") (\($0.codecName))" }
            throw ExportError("\(path) has no text subtitles in \"\(language)\"" + (tracks.isEmpty
                ? " (its subtitles: \(has.isEmpty ? "none" : has.joined(separator: ", ")))"
                : ": its \(tracks[0].codecName) track is pictures, which cannot become WebVTT text"))
        }
        let origin = file.container.startTime.isNumeric ? file.container.startTime : .zero
        return (try TextSubtitles.cues(of: file, stream: track.index).map { TextCue(start: $0.start - origin, end: $0.end - origin, text: $0.text) },
                track.language)
    }

    /// Writes the segments (`1.vtt`, …, one per `[boundaries[i], boundaries[i + 1])`) and `all.vtt` into
    /// `folder/name`; returns the track the playlists are written from (milliseconds).
    func write(into folder: String, name: String, boundaries: [MediaTime], container: SegmentContainer) throws -> StreamTrack {
        let origin = container == .transportStream ? SegmentContainer.transportOrigin : 0
        let path = folder + "/" + name
        do { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false) } catch {
            throw ExportError("\(path): cannot make the subtitles' folder: \(error.localizedDescription)")
        }
        var segments: [StreamSegment] = []
        for (i, (from, to)) in zip(boundaries, boundaries.dropFirst()).enumerated() {
            let text = Self.document(cues.filter { $0.end > from && $0.start < to }, origin: origin)
            try SegmentedTrack.store(Array(text.utf8), at: path + "/\(i + 1).vtt")
            let start = from.count(in: Rational(1, 1000)) ?? 0, end = to.count(in: Rational(1, 1000)) ?? 0
            segments.append(StreamSegment(file: "\(i + 1).vtt", start: start, duration: end - start, bytes: text.utf8.count))
        }
        try SegmentedTrack.store(Array(Self.document(cues, origin: origin).utf8), at: path + "/all.vtt")
        return StreamTrack(kind: .text, folder: name, initialization: "all.vtt", codecs: "wvtt", timescale: 1000, language: language, segments: segments)
    }

    /// A WebVTT file of `cues`, whose times are the media's: X-TIMESTAMP-MAP ties its 0 to the media's 0,
    /// `origin` in MPEG-TS's 90 kHz clock (0 for CMAF tracks, which present from 0).
    static func document(_ cues: [TextCue], origin: Int64 = 0) -> String {
        var lines = ["WEBVTT", "X-TIMESTAMP-MAP=MPEGTS:\(origin),LOCAL:00:00:00.000", ""]
        for cue in cues {
            lines.append("\(timestamp(cue.start)) --> \(timestamp(cue.end))")
            // A blank line would end the cue early, and "-->" would start another: neither is text.
            lines.append(cue.text.replacingOccurrences(of: "-->", with: "->").split(separator: "\n", omittingEmptySubsequences: true).joined(separator: "\n"))
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    /// `HH:MM:SS.mmm`.
    static func timestamp(_ t: MediaTime) -> String {
        let ms = max(0, t.count(in: Rational(1, 1000)) ?? 0)
        return String(format: "%02lld:%02lld:%02lld.%03lld", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }
}
