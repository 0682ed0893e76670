/// Rewrites HEVC access units where an edit starts, as a splicer does (ITU-T H.265, 7.4.2.2 and
/// C.5.2.2): a CRA picture that begins an edit becomes a BLA picture.
enum HEVCSplice {
    static let cra: UInt8 = 21
    static let blaWithLeadingPictures: UInt8 = 16

    /// Changes every CRA slice NAL unit of an access unit in length-prefixed framing (`lengthSize` bytes
    /// per length) to BLA_W_LP. Leaves other NAL units, and malformed data, alone.
    static func markBrokenLinks(_ data: UnsafeMutableBufferPointer<UInt8>, lengthSize: Int) {
        var at = 0
        while at + lengthSize + 2 <= data.count {
            var length = 0
            for i in 0..<lengthSize { length = length << 8 | Int(data[at + i]) }
            let header = at + lengthSize
            guard length >= 2, header + length <= data.count else { return }
            if (data[header] >> 1) & 0x3F == cra {
                data[header] = (data[header] & 0x81) | (blaWithLeadingPictures << 1)
            }
            at = header + length
        }
    }
}
