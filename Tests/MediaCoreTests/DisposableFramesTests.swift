import FarmTestSupport
import Foundation
import Testing
@testable import MediaCore

/// H.264 packets no frame refers to are found as FFmpeg's own decoder finds them (`-skip_frame noref`),
/// in MP4 (lengths before each unit) and in MPEG-TS (start codes).
@Suite struct DisposableFramesTests {
    @Test(arguments: ["mp4", "ts"])
    func theFramesNothingRefersToAreThoseFFmpegSkips(container: String) throws {
        let folder = try TestPaths.makeTemporaryFolder("disposable")
        let path = folder.appendingPathComponent("b-frames.\(container)").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=4", "-c:v", "libx264",
                                               "-g", "50", "-bf", "3", "-pix_fmt", "yuv420p", path])
        func decodedFrames(_ skip: [String]) throws -> Int {
            let out = try ProcessRunner.check("ffmpeg", ["-v", "error"] + skip + ["-i", path, "-map", "0:v", "-fps_mode", "passthrough", "-f", "framemd5", "-"])
            return out.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
        }
        let referenced = try decodedFrames(["-skip_frame", "noref"])
        let all = try decodedFrames([])

        let file = try InputFile(path: path)
        let video = try #require(file.streams.first { $0.mediaType == .video })
        let disposable = try #require(DisposableFrames(video))
        var packet = Packet()
        var (packets, spared, keyframesSpared) = (0, 0, 0)
        while try file.read(into: &packet) == .packet {
            guard packet.streamIndex == video.index else { continue }
            packets += 1
            if disposable.isDisposable(packet) {
                spared += 1
                if packet.isKeyframe { keyframesSpared += 1 }
            }
        }
        #expect(packets == all)
        #expect(spared > 0 && spared == all - referenced, "\(spared) disposable of \(packets); FFmpeg decodes \(referenced) with -skip_frame noref")
        #expect(keyframesSpared == 0)
    }

    @Test func otherCodecsAreNotJudged() throws {
        let folder = try TestPaths.makeTemporaryFolder("disposable-mpeg4")
        let path = folder.appendingPathComponent("mpeg4.mp4").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=1", "-c:v", "mpeg4", path])
        let file = try InputFile(path: path)
        #expect(DisposableFrames(try #require(file.streams.first)) == nil)
    }
}
