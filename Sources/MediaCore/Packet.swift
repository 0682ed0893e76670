internal import CFFmpeg
internal import CMediaShims
import MediaTime

/// A packet kept for later (queued encoder output): a class so it can live in arrays.
public final class PacketBox {
    public var packet = Packet()
    public init() {}
}

/// One compressed packet: the sole owner of an AVPacket, freed when the value is consumed or dies.
/// Timestamps are in the time base of the stream the packet came from. Reused across reads.
public struct Packet: ~Copyable {
    let pointer: UnsafeMutablePointer<AVPacket>

    public init() {
        guard let p = av_packet_alloc() else { fatalError("out of memory allocating an AVPacket") }
        pointer = p
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }

    /// Drops the packet's data and resets its fields (the allocation is kept).
    public mutating func reset() { av_packet_unref(pointer) }

    /// A copy of the packet's data.
    public var bytes: [UInt8] { withBytes { Array($0) } }

    /// Reads the packet's data in place (no copy; the buffer may be shared with other references).
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        guard let data = pointer.pointee.data, pointer.pointee.size > 0 else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeBufferPointer(start: data, count: Int(pointer.pointee.size)))
    }

    /// Replaces the packet's data with `bytes` (its fields are kept).
    public mutating func replaceData(with bytes: [UInt8]) {
        let padding = Int(AV_INPUT_BUFFER_PADDING_SIZE)
        guard let buffer = av_buffer_alloc(bytes.count + padding) else { return }
        let data = buffer.pointee.data!
        bytes.withUnsafeBufferPointer { if let base = $0.baseAddress { data.update(from: base, count: bytes.count) } }
        (data + bytes.count).initialize(repeating: 0, count: padding)
        av_buffer_unref(&pointer.pointee.buf)
        pointer.pointee.buf = buffer
        pointer.pointee.data = data
        pointer.pointee.size = Int32(bytes.count)
    }

    /// Calls `body` with the packet's data, made writable (copied first if it is shared).
    public mutating func withMutableData<R>(_ body: (UnsafeMutableBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        guard av_packet_make_writable(pointer) >= 0, let data = pointer.pointee.data else { return nil }
        return try body(UnsafeMutableBufferPointer(start: data, count: Int(pointer.pointee.size)))
    }

    /// Makes this packet a new reference to `other`'s data and fields (no copy of the data).
    public mutating func reference(_ other: borrowing Packet) {
        av_packet_unref(pointer)
        _ = av_packet_ref(pointer, other.pointer)
    }

    /// Takes over `other`'s data and fields, leaving it empty (to keep a packet while reading on).
    public mutating func take(from other: inout Packet) {
        av_packet_unref(pointer)
        av_packet_move_ref(pointer, other.pointer)
    }

    public var streamIndex: Int { Int(pointer.pointee.stream_index) }
    /// Presentation timestamp in stream ticks, nil when the packet has none.
    public var pts: Int64? { let v = pointer.pointee.pts; return v == mf_av_nopts_value() ? nil : v }
    /// Decoding timestamp in stream ticks, nil when the packet has none.
    public var dts: Int64? { let v = pointer.pointee.dts; return v == mf_av_nopts_value() ? nil : v }
    /// Duration in stream ticks; 0 when unknown.
    public var duration: Int64 { pointer.pointee.duration }
    public var size: Int { Int(pointer.pointee.size) }
    public var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    public var isCorrupt: Bool { pointer.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 }

    /// Rewrites the timing (in the time base of the stream it will be written to) and the stream.
    public mutating func retime(pts: Int64?, dts: Int64?, duration: Int64, streamIndex: Int) {
        pointer.pointee.pts = pts ?? mf_av_nopts_value()
        pointer.pointee.dts = dts ?? mf_av_nopts_value()
        pointer.pointee.duration = duration
        pointer.pointee.stream_index = Int32(streamIndex)
        pointer.pointee.pos = -1
    }
    /// The packet carries encryption info (Common Encryption): its payload cannot be decoded without
    /// the key, and copying it produces an unplayable file.
    public var isEncrypted: Bool { av_packet_get_side_data(pointer, AV_PKT_DATA_ENCRYPTION_INFO, nil) != nil }

    /// The demuxer marks the packet as decode-only: it precedes the start an edit list sets (pre-roll).
    public var isDiscarded: Bool { pointer.pointee.flags & AV_PKT_FLAG_DISCARD != 0 }
    /// Audio samples the decoder drops from the start of this packet (encoder priming cut by an edit
    /// list); 0 when the packet carries no such side data.
    public var skippedLeadingSamples: Int {
        var size: Int = 0
        guard let data = av_packet_get_side_data(pointer, AV_PKT_DATA_SKIP_SAMPLES, &size), size >= 4 else { return 0 }
        return Int(UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16 | UInt32(data[3]) << 24)
    }
}
