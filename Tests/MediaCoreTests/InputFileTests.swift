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

    @Test func randomBytesNamedMP4() throws {
        let path = try TestPaths.makeTemporaryFolder("garbage").appendingPathComponent("garbage.mp4").path
        var generator = SystemRandomNumberGenerator()
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
