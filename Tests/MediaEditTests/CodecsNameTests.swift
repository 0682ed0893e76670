import Testing
@testable import MediaEdit

/// `CODECS` names from initializations' configuration records, against the published examples: Apple's HLS authoring
/// specification (`avc1.640028`, `hvc1.2.4.L123.B0`), ISO/IEC 14496-15 E.3 (`hvc1.1.6.L93.B0`) and the AV1
/// codec ISO media file format binding's "Codecs Parameter String" (`av01.0.04M.10`).
@Suite struct CodecsNameTests {
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = UInt32(8 + payload.count)
        return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + payload
    }

    /// An initialization whose one track's sample entry holds a `type` record of `payload`, as FFmpeg's muxer
    /// nests it (moov/trak/mdia/minf/stbl/stsd), after a handler box whose name says "hvcC" (a source's
    /// handler name is copied into it) and a `free` box.
    static func initialization(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let entry = ["hvcC": "hvc1", "av1C": "av01", "avcC": "avc1"][type] ?? "mp4v"
        let sample = box(entry, [UInt8](repeating: 0, count: 78) + box(type, payload))
        let stsd = box("stsd", [0, 0, 0, 0, 0, 0, 0, 1] + sample)
        let handler = box("hdlr", [0, 0, 0, 0, 0, 0, 0, 0] + Array("vide".utf8) + [UInt8](repeating: 0, count: 12) + Array(" hvcC and more text\u{0}".utf8))
        let moov = box("moov", box("trak", box("mdia", handler + box("minf", box("stbl", stsd)))))
        return box("ftyp", Array("iso6".utf8) + [0, 0, 0, 0]) + moov + box("free", [])
    }

    @Test func hevcNamesFollowTheConfigurationRecord() {
        // Main 10 (profile 2, compatible with 2: bit 2 set, reversed 4), Main tier, level 4.1, progressive and
        // frame-only constraint bits (0xB0), the rest zero.
        let main10: [UInt8] = [1, 0x02, 0x20, 0, 0, 0, 0xB0, 0, 0, 0, 0, 0, 123, 0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F, 0]
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("hvcC", main10)) == "hvc1.2.4.L123.B0")
        // Main (profile 1, compatible with 1 and 2: 0x60000000, reversed 6), level 3.1, as x265 writes it.
        let main: [UInt8] = [1, 0x01, 0x60, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 93, 0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F, 0]
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("hvcC", main)) == "hvc1.1.6.L93.90")
        // High tier, profile space 1 ("A"), constraint bytes with a zero between non-zero ones kept.
        let high: [UInt8] = [1, 0x61, 0x40, 0, 0, 0, 0xB0, 0, 0x01, 0, 0, 0, 153, 0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F, 0]
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("hvcC", high)) == "hvc1.A1.2.H153.B0.0.1")
    }

    @Test func av1NamesFollowTheConfigurationRecord() {
        // Main profile (0), level 3.0 (seq_level_idx 4), Main tier, 10-bit (high_bitdepth, not twelve_bit), 4:2:0.
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("av1C", [0x81, 0x04, 0x4C, 0x00])) == "av01.0.04M.10")
        // As SVT-AV1 writes level 3.1 of 8-bit 4:2:0.
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("av1C", [0x81, 0x05, 0x0C, 0x00])) == "av01.0.05M.08")
        // High tier, 12-bit (Professional, profile 2).
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("av1C", [0x81, 0x4D, 0xE0, 0x00])) == "av01.2.13H.12")
    }

    @Test func otherInitializationsAndCutRecordsNameNothing() throws {
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("avcC", [1, 0x64, 0, 0x28])) == nil)
        #expect(SegmentedTrack.codecs(initialization: []) == nil)
        // A record cut short, or a box whose size runs past the end, names nothing rather than reading on.
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("hvcC", [1, 0x01, 0x60])) == nil)
        var long = Self.initialization("av1C", [0x81, 0x05, 0x0C, 0x00])
        let at = try #require((0..<(long.count - 4)).first { String(decoding: long[$0..<($0 + 4)], as: UTF8.self) == "av1C" }) - 1
        long[at] = 200  // the av1C box's size
        #expect(SegmentedTrack.codecs(initialization: long) == nil)
        // An H.264 track whose handler's name holds "hvcC" is no HEVC track.
        #expect(SegmentedTrack.codecs(initialization: Self.initialization("avcC", [1, 0x64, 0, 0x28, 0xFF, 0xE1, 0, 0])) == nil)
    }
}
