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
}
