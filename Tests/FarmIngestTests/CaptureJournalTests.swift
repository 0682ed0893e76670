import FarmIngest
import FarmTestSupport
import Foundation
import Testing

/// What a capture reads back from the journals of earlier recordings into its folder, in-process: a damaged
/// or unreadable journal is an error naming the file and the line, never a journal read as empty (which
/// would queue every segment again and drop its assemblies without a word).
@Suite struct CaptureJournalTests {
    func folder(_ journal: String?, segments: [String]) throws -> URL {
        let dir = try TestPaths.makeTemporaryFolder("capture-journal")
        if let journal { try journal.write(to: dir.appendingPathComponent(".cam.journal"), atomically: true, encoding: .utf8) }
        for name in segments { FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: Data()) }
        return dir
    }

    @Test func aWholeJournalSaysWhatIsLeft() throws {
        let journal = """
        {"captureID":"cam","index":1,"path":"cam-00001.mp4","job":7}
        {"captureID":"cam","index":2,"path":"cam-00002.mp4"}

        """
        let dir = try folder(journal, segments: ["cam-00001.mp4", "cam-00002.mp4", "cam-00003.mp4"])
        let left = try CaptureQueue.leftOver(in: dir.path)
        #expect(left.segments.map(\.index) == [2, 3])
        #expect(left.segments.allSatisfy { $0.captureID == "cam" })
        #expect(left.assemblies.isEmpty)
    }

    @Test func aDamagedLineStopsTheReadNamingFileAndLine() throws {
        let journal = """
        {"captureID":"cam","index":1,"path":"cam-00001.mp4","job":7}
        {"captureID":"cam","index":2,"pa
        {"captureID":"cam","index":3,"path":"cam-00003.mp4","job":9}

        """
        let dir = try folder(journal, segments: ["cam-00001.mp4", "cam-00002.mp4"])
        do {
            _ = try CaptureQueue.leftOver(in: dir.path)
            Issue.record("a damaged journal was read")
        } catch {
            #expect(error.file == dir.appendingPathComponent(".cam.journal").path)
            #expect(error.line == 2)
            #expect(error.description.contains(".cam.journal, line 2: not a journal entry"), "\(error)")
            #expect(error.description.contains("the capture stops rather than queue its segments again blindly"))
        }
    }

    @Test func aLineThatIsNoEntryIsNamedToo() throws {
        let dir = try folder(#"{"captureID":"cam","index":"one","path":""}"# + "\n", segments: [])
        #expect(throws: CaptureQueue.JournalReadError.self) { try CaptureQueue.leftOver(in: dir.path) }
    }

    @Test func anUnreadableJournalIsNamed() throws {
        let dir = try folder(nil, segments: ["cam-00001.mp4"])
        // A journal that cannot be read as a file.
        try FileManager.default.createDirectory(at: dir.appendingPathComponent(".cam.journal"), withIntermediateDirectories: false)
        do {
            _ = try CaptureQueue.leftOver(in: dir.path)
            Issue.record("an unreadable journal was read as empty")
        } catch {
            #expect(error.line == nil && error.description.contains(".cam.journal: cannot be read"), "\(error)")
        }
    }

    @Test func aFolderNotMadeYetHoldsNothing() throws {
        let dir = try TestPaths.makeTemporaryFolder("capture-journal")
        let left = try CaptureQueue.leftOver(in: dir.appendingPathComponent("not-yet").path)
        #expect(left.segments.isEmpty && left.assemblies.isEmpty)
    }
}
