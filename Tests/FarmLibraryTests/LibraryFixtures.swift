import FarmLibrary
import FarmModel
import FarmStore
import FarmTestSupport
import Foundation
import Synchronization

/// Both queue backends: the library's suite runs unchanged against each.
enum Backend: String, CaseIterable, CustomStringConvertible {
    case sqlite
    case postgres

    var description: String { rawValue }

    /// A new, empty queue (and library).
    func makeStore() async throws -> any JobStore {
        switch self {
        case .sqlite:
            let folder = try TestPaths.makeTemporaryFolder("library-store")
            return try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        case .postgres:
            let location = try QueueLocation.parse(try TestPostgres.url(freshSchema: true))
            return try await JobStores.open(location, migrate: true, connections: 4)
        }
    }
}

/// A clock the test moves.
final class TestClock: Sendable {
    private let value: Mutex<Date>

    init(_ start: Date) { value = Mutex(start) }

    var now: Date { value.withLock { $0 } }
    func advance(_ seconds: Double) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// Small media files made with FFmpeg, with facts the tests know independently of the library.
struct MediaSet {
    struct Item {
        var name: String
        var type: LibraryMediaType
        var duration: Double
        var frameRate: Double?
        var codec: String
        /// The creation date written into the file's metadata.
        var created: Date?
        var arguments: [String]
    }

    static func day(_ text: String) -> Date {
        let f = ISO8601DateFormatter()
        return f.date(from: text + "T12:00:00Z")!
    }

    static let items: [Item] = [
        Item(name: "v1.mp4", type: .video, duration: 2, frameRate: 30, codec: "h264", created: day("2024-01-10"), arguments: [
            "-f", "lavfi", "-i", "testsrc=size=64x64:rate=30:duration=2", "-f", "lavfi", "-i", "sine=duration=2",
            "-c:v", "libx264", "-c:a", "aac", "-metadata", "creation_time=2024-01-10T12:00:00Z"]),
        Item(name: "v2.mp4", type: .video, duration: 4, frameRate: 30, codec: "mpeg4", created: day("2023-06-01"), arguments: [
            "-f", "lavfi", "-i", "testsrc=size=64x64:rate=30:duration=4", "-c:v", "mpeg4", "-metadata", "creation_time=2023-06-01T12:00:00Z"]),
        Item(name: "slow.mp4", type: .video, duration: 1, frameRate: 120, codec: "h264", created: day("2025-03-03"), arguments: [
            "-f", "lavfi", "-i", "testsrc=size=64x64:rate=120:duration=1", "-c:v", "libx264", "-metadata", "creation_time=2025-03-03T12:00:00Z"]),
        Item(name: "v3.mkv", type: .video, duration: 3, frameRate: 25, codec: "h264", created: nil, arguments: [
            "-f", "lavfi", "-i", "testsrc=size=64x64:rate=25:duration=3", "-c:v", "libx264"]),
        Item(name: "a1.m4a", type: .audio, duration: 5, frameRate: nil, codec: "aac", created: day("2022-02-02"), arguments: [
            "-f", "lavfi", "-i", "sine=duration=5", "-c:a", "aac", "-metadata", "creation_time=2022-02-02T12:00:00Z"]),
        Item(name: "img.png", type: .image, duration: 0, frameRate: nil, codec: "png", created: nil, arguments: [
            "-f", "lavfi", "-i", "testsrc=size=64x64", "-frames:v", "1"]),
    ]

    /// The folder with every item, made once per test process.
    static let folder: Result<URL, any Error> = Result {
        let folder = try TestPaths.makeTemporaryFolder("library-media")
        for item in items {
            let r = try ProcessRunner.spawn("ffmpeg", ["-loglevel", "error", "-y"] + item.arguments + [folder.appendingPathComponent(item.name).path])
            guard r.status == 0 else { throw FixtureError("ffmpeg making \(item.name): \(r.stderr)") }
        }
        return folder
    }

    /// A fresh copy of the set in a folder of the test's own (files the test may change or remove).
    static func copy(_ label: String) throws -> URL {
        let source = try folder.get()
        let target = try TestPaths.makeTemporaryFolder(label)
        for item in items {
            try FileManager.default.copyItem(at: source.appendingPathComponent(item.name), to: target.appendingPathComponent(item.name))
        }
        return target
    }
}
