import FarmModel
import FarmSubmit
import FarmTestSupport
import Foundation
import Testing
@testable import FarmRuntime

/// The folder of a chunked export's chunks is made by the coordinator that splits it, never by a chunk's
/// worker: a chunk that runs after its export ended (and its folder was removed) writes nothing and leaves
/// no folder behind; `mediafarm run` of a chunk by hand still makes its folder.
@Suite struct ChunkFolderTests {
    func chunkManifest(_ farm: Farm) throws -> JobManifest {
        let path = try farm.manifest("chunk", """
            { "version": 1, "name": "film [chunk 2/3]", "input": "in.mp4", "overwrite": true,
              "export": { "mode": "constantFrameRate", "frameRate": 30, "output": "out/.film.mp4.chunks-0123456789/chunk-0002.mp4",
                          "frames": [90, 180], "video": { "preset": "ultrafast" } } }
            """)
        return try ManifestLoader.load(path).get()
    }

    /// A join of a package at a prefix reads only chunks of its own split: a prefix `chunk-NNNN` in
    /// `.NAME.chunks-TAG` beside it. Any other is refused before a request is made.
    @Test func aJoinAtAPrefixReadsOnlyItsOwnChunks() async throws {
        let output = "s3://media/out/show"
        for forged in ["s3://media/out/other/chunk-0001", "s3://media/elsewhere/.show.chunks-ab12/chunk-0001", "s3://media/out/.show.chunks-ab12/segments",
                       "s3://media/out/.shows.chunk-ab12/chunk-0001", "s3://other/out/.show.chunks-ab12/chunk-0001", "/jobs/out/.show.chunks-ab12/chunk-0001"] {
            let error = await #expect(throws: JobError.self) {
                _ = try await PackageChunkObjects.chunk(JobManifest.JoinedChunk(output: forged, frames: 0..<60), of: output)
            }
            #expect(error?.description.contains("\(forged): not a chunk of this package's") == true, "\(forged): \(String(describing: error))")
        }
    }

    /// The coordinator publishes a package's copies only of objects under its chunks or the package it reuses,
    /// and only to names of a package's files: any other record is refused before a request is made.
    @Test func aPackagesCopiesAreOfItsChunksOrOfThePackageItReusesOnly() async throws {
        let prefix = "s3://media/out/show"
        let chunks = ["s3://media/out/.show.chunks-ab12/chunk-0001/"]
        func copy(_ name: String, from source: String) -> ObjectUpload {
            ObjectUpload(address: prefix + "/" + name, copying: ObjectUpload.Copy(source: source, etag: "e"), size: 10, sha256: nil)
        }
        let entry = copy("master.m3u8", from: chunks[0] + "master.m3u8")
        for (uploads, refusal) in [
            ([copy("video-1/1.m4s", from: "s3://media/secret/key.bin"), entry], "a copy of s3://media/secret/key.bin, which is neither a chunk"),
            ([copy("video-1/1.m4s", from: chunks[0] + "../../secret.bin"), entry], "which is neither a chunk"),
            ([copy("video-1/1.m4s", from: "s3://media/out/.show.chunks-ab12/chunk-00011/1.m4s"), entry], "which is neither a chunk"),
            ([copy(".mediafarm-package.json", from: chunks[0] + "video-1/1.m4s"), entry], ".mediafarm-package.json: names no file of a package"),
            ([copy("video-1/../../x", from: chunks[0] + "video-1/1.m4s"), entry], "names no file of a package"),
        ] {
            let error = await #expect(throws: JobError.self) {
                _ = try await PackageObjects.complete(uploads, prefix: prefix, token: "t", entryPoints: ["master.m3u8"], allowExisting: false, copiesFrom: chunks,
                                                      log: { _ in })
            }
            #expect(error?.description.contains(refusal) == true, "\(String(describing: error))")
        }
    }

    @Test func aChunkWhoseFolderIsGoneWritesNothing() async throws {
        let farm = try Farm("chunk-folder-gone")
        let manifest = try chunkManifest(farm)
        let folder = farm.out.appendingPathComponent(".film.mp4.chunks-0123456789").path
        let result = await JobRunner(manifest: manifest, stagingToken: "t1").run()
        #expect(!result.succeeded && result.error?.contains("\(folder): the folder of this export's chunks is gone") == true, "\(result.error ?? "")")
        #expect(!FileManager.default.fileExists(atPath: folder), "the chunk made its folder again")
    }

    @Test func aChunkWritesIntoTheFolderItsSplitMade() async throws {
        let farm = try Farm("chunk-folder-made")
        let manifest = try chunkManifest(farm)
        let output = try #require(manifest.export?.output)
        try ChunkFiles.makeFolder(of: output)
        let result = await JobRunner(manifest: manifest, stagingToken: "t1").run()
        #expect(result.succeeded, "\(result.error ?? "")")
        #expect(FileManager.default.fileExists(atPath: StagedOutput.path(for: output, token: "t1")))
        // By hand (no coordinator), the folder is made.
        try FileManager.default.removeItem(atPath: farm.out.path)
        let byHand = await JobRunner(manifest: manifest).run()
        #expect(byHand.succeeded && FileManager.default.fileExists(atPath: output), "\(byHand.error ?? "")")
    }
}
