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
        #expect(Set(sources.map { ObjectIdentifier($0.file) }).count == 2)
        #expect(sources[0].file === sources[3].file && sources[4].file === sources[9].file)
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
