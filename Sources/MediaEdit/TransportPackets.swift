/// MPEG-2 transport stream packets (ISO/IEC 13818-1 2.4.3), read as far as a packager needs: 188 bytes
/// each, a 13-bit PID, and the flag that says a PES packet begins in it.
enum TransportPackets {
    static let size = 188

    /// Where a segment's first picture ends: the start of the packet in which its elementary stream's second
    /// PES packet begins (the segment's end when there is none). Everything before it (PAT, PMT and the
    /// picture) is the byte range an I-frame playlist names. nil when the bytes are not transport packets.
    static func firstPictureEnd(_ bytes: [UInt8]) -> Int? {
        guard !bytes.isEmpty, bytes.count % size == 0 else { return nil }
        var elementary: Int?
        for at in stride(from: 0, to: bytes.count, by: size) {
            guard bytes[at] == 0x47 else { return nil }
            let pid = Int(bytes[at + 1] & 0x1F) << 8 | Int(bytes[at + 2])
            guard bytes[at + 1] & 0x40 != 0 else { continue }
            if let elementary {
                if pid == elementary { return at }
            } else if let payload = payloadStart(bytes, at: at), payload + 3 <= at + size,
                      bytes[payload] == 0, bytes[payload + 1] == 0, bytes[payload + 2] == 1 {
                elementary = pid   // a PES start code: the elementary stream's first packet
            }
        }
        return elementary == nil ? nil : bytes.count
    }

    /// Numbers each packet's continuity counter (ISO/IEC 13818-1 2.4.3.3) on from `last` (each PID's last
    /// counter, updated): one more for a packet with a payload, the same for one without. Whether any changed.
    static func continueCounters(_ bytes: inout [UInt8], from last: inout [Int: UInt8]) -> Bool {
        var changed = false
        for at in stride(from: 0, to: bytes.count - size + 1, by: size) where bytes[at] == 0x47 {
            let pid = Int(bytes[at + 1] & 0x1F) << 8 | Int(bytes[at + 2])
            guard pid != 0x1FFF else { continue }   // null packets carry no counter that matters
            let hasPayload = (bytes[at + 3] >> 4) & 0x1 != 0
            let counter = last[pid].map { hasPayload ? ($0 + 1) & 0xF : $0 } ?? bytes[at + 3] & 0xF
            if bytes[at + 3] & 0xF != counter {
                bytes[at + 3] = bytes[at + 3] & 0xF0 | counter
                changed = true
            }
            last[pid] = counter
        }
        return changed
    }

    /// Where a packet's payload begins, past its adaptation field; nil when it has none.
    static func payloadStart(_ bytes: [UInt8], at: Int) -> Int? {
        let control = (bytes[at + 3] >> 4) & 0x3
        guard control & 0x1 != 0 else { return nil }
        let start = control & 0x2 != 0 ? at + 5 + Int(bytes[at + 4]) : at + 4
        return start < at + size ? start : nil
    }
}
