import Foundation
import MediaTime
#if canImport(Glibc)
import Glibc
#endif

/// One entry of a track's edit list (ISO/IEC 14496-12 `elst`): `duration` of movie time plays the
/// track's media from `mediaTime` on (at rate 1), or nothing when `mediaTime` is nil (an empty edit).
struct EditListEntry: Sendable, Hashable {
    var duration: MediaTime
    var mediaTime: MediaTime?
}

/// Rewrites the edit lists of a finished MP4 or QuickTime file, which FFmpeg's muxer cannot write with
/// more than one media entry. The movie box is either last (written without faststart; it can then be
/// moved to the front, chunk offsets adjusted, as faststart would), or first in space the muxer
/// reserved for it (a `free` box after it), where it is rewritten in place when it still fits.
///
/// Movie durations (the `mvhd` and each changed `tkhd`) are set from the new lists. Times are exact
/// rationals, converted to the movie's and each track's timescale (as the muxer chose them) by rounding
/// to the nearest tick. The file is changed in place; the caller writes to a temporary.
enum MP4EditLists {
    /// Replaces the edit list of each track named by its track ID (1-based, in stream order for
    /// FFmpeg's muxer) with `lists[id]`, then moves the movie box first if `faststart`.
    static func rewrite(path: String, lists: [UInt32: [EditListEntry]], faststart: Bool) throws(ExportError) {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw ExportError("\(path): cannot reopen the output to write its edit lists: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        do throws(BoxError) {
            try rewrite(fd: fd, lists: lists, faststart: faststart)
        } catch {
            throw ExportError("\(path): cannot write the edit lists: \(error.description)")
        }
        guard fsync(fd) == 0 else { throw ExportError("\(path): cannot sync the output to disk: \(String(cString: strerror(errno)))") }
    }

    private static func rewrite(fd: Int32, lists: [UInt32: [EditListEntry]], faststart: Bool) throws(BoxError) {
        let fileSize = Int64(lseek(fd, 0, SEEK_END))
        let top = try topLevel(fd, size: fileSize)
        guard let moovIndex = top.firstIndex(where: { $0.type == "moov" }) else { throw BoxError("the file has no moov box") }
        let moovEntry = top[moovIndex]
        var moov = try Box.parse(try read(fd, at: moovEntry.offset, count: Int(moovEntry.size)))

        try apply(lists, to: &moov)

        if moovIndex < top.count - 1 {
            // Written first into space the muxer reserved (`moov_size`): the movie box and the `free`
            // box after it. Rewritten there when it fits; otherwise what follows moves forward.
            var space = moovEntry.size
            if top[moovIndex + 1].type == "free" { space += top[moovIndex + 1].size }
            let end = moovEntry.offset + space
            var shift: Int64 = 0
            var placed = moov
            while true {
                placed = moov
                try placed.shiftChunkOffsets(by: shift)
                let size = Int64(placed.serializedSize)
                let needed = size == space ? 0 : max(0, size + 8 - space)
                if needed == shift { break }
                shift = needed
            }
            if shift > 0 { try shiftForward(fd, from: end, to: fileSize, by: shift) }
            var bytes = placed.serialized()
            let filler = space + shift - Int64(bytes.count)
            let fillerAt = moovEntry.offset + Int64(bytes.count)
            if filler > 0 { putBE32(&bytes, UInt32(filler)); bytes += Array("free".utf8) }
            try write(fd, bytes, at: moovEntry.offset)
            // The rest of the reserved space, zeroed a chunk at a time (it can be tens of megabytes).
            if filler > 8 { try zero(fd, from: fillerAt + 8, count: filler - 8) }
            return
        }

        if !faststart {
            let bytes = moov.serialized()
            guard ftruncate(fd, off_t(moovEntry.offset)) == 0 else { throw BoxError(errno: errno, "truncating") }
            try write(fd, bytes, at: moovEntry.offset)
            return
        }
        // Move the movie box after ftyp: everything between shifts forward by its size, and the chunk
        // offsets with it (a 32-bit table that would overflow becomes a 64-bit one, which changes the
        // size again: settle it first).
        let insertAt = top.first?.type == "ftyp" ? top[0].offset + top[0].size : 0
        var shift = Int64(moov.serialized().count)
        var moved = moov
        while true {
            moved = moov
            try moved.shiftChunkOffsets(by: shift)
            let size = Int64(moved.serializedSize)
            if size == shift { break }
            shift = size
        }
        guard ftruncate(fd, off_t(moovEntry.offset)) == 0 else { throw BoxError(errno: errno, "truncating") }
        try shiftForward(fd, from: insertAt, to: moovEntry.offset, by: shift)
        try write(fd, moved.serialized(), at: insertAt)
    }

