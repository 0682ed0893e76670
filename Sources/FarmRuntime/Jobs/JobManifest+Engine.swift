import CodeScan
import FarmModel
import MediaEdit
import MediaTime

// The manifest's vocabulary (FarmModel, which imports no media module) joined to the engine's by
// exhaustive switches: a case added on either side breaks the build here instead of falling back to a
// default.

extension ExportSettings.Mode {
    init(_ mode: ExportMode) {
        switch mode {
        case .passthrough: self = .passthrough
        case .constantFrameRate: self = .constantFrameRate
        }
    }
}

extension ExportSettings.AudioPolicy {
    init(_ policy: AudioPolicy) {
        switch policy {
        case .auto: self = .auto
        case .copy: self = .copy
        case .reencode: self = .reencode
        case .drop: self = .drop
        }
    }
}

extension AudioSelection {
    init(_ tracks: AudioTracks) {
        switch tracks {
        case .default: self = .defaultTrack
        case .all: self = .all
        case .languages(let languages): self = .languages(languages)
        case .none: self = .none
        }
    }
}

extension ExportSettings.Cuts {
    init(_ cuts: CutMode) {
        switch cuts {
        case .exact: self = .exact
        case .keyframe: self = .keyframe
        case .smart: self = .smart
        }
    }
}

extension AudioTimePitchAlgorithm {
    init(_ algorithm: TimePitchAlgorithm) {
        switch algorithm {
        case .spectral: self = .spectral
        case .timeDomain: self = .timeDomain
        case .varispeed: self = .varispeed
        }
    }
}

extension LargerRungs {
    init(_ policy: LargerRungPolicy) {
        switch policy {
        case .refuse: self = .refuse
        case .skip: self = .skip
        case .upscale: self = .upscale
        }
    }
}

extension MediaEdit.StreamRung {
    /// A manifest's rung: a side it leaves out is 0 (it follows the source's aspect).
    init(_ rung: JobManifest.StreamRung) {
        self.init(width: rung.width ?? 0, height: rung.height ?? 0, bitRate: rung.bitrate, maxBitRate: rung.maxBitrate,
                  bufferSize: rung.bufferSize, codec: MediaEdit.StreamRung.Codec(rawValue: rung.codec) ?? .h264, profile: rung.profile, level: rung.level)
    }
}

extension CodeScan.NormalizedRect {
    init(_ rect: JobManifest.NormalizedRect) {
        self.init(x: rect.x, y: rect.y, width: rect.width, height: rect.height)
    }
}

extension Symbology {
    /// The engine's symbologies for a manifest's names (validated against `KnownSymbology`). A name the
    /// engine does not know is an error, never a silent miss.
    static func fromManifest(_ names: [String]) throws -> [Symbology] {
        try names.map { name in
            guard let symbology = Symbology(rawValue: name) else {
                throw JobError("$.scan.symbologies: \"\(name)\" passed validation but the scanner has no such symbology")
            }
            return symbology
        }
    }
}
