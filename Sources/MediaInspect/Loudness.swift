import Foundation
import MediaCore

/// The loudness of a file's audio (ITU-R BS.1770-4 / EBU R128, measured by libebur128): each audio track,
/// and the tracks taken as one programme. `mediafarm loudness FILE` prints it; its JSON is this type's.
public struct LoudnessReport: Sendable, Codable, Equatable {
    public var path: String
    public var standard = "ITU-R BS.1770-4 (EBU R128), measured by libebur128"
    public var gating = LoudnessFigures.gating
    /// Each audio track (attached pictures and other media are not audio), in the file's order.
    public var tracks: [Track]
    /// All tracks as one programme: their gated blocks pooled for the integrated loudness and the range;
    /// the highest peaks and short-term loudness of any. nil without audio.
    public var asset: Whole?
    /// Seconds the measurement took.
    public var seconds: Double

    public struct Track: Sendable, Codable, Equatable {
        /// 1-based position of the track in the file, as `inspect` gives it.
        public var trackID: Int
        public var codec: String
        public var language: String?
        public var loudness: LoudnessFigures
    }

    public struct Whole: Sendable, Codable, Equatable {
        public var integrated: Double?
        public var range: Double
        public var truePeak: Double?
        public var shortTermMax: Double?
        public var seconds: Double
    }

    /// Measures every audio track of `path` in one pass over its packets. Throws `MediaFileError` naming
    /// the file and the problem (not media, no audio track, undecodable audio).
    public static func measure(path: String, limits: SafetyLimits = .default, interrupter: Interrupter = Interrupter(),
                               progress: (Double) -> Void = { _ in }) throws(MediaFileError) -> LoudnessReport {
        try measure(try InputFile(path: path, limits: limits, interrupter: interrupter), requiringAudio: true, progress: progress)
    }

    /// Measures an opened file from its first packet. Without audio: an error naming the file, or (not
    /// `requiringAudio`: the inspection key) a report of no tracks.
    public static func measure(_ file: InputFile, requiringAudio: Bool, progress: (Double) -> Void = { _ in }) throws(MediaFileError) -> LoudnessReport {
        let started = Date()
        let path = file.path
        let audio = file.streams.filter { $0.mediaType == .audio && !$0.isAttachedPicture }
        guard !audio.isEmpty else {
            if !requiringAudio { return LoudnessReport(path: path, tracks: [], asset: nil, seconds: 0) }
            throw MediaFileError(path: path, reason: .noAudio)
        }
        file.discardAll(except: Set(audio.map(\.index)))
        var decoders: [Int: Decoder] = [:]
        var meters: [Int: LoudnessMeter] = [:]
        func undecodable(_ stream: StreamInfo, _ error: FFmpegError) -> MediaFileError {
            MediaFileError(path: path, reason: .undecodable(track: stream.index, codec: stream.codecName, error))
        }
        for stream in audio {
            decoders[stream.index] = try Decoder(file: file, streamIndex: stream.index, threads: 1)
            do {
                meters[stream.index] = try LoudnessMeter(sampleRate: stream.sampleRate, channelCount: stream.channelCount, layoutName: stream.channelLayout)
            } catch {
                throw undecodable(stream, error)
            }
        }
        let total = audio.map(\.headerDuration.seconds).filter { $0.isFinite && $0 > 0 }.max() ?? 0
        try DecodePass.run(file, decoders: decoders, total: total, progress: progress) { decoder, frame throws(FFmpegError) in
            try meters[decoder.stream.index]?.add(frame)
        }
        var tracks: [Track] = []
        for stream in audio {
            guard let meter = meters[stream.index] else { continue }
            let figures: LoudnessFigures
            do { figures = try meter.finish() } catch { throw undecodable(stream, error) }
            tracks.append(Track(trackID: stream.index + 1, codec: stream.codecName, language: stream.language, loudness: figures))
        }
        let pooled = LoudnessMeter.combined(audio.compactMap { meters[$0.index] })
        let whole = Whole(integrated: pooled.integrated, range: pooled.range,
                          truePeak: tracks.compactMap(\.loudness.truePeak).max(), shortTermMax: tracks.compactMap(\.loudness.shortTermMax).max(),
                          seconds: tracks.map(\.loudness.seconds).max() ?? 0)
        progress(1)
        return LoudnessReport(path: path, tracks: tracks, asset: whole, seconds: Date().timeIntervalSince(started))
    }
}
