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

    /// A dead writer's temporary goes at the next output in a small folder; in a folder of more than
    /// 1,000 entries a process lists the folder at most once a minute (the cost of an output must not
    /// grow with the folder), and the next sweep after that removes it.
    @Test func aCrowdedFolderIsSweptAtMostOnceAMinute() throws {
        func deadTemporary(_ folder: URL, _ name: String) throws -> String {
            let dead = folder.appendingPathComponent(".\(name)\(AtomicOutput.marker)dead\(AtomicOutput.suffix)").path
            try Data("partial".utf8).write(to: URL(fileURLWithPath: dead))
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-60)], ofItemAtPath: dead)
            return dead
        }
        let small = try TestPaths.makeTemporaryFolder("atomic-small")
        for name in ["a", "b"] {
            let dead = try deadTemporary(small, name + ".json")
            try AtomicOutput(finalPath: small.appendingPathComponent(name + "-out.json").path).discard()
            #expect(!FileManager.default.fileExists(atPath: dead), "small folder, output \(name)")
        }
        let crowded = try TestPaths.makeTemporaryFolder("atomic-crowded")
        for i in 0...AtomicOutput.crowded { FileManager.default.createFile(atPath: crowded.appendingPathComponent("r\(i).json").path, contents: nil) }
        let first = try deadTemporary(crowded, "first.json")
        try AtomicOutput(finalPath: crowded.appendingPathComponent("x.json").path).discard()
        #expect(!FileManager.default.fileExists(atPath: first), "the first output in the crowded folder sweeps it")
        let second = try deadTemporary(crowded, "second.json")
        try AtomicOutput(finalPath: crowded.appendingPathComponent("y.json").path).discard()
        #expect(FileManager.default.fileExists(atPath: second), "swept a moment ago: not listed again")
        AtomicOutput.sweepIfDue(crowded.path, now: Date().addingTimeInterval(AtomicOutput.crowdedSweepInterval + 1))
        #expect(!FileManager.default.fileExists(atPath: second), "a minute later, swept again")
    }
}
