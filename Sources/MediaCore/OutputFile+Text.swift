internal import CFFmpeg
import Foundation
import MediaTime

/// How a container carries text subtitles: 3GPP timed text (`tx3g`) in MP4 and MOV, SubRip (`S_TEXT/UTF8`)
/// in Matroska. Each cue is one packet, timed by its start and lasting until its end.
public enum TextTrackCodec: String, Sendable, CaseIterable {
    case movText = "mov_text"
    case subrip

    /// The codec of text subtitles in the muxer `format` ("mp4", "mov", "matroska"); nil for another.
    public init?(muxer format: String) {
        switch format {
        case "mp4", "mov": self = .movText
        case "matroska": self = .subrip
        default: return nil
        }
    }

    /// A cue's packet from its WebVTT payload (`TextCue.text`: `<i>`, `<b>`, `<u>` and entities). SubRip
    /// keeps the three tags, which its players show; 3GPP text is plain (its styles would be records of
    /// character ranges), so the tags go. Entities are the characters they name in both.
    public func packet(_ payload: String) -> [UInt8] {
        var text = payload
        if self == .movText { text = text.replacingOccurrences(of: "</?[ibu]>", with: "", options: .regularExpression) }
        for (entity, character) in [("&lt;", "<"), ("&gt;", ">"), ("&nbsp;", "\u{a0}"), ("&lrm;", "\u{200e}"), ("&rlm;", "\u{200f}"), ("&amp;", "&")] {
            text = text.replacingOccurrences(of: entity, with: character)
        }
        let bytes = Array(text.utf8)
        switch self {
        case .subrip: return bytes
        case .movText:
            // A 16-bit length, then the text (3GPP TS 26.245 5.17): a longer text is cut at a character's start.
            var end = min(bytes.count, Int(UInt16.max))
            while end < bytes.count, end > 0, bytes[end] & 0xc0 == 0x80 { end -= 1 }
            return [UInt8(end >> 8), UInt8(end & 0xff)] + bytes[..<end]
        }
    }

    /// The sample description's body after its reserved bytes and data-reference index, as FFmpeg's
    /// mov_text encoder writes it (3GPP TS 26.245 5.16): no display flags, centred at the bottom, a
    /// clear background, an empty box, a default style (font 1, 18 pt, opaque white) and a font table
    /// naming font 1 "Serif".
    static let textSampleEntry: [UInt8] = [
        0, 0, 0, 0, 0x01, 0xff, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0x01, 0, 0x12, 0xff, 0xff, 0xff, 0xff,
        0, 0, 0, 0x12, 0x66, 0x74, 0x61, 0x62, 0, 0x01, 0, 0x01, 0x05, 0x53, 0x65, 0x72, 0x69, 0x66,
    ]
}

extension OutputFile {
    /// Adds a text subtitle stream of `codec`, labelled `language`, timed in milliseconds. Returns its index.
    public func addTextStream(_ codec: TextTrackCodec, language: String?) throws(MediaFileError) -> Int {
        guard let s = avformat_new_stream(context, nil) else { throw failure(.outOfMemory, "adding a subtitle stream") }
        let par = s.pointee.codecpar!
        par.pointee.codec_type = AVMEDIA_TYPE_SUBTITLE
        par.pointee.codec_id = codec == .movText ? AV_CODEC_ID_MOV_TEXT : AV_CODEC_ID_SUBRIP
        s.pointee.time_base = AVRational(num: 1, den: 1000)
        if let language { av_dict_set(&s.pointee.metadata, "language", language, 0) }
        let index = Int(s.pointee.index)
        if codec == .movText { try setCodecHeader(index, TextTrackCodec.textSampleEntry) }
        return index
    }
}
