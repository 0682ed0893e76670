import MediaCore
import MediaTime

/// A text subtitle track an export keeps (`ExportSettings.subtitleLanguages`): the cues of the sources'
/// text track in its language placed on the composition's timeline (`SubtitleRendition`: cut where the
/// pieces are, retimed where they are scaled), ending with the export, and written as the container
/// carries text (`TextTrackCodec`), each cue just before the first video packet decoded after its start.
final class TextTrackWriter {
    let file: OutputFile
    let stream: Int
    let codec: TextTrackCodec
    let language: String
    let cues: [TextCue]
    private var next = 0

    /// One writer per language, each a stream of `file` in the order asked. Refused for a container that
    /// carries no text, and for a source without a text track in a language (`SubtitleRendition`).
    static func tracks(_ languages: [String], mapping: TimeMapping, sources: [ExportSource], totalDuration: MediaTime, file: OutputFile,
                       settings: ExportSettings, interrupter: Interrupter) throws -> [TextTrackWriter] {
        guard !languages.isEmpty else { return [] }
        guard let codec = TextTrackCodec(muxer: settings.muxer) else {
            throw ExportError("\(settings.outputPath): a \(settings.muxer) file carries no text subtitles: export to .mp4, .mov or .mkv, "
                              + "or leave out \"subtitles\"")
        }
        return try languages.map { language in
            let rendition = try SubtitleRendition(language: language, sources: sources, mapping: mapping, limits: settings.limits, interrupter: interrupter)
            let cues = Self.packets(rendition.cues.filter { $0.start < totalDuration }, until: totalDuration, codec: codec)
            return TextTrackWriter(file: file, stream: try file.addTextStream(codec, language: rendition.trackLanguage ?? language), codec: codec,
                                   language: language, cues: cues)
        }
    }

    /// The cues as packets of `codec` can carry them, in order, ending by `end`: cues that start together are
    /// one (their lines in order; a stream's packets cannot share a time), and 3GPP text, which shows one
    /// sample at a time, ends each cue where the next begins.
    /// Times are counted in the streams' milliseconds first: cues less than 1 ms apart start together.
    static func packets(_ cues: [TextCue], until end: MediaTime, codec: TextTrackCodec) -> [TextCue] {
        let ms = Rational(1, 1000)
        let counted = { (t: MediaTime) in MediaTime(value: t.count(in: ms) ?? 0, timescale: 1000) }
        var merged: [TextCue] = []
        for cue in cues.map({ TextCue(start: counted($0.start), end: counted($0.end), text: $0.text) }) {
            if let last = merged.last, last.start == cue.start {
                merged[merged.count - 1].text += "\n" + cue.text
                merged[merged.count - 1].end = max(last.end, cue.end)
            } else {
                merged.append(cue)
            }
        }
        for i in merged.indices {
            merged[i].end = min(merged[i].end, counted(end))
            if codec == .movText, i + 1 < merged.count { merged[i].end = min(merged[i].end, merged[i + 1].start) }
        }
        return merged.filter { $0.start < counted(end) }
    }

    private init(file: OutputFile, stream: Int, codec: TextTrackCodec, language: String, cues: [TextCue]) {
        (self.file, self.stream, self.codec, self.language, self.cues) = (file, stream, codec, language, cues)
    }

    /// Writes every cue that starts at or before `until`; nil: all that are left.
    func write(until: MediaTime?) throws {
        let tb = file.timeBase(of: stream)
        var packet = Packet()
        while next < cues.count, until.map({ cues[next].start <= $0 }) ?? true {
            let cue = cues[next]
            next += 1
            let start = cue.start.count(in: tb) ?? 0, end = cue.end.count(in: tb) ?? start
            packet.replaceData(with: codec.packet(cue.text))
            packet.retime(pts: start, dts: start, duration: max(end - start, 1), streamIndex: stream)
            try file.write(&packet)
        }
    }

    var report: ExportReport.Subtitles { ExportReport.Subtitles(language: language, codec: codec.rawValue, cues: cues.count) }
}