    /// Sets the listed tracks' edit lists and durations, and the movie's duration.
    private static func apply(_ lists: [UInt32: [EditListEntry]], to moov: inout Box) throws(BoxError) {
        guard let mvhdIndex = moov.children.firstIndex(where: { $0.type == "mvhd" }) else { throw BoxError("moov has no mvhd") }
        let movieScale = try moov.children[mvhdIndex].mvhdTimescale()
        var found: Set<UInt32> = []
        var longest: UInt64 = 0
        for i in moov.children.indices where moov.children[i].type == "trak" {
            var trak = moov.children[i]
            guard let tkhd = trak.children.firstIndex(where: { $0.type == "tkhd" }) else { throw BoxError("a track has no tkhd") }
            let id = try trak.children[tkhd].tkhdTrackID()
            if let entries = lists[id] {
                found.insert(id)
                guard let mdia = trak.children.firstIndex(where: { $0.type == "mdia" }),
                      let mdhd = trak.children[mdia].children.first(where: { $0.type == "mdhd" }) else {
                    throw BoxError("track \(id) has no mdia/mdhd")
                }
                let mediaScale = try mdhd.mdhdTimescale()
                var elst = ElstBuilder()
                var total: UInt64 = 0
                for e in entries {
                    let d = try ticks(e.duration, movieScale)
                    total += d
                    var media: Int64 = -1
                    if let t = e.mediaTime { media = Int64(try ticks(t, mediaScale)) }
                    elst.add(duration: d, mediaTime: media)
                }
                let edts = Box(type: "edts", children: [Box(type: "elst", payload: elst.payload)])
                trak.children.removeAll { $0.type == "edts" }
                trak.children.insert(edts, at: tkhd + 1)
                try trak.children[tkhd].setTkhdDuration(total)
                moov.children[i] = trak
            }
            longest = max(longest, try trak.children[trak.children.firstIndex { $0.type == "tkhd" }!].tkhdDuration())
        }
        if let missing = Set(lists.keys).subtracting(found).first { throw BoxError("the file has no track \(missing)") }
        try moov.children[mvhdIndex].setMvhdDuration(longest)
    }

    private static func ticks(_ t: MediaTime, _ scale: UInt32) throws(BoxError) -> UInt64 {
        guard let n = t.count(in: Rational(1, Int32(clamping: scale)), rounding: .toNearestOrAwayFromZero), n >= 0 else {
            throw BoxError("the time \(t) cannot be stored in a \(scale) Hz timescale")
        }
        return UInt64(n)
    }

    // MARK: file I/O

