import Foundation
import MediaCore
import MediaTime
#if canImport(Glibc)
import Glibc
#endif

/// One track of a streaming package written as CMAF: an in-memory fragmented MPEG-4 muxer whose
/// initialization and fragments are stored as `init.mp4` and `1.m4s`, `2.m4s`, … in the track's folder,
/// each created new (never over a file) and synced; or as MPEG-TS, `1.ts`, `2.ts`, … each beginning with
/// its PAT and PMT, so that it stands alone (`SegmentContainer`); each encrypted whole when asked (HLS's
/// AES-128, `SegmentEncryption`). A segment's time is read off its packets: it starts
/// at its first packet's presentation time and ends where the next one starts (the last, where its last
/// packet ends). Times in the files start at 0: an encoder whose first packet decodes before 0 (B-frames
/// reordered, AAC's priming) has its packets moved later by that much, and the initialization's edit list
/// (`presentationOffset`, DASH's presentationTimeOffset) moves them back for presentation; every track has
/// its edit, 0 or not. MPEG-TS has no edit list: every TS track presents its 0 at the same time
/// (`SegmentContainer.transportOrigin`), and plays what comes before (AAC's priming) just before it.
/// Thread-confined.
final class SegmentedTrack {
    let kind: StreamTrack.Kind
    let name: String
    let folder: String
    let file: OutputFile
    let container: SegmentContainer
    /// Its media segments encrypted (HLS AES-128); nil: in the clear.
    let encryption: SegmentEncryption?
    /// Every piece in one file (`media.mp4`, `media.ts`), each a byte range of it; nil: a file each.
    private let single: SingleMediaFile?
    /// The initialization's size at the start of the single file.
    private var initializationBytes: Int?
    /// Files written whose writeback was started but not waited for: synced together when the track ends,
    /// so that writing to disk goes on beside the work instead of stopping it at every segment.
    private var unsynced: [String] = []
    private(set) var stream = 0
    private(set) var codecs = ""
    private(set) var segments: [StreamSegment] = []
    private var start: Int64?
    private var end: Int64 = 0
    private var startsWithKeyframe = false
    private var initialization: [UInt8] = []
    /// How much later than presented the track's packets are timed in its files (track ticks).
    private(set) var presentationOffset: Int64?
    /// A chunk of a package: the number of its first segment, and how much later than its packets its
    /// segments fall in the whole package's timeline (track ticks). 1 and 0 for a package made whole.
    private(set) var firstNumber = 1
    private var shift: Int64 = 0

    /// A track named `name` (its folder under the package's folder), stored as `settings` say.
    init(kind: StreamTrack.Kind, name: String, settings: StreamSettings) throws(MediaFileError) {
        self.kind = kind
        self.name = name
        (container, encryption) = (settings.container, settings.encryption)
        folder = settings.folder + "/" + name
        single = settings.singleFile ? SingleMediaFile(folder: folder, name: "media." + (container == .cmaf ? "mp4" : "ts")) : nil
        file = try OutputFile(fragmentsNamed: folder, format: container.muxer)
    }

    /// Adds the encoder's stream (unless `added` says it was: its index), tagged `codecTag` when given, and writes
    /// the initialization segment.
    func begin(with encoder: Encoder, language: String?, added: Int? = nil, codecTag: String? = nil) throws {
        try begin(stream: try added ?? file.addStream(for: encoder, language: language, codecTag: codecTag), codecs: encoder.codecsName ?? encoder.codecName)
    }

