import FarmModel
import Foundation
import MediaTime
import Testing

/// The fields of a chunked export in a manifest: `chunkSeconds`, a chunk's `frames`, the coordinator's `join`.
@Suite struct ChunkManifestTests {
    let context = ManifestContext(baseDirectory: "/jobs", outputRoots: ["/jobs/out"])

    func validate(_ export: String) -> Result<JobManifest, ManifestValidationError> {
        ManifestValidator.validate(json: Array(#"{ "version": 1, "input": "a.mp4", "export": \#(export) }"#.utf8), context: context)
    }

    func messages(_ export: String) -> [String] {
        guard case .failure(let e) = validate(export) else { return [] }
        return e.issues.map { "\($0.path): \($0.message)" }
    }

    @Test func chunkSecondsFramesAndJoinAreRead() throws {
        let chunked = try validate(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "chunkSeconds": "20" }"#).get()
        #expect(chunked.export?.chunkDuration == MediaTime(value: 20, timescale: 1) && chunked.export?.frames == nil)
        let chunk = try validate(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "frames": [600, 1200] }"#).get()
        #expect(chunk.export?.frames == 600..<1200)
        let join = try validate("""
            { "mode": "constantFrameRate", "output": "out/a.mp4", "chunkSeconds": 20,
              "join": [ { "output": "out/.c/1.mp4", "frames": [0, 600], "job": 2, "attempts": 1 }, { "output": "out/.c/2.mp4", "frames": [600, 900] } ] }
            """).get()
        #expect(join.export?.join == [JobManifest.JoinedChunk(output: "/jobs/out/.c/1.mp4", frames: 0..<600, job: 2, attempts: 1),
                                      JobManifest.JoinedChunk(output: "/jobs/out/.c/2.mp4", frames: 600..<900)])
    }

    @Test func chunkAboveLimitsChunkingToLongExports() throws {
        let m = try validate(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "chunkSeconds": 20, "chunkAbove": "600" }"#).get()
        #expect(m.export?.chunkDuration == MediaTime(value: 20, timescale: 1) && m.export?.chunkAbove == MediaTime(value: 600, timescale: 1))
        #expect(messages(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "chunkAbove": 600 }"#)
            == ["$.export.chunkAbove: needs \"chunkSeconds\": the length of the chunks when it is longer than this"])
        #expect(messages(#"{ "mode": "passthrough", "output": "out/a.mp4", "chunkAbove": 600 }"#).contains(
            "$.export.chunkAbove: applies to constantFrameRate exports only; a passthrough export copies packets and is not split"))
    }

    @Test func wrongChunkFieldsAreRefusedWithTheirPaths() {
        #expect(messages(#"{ "mode": "passthrough", "output": "out/a.mp4", "chunkSeconds": 20 }"#)
            == ["$.export.chunkSeconds: applies to constantFrameRate exports only; a passthrough export copies packets and is not split"])
        #expect(messages(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "chunkSeconds": 1 }"#)
            == ["$.export.chunkSeconds: must be between 2 and 3600 seconds"])
        #expect(messages(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "frames": [5, 5] }"#)
            == ["$.export.frames: 5..<5 holds no frame: the end (excluded) must be after the first"])
        #expect(messages(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "frames": [5] }"#)
            == ["$.export.frames: expected [first, end]: two whole numbers, the end excluded"])
        #expect(messages(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "frames": [0, 9], "chunkSeconds": 9 }"#)
            == ["$.export.chunkSeconds: a range of frames is one chunk already; give \"chunkSeconds\" or \"frames\", not both"])
        #expect(messages(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "join": [ { "output": "c1.mp4", "frames": [0, 10] }, { "output": "c2.mp4", "frames": [11, 20] } ] }"#)
            == ["$.export.join[1].frames: begins at frame 11, but the chunk before ends at 10"])
        #expect(messages(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "join": [ { "output": "c1.mp4", "frames": [3, 10] } ] }"#)
            == ["$.export.join[0].frames: must begin at frame 0"])
        #expect(messages(#"{ "mode": "constantFrameRate", "output": "out/a.mp4", "join": [] }"#)
            == ["$.export.join: expected a non-empty array of chunks ({\"output\", \"frames\"})"])
    }
}
