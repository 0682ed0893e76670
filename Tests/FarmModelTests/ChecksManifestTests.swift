import MediaTime
import QualityModel
import Testing
@testable import FarmModel

/// `"checks"`: each check on at its defaults or with its thresholds, numbers held to their ranges at their
/// paths, and the refusals (an unknown check or field, checks of an export the job does not make, of an
/// edited input).
@Suite struct ChecksManifestTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    func validate(_ checks: String, export: Bool = true, edits: Bool = false) -> Result<JobManifest, ManifestValidationError> {
        let input = edits ? #""edits": [{"source": "in.mov", "duration": 5}]"# : #""input": "in.mov""#
        let json = """
        { "version": 1, \(input), \(export ? #""export": { "mode": "constantFrameRate", "output": "out/a.mp4" },"# : "")
          "checks": \(checks) }
        """
        return ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context)
    }

    func issues(_ checks: String, export: Bool = true, edits: Bool = false) -> [ManifestIssue] {
        guard case .failure(let e) = validate(checks, export: export, edits: edits) else { Issue.record("\(checks) was accepted"); return [] }
        return e.issues
    }

    @Test func trueGivesAChecksDefaultsAndAnObjectItsThresholds() throws {
        let plain = try #require(try validate(#"{"black": true, "freeze": true, "silence": false}"#).get().checks)
        #expect(plain.of == nil && plain.plan.black == CheckPlan.Black() && plain.plan.freeze == CheckPlan.Freeze() && plain.plan.silence == nil)
        let given = try #require(try validate(#"{"of": "input", "black": {"severity": "warn", "duration": "1.5", "pictureRatio": 0.9},"#
                                              + #" "silence": {"noise": "-50dB", "eachChannel": true}, "loudness": {"standard": "ebu-r128"}}"#).get().checks)
        #expect(given.of == .input && given.plan.black?.severity == .warn && given.plan.black?.duration == 1.5 && given.plan.black?.pictureRatio == 0.9)
        #expect(abs((given.plan.silence?.noise ?? 0) - 0.0031623) < 1e-6 && given.plan.silence?.eachChannel == true)
        #expect(given.plan.loudness == CheckPlan.Loudness(target: -23, tolerance: 1, truePeak: -1))
        let atsc = try #require(try validate(#"{"loudness": {"standard": "atsc-a85", "target": -22, "severity": "measure"}}"#).get().checks?.plan.loudness)
        #expect(atsc.target == -22 && atsc.tolerance == 2 && atsc.truePeak == -2 && atsc.severity == .measure)
    }

    @Test(arguments: [
        (#"{"black": {"pictureRatio": 1.5}}"#, "$.checks.black.pictureRatio", "outside 0...1"),
        (#"{"black": {"pixelThreshold": -0.1}}"#, "$.checks.black.pixelThreshold", "outside 0...1"),
        (#"{"black": {"duration": -1}}"#, "$.checks.black.duration", "negative"),
        (#"{"freeze": {"duration": 1e30}}"#, "$.checks.freeze.duration", "is not a time"),
        (#"{"freeze": {"duration": 1000000}}"#, "$.checks.freeze.duration", "at most 48 hours"),
        (#"{"freeze": {"noise": "+10dB"}}"#, "$.checks.freeze.noise", "-200dB to 0dB"),
        (#"{"freeze": {"noise": "loud dB"}}"#, "$.checks.freeze.noise", "-200dB to 0dB"),
        (#"{"silence": {"noise": 1e400}}"#, "$.checks.silence.noise", "too large"),
        (#"{"silence": {"eachChannel": 1}}"#, "$.checks.silence.eachChannel", "true or false"),
        (#"{"clipping": {"level": 0.1}}"#, "$.checks.clipping.level", "at least 0.5"),
        (#"{"clipping": {"samples": 0}}"#, "$.checks.clipping.samples", "outside 1...48000"),
        (#"{"clipping": {"gap": 60}}"#, "$.checks.clipping.gap", "at most 10 seconds"),
        (#"{"loudness": {"target": 5}}"#, "$.checks.loudness.target", "outside -70...0"),
        (#"{"loudness": {"target": -23, "tolerance": -1}}"#, "$.checks.loudness.tolerance", "outside 0...10"),
        (#"{"loudness": {"target": -23, "truePeak": 1e30}}"#, "$.checks.loudness.truePeak", "outside -20...3"),
        (#"{"loudness": true}"#, "$.checks.loudness", "needs a \"standard\""),
        (#"{"loudness": {"tolerance": 1}}"#, "$.checks.loudness", "needs a \"standard\""),
        (#"{"length": {"frames": -1}}"#, "$.checks.length.frames", "outside 0...100000000"),
        (#"{"length": {"severity": "warn"}}"#, "$.checks.length", "needs the expected"),
        (#"{"black": {"severity": "fatal"}}"#, "$.checks.black.severity", "not one of fail, warn, measure"),
        (#"{"blackness": true}"#, "$.checks.blackness", "unknown key \"blackness\""),
        (#"{"black": {"threshold": 0.1}}"#, "$.checks.black.threshold", "unknown key"),
        (#"{}"#, "$.checks", "names no check"),
        (#"{"black": false, "freeze": false}"#, "$.checks", "names no check"),
        (#"{"black": 1}"#, "$.checks.black", "expected an object"),
        (#"{"spec": {}}"#, "$.checks.spec", "names no field"),
        (#"{"spec": {"video": {"width": {"min": 1920, "max": 1280}}}}"#, "$.checks.spec.video.width", "\"min\" 1920 is above \"max\" 1280"),
        (#"{"spec": {"video": {"width": 1e30}}}"#, "$.checks.spec.video.width", "outside 1...65536"),
        (#"{"spec": {"video": {"frameRate": [25, -1]}}}"#, "$.checks.spec.video.frameRate[1]", "not a positive rate"),
        (#"{"spec": {"video": {"scanType": "mixed"}}}"#, "$.checks.spec.video.scanType", "not one of progressive, interlaced"),
        (#"{"spec": {"audio": {"sampleRate": 10}}}"#, "$.checks.spec.audio.sampleRate", "outside 1000...768000"),
        (#"{"spec": {"audio": {"codecs": "aac"}}}"#, "$.checks.spec.audio.codecs", "did you mean \"codec\""),
        (#"{"spec": {"container": []}}"#, "$.checks.spec.container", "1 to 32 names"),
        (#"{"spec": {"size": {"least": 5}}}"#, "$.checks.spec.size.least", "unknown key"),
        (#"{"fidelity": {"psnr": 1e30}}"#, "$.checks.fidelity.psnr", "outside 0...100"),
        (#"{"fidelity": {"psnr": "40dB"}}"#, "$.checks.fidelity.psnr", "expected a number of dB"),
        (#"{"fidelity": {"ssim": 1.5}}"#, "$.checks.fidelity.ssim", "outside 0...1"),
        (#"{"fidelity": {"vmaf": 90}}"#, "$.checks.fidelity.vmaf", "unknown key"),
    ])
    func aBadThresholdIsRefusedAtItsPath(_ checks: String, _ path: String, _ words: String) {
        let found = issues(checks)
        #expect(found.contains { $0.path == path && $0.message.contains(words) }, "\(found)")
    }

    @Test func checksOfAnExportNeedOneAndChecksOfTheInputAWholeInput() {
        #expect(issues(#"{"of": "export", "black": true}"#, export: false).contains { $0.path == "$.checks.of" && $0.message.contains("no \"export\" to check") })
        #expect(issues(#"{"black": true}"#, export: false, edits: true).contains { $0.path == "$.checks" && $0.message.contains("one whole input") })
        // Fidelity is of an export the farm encodes, whole.
        #expect(issues(#"{"fidelity": true}"#, export: false).contains { $0.path == "$.checks.fidelity" && $0.message.contains("needs an \"export\"") })
        #expect(issues(#"{"of": "input", "fidelity": true}"#).contains { $0.path == "$.checks.fidelity" && $0.message.contains("\"of\": \"export\"") })
        let passthrough = #"{ "version": 1, "input": "in.mov", "export": { "mode": "passthrough", "output": "out/a.mov" }, "checks": {"fidelity": true} }"#
        let chunked = #"{ "version": 1, "input": "in.mov", "export": { "mode": "constantFrameRate", "output": "out/a.mp4", "chunkSeconds": 60 }, "checks": {"fidelity": true} }"#
        for (json, words) in [(passthrough, "copies its pictures"), (chunked, "drop \"chunkSeconds\"")] {
            guard case .failure(let e) = ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context) else { Issue.record("accepted: \(json)"); continue }
            #expect(e.issues.contains { $0.path == "$.checks.fidelity" && $0.message.contains(words) }, "\(e.issues)")
        }
        // A coordinator's own chunking leaves an export whose fidelity is checked whole; 0 is no minimum.
        let fidelity = try? validate(#"{"fidelity": {"psnr": 0, "ssim": 0.95}}"#).get()
        #expect(fidelity?.checks?.plan.fidelity?.psnr == nil && fidelity?.checks?.plan.fidelity?.ssim == 0.95)
        #expect(fidelity?.chunked(every: MediaTime(value: 60, timescale: 1), above: nil) == nil)
        #expect((try? validate(#"{"black": true}"#).get())?.chunked(every: MediaTime(value: 60, timescale: 1), above: nil) != nil)
        // With an export, checks are of it by default, edits and all.
        #expect((try? validate(#"{"black": true}"#, edits: true).get()) != nil)
    }

    @Test func theSectionReadsBackAsTheSamePlan() throws {
        let json = #"{"of": "export", "black": {"duration": 1}, "clipping": {"level": "-0.1dB"}, "length": {"frames": 300},"#
            + #" "spec": {"container": "mp4", "size": {"max": 1e9}, "video": {"codec": ["h264"], "level": {"max": 4.1}, "frameRate": [25, "50"], "scanType": "progressive"},"#
            + #" "audio": {"sampleRate": [48000, 44100], "channels": 2, "bitRate": {"min": 96000}}}, "fidelity": {"ssim": 0.95, "severity": "warn"}}"#
        let first = try #require(try validate(json).get().checks)
        let again = try #require(try ManifestValidator.checks(json: Array(first.document.text.utf8), file: "c.json").get())
        #expect(again == first, "\(first.document.text)")
    }
}
