internal import CFFmpeg
import Foundation
internal import CMediaShims
import MediaTime

/// A subtitle cue as WebVTT writes it: its times in the file's timeline and its payload (FFmpeg's WebVTT
/// encoder's, from the decoder's ASS events: `<i>`, `<b>` and `<u>` kept, override tags dropped).
public struct TextCue: Sendable, Hashable {
    public var start: MediaTime
    public var end: MediaTime
    public var text: String

    public init(start: MediaTime, end: MediaTime, text: String) { (self.start, self.end, self.text) = (start, end, text) }
}

/// The cues of a text subtitle track (SubRip, ASS/SSA, mov_text, WebVTT, plain text), decoded by FFmpeg and
/// written by its WebVTT encoder. A bitmap track (DVD, Blu-ray PGS, DVB) has no text to give.
public enum TextSubtitles {
    /// Whether the track's codec carries text (FFmpeg's AV_CODEC_PROP_TEXT_SUB).
    public static func isText(_ stream: StreamInfo) -> Bool {
        guard let descriptor = avcodec_descriptor_get_by_name(stream.codecName) else { return false }
        return descriptor.pointee.props & AV_CODEC_PROP_TEXT_SUB != 0
    }

    /// Every cue of `stream` (a subtitle track of `file`, read from its start), in the file's time (its
    /// start time is not taken off). Reads the whole file's packets of that track.
    public static func cues(of file: InputFile, stream index: Int) throws(MediaFileError) -> [TextCue] {
        let stream = file.streams[index]
        func failure(_ error: FFmpegError) -> MediaFileError {
            MediaFileError(path: file.path, reason: .undecodable(track: index, codec: stream.codecName, error))
        }
        guard isText(stream) else {
            throw failure(FFmpegError(code: FFmpegError.invalidArgument.code, operation: nil,
                                      detail: "the \(stream.codecName) subtitle track is pictures, not text: it cannot become WebVTT"))
        }
        let avStream = file.context.pointee.streams[index]!
        guard let codec = avcodec_find_decoder(avStream.pointee.codecpar.pointee.codec_id), let vtt = avcodec_find_encoder_by_name("webvtt") else {
            throw failure(.decoderNotFound)
        }
        var decoder = avcodec_alloc_context3(codec), encoder = avcodec_alloc_context3(vtt)
        defer { avcodec_free_context(&decoder); avcodec_free_context(&encoder) }
        guard let decoder, let encoder else { throw failure(.outOfMemory) }
        var r = avcodec_parameters_to_context(decoder, avStream.pointee.codecpar)
        if r >= 0 {
            decoder.pointee.pkt_timebase = avStream.pointee.time_base
            r = avcodec_open2(decoder, codec, nil)
        }
        if r < 0 { throw failure(.capture(r, "avcodec_open2")) }
        // The encoder reads the ASS events the decoder writes, with the decoder's ASS header.
        if let header = decoder.pointee.subtitle_header, decoder.pointee.subtitle_header_size > 0 {
            encoder.pointee.subtitle_header = av_memdup(header, Int(decoder.pointee.subtitle_header_size)).assumingMemoryBound(to: UInt8.self)
            encoder.pointee.subtitle_header_size = decoder.pointee.subtitle_header_size
        }
        encoder.pointee.time_base = AVRational(num: 1, den: 1000)
        r = avcodec_open2(encoder, vtt, nil)
        if r < 0 { throw failure(.capture(r, "avcodec_open2 (webvtt)")) }
        file.discardAll(except: [index])
        var cues: [TextCue] = []
        var packet = Packet()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while try file.read(into: &packet) == .packet {
            guard packet.streamIndex == index, let pts = packet.pts else { continue }
            var subtitle = AVSubtitle()
            var got: Int32 = 0
            let decoded = avcodec_decode_subtitle2(decoder, &subtitle, &got, packet.pointer)
            defer { avsubtitle_free(&subtitle) }
            guard decoded >= 0, got != 0, subtitle.num_rects > 0 else { continue }  // an event that cannot be read is left out, as players do
            let written = buffer.withUnsafeMutableBufferPointer { avcodec_encode_subtitle(encoder, $0.baseAddress, Int32($0.count), &subtitle) }
            guard written > 0 else { continue }  // no text in it (an empty event)
            let text = String(decoding: buffer[0..<Int(written)], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { continue }
            let tb = stream.timeBase
            let at = MediaTime(count: pts, timeBase: tb) + MediaTime(value: Int64(subtitle.start_display_time), timescale: 1000)
            let lasting: MediaTime = subtitle.end_display_time > subtitle.start_display_time && subtitle.end_display_time != UInt32.max
                ? MediaTime(value: Int64(subtitle.end_display_time - subtitle.start_display_time), timescale: 1000)
                : MediaTime(count: max(packet.duration, 1), timeBase: tb)
            cues.append(TextCue(start: at, end: at + lasting, text: text))
        }
        return cues.sorted { $0.start < $1.start }
    }
}
