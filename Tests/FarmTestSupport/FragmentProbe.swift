import Foundation

/// Reads a CMAF track's times off its boxes as ISO/IEC 14496-12 defines them, independently of the
/// farm's muxer and of FFmpeg's demuxer (which shifts negative composition offsets its own way): the
/// initialization's edit (`elst` media time) and each fragment's earliest presentation time, the least
/// of `tfdt` plus the durations before a sample plus its composition offset (signed in `trun` version 1).
public enum FragmentProbe {
    public struct ProbeError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The media time the initialization's edit list presents from (0 without one).
    public static func editMediaTime(initialization path: String) throws -> Int64 {
        let bytes = try read(path)
        guard let moov = find("moov", bytes, 0, bytes.count), let trak = find("trak", bytes, moov.body, moov.end) else {
            throw ProbeError(description: "\(path): no moov/trak")
        }
        guard let edts = find("edts", bytes, trak.body, trak.end), let elst = find("elst", bytes, edts.body, edts.end) else { return 0 }
        let version = bytes[elst.body]
        // version, flags, entry count, then segment duration and media time (32 or 64 bits each).
        return version == 1 ? Int64(bitPattern: u64(bytes, elst.body + 16)) : Int64(Int32(bitPattern: u32(bytes, elst.body + 12)))
    }

    /// The track's timescale: its `mdhd`'s ticks a second.
    public static func mediaTimescale(initialization path: String) throws -> Int64 {
        let bytes = try read(path)
        guard let moov = find("moov", bytes, 0, bytes.count), let trak = find("trak", bytes, moov.body, moov.end),
              let mdia = find("mdia", bytes, trak.body, trak.end), let mdhd = find("mdhd", bytes, mdia.body, mdia.end) else {
            throw ProbeError(description: "\(path): no moov/trak/mdia/mdhd")
        }
        // version and flags, then creation and modification times (32 or 64 bits each), then the timescale.
        return Int64(u32(bytes, mdhd.body + (bytes[mdhd.body] == 1 ? 20 : 12)))
    }

    /// The default sample duration of the initialization's `trex` (0 without one).
    public static func defaultDuration(initialization path: String) throws -> Int64 {
        let bytes = try read(path)
        guard let moov = find("moov", bytes, 0, bytes.count), let mvex = find("mvex", bytes, moov.body, moov.end),
              let trex = find("trex", bytes, mvex.body, mvex.end) else { return 0 }
        return Int64(u32(bytes, trex.body + 12))
    }

    /// The earliest presentation time of the fragment in `path`, before any edit (track ticks).
    public static func earliestPresentationTime(segment path: String, defaultDuration: Int64) throws -> Int64 {
        let bytes = try read(path)
        guard let moof = find("moof", bytes, 0, bytes.count), let traf = find("traf", bytes, moof.body, moof.end),
              let tfhd = find("tfhd", bytes, traf.body, traf.end), let tfdt = find("tfdt", bytes, traf.body, traf.end),
              let trun = find("trun", bytes, traf.body, traf.end) else {
            throw ProbeError(description: "\(path): no moof/traf with tfhd, tfdt and trun")
        }
        let tfhdFlags = u32(bytes, tfhd.body) & 0xFF_FFFF
        var at = tfhd.body + 8
        if tfhdFlags & 0x1 != 0 { at += 8 }
        if tfhdFlags & 0x2 != 0 { at += 4 }
        let duration = tfhdFlags & 0x8 != 0 ? Int64(u32(bytes, at)) : defaultDuration
        var decode = bytes[tfdt.body] == 1 ? Int64(u64(bytes, tfdt.body + 4)) : Int64(u32(bytes, tfdt.body + 4))
        let version = bytes[trun.body]
        let flags = u32(bytes, trun.body) & 0xFF_FFFF
        let count = Int(u32(bytes, trun.body + 4))
        at = trun.body + 8 + (flags & 0x1 != 0 ? 4 : 0) + (flags & 0x4 != 0 ? 4 : 0)
        var earliest = Int64.max
        for _ in 0..<count {
            var sampleDuration = duration
            if flags & 0x100 != 0 { sampleDuration = Int64(u32(bytes, at)); at += 4 }
            if flags & 0x200 != 0 { at += 4 }
            if flags & 0x400 != 0 { at += 4 }
            var offset: Int64 = 0
            if flags & 0x800 != 0 {
                offset = version == 1 ? Int64(Int32(bitPattern: u32(bytes, at))) : Int64(u32(bytes, at))
                at += 4
            }
            earliest = min(earliest, decode + offset)
            decode += sampleDuration
        }
        guard count > 0 else { throw ProbeError(description: "\(path): a trun without samples") }
        return earliest
    }

    /// The fragment's sequence number (`mfhd`) and base decode time (`tfdt`).
    public static func numberAndDecodeTime(segment path: String) throws -> (sequence: UInt32, decodeTime: Int64) {
        let bytes = try read(path)
        guard let moof = find("moof", bytes, 0, bytes.count), let mfhd = find("mfhd", bytes, moof.body, moof.end),
              let traf = find("traf", bytes, moof.body, moof.end), let tfdt = find("tfdt", bytes, traf.body, traf.end) else {
            throw ProbeError(description: "\(path): no moof with mfhd, and traf with tfdt")
        }
        return (u32(bytes, mfhd.body + 4), bytes[tfdt.body] == 1 ? Int64(u64(bytes, tfdt.body + 4)) : Int64(u32(bytes, tfdt.body + 4)))
    }

    static func read(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func find(_ type: String, _ b: [UInt8], _ from: Int, _ to: Int) -> (body: Int, end: Int)? {
        var at = from
        while at + 8 <= min(to, b.count) {
            let size = Int(u32(b, at))
            guard size >= 8 else { return nil }
            if b[at + 4..<at + 8].elementsEqual(type.utf8) { return (at + 8, min(at + size, b.count)) }
            at += size
        }
        return nil
    }

    static func u32(_ b: [UInt8], _ at: Int) -> UInt32 { b[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
    static func u64(_ b: [UInt8], _ at: Int) -> UInt64 { b[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
}
