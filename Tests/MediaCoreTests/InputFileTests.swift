import FarmTestSupport
import Foundation
import MediaTime
import Testing
@testable import MediaCore

@Suite struct InputFileTests {
    @Test func snapshotMatchesFFprobe() throws {
        let path = MediaFixture.cfr30MP4.path
        let file = try InputFile(path: path)
        let probe = try FFprobeReport(path: path)
        #expect(file.streams.count == probe.streams.count)
        for (mine, theirs) in zip(file.streams, probe.streams) {
            #expect(mine.codecName == theirs["codec_name"] as? String)
            #expect(mine.mediaType.rawValue == theirs["codec_type"] as? String)
            if mine.mediaType == .video {
                #expect(mine.width == FFprobeReport.int(theirs, "width"))
                #expect(mine.height == FFprobeReport.int(theirs, "height"))
                #expect(mine.pixelFormat == theirs["pix_fmt"] as? String)
            } else {
                #expect(mine.sampleRate == FFprobeReport.int(theirs, "sample_rate"))
                #expect(mine.channelCount == FFprobeReport.int(theirs, "channels"))
            }
            #expect(mine.language == FFprobeReport.tag(theirs, "language"))
        }
        #expect(file.container.tags["title"] == "MediaFarm fixture")
        #expect(file.container.formatName == probe.format["format_name"] as? String)
    }

    @Test func missingFile() {
        expectFailure(path: "/nonexistent/movie.mp4") { if case .notFound = $0 { true } else { false } }
    }

    @Test func folderIsNotAMediaFile() throws {
        let dir = try TestPaths.makeTemporaryFolder("dir")
        expectFailure(path: dir.path) { if case .isDirectory = $0 { true } else { false } }
    }

    @Test func emptyFile() throws {
        let path = try TestPaths.makeTemporaryFolder("empty").appendingPathComponent("empty.mp4").path
        FileManager.default.createFile(atPath: path, contents: Data())
        expectFailure(path: path) { if case .empty = $0 { true } else { false } }
    }

