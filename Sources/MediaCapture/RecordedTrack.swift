import Foundation
import MediaCore
import MediaTime

/// A stream as the recording writes it: copied from the source as it comes, or encoded from it.
/// Its packets carry the source stream's index and are timed in `timeBase`.
struct RecordedTrack {
    enum Origin {
        case copied(InputFile)
        case encoded(LiveEncoder)
    }

    let index: Int
    let isVideo: Bool
    let timeBase: Rational
    let origin: Origin
    /// What the segment holds ("h264", "aac").
    let codecName: String

    /// Codecs an MP4 segment can hold as they come.
    static let copyable: Set<String> = ["h264", "hevc", "av1", "vp9", "mpeg4", "mjpeg", "aac", "mp3", "opus", "ac3", "eac3", "alac", "flac"]

    /// The source's video (the first) and audio (the first) streams, each copied when an MP4 segment
    /// can hold its codec, else encoded.
    static func plan(_ input: InputFile, segmentDuration: Double) throws(MediaFileError) -> [RecordedTrack] {
        var tracks: [RecordedTrack] = []
        for type in [MediaType.video, .audio] {
            guard let stream = input.streams.first(where: { $0.mediaType == type && !$0.isAttachedPicture }) else { continue }
            if copyable.contains(stream.codecName) {
                // A copied stream's parameters go into each segment's header. A stream joined in the middle (a
                // reconnection; a busy machine that probed for less than the stream took to say them) may not
                // have told them yet: the connection is tried again rather than a segment that cannot be written.
                let unknown = type == .audio ? (stream.sampleRate <= 0 ? "sample rate" : stream.channelCount <= 0 ? "channel count" : nil)
                    : (stream.width <= 0 || stream.height <= 0 ? "picture size" : nil)
                if let unknown {
                    throw MediaFileError(path: input.path, reason: .ffmpeg(.tryAgain, while: "reading the \(type == .audio ? "audio" : "video") stream's \(unknown), not known yet"))
                }
                tracks.append(RecordedTrack(index: stream.index, isVideo: type == .video, timeBase: stream.timeBase,
                                            origin: .copied(input), codecName: stream.codecName))
            } else {
                let encoder = try LiveEncoder(file: input, stream: stream, segmentDuration: segmentDuration)
                tracks.append(RecordedTrack(index: stream.index, isVideo: type == .video, timeBase: encoder.timeBase,
                                            origin: .encoded(encoder), codecName: encoder.codecName))
            }
        }
        return tracks
    }
}

/// Encodes a live stream an MP4 segment cannot hold as it comes (raw video from a screen or camera,
/// PCM audio) with the exports' settings: H.264 (libx264, CRF 20, veryfast) and AAC at 128 kb/s, codec
/// headers in the stream's configuration (MP4 wants them there), a keyframe at least every second (a
/// fragment each, so that a crash loses at most a second) and one forced at each segment boundary, so
/// that segments are cut at their duration. Thread-confined (the recording's thread).
final class LiveEncoder {
    let source: StreamInfo
    let timeBase: Rational
    var codecName: String { source.mediaType == .video ? "h264" : "aac" }
    /// The encoder, made from the first decoded frame (its size and pixel format).
    private(set) var encoder: Encoder?
    private let file: InputFile
    private let decoder: Decoder
    private var decoded = Frame()
    private var converted = Frame()
    private var out = Packet()
    private let scaler = VideoScaler(outputFormat: "yuv420p")
    private var lastVideoPTS: Int64?
    private let segmentDuration: MediaTime
    /// Where the next segment boundary lies (source time): the picture there is made a keyframe.
    private var nextBoundary: MediaTime?
    private var resampler: AudioResampler?
    private var pending = AudioSamples(channelCount: 0)
    /// The time of the next sample to encode, in samples.
    private var sampleClock: Int64?

