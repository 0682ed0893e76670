internal import CZXingShim

/// Reads Aztec, Data Matrix and PDF417 symbols in 8-bit grayscale pictures with zxing-cpp 1.4.
///
/// Two traps of that version are worked around: it is only ever asked for these matrix formats (with a
/// linear code in the picture, asking for more made it abort the process), and a large picture is read
/// as overlapping tiles (`tileSize` pixels, half-tile steps), because on a whole 720p frame it missed
/// symbols it read once the picture was cropped around them. A symbol seen in several tiles is reported
/// once. Thread-safe (no shared state); blocking.
public final class ZXingReader: Sendable {
    public enum Format: Int32, Sendable, CaseIterable {
        case aztec = 1, dataMatrix = 2, pdf417 = 4, qr = 8
    }

    public struct Symbol: Sendable {
        public var format: Format
        public var data: [UInt8]
        /// Corners in the picture's pixels: top left, top right, bottom right, bottom left.
        public var corners: [(x: Int, y: Int)]
    }

    private let formats: Int32
    public let tileSize: Int
    public let tryHarder: Bool

    /// `tileSize` nil reads the whole picture at once.
    public init(formats: Set<Format>, tileSize: Int? = 400, tryHarder: Bool = true) {
        self.formats = formats.reduce(0) { $0 | $1.rawValue }
        self.tileSize = tileSize ?? Int.max / 4
        self.tryHarder = tryHarder
    }

    public func read(_ pixels: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, maxSymbols: Int = 16) -> [Symbol] {
        guard formats != 0, width > 0, height > 0 else { return [] }
        var found: [Symbol] = []
        for y in origins(height) {
            for x in origins(width) {
                let w = min(tileSize, width - x), h = min(tileSize, height - y)
                for s in readTile(pixels + y * stride + x, width: w, height: h, stride: stride, maxSymbols: maxSymbols) {
                    guard !found.contains(where: { $0.format == s.format && $0.data == s.data }) else { continue }
                    found.append(Symbol(format: s.format, data: s.data, corners: s.corners.map { (x: $0.x + x, y: $0.y + y) }))
                }
            }
        }
        return found
    }

    /// Tile origins along one side: the whole side when it is small, else half-tile steps ending flush.
    private func origins(_ length: Int) -> [Int] {
        guard length > tileSize + tileSize / 2 else { return [0] }
        var starts = Array(stride(from: 0, through: length - tileSize, by: tileSize / 2))
        if starts.last! + tileSize < length { starts.append(length - tileSize) }
        return starts
    }

    private func readTile(_ pixels: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, maxSymbols: Int) -> [Symbol] {
        var results = [mf_zx_result](repeating: mf_zx_result(), count: maxSymbols)
        let n = Int(mf_zx_read(pixels, Int32(width), Int32(height), Int32(stride), formats, tryHarder ? 1 : 0, &results, Int32(maxSymbols)))
        guard n > 0 else { return [] }
        defer { mf_zx_free(&results, Int32(n)) }
        return results.prefix(n).compactMap { r in
            guard let format = Format(rawValue: r.format) else { return nil }
            let data = r.bytes.map { Array(UnsafeBufferPointer(start: $0, count: Int(r.byte_count))) } ?? []
            let xs = [r.x.0, r.x.1, r.x.2, r.x.3], ys = [r.y.0, r.y.1, r.y.2, r.y.3]
            return Symbol(format: format, data: data, corners: zip(xs, ys).map { (x: Int($0), y: Int($1)) })
        }
    }
}
