import Testing
@testable import FarmModel

/// `export.audio.loudness`: standards, numbers in range, measuring only, and the refusals that name their
/// way out.
@Suite struct LoudnessManifestTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    func validate(_ loudness: String, policy: String = "auto") -> Result<JobManifest, ManifestValidationError> {
        let json = """
        { "version": 1, "input": "in.mov",
          "export": { "mode": "passthrough", "output": "out/a.mp4", "audio": { "policy": "\(policy)", "loudness": \(loudness) } } }
        """
        return ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context)
    }

    func loudness(_ json: String, policy: String = "auto") throws -> JobManifest.LoudnessSettings? {
        try validate(json, policy: policy).get().export?.audio.loudness
    }

    func issue(_ json: String, policy: String = "auto") -> ManifestIssue? {
        guard case .failure(let e) = validate(json, policy: policy) else { Issue.record("\(json) was accepted"); return nil }
        return e.issues.first
    }

    @Test func aStandardGivesItsNumbersAndNumbersOverrideThem() throws {
        let ebu = try #require(try loudness(#"{"standard": "ebu-r128"}"#))
        #expect(ebu.standard == .ebuR128 && ebu.target == nil && !ebu.measure)
        #expect(LoudnessStandard.ebuR128.target == -23 && LoudnessStandard.ebuR128.truePeak == -1)
        #expect(LoudnessStandard.atscA85.target == -24 && LoudnessStandard.atscA85.truePeak == -2)
        #expect(LoudnessStandard.streaming14.target == -14 && LoudnessStandard.streaming16.target == -16)
        let own = try #require(try loudness(#"{"standard": "atsc-a85", "truePeak": -3}"#))
        #expect(own.standard == .atscA85 && own.truePeak == -3)
        let numbers = try #require(try loudness(#"{"target": -18.5, "truePeak": -1.5}"#))
        #expect(numbers.target == -18.5 && numbers.truePeak == -1.5 && numbers.standard == nil)
        #expect(try loudness(#"{"measure": true}"#, policy: "copy")?.measure == true)
    }

    @Test(arguments: ["-70.5", "1", "0.5", "1e30", "-1e30", "-1e400", "100"])
    func aTargetOutsideItsRangeNamesIt(_ text: String) {
        let i = issue(#"{"target": \#(text)}"#)
        #expect(i?.path == "$.export.audio.loudness.target" && i?.message.contains("outside -70...0") == true, "\(String(describing: i))")
    }

    @Test func aTruePeakAboveZeroIsRefused() {
        let i = issue(#"{"standard": "ebu-r128", "truePeak": 0.5}"#)
        #expect(i?.path == "$.export.audio.loudness.truePeak" && i?.message.contains("above 0") == true, "\(String(describing: i))")
        let low = issue(#"{"standard": "ebu-r128", "truePeak": -21}"#)
        #expect(low?.message.contains("outside -20...0") == true, "\(String(describing: low))")
        let text = issue(#"{"target": "loud"}"#)
        #expect(text?.message.contains("expected a number") == true, "\(String(describing: text))")
    }

    @Test func anUnknownStandardSuggestsOne() {
        let i = issue(#"{"standard": "ebu-r129"}"#)
        #expect(i?.message.contains("ebu-r128") == true, "\(String(describing: i))")
    }

    @Test func nothingToAimAtIsRefused() {
        let i = issue(#"{"truePeak": -1}"#)
        #expect(i?.path == "$.export.audio.loudness" && i?.message.contains("needs a \"standard\"") == true, "\(String(describing: i))")
    }

    @Test func copiedAudioIsRefusedWithTheWaysOut() {
        let i = issue(#"{"standard": "ebu-r128"}"#, policy: "copy")
        #expect(i?.message.contains("\"policy\": \"auto\" or \"reencode\"") == true && i?.message.contains("\"measure\": true") == true,
                "\(String(describing: i))")
        #expect(issue(#"{"standard": "ebu-r128"}"#, policy: "drop")?.message.contains("dropped") == true)
    }
}
