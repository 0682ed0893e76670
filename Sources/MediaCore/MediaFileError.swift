import MediaTime
import S3Client

/// A failure on one media file, in words a user can act on: which file, and what went wrong.
public struct MediaFileError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable {
        case notFound
        case isDirectory
        case notRegularFile
        case empty
        case permissionDenied
        case unknownFormat(detail: String?)
        /// Packets end well before the duration the header declares.
        case truncated(endsAt: MediaTime, declared: MediaTime)
        case noStreams
        /// A measurement of sound (loudness) of a file without an audio track.
        case noAudio
        /// A reference for pictures to be measured against has none.
        case noVideo
        /// `count` is nil when the demuxer stopped at the limit before counting them all.
        case tooManyStreams(count: Int?, limit: Int)
        case frameTooLarge(width: Int, height: Int, limits: String)
        case tooLong(duration: MediaTime, limit: MediaTime)
        /// No progress for the stall limit: a read, decode or write that did not return.
        case stalled(after: Duration)
        /// A demuxer outside `SafetyLimits.allowedFormats` (a playlist, a concat list, an image sequence).
        case formatRefused(String)
        /// The track's packets are encrypted (protected content); `track` is the 0-based stream index.
        case protectedContent(track: Int)
        case cancelled
        /// `track` is the 0-based stream index; messages number tracks from 1, like `trackID`.
        case undecodable(track: Int, codec: String, FFmpegError)
        case ffmpeg(FFmpegError, while: String)
        /// An object in S3-compatible storage could not be read: the request's failure, in words.
        case objectStorage(S3Error)
    }

    public let path: String
    public let reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    /// The error for work on `path` stopped by an `Interrupter`: cancelled, or stalled.
    public static func interrupted(path: String, _ reason: Interrupter.Reason) -> MediaFileError {
        switch reason {
        case .cancelled: MediaFileError(path: path, reason: .cancelled)
        case .stalled(let after): MediaFileError(path: path, reason: .stalled(after: after))
        }
    }

    public var description: String { "\(path): \(problem)" }

    /// The problem alone, without the path.
    public var problem: String {
        switch reason {
        case .notFound: return "no such file"
        case .isDirectory: return "is a folder, not a media file"
        case .notRegularFile: return "is not a regular file"
        case .empty: return "the file is empty (0 bytes)"
        case .permissionDenied: return "permission denied: the file cannot be read by this user"
        case .unknownFormat(let detail):
            let base = "not a media file FFmpeg recognises, or a damaged one"
            return detail.map { "\(base) (\(FFmpegError.stripAddress($0)))" } ?? base
        case let .truncated(endsAt, declared):
            return "the file looks truncated: its media ends at \(MediaTime.formatSeconds(endsAt.seconds)) s but its header declares \(MediaTime.formatSeconds(declared.seconds)) s"
        case .noStreams: return "the file contains no audio, video or subtitle streams"
        case .noAudio: return "the file has no audio track: there is no loudness to measure"
        case .noVideo: return "the file has no video track: there are no pictures to measure against"
        case let .tooManyStreams(count, limit):
            return "declares \(count.map(String.init) ?? "more") streams, more than the limit of \(limit)"
        case let .frameTooLarge(width, height, limits):
            return "frame size \(width)x\(height) exceeds the safety limit (\(limits))"
        case let .tooLong(duration, limit):
            return "duration \(MediaTime.formatSeconds(duration.seconds)) s exceeds the limit of \(MediaTime.formatSeconds(limit.seconds)) s"
        case let .stalled(after):
            let seconds = MediaTime.formatSeconds(Double(Interrupter.nanos(after)) / 1e9)
            return "no progress for \(seconds) s: the file is too slow to read, or reading, decoding or writing hung "
                + "(the stall limit is set by --stall-timeout or \(SafetyLimits.stallTimeoutVariable))"
        case let .formatRefused(name):
            return "refused: FFmpeg reads it as \"\(name)\", which is not a media container (playlists, concat lists, "
                + "image sequences and other formats that open further files are not accepted as inputs)"
        case .cancelled: return "cancelled"
        case let .protectedContent(track):
            return "track \(track + 1) is encrypted (protected content): it cannot be decoded or exported"
        case let .undecodable(track, codec, error):
            return "track \(track + 1) (\(codec)) cannot be decoded: \(error)"
        case let .ffmpeg(error, activity):
            if error == .invalidData || error == .endOfFile {
                return "\(activity) failed: the file is truncated or corrupt (\(error))"
            }
            return "\(activity) failed: \(error)"
        case let .objectStorage(error):
            return error.problem
        }
    }
}
