import FarmModel
@testable import FarmRuntime
import FarmSubmit
import Foundation
import Testing

/// The line a coordinator writes for each job of a kept worker: the manifest travels as the JSON object it
/// is, read back as written, and the worker reads it again without the file system.
struct WorkerProtocolTests {
    static let manifest = #"{"name":"n","input":"in.mp4","edits":[{"start":"0.1000","duration":1e1,"scale":{"rate":0.5}}],"#
        + #""export":{"output":"out.mp4","mode":"passthrough"},"zz":null,"a":"line\nbreak \"quoted\" é"}"#

    @Test func anAssignmentReadsBackAsWrittenWithItsManifestAnObject() throws {
        let document = try JSONParser.parse(Self.manifest)
        let assignment = WorkerAssignment(name: "job one", baseDirectory: "/media/in", outputRoots: ["/media/out", "s3://b/p"], stageToken: "t0k",
                                          manifest: document, resumeUploads: ["s3://b/p/x.mp4": "u1", "s3://b/p/a.mp4": "u2"])
        let line = assignment.line
        #expect(!line.contains("\n"), "one line")
        // The manifest is an object in the line, not a string: its numbers' text and keys' order are kept.
        #expect(line.contains(#""manifest":{"name":"n""#) && line.contains(#""start":"0.1000","duration":1e1"#), "\(line)")
        let read = try WorkerAssignment(line: line)
        #expect(read == assignment)
        #expect(read.manifest.text == document.text)
        // Without the optional fields.
        let bare = WorkerAssignment(name: "b", baseDirectory: "/", outputRoots: [], stageToken: nil, manifest: document)
        #expect(try WorkerAssignment(line: bare.line) == bare)
    }

    @Test(arguments: [
        ("[]", "expected an object"),
        (#"{"baseDirectory":"/","outputRoots":[],"manifest":{}}"#, "name and baseDirectory are required"),
        (#"{"name":1,"baseDirectory":"/","outputRoots":[],"manifest":{}}"#, "name: expected a string"),
        (#"{"name":"n","baseDirectory":"/","outputRoots":"/","manifest":{}}"#, "outputRoots: expected an array"),
        (#"{"name":"n","baseDirectory":"/","outputRoots":[1],"manifest":{}}"#, "outputRoots: expected strings"),
        (#"{"name":"n","baseDirectory":"/","outputRoots":[]}"#, "manifest is required"),
        (#"{"name":"n","baseDirectory":"/","outputRoots":[],"manifest":{},"resumeUploads":{"a":2}}"#, "resumeUploads.a: expected a string"),
        (#"{"name":"n""#, "invalid JSON"),
    ])
    func aLineThatIsNoAssignmentSaysWhy(line: String, says: String) {
        #expect {
            _ = try WorkerAssignment(line: line)
        } throws: { error in
            "\(error)".contains(says)
        }
    }

    /// The coordinator checked the manifest against this host's files; the worker reads only its shape.
    /// An input that is gone by then is the worker's to find when it opens it, not a refusal of the manifest.
    @Test func theWorkerReadsTheCheckedManifestWithoutTheFileSystem() throws {
        let folder = NSTemporaryDirectory() + "mediafarm-worker-protocol-\(UUID().uuidString)"
        let text = #"{"version":1,"name":"n","input":"gone.mp4","export":{"mode":"passthrough","output":"out.mp4"}}"#
        let document = try JSONParser.parse(text)
        guard case .success(let manifest) = ManifestLoader.checked(document: document, name: "n", baseDirectory: folder, outputRoots: []) else {
            Issue.record("the checked manifest was refused")
            return
        }
        #expect(manifest.edits.first?.source == folder + "/gone.mp4")
        #expect(manifest.export?.output == folder + "/out.mp4")
        // Its shape is still read: a manifest that is no manifest is refused, naming the field.
        guard case .failure(let error) = ManifestLoader.checked(document: try JSONParser.parse(#"{"version":1,"input":3}"#), name: "n", baseDirectory: folder,
                                                                outputRoots: []) else {
            Issue.record("a manifest of the wrong shape was read")
            return
        }
        #expect(error.description.contains("input"), "\(error)")
    }
}
