/// H.264 and HEVC access units in the framings MediaFarm meets: length-prefixed (MP4, QuickTime,
/// Matroska; the length size comes from the stream's avcC/hvcC record) and Annex B (start codes, as
/// libx264 and libx265 write when headers go in-band).
enum NALUnits {
    /// The NAL length size of a stream's configuration record, or nil when it has none (Annex B).
    static func lengthSize(codec: String, extradata e: [UInt8]) -> Int? {
        switch codec {
        case "h264": return e.count > 4 && e[0] == 1 ? Int(e[4] & 3) + 1 : nil
        case "hevc": return e.count > 21 && e[0] == 1 ? Int(e[21] & 3) + 1 : nil
        default: return nil
        }
    }

    /// Whether a length-prefixed H.264 access unit holds an IDR slice (NAL unit type 5): a picture a
    /// segment can begin at, where an open GOP's I picture (a recovery point) is not.
    static func holdsIDR(_ data: UnsafeBufferPointer<UInt8>, lengthSize: Int) -> Bool {
        var at = 0
        while at + lengthSize < data.count {
            let length = data[at..<at + lengthSize].reduce(0) { $0 << 8 | Int($1) }
            if data[at + lengthSize] & 0x1F == 5 { return true }
            guard length > 0 else { return false }
            at += lengthSize + length
        }
        return false
    }

    /// The parameter sets (H.264 SPS and PPS; HEVC VPS, SPS, PPS) of a configuration record, each
    /// framed with a `lengthSize`-byte length: to repeat them in-band.
    static func parameterSets(codec: String, extradata e: [UInt8], lengthSize: Int) -> [UInt8] {
        var units: [ArraySlice<UInt8>] = []
        func u16(_ i: Int) -> Int { Int(e[i]) << 8 | Int(e[i + 1]) }
        switch codec {
        case "h264":
            // avcC: 5 bytes, then SPS count (low 5 bits) and SPSs, PPS count and PPSs, each 16-bit sized.
            guard e.count > 6 else { return [] }
            var at = 6
            func read(_ n: Int) -> Bool {
                for _ in 0..<n {
                    guard at + 2 <= e.count, at + 2 + u16(at) <= e.count else { return false }
                    units.append(e[(at + 2)..<(at + 2 + u16(at))])
                    at += 2 + u16(at)
                }
                return true
            }
            guard read(Int(e[5] & 0x1F)), at < e.count else { return [] }
            at += 1
            guard read(Int(e[at - 1])) else { return [] }
        case "hevc":
            guard e.count > 23 else { return [] }
            var at = 23
            for _ in 0..<Int(e[22]) {
                guard at + 3 <= e.count else { return [] }
                let type = e[at] & 0x3F
                let count = u16(at + 1)
                at += 3
                for _ in 0..<count {
                    guard at + 2 <= e.count else { return [] }
                    let length = u16(at)
                    guard at + 2 + length <= e.count else { return [] }
                    if (32...34).contains(type) { units.append(e[(at + 2)..<(at + 2 + length)]) }
                    at += 2 + length
                }
            }
        default:
            return []
        }
        return units.flatMap { framed($0, lengthSize: lengthSize) }
    }

    /// Annex B data (start-code separated) in length-prefixed framing.
    static func lengthPrefixed(annexB data: [UInt8], lengthSize: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 16)
        var starts: [(code: Int, payload: Int)] = []
        var i = 0
        while i + 3 <= data.count {
            if data[i] == 0, data[i + 1] == 0, data[i + 2] == 1 {
                starts.append((i > 0 && data[i - 1] == 0 ? i - 1 : i, i + 3))
                i += 3
            } else {
                i += 1
            }
        }
        for (n, s) in starts.enumerated() {
            let end = n + 1 < starts.count ? starts[n + 1].code : data.count
            guard end > s.payload else { continue }
            out += framed(data[s.payload..<end], lengthSize: lengthSize)
        }
        return out
    }

    static func framed(_ unit: ArraySlice<UInt8>, lengthSize: Int) -> [UInt8] {
        (0..<lengthSize).map { UInt8(truncatingIfNeeded: unit.count >> (8 * (lengthSize - 1 - $0))) } + unit
    }

    static let hevcCRA: UInt8 = 21
    static let hevcBLAWithLeadingPictures: UInt8 = 16

    /// Where an edit starts on an HEVC CRA picture after other frames, does what splicers do (ITU-T
    /// H.265, 7.4.2.2 and C.5.2.2): changes its slices to BLA_W_LP, so that decoders start a new
    /// sequence there, skip its leading pictures that reference the previous GOP and still output the
    /// frames before it (a CRA that starts a sequence would drop them). `data` is one access unit in
    /// length-prefixed framing; other NAL units, and malformed data, are left alone.
    static func markBrokenLinks(_ data: UnsafeMutableBufferPointer<UInt8>, lengthSize: Int) {
        var at = 0
        while at + lengthSize + 2 <= data.count {
            var length = 0
            for i in 0..<lengthSize { length = length << 8 | Int(data[at + i]) }
            let header = at + lengthSize
            guard length >= 2, header + length <= data.count else { return }
            if (data[header] >> 1) & 0x3F == hevcCRA {
                data[header] = (data[header] & 0x81) | (hevcBLAWithLeadingPictures << 1)
            }
            at = header + length
        }
    }
}
