internal import CFFmpeg

/// Which H.264 packets no other frame refers to (every coded slice with nal_ref_idc 0): a decoder may be
/// spared them when their own picture is not wanted, as FFmpeg's `skip_frame nonref` spares them.
public struct DisposableFrames: Sendable {
    /// Bytes of each NAL unit's length (AVCC, from the stream's avcC record); nil for Annex B start codes.
    let lengthSize: Int?

    /// For an H.264 stream; nil for any other codec (the rule is H.264's).
    public init?(_ stream: StreamInfo) {
        guard stream.codecName == "h264" else { return nil }
        if let first = stream.extradata.first, first == 1 {
            guard stream.extradata.count > 4 else { return nil }
            lengthSize = Int(stream.extradata[4] & 3) + 1
        } else {
            lengthSize = nil
        }
    }

    /// Whether `packet` holds only slices no frame refers to (false when it holds none, or does not parse).
    public func isDisposable(_ packet: borrowing Packet) -> Bool {
        let p = packet.pointer.pointee
        guard let data = p.data, p.size > 0 else { return false }
        let bytes = UnsafeBufferPointer(start: data, count: Int(p.size))
        var slices = 0
        var disposable = true
        func look(_ header: UInt8) {
            let type = header & 0x1F
            guard type == 1 || type == 5 else { return }
            slices += 1
            if header & 0x60 != 0 { disposable = false }
        }
        if let lengthSize {
            var at = 0
            while at + lengthSize < bytes.count {
                var length = 0
                for i in 0..<lengthSize { length = length << 8 | Int(bytes[at + i]) }
                let start = at + lengthSize
                guard length > 0, start + length <= bytes.count else { return false }
                look(bytes[start])
                at = start + length
            }
        } else {
            var i = 0
            while i + 3 < bytes.count {
                if bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 {
                    look(bytes[i + 3])
                    i += 3
                } else {
                    i += 1
                }
            }
        }
        return slices > 0 && disposable
    }
}