    init(file: InputFile, stream: StreamInfo, segmentDuration: Double) throws(MediaFileError) {
        guard stream.mediaType == .video || stream.mediaType == .audio else {
            throw MediaFileError(path: file.path, reason: .ffmpeg(.invalidArgument, while: "encoding a \(stream.mediaType) stream"))
        }
        self.file = file
        source = stream
        self.segmentDuration = MediaTime(value: max(1, Int64((segmentDuration * 1000).rounded())), timescale: 1000)
        timeBase = stream.mediaType == .video ? stream.timeBase : Rational(1, Int32(max(stream.sampleRate, 1)))
        decoder = try Decoder(file: file, streamIndex: stream.index, threads: 1)
        if stream.mediaType == .audio {
            // Made at once (the stream tells all it needs), so that the first segment has its audio track.
            do {
                encoder = try Encoder.aac(sampleRate: Int(timeBase.denominator), channelCount: channels, bitRate: 128_000, globalHeader: true)
            } catch {
                throw MediaFileError(path: file.path, reason: .ffmpeg(error, while: "opening the AAC encoder"))
            }
        }
    }

    private var channels: Int { min(max(source.channelCount, 1), 8) }

    private func failure(_ error: FFmpegError, _ doing: String) -> MediaFileError {
        MediaFileError(path: file.path, reason: .ffmpeg(error, while: doing))
    }

    /// Decodes `packet` and encodes what it holds. Each decoded picture (or block of sound) goes to `picture`
    /// (with its time) before it is encoded; each packet the encoder makes goes to `emit`.
    func encode(_ packet: borrowing Packet, picture: (borrowing Frame, MediaTime) -> Void,
                emit: (inout Packet) throws(MediaFileError) -> Void) throws(MediaFileError) {
        while true {
            let sent: Decoder.SendResult
            do { sent = try decoder.send(packet) } catch { throw failure(error, "decoding the live \(source.mediaType)") }
            try drainDecoder(picture: picture, emit: emit)
            if sent != .full { return }
        }
    }

    /// Encodes what the decoder and the encoder still hold (the source ended or the recording stops).
    func flush(emit: (inout Packet) throws(MediaFileError) -> Void) throws(MediaFileError) {
        do { try decoder.sendEndOfStream() } catch { throw failure(error, "draining the live \(source.mediaType)'s decoder") }
        try drainDecoder(picture: { _, _ in }, emit: emit)
        if source.mediaType == .audio { try encodeAudio(final: true, emit: emit) }
        guard let encoder else { return }
        do { try encoder.sendEndOfStream() } catch { throw failure(error, "draining the \(codecName) encoder") }
        try drainEncoder(emit: emit)
    }

    private func drainDecoder(picture: (borrowing Frame, MediaTime) -> Void,
                              emit: (inout Packet) throws(MediaFileError) -> Void) throws(MediaFileError) {
        while true {
            let result: Decoder.ReceiveResult
            do { result = try decoder.receive(into: &decoded) } catch { throw failure(error, "decoding the live \(source.mediaType)") }
            guard result == .frame else { return }
            if source.mediaType == .video {
                try encodeVideo(picture: picture, emit: emit)
            } else {
                // The sound as it was decoded, for its levels.
                if let pts = decoded.pts { picture(decoded, MediaTime(count: pts, timeBase: source.timeBase)) }
                try convertAudio()
                try encodeAudio(final: false, emit: emit)
            }
        }
    }

