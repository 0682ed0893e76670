import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import Testing

/// The one place a job is made of a manifest: what comes from the manifest, what from the submitter.
@Suite struct JobOptionsTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    @Test func aJobTakesItsManifestsOwnSettingsAndTheSubmittersOptions() throws {
        let text = #"""
            {"version": 1, "name": "proxy", "input": "job:prep#output", "after": [3, "nightly"], "afterPolicy": "always", "requires": ["gpu"],
             "export": {"mode": "passthrough", "output": "out/p.mp4"}, "report": "out/p.json"}
            """#
        let manifest = try ManifestValidator.validate(json: Array(text.utf8), context: context).get()
        let plain = JobOptions().job(manifest, text: text)
        #expect(plain.name == "proxy" && plain.manifest == text && plain.baseDirectory == "/jobs" && plain.outputRoots.isEmpty)
        #expect(plain.after == [.id(3), .key("nightly"), .key("prep")] && plain.afterPolicy == .always && plain.requires == ["gpu"])
        #expect(plain.outputs == ["/jobs/out/p.mp4", "/jobs/out/p.json"] && plain.uniqueKey == nil && plain.maxAttempts == RetryPolicy.default.maxAttempts)
        // Through the API with a scoped token: its keys in its namespace, the manifest's "after" keys too.
        let api = JobOptions(outputRoots: ["/jobs/out"], priority: 5, uniqueKey: .api("p", scopedToken: "reader"), after: [.id(3), .id(9)],
                             afterPolicy: .success, requires: [], keys: .api(scopedToken: "reader"), name: "again", baseDirectory: "/srv")
            .job(manifest, text: text)
        #expect(api.uniqueKey == "api:reader:p" && api.priority == 5 && api.name == "again" && api.baseDirectory == "/srv")
        #expect(api.after == [.id(3), .key("api:reader:nightly"), .key("api:reader:prep"), .id(9)] && api.afterPolicy == .success && api.requires.isEmpty)
    }
}
