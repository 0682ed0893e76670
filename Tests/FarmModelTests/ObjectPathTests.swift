import Testing
@testable import FarmModel

/// `s3://BUCKET/KEY` in manifests: kept as written, checked lexically, and written only under an output
/// root that is an object prefix.
@Suite struct ObjectPathTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out", "s3://media-out/renders"])

    func validate(_ json: String) -> Result<JobManifest, ManifestValidationError> {
        ManifestValidator.validate(json: Array(json.utf8), file: "m.json", context: context)
    }

    @Test func objectsAreInputsAndOutputsAsWritten() throws {
        let manifest = try validate("""
            { "version": 1, "edits": [ { "source": "s3://media-in/a/../clip one.mp4", "start": 1, "duration": 2 } ],
              "export": { "mode": "passthrough", "output": "s3://media-out/renders/2026/cut.mp4" },
              "report": "out/cut.json" }
            """).get()
        // A key is a name: "a/../clip one.mp4" is not normalized away.
        #expect(manifest.edits.map(\.source) == ["s3://media-in/a/../clip one.mp4"])
        #expect(manifest.export?.output == "s3://media-out/renders/2026/cut.mp4")
        #expect(manifest.report == "/jobs/out/cut.json")
    }

    @Test func badAddressesAndOutputsOutsideTheRootsAreRefused() {
        let cases: [(String, String)] = [
            (#""input": "s3://Media/clip.mp4", "report": "out/r.json""#, "is not a bucket name"),
            (#""input": "s3://media-in", "report": "out/r.json""#, "names a bucket, not an object"),
            (#""input": "s3://media-in/", "report": "out/r.json""#, "names a bucket, not an object"),
            (#""input": "s3://media-in/clip.mp4", "report": "s3://media-out/elsewhere/r.json""#, "outside the output roots"),
            (#""input": "s3://media-in/clip.mp4", "report": "s3://media-out/renders-old/r.json""#, "outside the output roots"),
            (#""input": "s3://media-in/clip.mp4", "report": "s3://media-out/renders/""#, "must name an object, not a prefix"),
            (#""input": "s3://media-out/renders/r.json", "report": "s3://media-out/renders/r.json""#, "would overwrite the input"),
        ]
        for (body, problem) in cases {
            guard case .failure(let error) = validate("{ \"version\": 1, \(body) }") else {
                Issue.record("accepted: \(body)")
                continue
            }
            #expect(error.issues.contains { $0.message.contains(problem) }, "\(body): \(error.issues)")
        }
        // The way out names an object prefix.
        guard case .failure(let error) = validate(#"{ "version": 1, "input": "s3://media-in/c.mp4", "report": "s3://other-bucket/r.json" }"#) else { return }
        #expect(error.issues.first?.message.contains("--output-root FOLDER (or s3://BUCKET/PREFIX)") == true)
    }

    @Test func listsOfRootsKeepObjectPrefixesWhole() {
        #expect(PathRules.splitList("/srv/out:s3://media-out/renders::/tmp/x:s3://b2/p") == ["/srv/out", "s3://media-out/renders", "/tmp/x", "s3://b2/p"])
        #expect(PathRules.resolve("s3://b/k/../x", against: "/jobs") == "s3://b/k/../x")
    }
}
