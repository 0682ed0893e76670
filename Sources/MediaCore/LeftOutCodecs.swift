internal import CFFmpeg
internal import CMediaShims

/// The FFmpeg codecs this build leaves out.
///
/// The container image (script/image) replaces libraries that Debian's FFmpeg links but the farm never needs
/// (docker/stand-ins: librsvg for SVG pictures, Codec 2 speech, encoders it never chooses, among others) with
/// stand-ins that export the same names and do nothing. FFmpeg still offers their codecs, and would call into nothing.
/// So every codec opened here is checked against this set first, and probing a file gives FFmpeg the list of
/// decoders it may open, which leaves them out. Empty in an ordinary build.
enum LeftOutCodecs {
    /// Read once, from the libraries loaded at start (stand-ins are never loaded later).
    static let names: Set<String> = scan()

    /// The names the loaded stand-ins declare.
    static func scan() -> Set<String> {
        let needed = mf_left_out_codecs(nil, 0)
        guard needed > 0 else { return [] }
        var buffer = [CChar](repeating: 0, count: needed + 1)
        _ = mf_left_out_codecs(&buffer, buffer.count)
        return Set(String(cBuffer: buffer).split(separator: ",").map(String.init))
    }

    /// The refusal for a left-out codec: what it is and what to use instead.
    static func refusal(_ name: String, decoder: Bool) -> FFmpegError {
        FFmpegError(code: decoder ? FFmpegError.decoderNotFound.code : FFmpegError.encoderNotFound.code,
                    operation: decoder ? "avcodec_find_decoder" : "avcodec_find_encoder",
                    detail: "the \(name) \(decoder ? "decoder" : "encoder") is left out of this build, which has a stand-in for its "
                        + "library, as the container image does: process this file with a mediafarm installed by script/install")
    }

    /// Throws the refusal when `codec` is left out.
    static func check(_ codec: UnsafePointer<AVCodec>, decoder: Bool) throws(FFmpegError) {
        guard !names.isEmpty else { return }
        let name = String(cString: codec.pointee.name)
        if names.contains(name) { throw refusal(name, decoder: decoder) }
    }

    /// Whether FFmpeg's default decoder for `id` is one this build has.
    static func hasDecoder(_ id: AVCodecID) -> Bool {
        guard let codec = avcodec_find_decoder(id) else { return false }
        return names.isEmpty || !names.contains(String(cString: codec.pointee.name))
    }

    /// The `codec_whitelist` for probing a file: every decoder but the left-out ones; nil when none is.
    static let probeWhitelist: String? = whitelist(leavingOut: names)

    static func whitelist(leavingOut leftOut: Set<String>) -> String? {
        guard !leftOut.isEmpty else { return nil }
        var opaque: UnsafeMutableRawPointer? = nil
        var allowed: [String] = []
        while let codec = av_codec_iterate(&opaque) {
            guard av_codec_is_decoder(codec) != 0 else { continue }
            let name = String(cString: codec.pointee.name)
            if !leftOut.contains(name) { allowed.append(name) }
        }
        return allowed.joined(separator: ",")
    }
}
