import Foundation
import MediaTime

/// A rectangle in normalized coordinates (0...1 of the picture's width and height, origin top left).
public struct NormalizedRect: Sendable, Hashable, Codable {
    public var x: Double, y: Double, width: Double, height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        (self.x, self.y, self.width, self.height) = (x, y, width, height)
    }

    public static let full = NormalizedRect(x: 0, y: 0, width: 1, height: 1)

    public func intersects(_ o: NormalizedRect) -> Bool {
        x < o.x + o.width && o.x < x + width && y < o.y + o.height && o.y < y + height
    }
}

/// A point in normalized coordinates and in pixels.
public struct CodePoint: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double
    public var pixelX: Int
    public var pixelY: Int
}

/// One code seen in one picture.
public struct DetectedCode: Sendable, Hashable {
    public var time: MediaTime
    public var symbology: Symbology
    /// The payload as text, when its bytes are text (UTF-8 without control characters other than
    /// tab and line breaks); nil otherwise.
    public var payload: String?
    public var payloadBytes: [UInt8]
    /// Axis-aligned bounds, normalized.
    public var bounds: NormalizedRect
    /// The same bounds in pixels (x, y, width, height).
    public var pixelBounds: [Int]
    /// The outline's corners, in order, normalized and in pixels.
    public var corners: [CodePoint]

    /// UTF-8 text without control characters other than tab, CR and LF; otherwise nil.
    static func text(of bytes: [UInt8]) -> String? {
        guard let s = String(validating: bytes, as: UTF8.self) else { return nil }
        let controls = s.unicodeScalars.contains { ($0.value < 0x20 && ![0x09, 0x0A, 0x0D].contains($0.value)) || $0.value == 0x7F }
        return controls ? nil : s
    }
}

/// Detections of the same (symbology, payload) merged across pictures, as a user wants them: when it
/// was first and last seen, in how many scanned frames, and where (the first sighting).
public struct ScannedCode: Sendable, Hashable {
    public var symbology: Symbology
    public var payload: String?
    public var payloadBytes: [UInt8]
    public var firstTime: MediaTime
    public var lastTime: MediaTime
    public var frameCount: Int
    public var bounds: NormalizedRect
    public var pixelBounds: [Int]
    public var corners: [CodePoint]
}

extension ScannedCode: Encodable {
    private enum Keys: String, CodingKey {
        case symbology, payload, payloadBase64, firstTime, lastTime, frameCount, bounds, pixelBounds, corners
    }
    private enum RectKeys: String, CodingKey { case x, y, width, height }

    /// `payload` is null when the bytes are not text; `payloadBase64` always holds the bytes.
    public func encode(to encoder: any Swift.Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(symbology, forKey: .symbology)
        try c.encode(payload, forKey: .payload)
        try c.encode(Data(payloadBytes).base64EncodedString(), forKey: .payloadBase64)
        try c.encode(firstTime, forKey: .firstTime)
        try c.encode(lastTime, forKey: .lastTime)
        try c.encode(frameCount, forKey: .frameCount)
        try c.encode(bounds, forKey: .bounds)
        var p = c.nestedContainer(keyedBy: RectKeys.self, forKey: .pixelBounds)
        try p.encode(pixelBounds[0], forKey: .x)
        try p.encode(pixelBounds[1], forKey: .y)
        try p.encode(pixelBounds[2], forKey: .width)
        try p.encode(pixelBounds[3], forKey: .height)
        try c.encode(corners, forKey: .corners)
    }
}

/// Merges detections frame by frame, keeping first-seen order.
public struct CodeAggregator: Sendable {
    private struct Key: Hashable { var symbology: Symbology; var bytes: [UInt8] }
    private var index: [Key: Int] = [:]
    public private(set) var codes: [ScannedCode] = []

    public init() {}

    /// Adds codes already merged elsewhere (another segment's scan).
    public mutating func merge(_ scanned: [ScannedCode]) {
        for s in scanned {
            let key = Key(symbology: s.symbology, bytes: s.payloadBytes)
            if let i = index[key] {
                codes[i].firstTime = MediaTime.min(codes[i].firstTime, s.firstTime)
                codes[i].lastTime = MediaTime.max(codes[i].lastTime, s.lastTime)
                codes[i].frameCount += s.frameCount
            } else {
                index[key] = codes.count
                codes.append(s)
            }
        }
    }

    /// Adds one frame's detections (a code counted once per frame however often it appears in it).
    public mutating func add(_ detections: [DetectedCode]) {
        var seenThisFrame: Set<Key> = []
        for d in detections {
            let key = Key(symbology: d.symbology, bytes: d.payloadBytes)
            guard seenThisFrame.insert(key).inserted else { continue }
            if let i = index[key] {
                codes[i].lastTime = MediaTime.max(codes[i].lastTime, d.time)
                codes[i].firstTime = MediaTime.min(codes[i].firstTime, d.time)
                codes[i].frameCount += 1
            } else {
                index[key] = codes.count
                codes.append(ScannedCode(symbology: d.symbology, payload: d.payload, payloadBytes: d.payloadBytes,
                                         firstTime: d.time, lastTime: d.time, frameCount: 1, bounds: d.bounds,
                                         pixelBounds: d.pixelBounds, corners: d.corners))
            }
        }
    }
}
