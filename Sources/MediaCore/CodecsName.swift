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

extension CodecsName {
    /// The `CODECS` name an HEVC or AV1 configuration record gives (`type` "hvcC" or "av1C", `record` its
    /// payload): ISO/IEC 14496-15 E.3 (`hvc1.1.6.L93.90`), AV1 in ISOBMFF's "Codecs Parameter String"
    /// (`av01.0.05M.08`); nil for another record, or one cut short.
    public static func of(configuration type: String, record: ArraySlice<UInt8>) -> String? {
        let hex = { (value: UInt64) in String(value, radix: 16, uppercase: true) }
        if type == "hvcC", record.count >= 13 {
            let b = Array(record)
            let space = ["", "A", "B", "C"][Int(b[1] >> 6)], tier = b[1] & 0x20 != 0 ? "H" : "L", profile = b[1] & 0x1F
            // The compatibility flags in reverse bit order; the constraint bytes without the trailing zeros.
            let flags = UInt32(b[2]) << 24 | UInt32(b[3]) << 16 | UInt32(b[4]) << 8 | UInt32(b[5])
            var reversed: UInt32 = 0
            for bit in 0..<32 where flags & (1 << bit) != 0 { reversed |= 1 << (31 - bit) }
            var constraints = Array(b[6..<12])
            while constraints.last == 0 { constraints.removeLast() }
            return "hvc1.\(space)\(profile).\(hex(UInt64(reversed))).\(tier)\(b[12])" + constraints.map { "." + hex(UInt64($0)) }.joined()
        }
        if type == "av1C", record.count >= 4 {
            let b = Array(record)
            let depth = b[2] & 0x40 == 0 ? 8 : b[2] & 0x20 != 0 ? 12 : 10
            return "av01.\(b[1] >> 5)." + String(format: "%02d", Int(b[1] & 0x1F)) + (b[2] & 0x80 != 0 ? "H" : "M") + "." + String(format: "%02d", depth)
        }
        return nil
    }
}

extension StreamInfo {
    /// `CodecsName` of the stream as it is stored.
    public var codecsName: String? { CodecsName.of(codecName, extradata: extradata) }
}
