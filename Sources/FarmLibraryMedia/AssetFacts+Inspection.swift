import FarmLibrary
import Foundation
import MediaCore
import MediaInspect

/// Where the library meets inspection: an asset's facts from what `AssetReport` loaded.
extension AssetInspector {
    /// The facts of a file by inspection (`AssetFacts.inspect`).
    public static let media = AssetInspector { path, size throws(LibraryError) in try await AssetFacts.inspect(path, size: size) }
}

extension AssetFacts {
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
        // The audio a player chooses (AVMediaSelectionGroup's default option).
        let audio = defaultTrack(tracks.filter { $0.mediaType == .audio }, isDefault: \.isDefault)
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
            facts.loudness = whole.integrated.map(AssetFacts.hundredths)
            facts.truePeak = whole.truePeak.map(AssetFacts.hundredths)
            facts.loudnessRange = AssetFacts.hundredths(whole.range)
        }
        if let metadata = report.metadata {
            facts.creationDate = metadata.creationDate.flatMap(AssetFacts.date)
            facts.location = metadata.location
            facts.make = metadata.make
            facts.model = metadata.model
        }
        return facts
    }

}
