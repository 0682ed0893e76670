import Testing
@testable import MediaEdit

/// A transport stream's framings turned into MP4's, on bytes whose meaning is known.
struct TransportFramingTests {
    static let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC, 0xD9]
    static let pps: [UInt8] = [0x68, 0xEB, 0xE3, 0xCB]
    static let start: [UInt8] = [0, 0, 0, 1]

    /// The avcC record: version 1, the SPS's profile, constraints and level, 4-byte lengths, one SPS and one PPS,
    /// each with its 16-bit size; trailing zero bytes before a start code are no part of a unit.
    @Test func anAvcCRecordIsMadeFromAnnexBParameterSets() throws {
        let annexB = Self.start + Self.sps + [0, 0] + [0, 0, 1] + Self.pps
        let record = try #require(TransportFraming.avcC(annexB: annexB))
        #expect(record == [1, 0x64, 0x00, 0x1F, 0xFF, 0xE1, 0, 6] + Self.sps + [1, 0, 4] + Self.pps)
        #expect(TransportFraming.avcC(annexB: Self.start + Self.sps) == nil, "no PPS")
        #expect(TransportFraming.avcC(annexB: [1, 2, 3]) == nil, "no start code")
        // A "parameter set" longer than a record can size (16 bits) is none: no trap, no record.
        #expect(TransportFraming.avcC(annexB: Self.start + Self.sps + [UInt8](repeating: 0x11, count: 70_000) + Self.start + Self.pps) == nil)
    }

    /// A sample loses its delimiter and the parameter sets its record holds, keeps every other unit in order with
    /// a 4-byte length, and is refused when it carries other parameter sets.
    @Test func anAccessUnitBecomesASampleWithoutDelimiterOrRepeatedParameterSets() throws {
        let record = try #require(TransportFraming.avcC(annexB: Self.start + Self.sps + Self.start + Self.pps))
        let sei: [UInt8] = [0x06, 0x05, 0x01, 0xFF, 0x80], idr: [UInt8] = [0x65, 0x88, 0x84, 0x00, 0x21]
        let unit = Self.start + [0x09, 0xF0] + Self.start + Self.sps + Self.start + Self.pps + [0, 0, 1] + sei + Self.start + idr
        let sample = unit.withUnsafeBufferPointer { TransportFraming.sample(annexB: $0, record: record) }
        #expect(sample == [0, 0, 0, 5] + sei + [0, 0, 0, 5] + idr)
        let changed = Self.start + [0x67, 0x42, 0x00, 0x1E, 0xAC] + Self.start + idr
        #expect(changed.withUnsafeBufferPointer { TransportFraming.sample(annexB: $0, record: record) } == nil)
        // Nothing but what the record holds: no picture, no sample.
        let empty = Self.start + [0x09, 0xF0] + Self.start + Self.sps + Self.start + Self.pps
        #expect(empty.withUnsafeBufferPointer { TransportFraming.sample(annexB: $0, record: record) } == nil)
        // An IDR picture is a place to cut; a recovery point's I slice (NAL type 1 with SEI) is not.
        #expect(unit.withUnsafeBufferPointer(TransportFraming.holdsIDR))
        let recovery = Self.start + sei + Self.start + [0x41, 0x9A, 0x00]
        #expect(!recovery.withUnsafeBufferPointer(TransportFraming.holdsIDR))
    }

    /// An ADTS header of AAC-LC, 48 kHz, stereo: AudioSpecificConfig 0x11 0x90, its raw frame after 7 bytes, or 9
    /// with a CRC; a frame of several raw blocks, a length that is not the packet's or a missing channel
    /// configuration is no frame to copy.
    @Test func anADTSHeaderGivesItsAudioSpecificConfig() throws {
        func frame(crc: Bool, blocks: UInt8 = 0, channels: UInt8 = 2, length: Int = 20) -> [UInt8] {
            var bytes = [UInt8](repeating: 0xAB, count: length)
            bytes[0] = 0xFF
            bytes[1] = crc ? 0xF0 : 0xF1
            bytes[2] = 1 << 6 | 3 << 2 | (channels >> 2)
            bytes[3] = (channels & 3) << 6 | UInt8(length >> 11)
            bytes[4] = UInt8((length >> 3) & 0xFF)
            bytes[5] = UInt8((length & 7) << 5) | 0x1F
            bytes[6] = 0xFC | blocks
            return bytes
        }
        let plain = try #require(frame(crc: false).withUnsafeBufferPointer(TransportFraming.ADTSHeader.init))
        #expect(plain.config == [0x11, 0x90] && plain.length == 7)
        let checked = try #require(frame(crc: true).withUnsafeBufferPointer(TransportFraming.ADTSHeader.init))
        #expect(checked.config == [0x11, 0x90] && checked.length == 9)
        #expect(frame(crc: false, blocks: 1).withUnsafeBufferPointer(TransportFraming.ADTSHeader.init) == nil)
        #expect(frame(crc: false, channels: 0).withUnsafeBufferPointer(TransportFraming.ADTSHeader.init) == nil)
        #expect(Array(frame(crc: false).prefix(15)).withUnsafeBufferPointer(TransportFraming.ADTSHeader.init) == nil, "shorter than its length")
    }
}
