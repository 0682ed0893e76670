import Foundation
import MediaInspect
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

    /// PHAssetMediaSubtype, in words: `highFrameRate` (and `slowMotion`, 100 fps or more), `rotated`, `hasAudio`.
    public var subtypes: [String] {
        var result: [String] = []
        if isSlowMotion { result += ["highFrameRate", "slowMotion"] }
        if let rotation, rotation.truncatingRemainder(dividingBy: 360) != 0 { result.append("rotated") }
        if hasAudio && mediaType == .video { result.append("hasAudio") }
        return result
    }

    /// 100 fps or more: a slow-motion take.
    public var isSlowMotion: Bool { mediaType == .video && (frameRate ?? 0) >= 100 }
    public var isRotated: Bool { subtypes.contains("rotated") }

    static let stillCodecs: Set<String> = ["png", "mjpeg", "bmp", "tiff", "webp", "gif", "jpeg2000", "jpegls", "pam", "ppm", "pgm",
                                          "pgmyuv", "pbm", "qoi", "targa", "sgi", "exr", "jpegxl", "dpx", "pcx", "xbm", "xwd"]

    /// What an inspection must load for the facts (ingest asks for these with its own). `isPlayable`
    /// decodes each track's first frame, so that the library (and ingest) refuse what `inspect` fails on.
    /// `loudness` decodes all of the audio (some 400 times faster than real time), so that the library
    /// knows every asset's loudness.
    public static let keys: Set<AssetKey> = [.isReadable, .isPlayable, .duration, .metadata, .tracks, .loudness]
    public static let trackKeys: Set<TrackKey> = [.mediaType, .formatDescription, .naturalSize, .preferredTransform, .nominalFrameRate]

    /// Inspects the file at `path`; throws the reason when it is not media the farm can read.
    public static func inspect(_ path: String, size: Int64) async throws(LibraryError) -> AssetFacts {
        if size == 0 { throw .notMedia(path, "the file is empty") }
        let report = await AssetReport.inspect(Asset(path: path), keys: keys, trackKeys: trackKeys)
        return try facts(report, path: path, size: size)
    }

    /// The facts of an inspection that loaded `keys` and `trackKeys`.
    public static func facts(_ report: AssetReport, path: String, size: Int64) throws(LibraryError) -> AssetFacts {
        if let error = report.error {
            throw .notMedia(path, error.hasPrefix(path + ": ") ? String(error.dropFirst(path.count + 2)) : error)
        }
        guard report.isReadable == true else { throw .notMedia(path, "not readable as media") }
        if report.isPlayable == false { throw .notMedia(path, "no track can be decoded (see `mediafarm inspect`)") }
        let tracks = report.tracks ?? []
        let video = tracks.first { $0.mediaType == .video }
        let audio = tracks.first { $0.mediaType == .audio }
        guard video != nil || audio != nil else { throw .notMedia(path, "no video or audio track") }
        let container = report.format?.name
        let still = video.map { v in
            audio == nil && stillCodecs.contains(v.codec)
                && ((container.map { $0.hasSuffix("_pipe") || $0 == "image2" } ?? false) || (v.frameCount ?? 2) <= 1)
        } ?? false
        let mediaType: LibraryMediaType = still ? .image : video != nil ? .video : .audio
        var facts = AssetFacts(mediaType: mediaType, duration: still ? .zero : (report.duration ?? .zero), size: size,
                               container: container, codec: (video ?? audio)?.codec, audioCodec: audio?.codec,
                               frameRate: still ? nil : video?.nominalFrameRate, width: video?.naturalSize?.width, height: video?.naturalSize?.height,
                               rotation: video?.rotation, hasAudio: audio != nil)
        if let whole = report.loudness?.asset {
            facts.loudness = whole.integrated.map(Self.hundredths)
            facts.truePeak = whole.truePeak.map(Self.hundredths)
            facts.loudnessRange = Self.hundredths(whole.range)
        }
        if let metadata = report.metadata {
            facts.creationDate = metadata.creationDate.flatMap(Self.date)
            facts.location = metadata.location
            facts.make = metadata.make
            facts.model = metadata.model
        }
        return facts
    }

    static func hundredths(_ value: Double) -> Double { (value * 100).rounded() / 100 }

    /// A creation date as containers write it: ISO 8601 with or without fractional seconds, or a day.
    static func date(_ text: String) -> Date? {
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
