internal import CZBar

/// Reads bar codes and QR codes in 8-bit grayscale pictures with ZBar. The owner of one ZBar image
/// scanner configured for exactly the symbol types asked for (ZBar's own defaults are all off here).
/// Thread-confined; blocking.
public final class ZBarScanner {
    /// ZBar's symbol types (zbar_symbol_type_t values).
    public enum SymbolType: Int32, Sendable, CaseIterable {
        case ean8 = 8, upce = 9, upca = 12, ean13 = 13, i25 = 25, databar = 34, databarExpanded = 35
        case codabar = 38, code39 = 39, pdf417 = 57, qr = 64, code93 = 93, code128 = 128
    }

    /// One decoded symbol: its raw bytes and its outline in the scanned picture's pixels.
    public struct Symbol: Sendable {
        public var type: SymbolType
        public var data: [UInt8]
        /// Outline points (x, y), in the order ZBar gives them.
        public var points: [(x: Int, y: Int)]
    }

    private let scanner: OpaquePointer
    private var buffer: [UInt8] = []

    /// Enables exactly `types`. `binary` keeps QR payload bytes as they are instead of converting
    /// them to text.
    public init(types: Set<SymbolType>, binary: Bool = true, density: Int = 1) {
        scanner = zbar_image_scanner_create()
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        for t in types {
            zbar_image_scanner_set_config(scanner, zbar_symbol_type_t(rawValue: UInt32(t.rawValue)), ZBAR_CFG_ENABLE, 1)
        }
        if binary { zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1) }
        // Scan every `density`-th row and column (1: every one, ZBar's default).
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_X_DENSITY, Int32(density))
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_Y_DENSITY, Int32(density))
        // Leave the built-in result cache off: every picture is scanned on its own.
        zbar_image_scanner_enable_cache(scanner, 0)
    }

    deinit { zbar_image_scanner_destroy(scanner) }

    /// Scans a `width` x `height` grayscale picture whose rows are `stride` bytes apart.
    public func scan(_ pixels: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int) -> [Symbol] {
        guard width > 0, height > 0 else { return [] }
        // ZBar wants tightly packed rows.
        let count = width * height
        if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
        return buffer.withUnsafeMutableBufferPointer { dst -> [Symbol] in
            for row in 0..<height {
                (dst.baseAddress! + row * width).update(from: pixels + row * stride, count: width)
            }
            guard let image = zbar_image_create() else { return [] }
            defer { zbar_image_destroy(image) }
            zbar_image_set_format(image, 0x3030_3859)   // fourcc "Y800"
            zbar_image_set_size(image, UInt32(width), UInt32(height))
            zbar_image_set_data(image, dst.baseAddress, UInt(count), nil)
            guard zbar_scan_image(scanner, image) > 0 else { return [] }
            var symbols: [Symbol] = []
            var symbol = zbar_image_first_symbol(image)
            while let s = symbol {
                defer { symbol = zbar_symbol_next(s) }
                guard let type = SymbolType(rawValue: Int32(zbar_symbol_get_type(s).rawValue)) else { continue }
                let length = Int(zbar_symbol_get_data_length(s))
                let data = zbar_symbol_get_data(s).map { p in
                    Array(UnsafeRawBufferPointer(start: p, count: length).bindMemory(to: UInt8.self))
                } ?? []
                let n = Int(zbar_symbol_get_loc_size(s))
                let points = (0..<n).map { (x: Int(zbar_symbol_get_loc_x(s, UInt32($0))), y: Int(zbar_symbol_get_loc_y(s, UInt32($0)))) }
                symbols.append(Symbol(type: type, data: data, points: points))
            }
            return symbols
        }
    }
}