    /// The file's top-level boxes, in order.
    private static func topLevel(_ fd: Int32, size fileSize: Int64) throws(BoxError) -> [(type: String, offset: Int64, size: Int64)] {
        var top: [(type: String, offset: Int64, size: Int64)] = []
        var at: Int64 = 0
        while at < fileSize {
            let header = try read(fd, at: at, count: 16 <= fileSize - at ? 16 : Int(fileSize - at))
            guard header.count >= 8 else { throw BoxError("a box header at byte \(at) is cut short") }
            var size = Int64(be32(header, 0))
            let type = fourCC(header, 4)
            if size == 1 {
                guard header.count >= 16 else { throw BoxError("a box header at byte \(at) is cut short") }
                size = Int64(bitPattern: be64(header, 8))
            } else if size == 0 {
                size = fileSize - at
            }
            // Compared without adding: a crafted 64-bit size would overflow `at + size`.
            guard size >= 8, size <= fileSize - at else { throw BoxError("box \(type) at byte \(at) has an impossible size \(size)") }
            top.append((type, at, size))
            at += size
        }
        return top
    }

    /// Whether the MP4 or QuickTime file at `path` holds movie fragments (a top-level `moof`), whose samples
    /// FFmpeg's demuxer may index only as it reads them (with a `sidx`, only the first fragment's at open).
    /// A file whose boxes cannot be walked counts as fragmented: reading it through is right for both. One that
    /// FFmpeg opened but this cannot (an object in S3) does not: reading it through would fetch it twice, and
    /// an index that stops short of its duration is read through anyway (`StreamIndex.covers`).
    static func isFragmented(path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        do throws(BoxError) {
            return try topLevel(fd, size: Int64(lseek(fd, 0, SEEK_END))).contains { $0.type == "moof" }
        } catch {
            return true
        }
    }

    private static func read(_ fd: Int32, at offset: Int64, count: Int) throws(BoxError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw n == 0 ? BoxError("the file ends early") : BoxError(errno: errno, "reading") }
            done += n
        }
        return bytes
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws(BoxError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw BoxError(errno: errno, "writing") }
            done += n
        }
    }

    /// Writes `count` zero bytes from `offset`, through one buffer of at most 1 MiB.
    private static func zero(_ fd: Int32, from offset: Int64, count: Int64) throws(BoxError) {
        let chunk = [UInt8](repeating: 0, count: Int(min(count, 1 << 20)))
        var done: Int64 = 0
        while done < count {
            let n = min(Int64(chunk.count), count - done)
            try write(fd, n == Int64(chunk.count) ? chunk : Array(chunk[0..<Int(n)]), at: offset + done)
            done += n
        }
    }

    /// Moves the bytes [start, end) to [start + by, end + by), last chunk first, through one buffer.
    private static func shiftForward(_ fd: Int32, from start: Int64, to end: Int64, by: Int64) throws(BoxError) {
        let chunk = 8 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 4096)
        defer { buffer.deallocate() }
        var upper = end
        while upper > start {
            let lower = max(start, upper - Int64(chunk))
            let count = Int(upper - lower)
            var done = 0
            while done < count {
                let n = pread(fd, buffer + done, count - done, off_t(lower) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw n == 0 ? BoxError("the file ends early") : BoxError(errno: errno, "reading") }
                done += n
            }
            done = 0
            while done < count {
                let n = pwrite(fd, buffer + done, count - done, off_t(lower + by) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw BoxError(errno: errno, "writing") }
                done += n
            }
            upper = lower
        }
    }
}

/// Why a file's boxes could not be rewritten.
struct BoxError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
    init(errno code: Int32, _ activity: String) { description = "\(activity): \(String(cString: strerror(code)))" }
}

/// An ISO BMFF box held in memory: a container's children, or a leaf's payload (after its header).
struct Box {
    static let containers: Set<String> = ["moov", "trak", "edts", "mdia", "minf", "stbl"]
    var type: String
    var payload: [UInt8] = []
    var children: [Box] = []

    init(type: String, payload: [UInt8]) { self.type = type; self.payload = payload }
    init(type: String, children: [Box]) { self.type = type; self.children = children }

    /// Parses one whole box (header included); descends into the containers this rewrite needs.
    static func parse(_ bytes: [UInt8]) throws(BoxError) -> Box {
        guard let (box, size) = try parse(bytes[...]), size == bytes.count else { throw BoxError("the moov box is malformed") }
        return box
    }

