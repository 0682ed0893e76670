import Foundation
import MediaCore
import MediaTime

/// Why a picture could not be made: for one time, or (from `init`) for the whole file.
public enum ImageGenerationError: Error, Sendable, CustomStringConvertible {
    case unreadable(String)
    /// The file could not be read: its error, which says whether another try may do better (an object
    /// store that did not answer).
    case file(MediaFileError)
    case noVideo(path: String)
    case invalidTime(MediaTime)
    case pastEnd(requested: MediaTime, duration: MediaTime)
    case noFrameWithinTolerance(requested: MediaTime, nearest: MediaTime)
    case highDynamicRange(transfer: String)
    case tooManyPictures(Int, limit: Int)
    case encoding(String)

    /// A reader's error: a file's as itself, another in words.
    static func of(_ error: any Error) -> ImageGenerationError {
        if let file = error as? MediaFileError { return .file(file) }
        return .unreadable(String(describing: error))
    }

    public var description: String {
        switch self {
        case .unreadable(let message): message
        case .file(let error): error.description
        case .noVideo(let path): "\(path): no video track to make pictures of"
        case .invalidTime(let t): "\(t.seconds) s is not a time in the movie (times are 0 or more seconds)"
        case let .pastEnd(requested, duration):
            String(format: "%.3f s is past the end of the video (%.3f s long)", requested.seconds, duration.seconds)
        case let .noFrameWithinTolerance(requested, nearest):
            String(format: "no frame within the tolerances of %.3f s (the nearest is at %.3f s); widen toleranceBefore or toleranceAfter",
                   requested.seconds, nearest.seconds)
        case .highDynamicRange(let transfer):
            "the video is HDR (\(transfer)): its pictures would need tone mapping to SDR, which is not done; no picture is made rather than a washed-out one"
        case .encoding(let message): message
        case let .tooManyPictures(count, limit): "that would be \(count) pictures; at most \(limit) are made at once (space them further apart)"
        }
    }
}

/// One picture as it is reported (`images --json`, a job's report): where it went and which frame it is,
/// or why there is none. Times in seconds.
public struct ImageRecord: Codable, Sendable, Hashable {
    public var requestedTime: Double
    public var actualTime: Double?
    public var width: Int?
    public var height: Int?
    public var format: String?
    public var path: String?
    public var bytes: Int?
    public var error: String?

    public init(_ image: AssetImageGenerator.Image, path: String) {
        requestedTime = image.requestedTime.seconds
        actualTime = image.actualTime.seconds
        (width, height, format, self.path, bytes) = (image.width, image.height, image.format.rawValue, path, image.data.count)
    }

    public init(requested: MediaTime, error: String) {
        requestedTime = requested.seconds
        self.error = error
    }
}
