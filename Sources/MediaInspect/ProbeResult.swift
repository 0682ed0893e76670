import MediaCore
import MediaTime

/// What opening the container told us: the `.probe` stage.
struct ProbeResult: Sendable {
    var container: ContainerInfo
    var streams: [StreamInfo]

    init(file: InputFile) {
        container = file.container
        streams = file.streams
    }

    /// Streams that carry timed media (cover art is a still image stored as a one-packet video stream).
    var timedStreams: [StreamInfo] { streams.filter { !$0.isAttachedPicture } }

    /// Audio and video streams that matter for playback and export.
    var audiovisualStreams: [StreamInfo] {
        timedStreams.filter { $0.mediaType == .audio || $0.mediaType == .video }
    }
}
