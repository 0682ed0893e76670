import MediaCore
import MediaTime

/// Finds machine-readable codes in pictures, with AVCaptureMetadataOutput's semantics: only the
/// symbologies asked for (none asked, nothing reported), only codes that intersect the region of
/// interest (the whole picture is searched, so a code straddling the region's edge is still read),
/// at most `maxCodesPerFrame` per picture. Thread-confined (it owns engine state); blocking.
public final class CodeScanner {
    public struct Configuration: Sendable, Hashable {
        public var symbologies: [Symbology]
        public var regionOfInterest: NormalizedRect
        /// Scan a frame every `interval` of media time; zero scans every frame.
        public var interval: MediaTime
        public var maxCodesPerFrame: Int

        public init(symbologies: [Symbology], regionOfInterest: NormalizedRect = .full,
                    interval: MediaTime = .zero, maxCodesPerFrame: Int = 64) {
            self.symbologies = symbologies
            self.regionOfInterest = regionOfInterest
            self.interval = interval
            self.maxCodesPerFrame = maxCodesPerFrame
        }
    }

    public let configuration: Configuration
    private let zbar: ZBarScanner?
    private let zxing: ZXingReader?
    private let zxingQR: ZXingReader?
    private var gray = Frame()
    private let toGray = VideoScaler(outputFormat: "gray")

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        let zbarTypes = configuration.symbologies.reduce(into: Set<ZBarScanner.SymbolType>()) { $0.formUnion($1.zbarTypes) }
        // Every row and column: scanning every second one halves the work but loses codes with 2-pixel modules.
        zbar = zbarTypes.isEmpty ? nil : ZBarScanner(types: zbarTypes, density: 1)
        // QR codes are read in the whole picture at once; the other matrix codes in tiles (see ZXingReader).
        let zxingFormats = Set(configuration.symbologies.compactMap(\.zxingFormat))
        let tiled = zxingFormats.subtracting([.qr])
        zxing = tiled.isEmpty ? nil : ZXingReader(formats: tiled)
        zxingQR = zxingFormats.contains(.qr) ? ZXingReader(formats: [.qr], tileSize: nil) : nil
    }

    /// Codes in a decoded video frame shown at `time`.
    public func scan(_ frame: borrowing Frame, at time: MediaTime) throws(FFmpegError) -> [DetectedCode] {
        guard !configuration.symbologies.isEmpty else { return [] }
        if let codes = frame.withLumaPlane({ scan($0, width: $1, height: $2, stride: $3, time: time) }) { return codes }
        try toGray.convert(frame, into: &gray)
        return gray.withLumaPlane { scan($0, width: $1, height: $2, stride: $3, time: time) } ?? []
    }

    /// Codes in an 8-bit grayscale picture.
    public func scan(_ pixels: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, time: MediaTime) -> [DetectedCode] {
        // The whole picture is searched, so that a code straddling the region's edge is read whole; the
        // region then selects the codes that intersect it.
        let roi = configuration.regionOfInterest
        let (x0, y0, x1, y1) = (0, 0, width, height)
        let origin = pixels

        var found: [DetectedCode] = []
        if let zbar {
            for s in zbar.scan(origin, width: x1 - x0, height: y1 - y0, stride: stride) {
                guard let symbology = symbology(of: s) else { continue }
                let points = s.points.map { (x: $0.x + x0, y: $0.y + y0) }
                found.append(detection(symbology: symbology, bytes: s.data, points: points, width: width, height: height, time: time))
            }
        }
        for reader in [zxingQR, zxing].compactMap({ $0 }) {
            for s in reader.read(origin, width: x1 - x0, height: y1 - y0, stride: stride) {
                let symbology: Symbology
                switch s.format {
                case .aztec: symbology = .aztec
                case .dataMatrix: symbology = .dataMatrix
                case .pdf417: symbology = .pdf417
                case .qr: symbology = .qr
                }
                found.append(detection(symbology: symbology, bytes: s.data, points: s.corners, width: width, height: height, time: time))
            }
        }
        return Array(found.filter { $0.bounds.intersects(roi) }.prefix(configuration.maxCodesPerFrame))
    }

    /// The symbology the user asked for that a ZBar symbol is, or nil when it was not asked for.
    private func symbology(of s: ZBarScanner.Symbol) -> Symbology? {
        let asked = configuration.symbologies
        switch s.type {
        case .code128: return asked.contains(.code128) ? .code128 : nil
        case .code39: return asked.contains(.code39) ? .code39 : nil
        case .code93: return asked.contains(.code93) ? .code93 : nil
        case .ean8: return asked.contains(.ean8) ? .ean8 : nil
        case .ean13, .upca: return asked.contains(.ean13) ? .ean13 : nil
        case .upce: return asked.contains(.upce) ? .upce : nil
        case .codabar: return asked.contains(.codabar) ? .codabar : nil
        case .databar, .databarExpanded: return asked.contains(.databar) ? .databar : nil
        case .i25:
            // ITF-14 is Interleaved 2 of 5 with 14 digits.
            if s.data.count == 14, asked.contains(.itf14) { return .itf14 }
            return asked.contains(.interleaved2of5) ? .interleaved2of5 : (asked.contains(.itf14) && s.data.count == 14 ? .itf14 : nil)
        case .qr, .pdf417: return nil
        }
    }

    private func detection(symbology: Symbology, bytes: [UInt8], points: [(x: Int, y: Int)], width: Int, height: Int,
                           time: MediaTime) -> DetectedCode {
        let xs = points.map(\.x), ys = points.map(\.y)
        let minX = xs.min() ?? 0, maxX = xs.max() ?? 0, minY = ys.min() ?? 0, maxY = ys.max() ?? 0
        let w = Double(width), h = Double(height)
        let bounds = NormalizedRect(x: Double(minX) / w, y: Double(minY) / h,
                                    width: Double(max(maxX - minX, 1)) / w, height: Double(max(maxY - minY, 1)) / h)
        // Linear codes come back as scan-line points; their corners are the bounding box's.
        let outline = points.count == 4 ? points
            : [(minX, minY), (maxX, minY), (maxX, maxY), (minX, maxY)].map { (x: $0.0, y: $0.1) }
        let corners = outline.map { CodePoint(x: Double($0.x) / w, y: Double($0.y) / h, pixelX: $0.x, pixelY: $0.y) }
        return DetectedCode(time: time, symbology: symbology, payload: DetectedCode.text(of: bytes), payloadBytes: bytes,
                            bounds: bounds, pixelBounds: [minX, minY, max(maxX - minX, 1), max(maxY - minY, 1)], corners: corners)
    }
}
