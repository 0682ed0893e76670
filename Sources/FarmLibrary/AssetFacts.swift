import FarmModel
import Foundation
import MediaTime

/// What kind of media an asset is (PHAssetMediaType).
public enum LibraryMediaType: String, Sendable, Hashable, Codable, CaseIterable {
    case video, audio, image
}

/// What inspection says about an asset, as the library keeps it: what fetches filter and sort on, and
/// what `library show` prints.
public struct AssetFacts: Sendable, Hashable, Codable {
    public var mediaType: LibraryMediaType
    /// Exact, as inspection measured it; zero for a still image.
    public var duration: MediaTime
    public var size: Int64
    public var container: String?
    /// The first video track's codec (the first audio track's for audio).
    public var codec: String?
    public var audioCodec: String?
    public var frameRate: Double?
    public var width: Int?
    public var height: Int?
    /// Degrees the picture is turned for display (from the display matrix).
    public var rotation: Double?
    public var hasAudio: Bool
    public var creationDate: Date?
    /// ISO 6709.
    public var location: String?
    public var make: String?
    public var model: String?
    /// The integrated loudness of all its audio as one programme (ITU-R BS.1770-4), LUFS; nil without
    /// audio, for silence, or for an asset added before the library measured loudness.
    public var loudness: Double?
    /// The highest true peak of its audio, dBTP.
    public var truePeak: Double?
    /// Its loudness range (EBU Tech 3342), LU.
    public var loudnessRange: Double?
    /// A streaming package (its file is the package's entry point): its renditions, as the job that made it
    /// measured them.
    public var package: PackageSummary?

    public init(mediaType: LibraryMediaType, duration: MediaTime, size: Int64, container: String? = nil, codec: String? = nil,
                audioCodec: String? = nil, frameRate: Double? = nil, width: Int? = nil, height: Int? = nil, rotation: Double? = nil,
                hasAudio: Bool = false, creationDate: Date? = nil, location: String? = nil, make: String? = nil, model: String? = nil) {
        self.mediaType = mediaType
        self.duration = duration
        self.size = size
        self.container = container
        self.codec = codec
        self.audioCodec = audioCodec
        self.frameRate = frameRate
        self.width = width
        self.height = height
        self.rotation = rotation
        self.hasAudio = hasAudio
        self.creationDate = creationDate
        self.location = location
        self.make = make
        self.model = model
    }

    /// The facts of a streaming package by its entry point: its largest rung's picture and codec, its first
    /// audio's, in the container its entry point names (`hls`, `dash`). Its size is the entry point's, set
    /// where the library records it.
    public init(package: PackageSummary, entryPoint: String) {
        let video = package.largestVideo, audio = package.firstAudio
        self.init(mediaType: video == nil ? .audio : .video, duration: package.duration, size: 0,
                  container: JobManifest.streamEntryPoints.first { $0.value == entryPoint }?.key.rawValue, codec: (video ?? audio)?.codecs, audioCodec: audio?.codecs,
                  frameRate: video?.frameRate, width: video?.width, height: video?.height, hasAudio: audio != nil)
        self.package = package
    }

    /// PHAssetMediaSubtype, in words: `highFrameRate` (and `slowMotion`, 100 fps or more), `rotated`, `hasAudio`,
    /// `videoStreamed` (a streaming package).
    public var subtypes: [String] {
        var result: [String] = []
        if package != nil && mediaType == .video { result.append("videoStreamed") }
        if isSlowMotion { result += ["highFrameRate", "slowMotion"] }
        if let rotation, rotation.truncatingRemainder(dividingBy: 360) != 0 { result.append("rotated") }
        if hasAudio && mediaType == .video { result.append("hasAudio") }
        return result
    }

    /// 100 fps or more: a slow-motion take.
    public var isSlowMotion: Bool { mediaType == .video && (frameRate ?? 0) >= 100 }
    public var isRotated: Bool { subtypes.contains("rotated") }

    public static func hundredths(_ value: Double) -> Double { (value * 100).rounded() / 100 }

    /// A creation date as containers write it: ISO 8601 with or without fractional seconds, or a day.
    public static func date(_ text: String) -> Date? {
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = fractional.date(from: text) { return date }
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        return day.date(from: text)
    }
}

/// What learns an asset's facts from its file: the media program's inspection (FarmLibraryMedia's
/// `.media`), or `.none` in a program that loads no media library (the queue's commands), which refuses
/// content the library does not know yet and says where it can be added.
public struct AssetInspector: Sendable {
    public let facts: @Sendable (_ path: String, _ size: Int64) async throws(LibraryError) -> AssetFacts

    public init(facts: @escaping @Sendable (_ path: String, _ size: Int64) async throws(LibraryError) -> AssetFacts) {
        self.facts = facts
    }

    /// No inspection in this program.
    public static let none = AssetInspector { path, _ throws(LibraryError) in
        throw .notMedia(path, "this program reads no media (the queue's commands run without the media libraries); "
                        + "add new content with `mediafarm library add`")
    }
}
