/// A stream's `CODECS` name (RFC 6381) as HLS and DASH write it, read from its codec's header: `avc1.PPCCLL`
/// from the H.264 record's profile, constraints and level; `mp4a.40.T` from the AAC object type.
public enum CodecsName {
    /// nil for codecs other than H.264 and AAC, or a header that does not say.
    public static func of(_ codecName: String, extradata header: [UInt8]) -> String? {
        switch codecName {
        case "libx264", "h264":
            // An avcC record (version 1, then profile, constraints, level), or Annex B as libx264 makes
            // it: the same three bytes follow the sequence parameter set's NAL header.
            let hex = { (bytes: ArraySlice<UInt8>) in "avc1." + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
            if header.count >= 4, header[0] == 1 { return hex(header[1...3]) }
            var i = 0
            while i + 6 < header.count {
                if header[i] == 0, header[i + 1] == 0, header[i + 2] == 1, header[i + 3] & 0x1F == 7 { return hex(header[i + 4...i + 6]) }
                i += 1
            }
            return nil
        case "aac":
            guard let first = header.first else { return nil }
            return "mp4a.40.\(first >> 3)"
        default:
            return nil
        }
    }
}

extension StreamInfo {
    /// `CodecsName` of the stream as it is stored.
    public var codecsName: String? { CodecsName.of(codecName, extradata: extradata) }
}
