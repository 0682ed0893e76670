import FarmTestSupport
import Foundation
import Testing
@testable import MediaEdit

/// The temporary-then-rename output: locked while written, checked just before the rename.
@Suite struct AtomicOutputTests {
    struct Refused: Error {}

    @Test func aRefusingCheckBeforeCommitLeavesNothing() throws {
        let folder = try TestPaths.makeTemporaryFolder("atomic")
        let final = folder.appendingPathComponent("out.mp4").path
        let output = try AtomicOutput(finalPath: final)
        output.beforeCommit = { path in
            #expect(path == final)
            throw Refused()
        }
        try output.write(contents: Data("movie".utf8))
        #expect(throws: ExportError.self) { try output.commit() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test func aLiveTemporaryIsKeptAndADeadOneRemoved() throws {
        let folder = try TestPaths.makeTemporaryFolder("atomic-live")
        let live = try AtomicOutput(finalPath: folder.appendingPathComponent("a.mp4").path)
        // A dead writer's temporary: the same kind of name, nobody holding its lock, not young.
        let dead = folder.appendingPathComponent(".b.mp4\(AtomicOutput.marker)dead\(AtomicOutput.suffix)").path
        try Data("partial".utf8).write(to: URL(fileURLWithPath: dead))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-60)], ofItemAtPath: dead)
        AtomicOutput.removeStaleTemporaries(in: folder.path)
        #expect(FileManager.default.fileExists(atPath: live.temporaryPath))
        #expect(!FileManager.default.fileExists(atPath: dead))
        live.discard()
    }
}
