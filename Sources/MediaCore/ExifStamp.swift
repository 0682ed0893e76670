import Foundation

/// The few EXIF fields a still from a live source carries (AVCaptureStillImageOutput's metadata): when it
/// was taken (`DateTimeOriginal` with its fraction and UTC offset), what it is of (`ImageDescription`) and
/// what made it (`Software`), as an APP1 segment put right after a JPEG's start (big-endian TIFF).
public struct ExifStamp: Sendable, Hashable {
    public var date: Date
    public var description: String?
    public var software = "MediaFarm"

    public init(date: Date, description: String?) {
        self.date = date
        self.description = description
    }

    /// `jpeg` with the stamp's APP1 segment after its SOI marker; nil when `jpeg` is not a JPEG.
    public func inserted(into jpeg: [UInt8]) -> [UInt8]? {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { return nil }
        let segment = app1()
        return [0xFF, 0xD8] + segment + jpeg[2...]
    }

    /// "YYYY:MM:DD HH:MM:SS" in UTC, and the milliseconds.
    var dateText: (String, String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: date)
        let text = String(format: "%04d:%02d:%02d %02d:%02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
        return (text, String(format: "%03d", min(999, (c.nanosecond ?? 0) / 1_000_000)))
    }

    func app1() -> [UInt8] {
        // ASCII fields, NUL-terminated; printable characters of the description only, at most 255.
        func ascii(_ s: String) -> [UInt8] { Array(s.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F }.prefix(255).map { UInt8($0.value) }) + [0] }
        let (when, milliseconds) = dateText
        var ifd0: [(tag: UInt16, value: [UInt8])] = []
        if let description { ifd0.append((0x010E, ascii(description))) }
        ifd0.append((0x0131, ascii(software)))
        let exif: [(tag: UInt16, value: [UInt8])] = [(0x9003, ascii(when)), (0x9011, ascii("+00:00")), (0x9291, ascii(milliseconds))]
        // Layout after the 8-byte TIFF header: IFD0 (with the Exif pointer), its values, the Exif IFD, its values.
        func size(_ entries: Int) -> Int { 2 + 12 * entries + 4 }
        func values(_ entries: [(tag: UInt16, value: [UInt8])]) -> Int { entries.reduce(0) { $0 + ($1.value.count > 4 ? ($1.value.count + 1) & ~1 : 0) } }
        let ifd0Offset = 8
        let ifd0Values = ifd0Offset + size(ifd0.count + 1)
        let exifOffset = ifd0Values + values(ifd0)
        let exifValues = exifOffset + size(exif.count)
        var tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]
        func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func u32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func directory(_ entries: [(tag: UInt16, value: [UInt8])], valuesAt start: Int, pointer: Int?) -> (entries: [UInt8], data: [UInt8]) {
            var out = u16(entries.count + (pointer == nil ? 0 : 1))
            var data: [UInt8] = []
            var all = entries.map { (tag: $0.tag, type: 2, count: $0.value.count, value: $0.value) }
            if let pointer { all.append((tag: 0x8769, type: 4, count: 1, value: u32(pointer))) }
            for e in all.sorted(by: { $0.tag < $1.tag }) {
                out += u16(Int(e.tag)) + u16(e.type) + u32(e.count)
                if e.value.count <= 4 {
                    out += e.value + [UInt8](repeating: 0, count: 4 - e.value.count)
                } else {
                    out += u32(start + data.count)
                    data += e.value
                    if data.count % 2 == 1 { data.append(0) }
                }
            }
            return (out + u32(0), data)
        }
        let zeroth = directory(ifd0, valuesAt: ifd0Values, pointer: exifOffset)
        let sub = directory(exif, valuesAt: exifValues, pointer: nil)
        tiff += zeroth.entries + zeroth.data + sub.entries + sub.data
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        return [0xFF, 0xE1] + u16(payload.count + 2) + payload
    }
}
