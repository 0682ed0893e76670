import FarmTestSupport
import Foundation
import MediaCore
import MediaTime
import Testing
@testable import MediaEdit

/// What an export keeps per edit: one opened file per source path, whatever the number of edits, and
/// look-ups that stay logarithmic in the number of pieces.
@Suite struct ManyEditsTests {
    @Test func segmentsOfOneFileShareOneOpening() throws {
        let paths = (0..<500).map { $0 % 5 == 4 ? MediaFixture.cfr30MP4.path : MediaFixture.longMP4.path }
        let sources = try ExportSource.open(paths, limits: .default, interrupter: Interrupter())
        #expect(sources.count == 500)
        let files = try sources.map { try $0.file }
        #expect(Set(files.map { ObjectIdentifier($0) }).count == 2)
        #expect(files[0] === files[3] && files[4] === files[9])
        let open = sources.allSatisfy { $0.isOpen }
        #expect(open)
    }

    /// Past `keptOpen` distinct files, none stays open once its streams are known: each opens again (from
    /// its start) when read, and closes on `release`.
    @Test func manyFilesAreNotKeptOpen() throws {
        let dir = try TestPaths.makeTemporaryFolder("many-sources")
        let paths = try (0...ExportSource.keptOpen).map { i in
            let path = dir.appendingPathComponent("s\(i).mp4").path
            try FileManager.default.linkItem(atPath: MediaFixture.cfr30MP4.path, toPath: path)
            return path
        }
        let sources = try ExportSource.open(paths, limits: .default, interrupter: Interrupter())
        let anyOpen = sources.contains { $0.isOpen }
        #expect(ExportSource.closesBetweenUses(sources) && !anyOpen)
        #expect(sources[7].video?.width == 320 && sources[7].audio != nil)
        let file = try sources[7].file, again = try sources[7].file
        #expect(sources[7].isOpen && file === again)
        sources[7].release()
        #expect(!sources[7].isOpen)
        let few = try ExportSource.open(Array(paths.prefix(ExportSource.keptOpen)), limits: .default, interrupter: Interrupter())
        let allOpen = few.allSatisfy { $0.isOpen }
        #expect(!ExportSource.closesBetweenUses(few) && allOpen)
    }

    @Test func piecesOfASegmentAreFoundByBinarySearch() throws {
        var c = Composition()
        for i in 0..<2000 {
            try c.insert(TimeRange(start: MediaTime(value: Int64(i % 100), timescale: 10), duration: MediaTime(value: 1, timescale: 10)),
                         of: "s\(i % 7).mp4")
        }
        try c.scale(TimeRange(start: MediaTime(value: 5, timescale: 1), duration: MediaTime(value: 10, timescale: 1)),
                    toDuration: MediaTime(value: 40, timescale: 1))
        let m = c.timeMapping
        for segment in [0, 1, 49, 50, 51, 149, 150, 1999] {
            #expect(Array(m.pieces(of: segment)) == m.pieces.filter { $0.segment == segment }, "segment \(segment)")
        }
        #expect(m.pieces(of: 2000).isEmpty && m.pieces(of: -1).isEmpty)
    }
}
