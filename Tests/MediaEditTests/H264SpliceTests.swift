import FarmTestSupport
import Foundation
import Testing
@testable import MediaEdit

/// The bit-level pieces of the H.264 splice: Exp-Golomb codes, emulation prevention, and a slice
/// header made an IDR one.
@Suite struct H264SpliceTests {
    @Test func expGolombCodesRoundTrip() throws {
        var w = BitWriter()
        let values = [0, 1, 2, 3, 7, 8, 255, 256, 65_535, 1 << 20]
        for v in values { w.ue(v); w.se(v); w.se(-v) }
        w.bits(0b101, 3)
        var r = BitReader(w.bytes)
        for v in values {
            #expect(try r.ue() == v)
            #expect(try r.se() == v)
            #expect(try r.se() == -v)
        }
        #expect(try r.bits(3) == 0b101)
        // ue(0) is the single bit 1; ue(3) is 00100.
        var one = BitWriter(); one.ue(0); one.ue(3)
        #expect(one.bytes == [0b1001_0000] && one.count == 6)
    }

    @Test func emulationPreventionRoundTrips() {
        let raw: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 1, 0, 0]
        let escaped = H264Splice.escape(raw)
        #expect(escaped == [0, 0, 3, 0, 0, 3, 0, 1, 0, 0, 3, 2, 0, 0, 3, 3, 0, 0, 4, 1, 0, 0])
        #expect(H264Splice.unescape(ArraySlice(escaped)) == raw)
    }

    @Test func anOpenGOPKeyframeBecomesAnIDRPictureAndTheRunIsRenumbered() throws {
        // Real x264 output: an open-GOP stream's second keyframe (a non-IDR I picture, frame_num > 0).
        let packets = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries",
                                                          "packet=flags,pos,size", "-of", "csv=p=0", MediaFixture.openGOPMP4.path])
            .stdout.split(separator: "\n").map { $0.split(separator: ",") }
        let file = try Data(contentsOf: URL(fileURLWithPath: MediaFixture.openGOPMP4.path))
        func bytes(_ p: [Substring]) -> [UInt8] {
            let size = Int(p[0])!, pos = Int(p[1])!
            return [UInt8](file[pos..<(pos + size)])
        }
        let keyframes = packets.enumerated().filter { $0.element.count == 3 && $0.element[2].hasPrefix("K") }.map(\.offset)
        try #require(keyframes.count >= 2)
        let extradata = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", MediaFixture.openGOPMP4.path, "-map", "0:v",
                                                           "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-frames:v", "1", "-f", "h264", "-"]).stdoutData
        let sets = NALUnits.lengthPrefixed(annexB: [UInt8](extradata), lengthSize: 4)
        var splice = H264Splice(parameterSets: sets, lengthSize: 4)
        let key = bytes(packets[keyframes[1]])
        let idr = try #require(try splice.startSequence(key))
        // NAL types: the I slice (1) is now an IDR slice (5), nothing else changed type.
        func types(_ au: [UInt8]) -> [UInt8] {
            var at = 0, out: [UInt8] = []
            while at + 4 < au.count {
                let n = Int(au[at]) << 24 | Int(au[at + 1]) << 16 | Int(au[at + 2]) << 8 | Int(au[at + 3])
                out.append(au[at + 4] & 0x1F); at += 4 + n
            }
            return out
        }
        #expect(types(key).contains(1) && !types(key).contains(5))
        #expect(types(idr) == types(key).map { $0 == 1 ? 5 : $0 })
        // The next packet in decoding order is renumbered; an IDR keyframe is left as it is.
        #expect(try splice.continueRun(bytes(packets[keyframes[1] + 1])) != nil)
        var fresh = H264Splice(parameterSets: sets, lengthSize: 4)
        #expect(try fresh.startSequence(bytes(packets[keyframes[0]])) == nil)
        // Damaged keyframes are refused with a reason, never passed on half rewritten: a unit that runs
        // past its packet, and a slice cut after its first bytes (its length says so).
        #expect(throws: H264Splice.Malformed.self) { _ = try fresh.startSequence(Array(key.prefix(key.count / 2))) }
        let sliceAt = try H264Splice.units(key, lengthSize: 4).first { key[$0.lowerBound] & 0x1F == 1 }!
        let cut: [UInt8] = [0, 0, 0, 2] + key[sliceAt.lowerBound..<(sliceAt.lowerBound + 2)]
        #expect(throws: H264Splice.Malformed.self) { _ = try fresh.startSequence(cut) }
    }
}
