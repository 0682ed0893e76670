// bench/library's measurement: a library of N assets (rows written straight into the library's tables,
// with facts spread as a real library's are), then fetches with predicates and resolves of 1,000 ids
// timed through FarmLibrary's own calls. Prints one JSON object.
//   mediafarm-library-bench QUEUE-URL COUNT MEDIA-FILE WORK-FOLDER
import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmStore
import Foundation
import MediaTime
import SafeFiles

@main
struct LibraryBench {
    static func main() async {
        do {
            try await run()
        } catch {
            FileHandle.standardError.write(Data("mediafarm-library-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 5, let count = Int(arguments[2]) else {
            FileHandle.standardError.write(Data("usage: mediafarm-library-bench QUEUE-URL COUNT MEDIA-FILE WORK-FOLDER\n".utf8))
            exit(2)
        }
        let store = try await JobStores.open(try QueueLocation.parse(arguments[1]), create: true, migrate: true, connections: 4)
        let library = AssetLibrary(database: try store.database, host: "bench", inspector: .media)
        let media = arguments[3], work = arguments[4]

        // 1,000 hard links of one real file: the paths `resolve` checks exist, with the stamp recorded.
        let links = 1000
        try FileManager.default.createDirectory(atPath: work + "/links", withIntermediateDirectories: true)
        for i in 0..<links { link(media, work + "/links/\(i).mp4") }
        guard let stamp = FileStamp(path: media) else { throw BenchError("\(media): not a file") }

        var generator = SplitMix(seed: 42)
        let seeded = Date()
        let start = Date(timeIntervalSince1970: 1_600_000_000)
        var ids: [AssetID] = []
        for batch in stride(from: 0, to: count, by: 400) {
            let n = min(400, count - batch)
            var assets: [SQLValue] = [], places: [SQLValue] = [], members: [SQLValue] = []
            for i in batch..<(batch + n) {
                var mix = SplitMix(seed: UInt64(i))
                let id = AssetID(digest: withUnsafeBytes(of: UInt64(i).bigEndian, Array.init) + withUnsafeBytes(of: mix.next(), Array.init))
                ids.append(id)
                let kind = generator.next() % 10
                let type: LibraryMediaType = kind < 7 ? .video : kind < 9 ? .audio : .image
                let duration = type == .image ? 0 : Double(generator.next() % 600_000) / 1000
                let rate: Double? = type == .video ? [24, 25, 30, 60, 120][Int(generator.next() % 5)] : nil
                let codec = type == .video ? ["h264", "hevc", "mpeg4"][Int(generator.next() % 3)] : type == .audio ? "aac" : "png"
                let date = start.addingTimeInterval(Double(generator.next() % (5 * 365 * 86400)))
                let facts = AssetFacts(mediaType: type, duration: MediaTime(value: Int64((duration * 1000).rounded()), timescale: 1000), size: 1_000_000 + Int64(i),
                                       codec: codec, frameRate: rate, width: 1920, height: 1080, hasAudio: type != .image, creationDate: date)
                let json = String(decoding: try JSONEncoder.iso.encode(facts), as: UTF8.self)
                assets += [.text(id.rawValue), .text(String(repeating: "0", count: 64)), .integer(facts.size), .text(type.rawValue), .real(duration),
                           .text(codec), SQLValue(rate), SQLValue(facts.isSlowMotion), SQLValue(date), .text(json),
                           SQLValue(seeded), SQLValue(date), SQLValue(i % 50 == 0)]
                let path = i < links ? work + "/links/\(i).mp4" : "/media/bench/\(i / 1000)/\(i).mp4"
                places += [.text(id.rawValue), .text("bench"), .text(path), .integer(stamp.size), .real(stamp.mtime), .integer(stamp.inode),
                           .integer(stamp.device), SQLValue(seeded)]
                if i % 10 == 0 { members += [.text("Picks"), .text(id.rawValue), SQLValue(seeded)] }
            }
            let (a, p, m) = (assets, places, members)
            try await library.database.write { s in
                if batch == 0 { try await s.execute("INSERT INTO albums (name, created_at) VALUES ('Picks', 0)") }
                try await s.execute("""
                    INSERT INTO assets (id, sha256, size, media_type, duration, codec, frame_rate, slow_motion, created, facts, added_at, date_key, has_codes)
                    VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: n).joined(separator: ", "))
                    """, a)
                try await s.execute("""
                    INSERT INTO asset_locations (asset_id, host, path, size, mtime, inode, device, seen_at, state)
                    VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, 'present')", count: n).joined(separator: ", "))
                    """, p)
                if !m.isEmpty {
                    try await s.execute("INSERT INTO album_assets (album, asset_id, added_at) VALUES \(Array(repeating: "(?, ?, ?)", count: m.count / 3).joined(separator: ", "))", m)
                }
            }
        }
        // What `library add` does after adding (SQLite), and autovacuum does by itself (PostgreSQL).
        if case .postgres = try QueueLocation.parse(arguments[1]) {
            try await library.database.write { s in try await s.execute("ANALYZE") }
        } else {
            try await library.maintain()
        }
        let seedSeconds = Date().timeIntervalSince(seeded)

        func time(_ runs: Int, _ body: () async throws -> Int) async throws -> [String: Any] {
            var samples: [Double] = []
            var result = 0
            for _ in 0..<runs {
                let t = DispatchTime.now().uptimeNanoseconds
                result = try await body()
                samples.append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6)
            }
            samples.sort()
            return ["medianMs": round(samples[samples.count / 2] * 100) / 100, "p95Ms": round(samples[min(samples.count - 1, samples.count * 95 / 100)] * 100) / 100,
                    "maxMs": round(samples.last! * 100) / 100, "runs": runs, "results": result]
        }
        var report: [String: Any] = ["assets": count, "seedSeconds": round(seedSeconds * 10) / 10]
        var predicate = FetchOptions()
        predicate.mediaType = .video; predicate.codec = "h264"; predicate.minDuration = 60; predicate.maxDuration = 300
        predicate.sort = .duration; predicate.limit = 100
        report["listVideoH264Duration60to300SortedByDurationLimit100"] = try await time(20) { try await library.fetch(predicate).assets.count }
        var dated = FetchOptions()
        dated.since = start.addingTimeInterval(365 * 86400); dated.until = start.addingTimeInterval(2 * 365 * 86400); dated.sort = .date
        dated.descending = true; dated.limit = 100
        report["listOneYearNewestFirstLimit100"] = try await time(20) { try await library.fetch(dated).assets.count }
        var album = FetchOptions()
        album.album = "Picks"; album.limit = 100; album.mediaType = .video
        report["listAlbumVideosLimit100"] = try await time(20) { try await library.fetch(album).assets.count }
        var slowmo = FetchOptions()
        slowmo.album = "Slo-mo"; slowmo.limit = 100
        report["listSmartAlbumSloMoLimit100"] = try await time(20) { try await library.fetch(slowmo).assets.count }
        var codes = FetchOptions()
        codes.hasCodes = true; codes.sort = .added
        report["listWithCodesAll"] = try await time(10) { try await library.fetch(codes).assets.count }
        var page = FetchOptions()
        page.sort = .date; page.limit = 100
        let deep = try await library.fetch({ var o = page; o.limit = count / 2; return o }()).nextCursor
        page.after = deep
        report["listPageAfterHalfTheLibrary"] = try await time(20) { try await library.fetch(page).assets.count }
        let resolveSample = stride(from: 0, to: ids.count, by: max(1, ids.count / 1000)).prefix(1000).map { ids[$0] }
        report["resolve1000Spread"] = try await time(10) { try await library.resolve(resolveSample).filter { $0.status != .unknown }.count }
        let present = Array(ids.prefix(links))
        report["resolve1000Present"] = try await time(10) { try await library.resolve(present).filter { $0.status == .found }.count }
        print(String(decoding: try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys, .prettyPrinted]), as: UTF8.self))
        await store.close()
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A small deterministic generator (the same library every run).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension JSONEncoder {
    static let iso: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()
}
