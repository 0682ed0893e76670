/// Where copied H.264 follows other frames (another edit's, or frames re-encoded at a cut) and starts on
/// a keyframe that is not an IDR picture (an open GOP's I picture with a recovery point), does what a
/// splicer must: the keyframe becomes an IDR picture, so that decoders start a new sequence there (its
/// parameter sets may differ from the frames before it, and its picture order and frame numbers must
/// not be read against theirs), and every later slice of the run has its `frame_num` counted from it.
/// ITU-T H.264 7.3.3 (slice header), 7.4.3 (an IDR picture has frame_num 0), 8.2.1 (picture order).
///
/// The slice headers are rewritten bit by bit (an IDR header has `idr_pic_id` and a different
/// reference marking); the slice data is copied, re-aligned for CABAC. Thread-confined.
struct H264Splice {
    private var sps: [Int: SPS] = [:]
    private var pps: [Int: PPS] = [:]
    private let lengthSize: Int
    /// Subtracted from the frame_num of every slice since the last keyframe made an IDR picture; nil
    /// when the run needs no renumbering.
    private var frameNumOffset: Int?

    struct SPS {
        var log2MaxFrameNum = 4
        var pocType = 0
        var log2MaxPOCLsb = 4
        var deltaPicOrderAlwaysZero = false
        var frameMbsOnly = true
        var separateColourPlane = false
        var chromaArrayType = 1
    }

    struct PPS {
        var spsID = 0
        var cabac = false
        var bottomFieldPicOrderPresent = false
        var sliceGroups = 1
        var refIdxL0Default = 1
        var refIdxL1Default = 1
        var weightedPred = false
        var weightedBipredIdc = 0
        var deblockingControlPresent = false
        var redundantPicCntPresent = false
    }

    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads the parameter sets of the stream's configuration record (length-prefixed, as
    /// `NALUnits.parameterSets` gives them).
    init(parameterSets: [UInt8], lengthSize: Int) {
        self.lengthSize = lengthSize
        forEachUnit(parameterSets) { unit in learn(unit) }
    }

    /// The frames since the last keyframe made an IDR picture need their slices renumbered
    /// (`continueRun`); otherwise copied packets pass as they are.
    var renumbers: Bool { frameNumOffset.map { $0 != 0 } ?? false }

    /// Takes note of parameter sets sent in-band in a packet that is copied as it is (read in place:
    /// only those units are copied).
    mutating func noteParameterSets(_ data: UnsafeBufferPointer<UInt8>) {
        guard let units = try? Self.units(data, lengthSize: lengthSize) else { return }  // a packet that does not parse has no parameter sets to learn
        for range in units where [7, 8].contains(Int(data[range.lowerBound]) & 0x1F) { learn(ArraySlice(data[range])) }
    }

