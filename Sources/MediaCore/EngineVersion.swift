internal import CFFmpeg
internal import CRubberBand

/// The media libraries this process runs on, as one line: what makes an export's bytes what they are,
/// besides its settings (a result is reused only from a job that ran on the same).
public enum EngineVersion {
    public static let description: String = {
        func version(_ v: UInt32) -> String { "\(v >> 16).\((v >> 8) & 0xff).\(v & 0xff)" }
        return "FFmpeg \(String(cString: av_version_info())) (libavformat \(version(avformat_version())), "
            + "libavcodec \(version(avcodec_version())), libavutil \(version(avutil_version())), "
            + "libswscale \(version(swscale_version())), libswresample \(version(swresample_version()))), "
            + "Rubber Band \(RUBBERBAND_VERSION)"
    }()
}
