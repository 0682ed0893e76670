import FarmTestSupport
import Foundation
import Testing
@testable import MediaCore
#if canImport(Glibc)
import Glibc
#endif

/// A file opened again reads only its header, given what its first opening's probe found: the same
/// streams, the same packets, frames that decode. A file changed since, or a container whose header may
/// not hold every stream, is probed again.
@Suite struct ProbedFileTests {
    struct Read: Equatable {
        var stream: Int, pts: Int64?, dts: Int64?, duration: Int64, size: Int, key: Bool
    }

    func packets(_ file: InputFile) throws -> [Read] {
        var packet = Packet()
        var read: [Read] = []
        while try file.read(into: &packet) == .packet {
            read.append(Read(stream: packet.streamIndex, pts: packet.pts, dts: packet.dts, duration: packet.duration, size: packet.size,
                             key: packet.isKeyframe))
        }
        return read
    }

    /// The first video frame's size and pixel format, decoded from `file`.
    func firstPicture(_ file: InputFile) throws -> (Int, Int, String?) {
        let index = try #require(file.streams.first { $0.mediaType == .video }).index
        let decoder = try Decoder(file: file, streamIndex: index)
        var packet = Packet()
        var frame = Frame()
        while try file.read(into: &packet) == .packet {
            guard packet.streamIndex == index else { continue }
            _ = try decoder.send(packet)
            if try decoder.receive(into: &frame) == .frame { return (frame.width, frame.height, frame.pixelFormatName) }
        }
        try decoder.sendEndOfStream()
        #expect(try decoder.receive(into: &frame) == .frame)
        return (frame.width, frame.height, frame.pixelFormatName)
    }

    func copy(_ fixture: MediaFixture, _ name: String) throws -> String {
        let path = try TestPaths.makeTemporaryFolder("probed").appendingPathComponent(name).path
        try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
        return path
    }

    @Test(arguments: [MediaFixture.bframesGOP1sMP4, .vfrWithAudioMP4, .movH264, .rotatedMP4, .hevcGOP1sMP4])
    func aFileOpenedAgainReadsOnlyItsHeaderAndTheSamePackets(_ fixture: MediaFixture) throws {
        let path = try copy(fixture, "movie." + (fixture.path as NSString).pathExtension)
        let first = try InputFile(path: path)
        #expect(!first.readOnlyItsHeader)
        let again = try InputFile(path: path)
        #expect(again.readOnlyItsHeader, "the second opening probed \(fixture) again")
        #expect(again.streams == first.streams && again.container == first.container)
        let (reread, read) = (try packets(again), try packets(first))
        #expect(reread == read && read.count > 10)
        // Decoded from the header's opening and from a probed one (other limits are probed afresh).
        var other = SafetyLimits.default
        other.maxStreams = 15
        let (header, probed) = (try InputFile(path: path), try InputFile(path: path, limits: other))
        #expect(header.readOnlyItsHeader && !probed.readOnlyItsHeader)
        let (shown, probedShown) = (try firstPicture(header), try firstPicture(probed))
        #expect(shown == probedShown && shown.2 != nil, "\(shown) \(probedShown)")
    }

    @Test func aChangedFileIsProbedAgain() throws {
        let path = try copy(.cfr30MP4, "movie.mp4")
        _ = try InputFile(path: path)
        #expect(try InputFile(path: path).readOnlyItsHeader)
        // Written over in place (the same inode): another movie.
        let other = try Data(contentsOf: URL(fileURLWithPath: MediaFixture.vfrWithAudioMP4.path))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: other)
        try handle.close()
        let rewritten = try InputFile(path: path)
        #expect(!rewritten.readOnlyItsHeader)
        let written = try InputFile(path: MediaFixture.vfrWithAudioMP4.path)
        #expect(rewritten.streams == written.streams)
        // Replaced by a rename: another inode.
        let replacement = path + ".new"
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: replacement)
        #expect(rename(replacement, path) == 0)
        let replaced = try InputFile(path: path)
        let original = try InputFile(path: MediaFixture.cfr30MP4.path)
        #expect(!replaced.readOnlyItsHeader && replaced.streams == original.streams)
        // Removed: the error says so, whatever was kept.
        unlink(path)
        #expect(throws: MediaFileError.self) { try InputFile(path: path) }
    }

    @Test func otherLimitsAndOtherContainersAreProbed() throws {
        let path = try copy(.cfr30MP4, "movie.mp4")
        _ = try InputFile(path: path)
        var limits = SafetyLimits.default
        limits.maxStreams = 3
        #expect(!(try InputFile(path: path, limits: limits)).readOnlyItsHeader)
        // Matroska's header need not list every stream's parameters: always probed.
        let mkv = try copy(.cfr60MKV, "movie.mkv")
        _ = try InputFile(path: mkv)
        #expect(!(try InputFile(path: mkv)).readOnlyItsHeader)
    }
}
