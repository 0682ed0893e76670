import Foundation

/// A live source as `--source` names it (AVCaptureDevice / AVCaptureDeviceInput): a capture device of
/// libavdevice, a network live stream, or a synthetic lavfi graph. Sources come from the command line
/// or a capture config, never from a job manifest.
public struct CaptureSource: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case device, network, synthetic
    }

    /// What the user wrote.
    public var text: String
    public var kind: Kind
    /// What FFmpeg opens, and with which demuxer or device (nil: probed, for network streams).
    public var url: String
    public var format: String?
    /// Device options (video_size, framerate, input_format) and network options (timeouts).
    public var options: [String: String]

    public var description: String { text }

    public struct Settings: Sendable, Equatable {
        /// v4l2's pixel or compressed format (`--input-format`: mjpeg, h264, yuyv422, ...).
        public var inputFormat: String?
        /// `--video-size WxH`.
        public var videoSize: String?
        /// `--frame-rate`: activeVideoMinFrameDuration's reciprocal.
        public var frameRate: String?
        /// How long a read may wait for data.
        public var readTimeout: Double = 10

        public init(inputFormat: String? = nil, videoSize: String? = nil, frameRate: String? = nil, readTimeout: Double = 10) {
            self.inputFormat = inputFormat
            self.videoSize = videoSize
            self.frameRate = frameRate
            self.readTimeout = readTimeout
        }
    }

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    static let networkSchemes = ["udp", "tcp", "srt", "rtmp", "rtmps", "rtsp", "http", "https"]

    /// Parses `v4l2:/dev/videoN`, `x11grab::DISPLAY`, `alsa:DEVICE`, `pulse:DEVICE`, `lavfi:GRAPH`, or a
    /// `udp://`, `tcp://`, `srt://`, `rtmp://`, `rtsp://`, `http(s)://` URL.
    public static func parse(_ text: String, settings: Settings = .init()) throws(Invalid) -> CaptureSource {
        func invalid(_ why: String) -> Invalid { Invalid(description: "--source \(text): \(why)") }
        if let range = text.range(of: "://") {
            let scheme = text[..<range.lowerBound].lowercased()
            guard networkSchemes.contains(scheme), text.count > range.upperBound.utf16Offset(in: text) else {
                throw invalid("not a live stream URL; give udp://, tcp://, srt://, rtmp://, rtsp:// or http(s)://...m3u8")
            }
            var options: [String: String] = [:]
            let micros = String(Int(settings.readTimeout * 1_000_000))
            switch scheme {
            case "udp": options["timeout"] = micros
            case "tcp": options["rw_timeout"] = micros
            case "rtsp": options["timeout"] = micros
            case "srt": options["timeout"] = micros
            default: options["rw_timeout"] = micros
            }
            return CaptureSource(text: text, kind: .network, url: text, format: nil, options: options)
        }
        guard let colon = text.firstIndex(of: ":") else {
            throw invalid("give a device (v4l2:/dev/video0, x11grab::99, alsa:default, pulse:default), lavfi:GRAPH or a stream URL")
        }
        let prefix = String(text[..<colon]), rest = String(text[text.index(after: colon)...])
        guard !rest.isEmpty else { throw invalid("the \(prefix) source needs a device after the colon") }
        var options: [String: String] = [:]
        if let s = settings.videoSize { options["video_size"] = s }
        if let r = settings.frameRate { options["framerate"] = r }
        switch prefix {
        case "v4l2":
            if let f = settings.inputFormat { options["input_format"] = f }
            return CaptureSource(text: text, kind: .device, url: rest, format: "video4linux2", options: options)
        case "x11grab":
            return CaptureSource(text: text, kind: .device, url: rest, format: "x11grab", options: options)
        case "alsa", "pulse":
            return CaptureSource(text: text, kind: .device, url: rest, format: prefix, options: [:])
        case "lavfi":
            return CaptureSource(text: text, kind: .synthetic, url: rest, format: "lavfi", options: [:])
        default:
            throw invalid("unknown kind \(prefix); give v4l2:, x11grab:, alsa:, pulse:, lavfi: or a stream URL")
        }
    }
}
