import MediaTime
import Foundation

/// Bounds applied when opening untrusted media. The defaults suit a farm that takes files from anyone.
public struct SafetyLimits: Sendable, Hashable {
    /// Protocols FFmpeg may use; "file" only unless a manifest explicitly allows network sources.
    public var allowedProtocols: [String] = ["file"]
    /// Demuxers a file input may open: real media containers only. Playlists (HLS, DASH), concat and
    /// other reference formats, which open further files named inside the input, and image-sequence
    /// demuxers are refused. Nil allows every demuxer (only for trusted inputs).
    public var allowedFormats: [String]? = SafetyLimits.mediaContainerFormats
    /// Most streams a container may declare.
    public var maxStreams: Int = 16
    /// Largest frame width or height.
    public var maxDimension: Int = 8192
    /// Largest frame area in pixels (decoders refuse bigger frames too).
    public var maxPixels: Int = 40_000_000
    /// Bytes FFmpeg may read to identify the format and streams.
    public var probeSize: Int = 5_000_000
    /// Media time FFmpeg may analyse to find stream parameters.
    public var analyzeDuration: MediaTime = MediaTime(value: 5, timescale: 1)
    /// Longest duration accepted for one asset (measured, not taken from a header).
    public var maxDuration: MediaTime = MediaTime(value: 48 * 3600, timescale: 1)
    /// How long one blocking operation (a read, a decode, a write) may go without progress before it
    /// is given up as stalled. Not a limit on total time: work of hours runs as long as it progresses.
    public var stallTimeout: Duration = SafetyLimits.defaultStallTimeout

    public init() {}

    public static let defaultStallTimeout: Duration = .seconds(120)

    /// For live sources the user named on the command line (never from a manifest): the network
    /// protocols of live streams, any demuxer or capture device, and a short stall limit (a source that
    /// sends nothing for `stallTimeout` is given up on, not waited for).
    public static func live(stallTimeout: Duration = .seconds(10)) -> SafetyLimits {
        var limits = SafetyLimits()
        limits.allowedProtocols = ["file", "pipe", "udp", "tcp", "rtp", "srt", "rtmp", "rtsp", "http", "https", "tls", "hls", "crypto", "data"]
        limits.allowedFormats = nil
        limits.stallTimeout = stallTimeout
        return limits
    }

    /// The defaults, with the stall timeout taken from `MEDIAFARM_STALL_TIMEOUT` (seconds) when set.
    public static var `default`: SafetyLimits {
        var limits = SafetyLimits()
        // Held to what `--stall-timeout` takes (above 0, at most a day): `inf` or `1e30` would trap below.
        if let text = ProcessInfo.processInfo.environment[stallTimeoutVariable], let seconds = Double(text), seconds > 0, seconds <= 86_400 {
            limits.stallTimeout = .milliseconds(Int64(seconds * 1000))
        }
        return limits
    }

    /// The environment variable that sets `stallTimeout` in seconds (workers inherit it).
    public static let stallTimeoutVariable = "MEDIAFARM_STALL_TIMEOUT"

    /// FFmpeg demuxers that read one self-contained media file: audio/video containers and elementary
    /// streams. Each name is a demuxer FFmpeg 5.1 registers (a format with several names, such as
    /// "mov,mp4,m4a,3gp,3g2,mj2", is allowed by any of them).
    public static let mediaContainerFormats: [String] = [
        // ISO base media, QuickTime, Matroska/WebM, transport and program streams
        "mov", "mp4", "m4a", "3gp", "3g2", "mj2", "matroska", "webm", "mpegts", "mpegtsraw", "mpeg", "mpegvideo",
        // other containers
        "avi", "flv", "asf", "ogg", "nut", "mxf", "gxf", "wtv", "dv", "rm", "smjpeg", "ivf", "y4m", "caf", "aiff", "au",
        "wav", "w64", "rf64", "flac", "mp3", "aac", "ac3", "eac3", "dts", "dtshd", "truehd", "mlp", "amr", "amrnb", "amrwb",
        "wv", "ape", "tta", "opus", "voc", "s337m", "xwma", "mpc", "mpc8", "tak", "shn", "gsm", "loas", "latm", "adts",
        // elementary video streams
        "h264", "hevc", "h261", "h263", "m4v", "vc1", "dirac", "avs2", "obu", "av1",
        // still images (single pictures, for scanning)
        "png_pipe", "jpeg_pipe", "bmp_pipe", "webp_pipe", "tiff_pipe", "gif", "gif_pipe", "jpegls_pipe", "pgm_pipe", "ppm_pipe",
        // subtitles carried as files
        "srt", "webvtt", "ass",
    ]
}