    private func encodeVideo(picture: (borrowing Frame, MediaTime) -> Void,
                             emit: (inout Packet) throws(MediaFileError) -> Void) throws(MediaFileError) {
        // The encoder needs strictly increasing times: a picture without one, or not after the last, is dropped.
        guard let pts = decoded.pts, lastVideoPTS.map({ pts > $0 }) ?? true else { return }
        lastVideoPTS = pts
        do {
            try scaler.prepare(decoded, into: &converted)
            // 4:2:0 H.264 wants even sizes: an odd last row or column is cropped.
            if converted.width % 2 == 1 || converted.height % 2 == 1 {
                try converted.crop(toWidth: converted.width & ~1, height: converted.height & ~1)
            }
        } catch {
            throw failure(error, "converting the live picture")
        }
        picture(converted, MediaTime(count: pts, timeBase: source.timeBase))
        converted.setPTS(pts)
        let time = MediaTime(count: pts, timeBase: source.timeBase)
        let boundary = nextBoundary ?? time
        let atBoundary = time >= boundary
        if atBoundary { nextBoundary = boundary + segmentDuration }
        converted.requestKeyframe(atBoundary)
        if encoder == nil {
            let rate = source.averageFrameRate ?? source.realFrameRate
            let perSecond = rate.map { max(1, Int(($0.doubleValue).rounded())) } ?? 30
            do {
                encoder = try Encoder.video(codecName: "libx264", like: converted, timeBase: source.timeBase, frameRate: rate,
                                            level: nil, threads: 0,
                                            options: ["crf": "20", "preset": "veryfast", "g": String(perSecond), "forced-idr": "1",
                                                      "flags": "+global_header"])
            } catch {
                throw failure(error, "opening the H.264 encoder")
            }
        }
        try send(converted, emit: emit)
    }

    private func convertAudio() throws(MediaFileError) {
        do {
            if resampler == nil {
                resampler = try AudioResampler(inputRate: decoded.sampleRate, inputChannels: channels,
                                               outputRate: Int(timeBase.denominator), outputChannels: channels)
                pending = AudioSamples(channelCount: channels)
            }
            if sampleClock == nil, let pts = decoded.pts {
                sampleClock = MediaTime(count: pts, timeBase: source.timeBase).count(in: timeBase) ?? 0
            }
            try resampler!.convert(decoded, appendingTo: &pending)
        } catch {
            throw failure(error, "converting the live audio")
        }
    }

    private func encodeAudio(final: Bool, emit: (inout Packet) throws(MediaFileError) -> Void) throws(MediaFileError) {
        guard pending.channelCount > 0, let encoder else { return }
        do {
            let size = max(encoder.frameSize, 1)
            var offset = 0
            while pending.count - offset >= size || (final && pending.count > offset) {
                let n = min(size, pending.count - offset)
                var frame = try Frame(audio: pending, offset: offset, count: n, sampleRate: Int(timeBase.denominator))
                frame.setPTS(sampleClock ?? 0)
                sampleClock = (sampleClock ?? 0) + Int64(n)
                offset += n
                try send(frame, emit: emit)
            }
            pending.removeFirst(offset)
        } catch let error as MediaFileError {
            throw error
        } catch {
            throw failure(error as? FFmpegError ?? .invalidArgument, "encoding the live audio")
        }
    }

    private func send(_ frame: borrowing Frame, emit: (inout Packet) throws(MediaFileError) -> Void) throws(MediaFileError) {
        guard let encoder else { return }
        while true {
            let sent: Encoder.SendResult
            do { sent = try encoder.send(frame) } catch { throw failure(error, "encoding the live \(source.mediaType)") }
            try drainEncoder(emit: emit)
            if sent != .full { return }
        }
    }

    private func drainEncoder(emit: (inout Packet) throws(MediaFileError) -> Void) throws(MediaFileError) {
        guard let encoder else { return }
        // Without a duration from the encoder, a video packet lasts one frame period.
        let period = (source.averageFrameRate ?? source.realFrameRate).flatMap { $0.period.count(in: timeBase) } ?? 0
        while true {
            let result: Encoder.ReceiveResult
            do { result = try encoder.receive(into: &out) } catch { throw failure(error, "encoding the live \(source.mediaType)") }
            guard result == .packet else { return }
            out.retime(pts: out.pts, dts: out.dts, duration: out.duration > 0 ? out.duration : period, streamIndex: source.index)
            try emit(&out)
        }
    }
}
