import CRubberBand
import CZBar
import Testing

/// The system-library modules the later media modules stand on import and link as declared.
@Suite struct SystemLibraryTests {
    @Test func zbarLinks() {
        var major: UInt32 = 0, minor: UInt32 = 0, patch: UInt32 = 0
        #expect(zbar_version(&major, &minor, &patch) == 0)
        #expect(major == 0 && minor >= 23)
    }

    @Test func rubberBandFinerEngineIsAvailable() throws {
        let options = Int32(bitPattern: UInt32(RubberBandOptionProcessOffline.rawValue) | UInt32(RubberBandOptionEngineFiner.rawValue))
        let state = try #require(rubberband_new(48000, 2, options, 2.0, 1.0))
        defer { rubberband_delete(state) }
        #expect(rubberband_get_engine_version(state) == 3)
    }
}
