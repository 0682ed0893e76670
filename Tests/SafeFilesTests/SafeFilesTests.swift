import FarmTestSupport
import Foundation
import SafeFiles
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Moves that can never replace a file, the quarantine writer, and the farm's own files.
@Suite struct SafeFilesTests {
    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static func read(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func aMoveOntoAnExistingFileFailsAndBothFilesSurvive() throws {
        let folder = try TestPaths.makeTemporaryFolder("safe-move").path
        try Self.write("card A", to: folder + "/a")
        try Self.write("card B", to: folder + "/b")
        #expect(throws: FileMoveError.self) { try SafeFiles.move(folder + "/a", to: folder + "/b") }
        do {
            try SafeFiles.move(folder + "/a", to: folder + "/b")
        } catch {
            #expect(error.targetExists)
            #expect(error.description.contains("already there"))
        }
        #expect(Self.read(folder + "/a") == "card A")
        #expect(Self.read(folder + "/b") == "card B")
        try SafeFiles.move(folder + "/a", to: folder + "/c")
        #expect(Self.read(folder + "/c") == "card A")
        #expect(!FileManager.default.fileExists(atPath: folder + "/a"))
    }

    @Test func aMoveAcrossFileSystemsCopiesThenRemovesAndStillNeverReplaces() throws {
        let here = try TestPaths.makeTemporaryFolder("safe-move-xdev").path
        let shm = "/dev/shm/mediafarm-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: shm, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: shm) }
        var a = stat(), b = stat()
        stat(here, &a); stat(shm, &b)
        try #require(a.st_dev != b.st_dev, "/dev/shm must be another file system for this test")
        try Self.write("clip", to: here + "/clip.mp4")
        try Self.write("taken", to: shm + "/taken.mp4")
        #expect(throws: FileMoveError.self) { try SafeFiles.move(here + "/clip.mp4", to: shm + "/clip.mp4") }
        #expect(throws: FileMoveError.self) { try SafeFiles.moveAcrossDevices(here + "/clip.mp4", to: shm + "/taken.mp4") }
        #expect(Self.read(shm + "/taken.mp4") == "taken")
        #expect(Self.read(here + "/clip.mp4") == "clip")
        try SafeFiles.moveAcrossDevices(here + "/clip.mp4", to: shm + "/clip.mp4")
        #expect(Self.read(shm + "/clip.mp4") == "clip")
        #expect(!FileManager.default.fileExists(atPath: here + "/clip.mp4"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: shm).sorted() == ["clip.mp4", "taken.mp4"])
    }

    @Test func createNeverReplaces() throws {
        let folder = try TestPaths.makeTemporaryFolder("safe-create").path
        try SafeFiles.create(folder + "/r.json", contents: Data("first".utf8))
        #expect(throws: FileMoveError.self) { try SafeFiles.create(folder + "/r.json", contents: Data("second".utf8)) }
        #expect(Self.read(folder + "/r.json") == "first")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["r.json"])
    }

    @Test func sameNamedFilesAllSurviveQuarantineEvenFromManyWritersAtOnce() async throws {
        let folder = try TestPaths.makeTemporaryFolder("quarantine")
        let quarantine = QuarantineFolder(folder.path + "/quarantine")
        // 4 writers x 10 cards, every card's file named C0001.MP4.
        for writer in 0..<4 {
            for card in 0..<10 {
                let dir = folder.path + "/w\(writer)/card\(card)"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                try Self.write("writer \(writer) card \(card)", to: dir + "/C0001.MP4")
            }
        }
        let placed = try await withThrowingTaskGroup(of: [String].self) { group in
            for writer in 0..<4 {
                group.addTask {
                    try (0..<10).map { card in
                        try quarantine.place(folder.path + "/w\(writer)/card\(card)/C0001.MP4", reason: "not media", details: ["card": "\(card)"])
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(Set(placed).count == 40)
        let contents = Set(placed.compactMap(Self.read))
        #expect(contents.count == 40, "every card's bytes are in quarantine once")
        #expect(placed.contains(folder.path + "/quarantine/C0001.MP4"))
        #expect(placed.contains(folder.path + "/quarantine/C0001-2.MP4"))
        for path in placed {
            let record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path + ".reason.json"))) as? [String: String]
            #expect(record?["quarantined"] == path && record?["reason"] == "not media" && record?["card"] != nil)
        }
    }

    @Test func aQuarantineNameWithAReasonLeftFromBeforeIsNotTaken() throws {
        let folder = try TestPaths.makeTemporaryFolder("quarantine-stale").path
        try FileManager.default.createDirectory(atPath: folder + "/q", withIntermediateDirectories: true)
        try Self.write("{}", to: folder + "/q/x.mov.reason.json")
        try Self.write("movie", to: folder + "/x.mov")
        let placed = try QuarantineFolder(folder + "/q").place(folder + "/x.mov", reason: "truncated")
        #expect(placed == folder + "/q/x-2.mov")
        #expect(Self.read(folder + "/q/x.mov.reason.json") == "{}")
    }

    @Test func theFarmsFilesAreRecognisedWhateverTheirSpelling() throws {
        let folder = try TestPaths.makeTemporaryFolder("protected").path
        let files = ProtectedFiles()
        let database = folder + "/farm.sqlite"
        try Self.write("not yet a database", to: database)
        files.protectDatabase(database, role: "the queue's database")
        #expect(files.refusal(for: database)?.hasPrefix("the queue's database") == true)
        // Another spelling, a symbolic link, a hard link.
        #expect(files.refusal(for: folder + "/./sub/../farm.sqlite") != nil)
        try FileManager.default.createSymbolicLink(atPath: folder + "/link.mp4", withDestinationPath: database)
        #expect(files.refusal(for: folder + "/link.mp4") != nil)
        #expect(link(database, folder + "/hard.json") == 0)
        #expect(files.refusal(for: folder + "/hard.json") != nil)
        // The write-ahead log before SQLite made it, directly and through a dangling link.
        #expect(files.refusal(for: database + "-wal")?.contains("wal file") == true)
        try FileManager.default.createSymbolicLink(atPath: folder + "/dangling.json", withDestinationPath: "farm.sqlite-wal")
        #expect(files.refusal(for: folder + "/dangling.json") != nil)
        // Not protected.
        #expect(files.refusal(for: folder + "/out.mp4") == nil)
        files.release(database)
        #expect(files.refusal(for: database + "-wal") == nil)
        #expect(files.refusal(for: database) == nil)
    }

    @Test func anyDatabaseIsRecognisedByItsFirstBytes() throws {
        let folder = try TestPaths.makeTemporaryFolder("protected-magic").path
        try Data("SQLite format 3\0".utf8 + [UInt8](repeating: 1, count: 100)).write(to: URL(fileURLWithPath: folder + "/other.db"))
        try Data([0x37, 0x7f, 0x06, 0x82] + [UInt8](repeating: 0, count: 28)).write(to: URL(fileURLWithPath: folder + "/other.db-wal"))
        try Data("SQLite format 2\0".utf8).write(to: URL(fileURLWithPath: folder + "/report.json"))
        let files = ProtectedFiles()
        #expect(files.refusal(for: folder + "/other.db")?.hasPrefix("an SQLite database") == true)
        #expect(files.refusal(for: folder + "/other.db-wal")?.hasPrefix("an SQLite write-ahead log") == true)
        #expect(files.refusal(for: folder + "/report.json") == nil)
        #expect(files.check(folder + "/other.db")?.contains("never replaces the farm's own files") == true)
    }

    @Test func aChildProcessInheritsTheList() throws {
        let folder = try TestPaths.makeTemporaryFolder("protected-env").path
        let parent = ProtectedFiles()
        parent.protect(folder + "/tokens/api-token", role: "the HTTP face's token file")
        let child = ProtectedFiles(inherited: parent.environmentValue)
        // The list, and what the parent holds open for writing besides.
        #expect(Set(parent.all).isSubset(of: Set(child.all)))
        try FileManager.default.createDirectory(atPath: folder + "/tokens", withIntermediateDirectories: true)
        #expect(child.refusal(for: folder + "/tokens/api-token")?.hasPrefix("the HTTP face's token file") == true)
        #expect(ProtectedFiles(inherited: "garbage").all.isEmpty)
    }

    /// A file the process holds open for writing (a log its output goes to) is refused as an output without
    /// being named anywhere, and so is it for a child process; one open only for reading is not.
    @Test func aFileHeldOpenForWritingIsTheFarmsOwn() throws {
        let folder = try TestPaths.makeTemporaryFolder("protected-open").path
        let log = folder + "/coordinator.log", read = folder + "/input.txt"
        try Self.write("a log\n", to: log)
        try Self.write("an input\n", to: read)
        let files = ProtectedFiles()
        #expect(files.refusal(for: log) == nil)
        let writing = open(log, O_WRONLY | O_APPEND | O_CLOEXEC)
        let reading = open(read, O_RDONLY | O_CLOEXEC)
        defer { close(reading) }
        #expect(writing >= 0 && reading >= 0)
        #expect(files.refusal(for: log)?.contains("holds open for writing") == true, "\(files.refusal(for: log) ?? "nil")")
        #expect(files.refusal(for: folder + "/../" + (folder as NSString).lastPathComponent + "/coordinator.log") != nil)
        #expect(files.refusal(for: read) == nil)
        let child = ProtectedFiles(inherited: files.environmentValue)
        close(writing)
        #expect(files.refusal(for: log) == nil, "a closed file is not the farm's")
        #expect(child.refusal(for: log)?.contains("process that started this one") == true)
    }
}