    /// The run of copied frames continues: renumbers its slices when a keyframe was made an IDR
    /// picture, and takes note of parameter sets sent in-band.
    mutating func continueRun(_ data: [UInt8]) throws -> [UInt8]? {
        var changed = false
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 8)
        try forEachUnitThrowing(data) { unit in
            let type = Int(unit.first ?? 0) & 0x1F
            if type == 7 || type == 8 { learn(unit) }
            if let offset = frameNumOffset, offset != 0, type == 1 || type == 5 {
                out += NALUnits.framed(ArraySlice(try rewriteSlice(unit, makeIDR: false, frameNumOffset: offset).unit), lengthSize: lengthSize)
                changed = true
            } else {
                out += NALUnits.framed(unit, lengthSize: lengthSize)
            }
        }
        return changed ? out : nil
    }

    /// A copied keyframe after other frames: its slices become IDR slices (frame_num 0), and the
    /// slices after it are renumbered to match. Returns the new access unit, or nil when it already was
    /// an IDR picture (nothing to change).
    mutating func startSequence(_ data: [UInt8]) throws -> [UInt8]? {
        frameNumOffset = nil
        var isIDR = false
        var offset: Int?
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 8)
        try forEachUnitThrowing(data) { unit in
            let type = Int(unit.first ?? 0) & 0x1F
            if type == 7 || type == 8 { learn(unit) }
            if type == 5 { isIDR = true }
            if type == 1 {
                let r = try rewriteSlice(unit, makeIDR: true, frameNumOffset: 0)
                if let o = offset, o != r.frameNum {
                    throw Malformed(description: "the slices of a keyframe have different frame numbers")
                }
                offset = r.frameNum
                out += NALUnits.framed(ArraySlice(r.unit), lengthSize: lengthSize)
            } else {
                out += NALUnits.framed(unit, lengthSize: lengthSize)
            }
        }
        guard let offset, !isIDR else { return nil }
        frameNumOffset = offset
        return out
    }

    /// Frames of another run follow (re-encoded ones, or another edit's): no more renumbering.
    mutating func endRun() { frameNumOffset = nil }

    // MARK: NAL units

    /// Where each NAL unit of a length-prefixed access unit lies (empty units left out).
    static func units<C: RandomAccessCollection>(_ data: C, lengthSize: Int) throws -> [Range<Int>] where C.Element == UInt8, C.Index == Int {
        var ranges: [Range<Int>] = []
        var at = data.startIndex
        while at + lengthSize <= data.endIndex {
            var length = 0
            for i in 0..<lengthSize { length = length << 8 | Int(data[at + i]) }
            let start = at + lengthSize
            guard start + length <= data.endIndex else { throw Malformed(description: "a NAL unit runs past its packet") }
            if length > 0 { ranges.append(start..<(start + length)) }
            at = start + length
        }
        return ranges
    }

    private func forEachUnit(_ data: [UInt8], _ body: (ArraySlice<UInt8>) -> Void) {
        try? forEachUnitThrowing(data) { body($0) }  // body does not throw; a malformed packet ends the walk
    }

    private func forEachUnitThrowing(_ data: [UInt8], _ body: (ArraySlice<UInt8>) throws -> Void) throws {
        for range in try Self.units(data, lengthSize: lengthSize) { try body(data[range]) }
    }

    private mutating func learn(_ unit: ArraySlice<UInt8>) {
        let type = Int(unit.first ?? 0) & 0x1F
        var r = BitReader(H264Splice.unescape(unit.dropFirst()))
        if type == 7, let (id, s) = try? Self.parseSPS(&r) { sps[id] = s }  // a set that does not parse is not learnt
        if type == 8, let (id, p) = try? Self.parsePPS(&r, sps: sps) { pps[id] = p }  // as above
    }

    static func parseSPS(_ r: inout BitReader) throws -> (Int, SPS) {
        var s = SPS()
        let profile = try r.bits(8)
        _ = try r.bits(16) // constraint flags, level
        let id = try r.ue()
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            let chroma = try r.ue()
            if chroma == 3 { s.separateColourPlane = try r.flag() }
            s.chromaArrayType = s.separateColourPlane ? 0 : chroma
            _ = try r.ue(); _ = try r.ue() // bit depths
            _ = try r.flag() // qpprime_y_zero_transform_bypass
            if try r.flag() { // seq_scaling_matrix_present
                for i in 0..<(chroma == 3 ? 12 : 8) where try r.flag() {
                    try skipScalingList(&r, size: i < 6 ? 16 : 64)
                }
            }
        }
        s.log2MaxFrameNum = try r.ue() + 4
        s.pocType = try r.ue()
        if s.pocType == 0 {
            s.log2MaxPOCLsb = try r.ue() + 4
        } else if s.pocType == 1 {
            s.deltaPicOrderAlwaysZero = try r.flag()
            _ = try r.se(); _ = try r.se()
            for _ in 0..<(try r.ue()) { _ = try r.se() }
        }
        _ = try r.ue() // max_num_ref_frames
        _ = try r.flag() // gaps_in_frame_num_value_allowed
        _ = try r.ue(); _ = try r.ue() // size in macroblocks
        s.frameMbsOnly = try r.flag()
        guard s.log2MaxFrameNum <= 16, s.log2MaxPOCLsb <= 16, id < 32 else { throw Malformed(description: "an SPS out of range") }
        return (id, s)
    }

    private static func skipScalingList(_ r: inout BitReader, size: Int) throws {
        var last = 8, next = 8
        for _ in 0..<size where next != 0 {
            next = (last + (try r.se()) + 256) % 256
            last = next == 0 ? last : next
        }
    }

    static func parsePPS(_ r: inout BitReader, sps: [Int: SPS]) throws -> (Int, PPS) {
        var p = PPS()
        let id = try r.ue()
        p.spsID = try r.ue()
        p.cabac = try r.flag()
        p.bottomFieldPicOrderPresent = try r.flag()
        p.sliceGroups = try r.ue() + 1
        guard p.sliceGroups == 1 else { return (id, p) } // FMO (Baseline only): not spliced
        p.refIdxL0Default = try r.ue() + 1
        p.refIdxL1Default = try r.ue() + 1
        p.weightedPred = try r.flag()
        p.weightedBipredIdc = try r.bits(2)
        _ = try r.se(); _ = try r.se(); _ = try r.se() // pic_init_qp, pic_init_qs, chroma_qp_index_offset
        p.deblockingControlPresent = try r.flag()
        _ = try r.flag() // constrained_intra_pred
        p.redundantPicCntPresent = try r.flag()
        guard id < 256 else { throw Malformed(description: "a PPS out of range") }
        return (id, p)
    }

    // MARK: Slice headers

    /// One slice NAL unit rewritten: made an IDR slice (`makeIDR`), its frame_num lowered by
    /// `frameNumOffset`. Returns the unit (header byte included, escaped) and its original frame_num.
    func rewriteSlice(_ unit: ArraySlice<UInt8>, makeIDR: Bool, frameNumOffset: Int) throws -> (unit: [UInt8], frameNum: Int) {
        do {
            return try rewriteSliceHeader(unit, makeIDR: makeIDR, frameNumOffset: frameNumOffset)
        } catch is BitReader.Exhausted {
            throw Malformed(description: "a slice header is cut short")
        }
    }

    private func rewriteSliceHeader(_ unit: ArraySlice<UInt8>, makeIDR: Bool, frameNumOffset: Int) throws -> (unit: [UInt8], frameNum: Int) {
        guard let header = unit.first else { throw Malformed(description: "an empty slice") }
        let nalType = Int(header) & 0x1F
        let refIdc = Int(header >> 5) & 3
        let isIDR = nalType == 5
        let rbsp = H264Splice.unescape(unit.dropFirst())
        var c = BitCopier(rbsp)

        _ = try c.ue() // first_mb_in_slice
        let sliceType = try c.ue() % 5 // 0 P, 1 B, 2 I, 3 SP, 4 SI
        let ppsID = try c.ue()
        guard let p = pps[ppsID], let s = sps[p.spsID] else { throw Malformed(description: "a slice names a parameter set that was not sent (\(ppsID))") }
        guard p.sliceGroups == 1 else { throw Malformed(description: "slice groups (FMO) cannot be spliced") }
        if makeIDR {
            guard s.frameMbsOnly else { throw Malformed(description: "interlaced (field-coded) video cannot be spliced at an open-GOP keyframe") }
            guard sliceType == 2 || sliceType == 4, refIdc != 0 else { throw Malformed(description: "a keyframe slice is not an intra reference slice") }
        }
        if s.separateColourPlane { _ = try c.bits(2) }
        let at = c.r.position
        let frameNum = try c.r.bits(s.log2MaxFrameNum)
        let maxFrameNum = 1 << s.log2MaxFrameNum
        let newFrameNum = makeIDR ? 0 : ((frameNum - frameNumOffset) % maxFrameNum + maxFrameNum) % maxFrameNum
        if !makeIDR {
            // Only the number changes, in a field of the same width: patched in place.
            return ([header] + H264Splice.escape(Self.patched(rbsp, at: at, width: s.log2MaxFrameNum, value: newFrameNum)), frameNum)
        }
        // From here the slice is made IDR.
        c.w.bits(newFrameNum, s.log2MaxFrameNum)
        var fieldPic = false
        if !s.frameMbsOnly {
            fieldPic = try c.bits(1) == 1
            if fieldPic { _ = try c.bits(1) }
        }
        if isIDR { _ = try c.ue() } else { c.w.ue(0) } // idr_pic_id
        if s.pocType == 0 {
            _ = try c.bits(s.log2MaxPOCLsb)
            if p.bottomFieldPicOrderPresent && !fieldPic { _ = try c.se() }
        }
        if s.pocType == 1 && !s.deltaPicOrderAlwaysZero {
            _ = try c.se()
            if p.bottomFieldPicOrderPresent && !fieldPic { _ = try c.se() }
        }
        if p.redundantPicCntPresent { _ = try c.ue() }
        if sliceType == 1 { _ = try c.bits(1) } // direct_spatial_mv_pred
        var refs0 = p.refIdxL0Default, refs1 = p.refIdxL1Default
        if sliceType == 0 || sliceType == 1 || sliceType == 3 {
            if try c.bits(1) == 1 {
                refs0 = try c.ue() + 1
                if sliceType == 1 { refs1 = try c.ue() + 1 }
            }
        }
        if sliceType != 2 && sliceType != 4 { try Self.copyListModification(&c) }
        if sliceType == 1 { try Self.copyListModification(&c) }
        // pred_weight_table
        if (p.weightedPred && (sliceType == 0 || sliceType == 3)) || (p.weightedBipredIdc == 1 && sliceType == 1) {
            try Self.copyWeightTable(&c, chroma: s.chromaArrayType != 0, lists: sliceType == 1 ? [refs0, refs1] : [refs0])
        }
        if refIdc != 0 { try Self.rewriteReferenceMarking(&c, isIDR: isIDR) }
        if p.cabac && sliceType != 2 && sliceType != 4 { _ = try c.ue() } // cabac_init_idc
        _ = try c.se() // slice_qp_delta
        if sliceType == 3 || sliceType == 4 {
            if sliceType == 3 { _ = try c.bits(1) }
            _ = try c.se()
        }
        if p.deblockingControlPresent {
            if try c.ue() != 1 { _ = try c.se(); _ = try c.se() }
        }
        if p.cabac {
            // cabac_alignment_one_bit up to a byte boundary, on both sides.
            while c.r.position % 8 != 0 { guard try c.r.bits(1) == 1 else { throw Malformed(description: "CABAC alignment bits that are not ones") } }
            while c.w.count % 8 != 0 { c.w.bits(1, 1) }
        }
        // The slice data, and the RBSP's trailing bits, as they were; the last byte holds the stop bit.
        try c.w.copy(from: &c.r)
        var bytes = c.w.bytes
        while bytes.last == 0 { bytes.removeLast() }
        return ([header & 0xE0 | 5] + H264Splice.escape(bytes), frameNum)
    }

    /// `rbsp` with the `width` bits at bit `at` set to `value`.
    static func patched(_ rbsp: [UInt8], at: Int, width: Int, value: Int) -> [UInt8] {
        var patched = rbsp
        for i in 0..<width {
            let bit = (value >> (width - 1 - i)) & 1
            let p = at + i, mask = UInt8(0x80) >> UInt8(p & 7)
            patched[p >> 3] = bit == 1 ? patched[p >> 3] | mask : patched[p >> 3] & ~mask
        }
        return patched
    }

    /// ref_pic_list_modification, copied.
    private static func copyListModification(_ c: inout BitCopier) throws {
        guard try c.bits(1) == 1 else { return }
        while true {
            let idc = try c.ue()
            if idc == 3 { break }
            guard idc <= 5 else { throw Malformed(description: "a reference list modification out of range") }
            _ = try c.ue()
        }
    }

    /// pred_weight_table, copied, for lists of `lists` references each.
    private static func copyWeightTable(_ c: inout BitCopier, chroma: Bool, lists: [Int]) throws {
        _ = try c.ue()
        if chroma { _ = try c.ue() }
        for references in lists {
            for _ in 0..<references {
                if try c.bits(1) == 1 { _ = try c.se(); _ = try c.se() }
                if chroma, try c.bits(1) == 1 {
                    for _ in 0..<4 { _ = try c.se() }
                }
            }
        }
    }

    /// dec_ref_pic_marking of a slice made IDR: an IDR slice's copied; a non-IDR one's replaced by an IDR's
    /// (an I picture marking earlier pictures (MMCO) has nothing to mark as an IDR picture).
    private static func rewriteReferenceMarking(_ c: inout BitCopier, isIDR: Bool) throws {
        if isIDR {
            _ = try c.bits(2)
            return
        }
        let adaptive = try c.r.bits(1) == 1
        c.w.bits(0, 1) // no_output_of_prior_pics_flag: the frames before it are still shown
        c.w.bits(0, 1) // long_term_reference_flag
        guard adaptive else { return }
        while true {
            let op = try c.r.ue()
            if op == 0 { break }
            if op == 1 || op == 3 { _ = try c.r.ue() }
            if op == 2 { _ = try c.r.ue() }
            if op == 3 || op == 6 || op == 4 { _ = try c.r.ue() }
        }
    }

    // MARK: Emulation prevention

    /// NAL payload to RBSP: each 0x000003 loses its 03.
    static func unescape(_ data: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        var zeros = 0
        for b in data {
            if zeros >= 2 && b == 3 { zeros = 0; continue }
            out.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        return out
    }

    /// RBSP to NAL payload: a 03 after two zeros before any byte of 0 to 3.
    static func escape(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + data.count / 64 + 4)
        var zeros = 0
        for b in data {
            if zeros >= 2 && b <= 3 { out.append(3); zeros = 0 }
            out.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        return out
    }
}