    /// Seeded bytes, so the file is the same on every run: about one random 64 KiB file in a few hundred
    /// happens to pass FFmpeg's probe for "lrc" lyrics, which is refused with a reason of its own.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func randomBytesNamedMP4(seed: UInt64) throws {
        let path = try TestPaths.makeTemporaryFolder("garbage").appendingPathComponent("garbage.mp4").path
        var generator = SeededRandom(state: seed)
        let bytes = (0..<65536).map { _ in UInt8.random(in: 0...255, using: &generator) }
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        expectFailure(path: path) { if case .unknownFormat = $0 { true } else { false } }
    }

    @Test func movieWithoutItsIndex() throws {
        // A non-faststart MP4 cut short loses its moov box: FFmpeg's reason must reach the user.
        let source = try Data(contentsOf: URL(fileURLWithPath: MediaFixture.cfr30MP4.path))
        let path = try TestPaths.makeTemporaryFolder("trunc").appendingPathComponent("cut.mp4").path
        FileManager.default.createFile(atPath: path, contents: source.prefix(source.count / 3))
        let error = expectFailure(path: path) { if case .unknownFormat = $0 { true } else { false } }
        #expect(error?.description.contains("moov atom not found") == true)
    }

    @Test func tooManyStreams() {
        expectFailure(path: MediaFixture.seventeenStreamsMKV.path) { if case .tooManyStreams = $0 { true } else { false } }
        var relaxed = SafetyLimits()
        relaxed.maxStreams = 32
        #expect(throws: Never.self) { _ = try InputFile(path: MediaFixture.seventeenStreamsMKV.path, limits: relaxed) }
    }

    @Test func frameSizeLimit() {
        var limits = SafetyLimits()
        limits.maxPixels = 320 * 240 - 1
        expectFailure(path: MediaFixture.cfr30MP4.path, limits: limits) { if case .frameTooLarge = $0 { true } else { false } }
        limits = SafetyLimits()
        limits.maxDimension = 300
        expectFailure(path: MediaFixture.cfr30MP4.path, limits: limits) { if case .frameTooLarge = $0 { true } else { false } }
    }

    @Test func protocolWhitelistKeepsToFiles() {
        // Without "http" in the allowed protocols FFmpeg must not even try the network.
        let error = expectFailure(path: "http://127.0.0.1:9/movie.mp4") { _ in true }
        #expect(error != nil)
    }

    /// Text files that make FFmpeg open other files (an HLS playlist, a concat list, an image sequence),
    /// under media names, are refused before anything they name is read.
    @Test(arguments: [
        ("playlist.mp4", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nsegment.ts\n#EXT-X-ENDLIST\n", "hls"),
        ("list.mp4", "ffconcat version 1.0\nfile segment.ts\n", "concat"),
        ("list.mov", "ffconcat version 1.0\nfile 'segment.ts'\nfile 'segment.ts'\n", "concat"),
    ])
    func referenceFormatsAreRefused(name: String, text: String, format: String) throws {
        let folder = try TestPaths.makeTemporaryFolder("reference")
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-y", "-i", MediaFixture.cfr30MP4.path, "-c", "copy",
                                               folder.appendingPathComponent("segment.ts").path])
        // The segment itself is a media file and opens.
        #expect(throws: Never.self) { _ = try InputFile(path: folder.appendingPathComponent("segment.ts").path) }
        let path = folder.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let error = expectFailure(path: path) { if case .formatRefused(let f) = $0 { f == format } else { false } }
        #expect(error?.description.contains("not a media container") == true)
    }

    @Test func imageSequencePatternIsRefusedAndAStillOpens() throws {
        let folder = try TestPaths.makeTemporaryFolder("sequence")
        for name in ["still.jpg", "frame001.png", "frame002.png"] {
            _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120",
                                                   "-frames:v", "1", folder.appendingPathComponent(name).path])
        }
        try FileManager.default.copyItem(atPath: folder.appendingPathComponent("frame001.png").path,
                                         toPath: folder.appendingPathComponent("frame%03d.png").path)
        expectFailure(path: folder.appendingPathComponent("frame%03d.png").path) {
            if case .formatRefused("image2") = $0 { true } else { false }
        }
        let still = try InputFile(path: folder.appendingPathComponent("still.jpg").path)
        #expect(still.container.formatName == "jpeg_pipe")
    }

    /// FFmpeg's interrupt callback sees a stall: with a clock that jumps past the limit on every
    /// look, opening gives up as stalled and says how to raise the limit.
    @Test func stallDuringOpeningIsReported() {
        let now = FakeClock(0)
        let interrupter = Interrupter(stallLimit: .seconds(5), clock: { now.value.add(10_000_000_000, ordering: .relaxed).newValue })
        let error = expectFailure(path: MediaFixture.cfr30MP4.path, interrupter: interrupter) {
            if case .stalled(after: .seconds(5)) = $0 { true } else { false }
        }
        #expect(error?.description.contains("no progress for 5 s") == true)
        #expect(error?.description.contains("MEDIAFARM_STALL_TIMEOUT") == true)
    }

    @Test func cancelledBeforeOpening() {
        let interrupter = Interrupter()
        interrupter.cancel()
        expectFailure(path: MediaFixture.cfr30MP4.path, interrupter: interrupter) { if case .cancelled = $0 { true } else { false } }
    }

    @Test func readsEveryPacket() throws {
        let path = MediaFixture.cfr30MP4.path
        let file = try InputFile(path: path)
        var packet = Packet()
        var counts = [Int](repeating: 0, count: file.streams.count)
        while try file.read(into: &packet) == .packet { counts[packet.streamIndex] += 1 }
        let probe = try FFprobeReport(path: path, countFrames: true)
        #expect(counts == probe.streams.map { FFprobeReport.int($0, "nb_read_packets") ?? -1 })
    }

    @discardableResult
    private func expectFailure(path: String, limits: SafetyLimits = .default, interrupter: Interrupter = Interrupter(),
                               sourceLocation: SourceLocation = #_sourceLocation,
                               _ matches: (MediaFileError.Reason) -> Bool) -> MediaFileError? {
        do {
            _ = try InputFile(path: path, limits: limits, interrupter: interrupter)
            Issue.record("opened \(path), expected a failure", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(matches(error.reason), "unexpected reason: \(error)", sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix(path), sourceLocation: sourceLocation)
            return error
        }
    }
}
