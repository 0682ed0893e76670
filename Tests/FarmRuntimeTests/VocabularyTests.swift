import CodeScan
import FarmModel
import MediaEdit
import Testing
@testable import FarmRuntime

/// The manifest's words and the engine's are one vocabulary: every case has its counterpart.
@Suite struct VocabularyTests {
    @Test func everyManifestSymbologyIsOneTheScannerReads() throws {
        let engine = try Symbology.fromManifest(KnownSymbology.names)
        #expect(engine.map(\.rawValue) == KnownSymbology.names)
        #expect(Set(Symbology.allCases.map(\.rawValue)) == Set(KnownSymbology.names))
        #expect(throws: JobError.self) { try Symbology.fromManifest(["qr", "hologram"]) }
    }

    @Test func enumerationsMapCaseForCase() {
        #expect(Set(TimePitchAlgorithm.allCases.map { AudioTimePitchAlgorithm($0).rawValue }) == Set(AudioTimePitchAlgorithm.allCases.map(\.rawValue)))
        #expect(TimePitchAlgorithm.allCases.allSatisfy { AudioTimePitchAlgorithm($0).rawValue == $0.rawValue })
        #expect(AudioPolicy.allCases.allSatisfy { ExportSettings.AudioPolicy($0).rawValue == $0.rawValue })
        #expect(ExportMode.allCases.allSatisfy { ExportSettings.Mode($0).rawValue == $0.rawValue })
    }

    /// A rung's codecs, profiles and levels as a manifest names them are the engine's, codec for codec.
    @Test func rungCodecNamesAreTheEngines() {
        #expect(RungCodecNames.codecs == MediaEdit.StreamRung.Codec.allCases.map(\.rawValue))
        for codec in MediaEdit.StreamRung.Codec.allCases {
            #expect(RungCodecNames.profiles(codec.rawValue) == codec.profiles, "\(codec)")
            #expect(RungCodecNames.levels(codec.rawValue).compactMap { RungCodecNames.level($0, codec: codec.rawValue) } == RungLevel.known(codec), "\(codec)")
            #expect(RungCodecNames.levels(codec.rawValue) == RungLevel.known(codec).map(RungLevel.name), "\(codec)")
            #expect(RungCodecNames.name(codec.rawValue) == codec.name)
        }
    }
}