/// Reads bits, most significant first, and Exp-Golomb codes.
struct BitReader {
    let data: [UInt8]
    private(set) var position = 0

    init(_ data: [UInt8]) { self.data = data }

    struct Exhausted: Error {}

    var remaining: Int { data.count * 8 - position }

    mutating func bits(_ n: Int) throws -> Int {
        guard n <= remaining else { throw Exhausted() }
        var v = 0
        for _ in 0..<n {
            v = v << 1 | Int(data[position >> 3] >> (7 - UInt8(position & 7)) & 1)
            position += 1
        }
        return v
    }

    mutating func flag() throws -> Bool { try bits(1) == 1 }

    mutating func ue() throws -> Int {
        var zeros = 0
        while try bits(1) == 0 {
            zeros += 1
            guard zeros < 32 else { throw Exhausted() }
        }
        return (1 << zeros) - 1 + (try bits(zeros))
    }

    mutating func se() throws -> Int {
        let k = try ue()
        return k % 2 == 1 ? (k + 1) / 2 : -(k / 2)
    }
}

/// A reader and a writer in step: what is read is written again, unless read from `r` alone.
struct BitCopier {
    var r: BitReader
    var w = BitWriter()

    init(_ data: [UInt8]) { r = BitReader(data) }

    mutating func ue() throws -> Int { let v = try r.ue(); w.ue(v); return v }
    mutating func se() throws -> Int { let v = try r.se(); w.se(v); return v }
    mutating func bits(_ n: Int) throws -> Int { let v = try r.bits(n); w.bits(v, n); return v }
}

/// Writes bits, most significant first, and Exp-Golomb codes.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func bits(_ value: Int, _ n: Int) {
        for i in stride(from: n - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> i) & 1 == 1 { bytes[bytes.count - 1] |= 0x80 >> UInt8(count % 8) }
            count += 1
        }
    }

    mutating func ue(_ v: Int) {
        let x = v + 1
        let length = Int.bitWidth - x.leadingZeroBitCount
        bits(0, length - 1)
        bits(x, length)
    }

    mutating func se(_ v: Int) { ue(v > 0 ? 2 * v - 1 : -2 * v) }

    /// Everything `reader` has left; whole bytes at once when both are byte-aligned.
    mutating func copy(from reader: inout BitReader) throws {
        if count % 8 == 0 && reader.position % 8 == 0 {
            bytes += reader.data[(reader.position / 8)...]
            count += reader.remaining
            _ = try reader.bits(0)
            return
        }
        while reader.remaining >= 8 { bits(try reader.bits(8), 8) }
        let rest = reader.remaining
        bits(try reader.bits(rest), rest)
    }
}