    /// Writes the initialization segment of the file's stream `stream` (added already), named `codecs` (RFC 6381).
    func begin(stream: Int, codecs: String) throws {
        self.stream = stream
        self.codecs = codecs
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ExportError("\(folder): cannot make the track's folder: \(error.localizedDescription)")
        }
        // MPEG-TS has no initialization: what its header wrote (if anything) goes before the first segment.
        initialization = try file.writeInitialization(options: container == .cmaf ? OutputFile.cmafOptions : [:])
        // HEVC's and AV1's names come from the configuration record the muxer wrote (hvcC, av1C).
        if let named = Self.codecs(initialization: initialization) { self.codecs = named }
    }

    /// The track's timescale (valid after `begin`).
    var timeBase: Rational { file.timeBase(of: stream) }

    /// Makes the track a chunk of a package (after `begin`): its packets are timed from the chunk's start,
    /// and its segments are numbered from `firstNumber` and timed from `start` of the whole, in their names,
    /// their `mfhd` and `tfdt` boxes and the report, as the package made whole numbers and times them.
    func place(firstNumber: Int, at start: MediaTime) throws {
        guard firstNumber >= 1, let ticks = start.count(in: timeBase), ticks >= 0 else {
            throw ExportError("\(folder): a chunk cannot start at \(start.seconds) s (segment \(firstNumber))")
        }
        (self.firstNumber, shift) = (firstNumber, ticks)
    }

    /// How much later than given its packets are timed in its files: its edit, and for a chunk's MPEG-TS its
    /// place in the whole (PES headers cannot be moved afterwards, as fragments are by `renumber`).
    private var packetOffset: Int64 { (presentationOffset ?? 0) + (container == .transportStream ? shift : 0) }

    /// Writes a packet already timed in the track's time base (consumed).
    func write(_ packet: inout Packet) throws {
        if presentationOffset == nil {
            let early = -(packet.dts ?? packet.pts ?? 0)
            switch container {
            case .cmaf:
                presentationOffset = max(0, early)
                let edited = try Self.editing(initialization, presentingFrom: max(0, early))
                _ = try put(edited, named: "init.mp4")
                if single != nil { initializationBytes = edited.count }
            case .transportStream:
                guard let origin = MediaTime(value: SegmentContainer.transportOrigin, timescale: 90_000).count(in: timeBase), early <= origin else {
                    throw ExportError("\(folder): its first packet decodes \(early) ticks before its presentation, more than MPEG-TS's 1.4 s leaves")
                }
                presentationOffset = origin
            }
        }
        let offset = packetOffset
        packet.retime(pts: packet.pts.map { $0 + offset }, dts: packet.dts.map { $0 + offset }, duration: packet.duration, streamIndex: packet.streamIndex)
        let pts = packet.pts ?? packet.dts ?? 0
        if start == nil {
            start = pts
            startsWithKeyframe = packet.isKeyframe
        }
        end = max(end, pts + max(packet.duration, 0))
        try file.write(&packet)
    }

    /// Ends the segment being written at `next` (the next segment's start as presented, in the track's time
    /// base; nil: where its packets end) and stores it. Nothing happens when no packet was written since the
    /// last cut.
    func cut(at presented: Int64?) throws {
        let next = presented.map { $0 + packetOffset }
        guard let start else { return }
        var bytes = try file.cutFragment()
        guard !bytes.isEmpty else { return }
        let index = firstNumber + segments.count
        var keyframe: Int?
        switch container {
        case .cmaf:
            if firstNumber != 1 || shift != 0 { try Self.renumber(&bytes, sequenceBy: firstNumber - 1, timeBy: shift, in: folder) }
            keyframe = startsWithKeyframe ? Self.firstSampleEnd(bytes) : nil
        case .transportStream:
            if index == firstNumber { bytes = initialization + bytes }
            keyframe = startsWithKeyframe ? TransportPackets.firstPictureEnd(bytes) : nil
            // The next segment begins with its own PAT and PMT.
            try file.setMuxerOption("mpegts_flags", "+resend_headers")
        }
        // An I-frame playlist's byte range of an encrypted segment would not decrypt alone: none then.
        if let encryption {
            bytes = try encryption.encrypt(bytes, sequence: index - 1)
            keyframe = nil
        }
        let (name, offset) = try put(bytes, named: "\(index).\(container.fileExtension)")
        let placed = container == .cmaf ? start + shift : start
        segments.append(StreamSegment(file: name, start: placed, duration: (next ?? end) - start, bytes: bytes.count, keyframeBytes: keyframe, offset: offset))
        self.start = nil
        startsWithKeyframe = false
    }

    /// The track as the report has it: its folder, its files and every segment written.
    func report(width: Int? = nil, height: Int? = nil, frameRate: Rational? = nil, sampleRate: Int? = nil, channels: Int? = nil,
                language: String? = nil) -> StreamTrack {
        let initialization = container == .transportStream ? "" : single?.name ?? "init.mp4"
        var track = StreamTrack(kind: kind, folder: name, initialization: initialization, codecs: codecs,
                                timescale: Int(timeBase.denominator), presentationOffset: presentationOffset ?? 0, width: width, height: height,
                                frameRate: frameRate, sampleRate: sampleRate, channels: channels, language: language, segments: segments)
        (track.container, track.keyURI, track.initializationBytes) = (container == .cmaf ? nil : container, encryption?.keyURI, initializationBytes)
        return track
    }

    /// Stores a piece: as a new file `name`, or at the end of the single file. Its file and its offset in it.
    private func put(_ bytes: [UInt8], named name: String) throws -> (file: String, offset: Int?) {
        guard let single else {
            try Self.store(bytes, at: folder + "/" + name, sync: false)
            unsynced.append(folder + "/" + name)
            return (name, nil)
        }
        return (single.name, try single.append(bytes))
    }

    /// Cuts the last segment and ends the muxer; every file of the track synced.
    func finish() throws {
        try cut(at: nil)
        _ = try file.finishFragments()
        try single?.finish()
        for path in unsynced {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw ExportError("\(path): cannot open it to sync it: \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            guard fsync(fd) == 0 else { throw ExportError("\(path): cannot sync it to disk: \(String(cString: strerror(errno)))") }
        }
        unsynced = []
    }

    /// `initialization` with an edit list in its track that presents from `mediaTime` (track ticks): an `edts`
    /// box after the `tkhd`, with one edit of duration 0 (to the end, as in a fragmented file).
    static func editing(_ initialization: [UInt8], presentingFrom mediaTime: Int64) throws -> [UInt8] {
        func be<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
        guard mediaTime <= Int64(Int32.max), let moov = box("moov", in: initialization, from: 0, to: initialization.count),
              let trak = box("trak", in: initialization, from: moov.start + 8, to: moov.start + moov.size),
              let tkhd = box("tkhd", in: initialization, from: trak.start + 8, to: trak.start + trak.size) else {
            throw ExportError("the track's initialization has no moov/trak/tkhd to carry its edit list")
        }
        let elst = be(UInt32(28)) + Array("elst".utf8) + be(UInt32(0)) + be(UInt32(1)) + be(UInt32(0)) + be(Int32(mediaTime)) + be(UInt16(1)) + be(UInt16(0))
        let edts = be(UInt32(8 + elst.count)) + Array("edts".utf8) + elst
        var out = initialization
        out.insert(contentsOf: edts, at: tkhd.start + tkhd.size)
        out.replaceSubrange(trak.start..<trak.start + 4, with: be(UInt32(trak.size + edts.count)))
        out.replaceSubrange(moov.start..<moov.start + 4, with: be(UInt32(moov.size + edts.count)))
        return out
    }

    /// A chunk's fragment as the package made whole has it: its `mfhd` sequence number `extra` higher and its
    /// `tfdt` decode time `shift` ticks later (ISO/IEC 14496-12 8.8.5 and 8.8.12; a version 0 `tfdt` that
    /// cannot hold the time is refused).
    static func renumber(_ bytes: inout [UInt8], sequenceBy extra: Int, timeBy shift: Int64, in folder: String) throws {
        func put(_ value: UInt64, at: Int, width: Int) {
            for i in 0..<width { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(width - 1 - i))) }
        }
        guard let moof = box("moof", in: bytes, from: 0, to: bytes.count),
              let mfhd = box("mfhd", in: bytes, from: moof.start + 8, to: moof.start + moof.size), mfhd.size >= 16,
              let traf = box("traf", in: bytes, from: moof.start + 8, to: moof.start + moof.size),
              let tfdt = box("tfdt", in: bytes, from: traf.start + 8, to: traf.start + traf.size), tfdt.size >= 16 else {
            throw ExportError("\(folder): a fragment without moof/mfhd/traf/tfdt: it cannot be placed in the package's timeline")
        }
        put(UInt64(number(bytes, at: mfhd.start + 12) + extra), at: mfhd.start + 12, width: 4)
        if bytes[tfdt.start + 8] == 1, tfdt.size >= 20 {
            let time = bytes[tfdt.start + 12..<tfdt.start + 20].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            put(time + UInt64(shift), at: tfdt.start + 12, width: 8)
        } else {
            let time = Int64(number(bytes, at: tfdt.start + 12)) + shift
            guard time <= Int64(UInt32.max) else { throw ExportError("\(folder): a fragment's 32-bit decode time cannot hold \(time)") }
            put(UInt64(time), at: tfdt.start + 12, width: 4)
        }
    }

    /// The `CODECS` name of an HEVC or AV1 track from its initialization: the configuration record of the first
    /// track's first sample entry (moov/trak/mdia/minf/stbl/stsd, then hvc1, hev1 or av01, whose visual sample
    /// entry takes 78 bytes before its boxes); nil for other codecs.
    static func codecs(initialization bytes: [UInt8]) -> String? {
        var inside = (start: 0, end: bytes.count)
        for type in ["moov", "trak", "mdia", "minf", "stbl", "stsd"] {
            guard let b = box(type, in: bytes, from: inside.start, to: inside.end), b.size >= 8 else { return nil }
            inside = (b.start + 8, b.start + b.size)
        }
        // stsd: its version and flags, and an entry count, before the entries.
        for (entry, record) in [("hvc1", "hvcC"), ("hev1", "hvcC"), ("av01", "av1C")] {
            guard let sample = box(entry, in: bytes, from: inside.start + 8, to: inside.end), sample.size >= 8 + 78,
                  let config = box(record, in: bytes, from: sample.start + 8 + 78, to: sample.start + sample.size), config.size >= 8 else { continue }
            return CodecsName.of(configuration: record, record: bytes[(config.start + 8)..<(config.start + config.size)])
        }
        return nil
    }

    /// The box of `type` among those from `from` to `to` (32-bit sizes, as FFmpeg writes these).
    static func box(_ type: String, in bytes: [UInt8], from: Int, to: Int) -> (start: Int, size: Int)? {
        var at = from
        while at + 8 <= min(to, bytes.count) {
            let size = Self.number(bytes, at: at)
            if bytes[at + 4..<at + 8].elementsEqual(type.utf8) { return at + size <= bytes.count ? (at, size) : nil }
            guard size >= 8 else { return nil }
            at += size
        }
        return nil
    }

    static func number(_ bytes: [UInt8], at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }

    /// Where a fragment's first sample ends, read off its `trun` (the size the muxer stored, after it
    /// rewrote the encoder's start codes): the byte range an I-frame playlist names for a fragment that
    /// begins with its keyframe. nil when the fragment does not say.
    static func firstSampleEnd(_ bytes: [UInt8]) -> Int? {
        guard let moof = box("moof", in: bytes, from: 0, to: bytes.count),
              let traf = box("traf", in: bytes, from: moof.start + 8, to: moof.start + moof.size),
              let tfhd = box("tfhd", in: bytes, from: traf.start + 8, to: traf.start + traf.size),
              let trun = box("trun", in: bytes, from: traf.start + 8, to: traf.start + traf.size), trun.size >= 16 else { return nil }
        let flags = number(bytes, at: trun.start + 8) & 0xFF_FFFF
        var at = trun.start + 16
        var start: Int?
        if flags & 0x1 != 0 { start = moof.start + Int(Int32(truncatingIfNeeded: number(bytes, at: at))); at += 4 }
        if flags & 0x4 != 0 { at += 4 }
        if flags & 0x100 != 0 { at += 4 }
        var size: Int?
        if flags & 0x200 != 0, at + 4 <= trun.start + trun.size { size = number(bytes, at: at) }
        if size == nil {
            // The track's default size, when the run gives none (tfhd: flags, track id, then its fields).
            let tfhdFlags = number(bytes, at: tfhd.start + 8) & 0xFF_FFFF
            var field = tfhd.start + 16
            for (flag, width) in [(0x1, 8), (0x2, 4), (0x8, 4)] where tfhdFlags & flag != 0 { field += width }
            if tfhdFlags & 0x10 != 0, field + 4 <= tfhd.start + tfhd.size { size = number(bytes, at: field) }
        }
        guard let size, let first = start ?? mediaDataOffset(bytes) else { return nil }
        return first + size
    }

    /// Where the sample data of a fragment begins: just past the `mdat` box's header.
    static func mediaDataOffset(_ bytes: [UInt8]) -> Int? {
        var at = 0
        while at + 8 <= bytes.count {
            var size = bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            var header = 8
            if size == 1, at + 16 <= bytes.count {
                size = bytes[at + 8..<at + 16].reduce(0) { $0 << 8 | Int($1) }
                header = 16
            }
            if bytes[at + 4..<at + 8].elementsEqual("mdat".utf8) { return at + header }
            guard size >= header else { return nil }
            at += size
        }
        return nil
    }

    /// Writes `bytes` as a new file at `path` (refusing one already there) and syncs it; with `sync` false,
    /// starts its writeback only (the caller syncs it later).
    static func store(_ bytes: [UInt8], at path: String, sync: Bool = true) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ExportError("\(path): cannot create it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try write(bytes, to: fd, path: path)
        guard sync else { return Writeback.start(fd) }
        guard fsync(fd) == 0 else { throw ExportError("\(path): cannot sync it to disk: \(String(cString: strerror(errno)))") }
    }

    /// Writes all of `bytes` to `fd` (the file at `path`, named in errors).
    static func write(_ bytes: [UInt8], to fd: Int32, path: String) throws {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw ExportError("\(path): cannot write it: \(String(cString: strerror(errno)))") }
            written += n
        }
    }
}

/// A track's one media file of a single-file package: created new at its first piece (never over a file),
/// each piece appended, synced when the track ends.
final class SingleMediaFile {
    let name: String
    private let path: String
    private var fd: Int32 = -1
    private var size = 0

    init(folder: String, name: String) { (self.name, path) = (name, folder + "/" + name) }

    deinit { if fd >= 0 { close(fd) } }

    /// Appends `bytes`; where they begin.
    func append(_ bytes: [UInt8]) throws -> Int {
        if fd < 0 {
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw ExportError("\(path): cannot create it: \(String(cString: strerror(errno)))") }
        }
        let offset = size
        try SegmentedTrack.write(bytes, to: fd, path: path)
        Writeback.start(fd, offset: Int64(offset), length: Int64(bytes.count))
        size += bytes.count
        return offset
    }

    func finish() throws {
        guard fd >= 0 else { return }
        defer { close(fd); fd = -1 }
        guard fsync(fd) == 0 else { throw ExportError("\(path): cannot sync it to disk: \(String(cString: strerror(errno)))") }
    }
}