    private static func parse(_ bytes: ArraySlice<UInt8>) throws(BoxError) -> (Box, Int)? {
        let base = bytes.startIndex
        guard bytes.count >= 8 else { return nil }
        var size = Int(be32(bytes, base))
        let type = fourCC(bytes, base + 4)
        var header = 8
        if size == 1 {
            guard bytes.count >= 16 else { throw BoxError("box \(type) is cut short") }
            size = Int(be64(bytes, base + 8))
            header = 16
        } else if size == 0 {
            size = bytes.count
        }
        guard size >= header, size <= bytes.count else { throw BoxError("box \(type) has an impossible size \(size)") }
        let body = bytes[(base + header)..<(base + size)]
        guard containers.contains(type) else { return (Box(type: type, payload: Array(body)), size) }
        var children: [Box] = []
        var rest = body
        while !rest.isEmpty {
            guard let (child, used) = try parse(rest) else {
                // Trailing padding shorter than a box header is allowed.
                if rest.allSatisfy({ $0 == 0 }) { break }
                throw BoxError("box \(type) holds a malformed child")
            }
            children.append(child)
            rest = rest.dropFirst(used)
        }
        return (Box(type: type, children: children), size)
    }

    var serializedSize: Int {
        let body = Box.containers.contains(type) ? children.reduce(0) { $0 + $1.serializedSize } : payload.count
        return body + 8 > Int(UInt32.max) ? body + 16 : body + 8
    }

    func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(serializedSize)
        append(to: &out)
        return out
    }

    private func append(to out: inout [UInt8]) {
        let size = serializedSize
        if size > Int(UInt32.max) {
            putBE32(&out, 1); out += Array(type.utf8); putBE64(&out, UInt64(size))
        } else {
            putBE32(&out, UInt32(size)); out += Array(type.utf8)
        }
        if Box.containers.contains(type) {
            for c in children { c.append(to: &out) }
        } else {
            out += payload
        }
    }

    // MARK: full-box fields

    private var version: UInt8 { payload.first ?? 0 }

    func mvhdTimescale() throws(BoxError) -> UInt32 {
        try need(version == 1 ? 24 : 16)
        return be32(payload, version == 1 ? 20 : 12)
    }

    mutating func setMvhdDuration(_ d: UInt64) throws(BoxError) {
        try setDuration(d, v0: 16, v1: 24)
    }

    func mdhdTimescale() throws(BoxError) -> UInt32 { try mvhdTimescale() }

    func tkhdTrackID() throws(BoxError) -> UInt32 {
        try need(version == 1 ? 24 : 16)
        return be32(payload, version == 1 ? 20 : 12)
    }

    func tkhdDuration() throws(BoxError) -> UInt64 {
        try need(version == 1 ? 36 : 24)
        return version == 1 ? be64(payload, 28) : UInt64(be32(payload, 20))
    }

    mutating func setTkhdDuration(_ d: UInt64) throws(BoxError) {
        try setDuration(d, v0: 20, v1: 28)
    }

    /// Writes a duration field, upgrading a version-0 box to version 1 when the value needs 64 bits
    /// (the fields before it widen from 32 to 64 bits: creation and modification time).
    private mutating func setDuration(_ d: UInt64, v0: Int, v1: Int) throws(BoxError) {
        if version == 0 && d > UInt64(UInt32.max) {
            try need(v0 + 4)
            // Version 0: [ver+flags 4][ctime 4][mtime 4]...; version 1: [ver+flags 4][ctime 8][mtime 8]...
            var widened: [UInt8] = [1] + payload[1..<4]
            putBE64(&widened, UInt64(be32(payload, 4)))
            putBE64(&widened, UInt64(be32(payload, 8)))
            widened += payload[12..<v0]
            putBE64(&widened, d)
            widened += payload[(v0 + 4)...]
            payload = widened
            return
        }
        if version == 1 {
            try need(v1 + 8)
            replaceBE64(&payload, at: v1, d)
        } else {
            try need(v0 + 4)
            replaceBE32(&payload, at: v0, UInt32(d))
        }
    }

    private func need(_ count: Int) throws(BoxError) {
        guard payload.count >= count else { throw BoxError("box \(type) is cut short") }
    }

    /// Adds `shift` to every chunk offset in the tree; a 32-bit table (`stco`) that would overflow
    /// becomes a 64-bit one (`co64`).
    mutating func shiftChunkOffsets(by shift: Int64) throws(BoxError) {
        if type == "stco" || type == "co64" {
            try need(8)
            let count = Int(be32(payload, 4))
            let wide = type == "co64"
            try need(8 + count * (wide ? 8 : 4))
            var offsets: [UInt64] = []
            offsets.reserveCapacity(count)
            for i in 0..<count {
                let old = wide ? be64(payload, 8 + 8 * i) : UInt64(be32(payload, 8 + 4 * i))
                offsets.append(UInt64(Int64(old) + shift))
            }
            let needsWide = wide || offsets.contains { $0 > UInt64(UInt32.max) }
            var out: [UInt8] = Array(payload[0..<8])
            for o in offsets { if needsWide { putBE64(&out, o) } else { putBE32(&out, UInt32(o)) } }
            payload = out
            type = needsWide ? "co64" : "stco"
            return
        }
        for i in children.indices { try children[i].shiftChunkOffsets(by: shift) }
    }
}

