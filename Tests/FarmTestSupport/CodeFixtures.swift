import Foundation

/// Pictures of machine-readable codes drawn by real encoders (qrencode, ZXingWriter, zint), and
/// movies in which they appear at known times and places (FFmpeg overlays them on a test pattern).
public enum CodeFixtures {
    /// A code to draw: the symbology name MediaFarm uses, the payload a reader must return, and how
    /// to draw it.
    public struct Code: Sendable {
        public var symbology: String
        public var payload: String
        var draw: @Sendable (String) throws -> Void
    }

    private static func zxing(_ format: String, _ text: String, _ size: String) -> @Sendable (String) throws -> Void {
        { out in try ProcessRunner.check("ZXingWriter", ["-size", size, "-margin", "20", format, text, out]) }
    }

    /// A QR code and one code of every linear symbology (all of them codes zbarimg reads too), each with
    /// a distinct payload.
    public static let qrAndLinearCodes: [Code] = [
        Code(symbology: "qr", payload: "MediaFarm QR 1") { try ProcessRunner.check("qrencode", ["-o", $0, "-s", "4", "-m", "4", "MediaFarm QR 1"]) },
        Code(symbology: "code128", payload: "MF-CODE128-42", draw: zxing("Code128", "MF-CODE128-42", "480x120")),
        Code(symbology: "code39", payload: "MEDIAFARM39", draw: zxing("Code39", "MEDIAFARM39", "480x120")),
        Code(symbology: "code93", payload: "MEDIAFARM93", draw: zxing("Code93", "MEDIAFARM93", "480x120")),
        Code(symbology: "ean8", payload: "96385074", draw: zxing("EAN-8", "96385074", "300x120")),
        Code(symbology: "ean13", payload: "5901234123457", draw: zxing("EAN-13", "5901234123457", "360x120")),
        Code(symbology: "upce", payload: "01234565", draw: zxing("UPC-E", "01234565", "300x120")),
        Code(symbology: "interleaved2of5", payload: "12345678", draw: zxing("ITF", "12345678", "360x120")),
        Code(symbology: "itf14", payload: "15400141288763", draw: zxing("ITF", "15400141288763", "480x120")),
        Code(symbology: "codabar", payload: "A40156B", draw: zxing("Codabar", "A40156B", "360x120")),
        Code(symbology: "databar", payload: "0101234567890128") {
            try ProcessRunner.check("zint", ["-b", "29", "-d", "0123456789012", "--scale=2", "--height=20", "--whitesp=10", "--vwhitesp=5", "-o", $0])
        },
    ]

    /// One code of each of the other matrix symbologies (zbarimg reads none of them).
    public static let otherMatrixCodes: [Code] = [
        Code(symbology: "aztec", payload: "MF Aztec 7", draw: zxing("Aztec", "MF Aztec 7", "200x200")),
        Code(symbology: "dataMatrix", payload: "MF DataMatrix 8", draw: zxing("DataMatrix", "MF DataMatrix 8", "200x200")),
        Code(symbology: "pdf417", payload: "MF PDF417 9", draw: zxing("PDF417", "MF PDF417 9", "300x120")),
    ]

    /// Where and when a picture is shown in a generated movie: the half-open interval [start, end).
    public struct Placement: Sendable {
        public var image: String
        public var x: Int
        public var y: Int
        public var start: Double
        public var end: Double
        public init(image: String, x: Int, y: Int, start: Double, end: Double) {
            (self.image, self.x, self.y, self.start, self.end) = (image, x, y, start, end)
        }
    }

    /// A folder of its own for a fixture set.
    public static func folder(_ label: String) throws -> URL { try TestPaths.makeTemporaryFolder("codes-\(label)") }

    /// Draws `code` into `folder` and returns the PNG's path.
    public static func draw(_ code: Code, in folder: URL, name: String? = nil) throws -> String {
        let path = folder.appendingPathComponent("\(name ?? code.symbology).png").path
        try code.draw(path)
        return path
    }

    /// Applies an FFmpeg filter to a picture (blur, rotation, noise...) and returns the new picture.
    public static func degrade(_ image: String, filter: String, as name: String, in folder: URL) throws -> String {
        let out = folder.appendingPathComponent("\(name).png").path
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error", "-i", image, "-vf", filter, "-frames:v", "1", out])
        return out
    }

    /// A movie of `seconds` of a moving test pattern at `fps`, with the placements overlaid.
    public static func movie(_ placements: [Placement], seconds: Double, fps: Int = 10, size: String = "640x360",
                             noise: Bool = false, to path: String) throws {
        var args = ["-y", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=\(size):r=\(fps):d=\(seconds)"]
        for p in placements { args += ["-i", p.image] }
        var chain = noise ? "[0]noise=alls=30:allf=t+u[v0];" : "[0]null[v0];"
        for (i, p) in placements.enumerated() {
            chain += "[v\(i)][\(i + 1)]overlay=\(p.x):\(p.y):enable='gte(t,\(p.start))*lt(t,\(p.end))'[v\(i + 1)];"
        }
        chain += "[v\(placements.count)]null[out]"
        args += ["-filter_complex", chain, "-map", "[out]", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "10",
                 "-pix_fmt", "yuv420p", path]
        try ProcessRunner.check("ffmpeg", args)
    }
}
