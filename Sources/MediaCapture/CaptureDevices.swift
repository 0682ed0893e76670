internal import CDeviceShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A capture device this machine has (AVCaptureDevice.DiscoverySession): what `--source` takes to use
/// it and, for V4L2 cameras, their formats (AVCaptureDevice.Format) with sizes and frame rates.
public struct CaptureDevice: Sendable, Encodable {
    public struct Size: Sendable, Encodable {
        public var width: Int
        public var height: Int
        /// A range of sizes: this is its largest.
        public var range: Bool
        public var frameRates: [Double]
    }

    public struct Format: Sendable, Encodable {
        /// What `--input-format` takes (FFmpeg's name where it has one, else the FourCC).
        public var inputFormat: String
        public var fourcc: String
        public var description: String
        public var compressed: Bool
        public var sizes: [Size]
    }

    public var source: String
    public var kind: String
    public var name: String
    public var formats: [Format]?
}

public enum CaptureDevices {
    /// V4L2 video capture devices, X displays (screen capture) and ALSA capture devices, in that order.
    public static func list(deviceFolder: String = "/dev", x11Folder: String = "/tmp/.X11-unix",
                            alsaPCM: String = "/proc/asound/pcm") -> [CaptureDevice] {
        v4l2(deviceFolder) + x11(x11Folder) + alsa(alsaPCM)
    }

    static func v4l2(_ folder: String) -> [CaptureDevice] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])  // no such folder: no devices of the kind
            .filter { $0.hasPrefix("video") && Int($0.dropFirst(5)) != nil }
            .sorted { Int($0.dropFirst(5))! < Int($1.dropFirst(5))! }
        return names.compactMap { name in
            let path = folder + "/" + name
            let fd = open(path, O_RDWR | O_NONBLOCK)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var device = mf_v4l2_device()
            guard mf_v4l2_query(fd, &device) == 0, device.captures != 0 else { return nil }
            let card = withUnsafeBytes(of: device.card) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            return CaptureDevice(source: "v4l2:" + path, kind: "v4l2", name: card, formats: formats(fd))
        }
    }

    private static func formats(_ fd: Int32) -> [CaptureDevice.Format] {
        var result: [CaptureDevice.Format] = []
        var format = mf_v4l2_format()
        var i: Int32 = 0
        while i < 64, mf_v4l2_enum_format(fd, i, &format) == 0 {
            i += 1
            let fourcc = String(decoding: withUnsafeBytes(of: format.fourcc.littleEndian) { Array($0) }, as: UTF8.self)
                .trimmingCharacters(in: .whitespaces)
            let description = withUnsafeBytes(of: format.description) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            var sizes: [CaptureDevice.Size] = []
            var width: UInt32 = 0, height: UInt32 = 0, stepwise: Int32 = 0
            var j: Int32 = 0
            while j < 64, mf_v4l2_enum_size(fd, format.fourcc, j, &width, &height, &stepwise) == 0 {
                j += 1
                var rates: [Double] = []
                var num: UInt32 = 0, den: UInt32 = 0
                var k: Int32 = 0
                while k < 32, mf_v4l2_enum_interval(fd, format.fourcc, width, height, k, &num, &den) == 0 {
                    k += 1
                    if num > 0 { rates.append((Double(den) / Double(num) * 1000).rounded() / 1000) }
                }
                sizes.append(.init(width: Int(width), height: Int(height), range: stepwise != 0, frameRates: rates))
            }
            result.append(.init(inputFormat: ffmpegNames[fourcc] ?? fourcc, fourcc: fourcc, description: description,
                                compressed: format.compressed != 0, sizes: sizes))
        }
        return result
    }

    /// FFmpeg's names for common V4L2 FourCCs (what its video4linux2 device takes as input_format).
    static let ffmpegNames = ["MJPG": "mjpeg", "JPEG": "mjpeg", "H264": "h264", "HEVC": "hevc", "YUYV": "yuyv422",
                              "UYVY": "uyvy422", "NV12": "nv12", "NV21": "nv21", "YU12": "yuv420p", "YV12": "yuv420p",
                              "RGB3": "rgb24", "BGR3": "bgr24", "GREY": "gray"]

    static func x11(_ folder: String) -> [CaptureDevice] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])  // no such folder: no devices of the kind
            .filter { $0.hasPrefix("X") && Int($0.dropFirst()) != nil }
            .sorted { Int($0.dropFirst())! < Int($1.dropFirst())! }
        return names.map { name in
            let display = String(name.dropFirst())
            return CaptureDevice(source: "x11grab::\(display)", kind: "x11grab", name: "X display :\(display) (screen)", formats: nil)
        }
    }

    /// Capture PCMs from /proc/asound/pcm ("00-00: name : name : playback 1 : capture 1").
    static func alsa(_ path: String) -> [CaptureDevice] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }  // no such card: no devices on it
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: ":", maxSplits: 2).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 3, line.contains("capture"), case let ids = parts[0].split(separator: "-"), ids.count == 2,
                  let card = Int(ids[0]), let device = Int(ids[1]) else { return nil }
            return CaptureDevice(source: "alsa:hw:\(card),\(device)", kind: "alsa", name: parts[1], formats: nil)
        }
    }
}