/// An `elst` payload: version 1 (64-bit fields) only when a value needs it.
private struct ElstBuilder {
    private var entries: [(UInt64, Int64)] = []
    mutating func add(duration: UInt64, mediaTime: Int64) { entries.append((duration, mediaTime)) }

    var payload: [UInt8] {
        let wide = entries.contains { $0.0 > UInt64(UInt32.max) || $0.1 > Int64(Int32.max) }
        var out: [UInt8] = [wide ? 1 : 0, 0, 0, 0]
        putBE32(&out, UInt32(entries.count))
        for (d, m) in entries {
            if wide {
                putBE64(&out, d); putBE64(&out, UInt64(bitPattern: m))
            } else {
                putBE32(&out, UInt32(d)); putBE32(&out, UInt32(bitPattern: Int32(m)))
            }
            out += [0, 1, 0, 0]   // media rate 1.0 (16.16)
        }
        return out
    }
}

private func be32<C: RandomAccessCollection>(_ b: C, _ i: C.Index) -> UInt32 where C.Element == UInt8, C.Index == Int {
    UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
}
private func be64<C: RandomAccessCollection>(_ b: C, _ i: C.Index) -> UInt64 where C.Element == UInt8, C.Index == Int {
    UInt64(be32(b, i)) << 32 | UInt64(be32(b, i + 4))
}
private func fourCC<C: RandomAccessCollection>(_ b: C, _ i: C.Index) -> String where C.Element == UInt8, C.Index == Int {
    String(decoding: b[i..<(i + 4)], as: UTF8.self)
}
private func putBE32(_ out: inout [UInt8], _ v: UInt32) {
    out += [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)]
}
private func putBE64(_ out: inout [UInt8], _ v: UInt64) { putBE32(&out, UInt32(v >> 32)); putBE32(&out, UInt32(v & 0xffff_ffff)) }
private func replaceBE32(_ b: inout [UInt8], at i: Int, _ v: UInt32) {
    b[i] = UInt8(v >> 24); b[i + 1] = UInt8(v >> 16 & 0xff); b[i + 2] = UInt8(v >> 8 & 0xff); b[i + 3] = UInt8(v & 0xff)
}
private func replaceBE64(_ b: inout [UInt8], at i: Int, _ v: UInt64) {
    replaceBE32(&b, at: i, UInt32(v >> 32)); replaceBE32(&b, at: i + 4, UInt32(v & 0xffff_ffff))
}
