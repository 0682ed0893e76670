import MediaCore

/// A transport stream's H.264 and AAC framed as MPEG-4 carries them, for a package copied without encoding:
/// H.264 from Annex B (start codes, parameter sets in-band) to an avcC record and 4-byte lengths (ISO/IEC
/// 14496-15, 5.3.3), and AAC from ADTS frames to raw frames and an AudioSpecificConfig (ISO/IEC 14496-3,
/// 1.6.2.1 and 1.A.2.2), as FFmpeg's mov muxer and `aac_adtstoasc` do.
enum TransportFraming {
    /// The avcC record of the first sequence and picture parameter sets found in Annex B `data` (a stream's
    /// extradata, or a keyframe's packet); nil when it holds neither.
    static func avcC(annexB data: [UInt8]) -> [UInt8]? {
        let units = self.units(data)
        // Each sized in 16 bits in the record: a longer unit is no parameter set.
        guard let sps = units.first(where: { $0.first.map { $0 & 0x1F == 7 } == true }), (4...0xFFFF).contains(sps.count),
              let pps = units.first(where: { $0.first.map { $0 & 0x1F == 8 } == true }), pps.count <= 0xFFFF else { return nil }
        func sized(_ unit: ArraySlice<UInt8>) -> [UInt8] { [UInt8(unit.count >> 8), UInt8(unit.count & 0xFF)] + unit }
        // Version 1, profile, constraints, level (the SPS's bytes after its header), 4-byte lengths, one SPS, one PPS.
        return [1, sps[sps.startIndex + 1], sps[sps.startIndex + 2], sps[sps.startIndex + 3], 0xFF, 0xE1] + sized(sps) + [1] + sized(pps)
    }

    /// Whether the Annex B access unit `data` holds an IDR slice (NAL unit type 5): a picture a segment can
    /// begin at, where a recovery point's I picture, which a transport stream also flags, is not.
    static func holdsIDR(annexB data: UnsafeBufferPointer<UInt8>) -> Bool {
        units(data).contains { $0.first.map { $0 & 0x1F == 5 } == true }
    }

    /// One access unit of Annex B `data` as MP4 sample bytes (4-byte lengths): without access unit delimiters,
    /// and without the parameter sets `record` holds. Nil when it carries other parameter sets than the
    /// record's (the stream changes its format midway: one sample entry cannot describe both), or nothing but
    /// those (no picture: an empty sample).
    static func sample(annexB data: UnsafeBufferPointer<UInt8>, record: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 8)
        let kept = NALUnits.parameterSets(codec: "h264", extradata: record, lengthSize: 4)
        for unit in units(data) {
            guard let header = unit.first else { continue }
            let type = header & 0x1F
            if type == 9 { continue }
            let framed = NALUnits.framed(unit, lengthSize: 4)
            if type == 7 || type == 8 {
                guard contains(kept, framed) else { return nil }
                continue
            }
            out += framed
        }
        return out.isEmpty ? nil : out
    }

    /// The NAL units of Annex B `data`, without their start codes (trailing zero bytes dropped).
    static func units<C: RandomAccessCollection>(_ data: C) -> [ArraySlice<UInt8>] where C.Element == UInt8, C.Index == Int {
        let bytes = Array(data)
        var starts: [(code: Int, payload: Int)] = []
        var i = 0
        while i + 3 <= bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                starts.append((i, i + 3))
                i += 3
            } else {
                i += 1
            }
        }
        return starts.enumerated().compactMap { n, s in
            var end = n + 1 < starts.count ? starts[n + 1].code : bytes.count
            while end > s.payload, bytes[end - 1] == 0 { end -= 1 }
            return end > s.payload ? bytes[s.payload..<end] : nil
        }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// An ADTS frame's header: the AudioSpecificConfig it implies (object type, sampling frequency index,
    /// channel configuration) and where its raw frame begins. Nil when `data` is no single-block ADTS frame.
    struct ADTSHeader: Equatable {
        var config: [UInt8]
        var length: Int

        init?(_ data: UnsafeBufferPointer<UInt8>) {
            guard data.count >= 7, data[0] == 0xFF, data[1] & 0xF6 == 0xF0 else { return nil }
            let objectType = Int(data[2] >> 6) + 1
            let frequency = Int(data[2] >> 2) & 0xF
            let channels = Int(data[2] & 1) << 2 | Int(data[3] >> 6)
            let frameLength = Int(data[3] & 3) << 11 | Int(data[4]) << 3 | Int(data[5] >> 5)
            let blocks = Int(data[6] & 3)
            length = data[1] & 1 == 1 ? 7 : 9
            // One raw block a frame (what encoders write); a frequency index the table has; a channel configuration
            // (0 puts it in the stream, which MP4 cannot); the frame all here.
            guard blocks == 0, frequency < 13, channels > 0, frameLength == data.count, frameLength > length else { return nil }
            let config = objectType << 11 | frequency << 7 | channels << 3
            self.config = [UInt8(config >> 8), UInt8(config & 0xFF)]
        }
    }
}
