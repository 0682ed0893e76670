import FarmTestSupport
import Foundation
import Testing

/// The container image replaces a few libraries Debian's FFmpeg links with stand-ins (docker/stand-ins):
/// the media program must load and work with them, and refuse by name the codecs they leave out.
@Suite struct StandInLibraryTests {
    static let engine = (TestPaths.mediafarmExecutable as NSString).deletingLastPathComponent + "/mediafarm-engine"

    /// The image's stand-ins, made from this machine's libraries, satisfy the loader (Debian links FFmpeg
    /// with BIND_NOW, so a missing name would stop the program at start), and the media commands run.
    @Test func theImagesStandInsSatisfyTheLoader() throws {
        let dir = try TestPaths.makeTemporaryFolder("stand-ins")
        defer { try? FileManager.default.removeItem(at: dir) }
        let made = try ProcessRunner.run(TestPaths.packageRoot.appendingPathComponent("docker/stand-ins").path,
                                         [dir.appendingPathComponent("lib").path])
        #expect(made.status == 0, "\(made.stderr)")
        var environment = ProcessInfo.processInfo.environment
        environment["LD_LIBRARY_PATH"] = dir.appendingPathComponent("lib").path
        // Every stand-in is the one loaded, and every name resolves (ldd -r relocates everything).
        let ldd = try ProcessRunner.run("ldd", ["-r", Self.engine], environment: environment)
        #expect(!ldd.stdout.contains("undefined symbol") && !ldd.stderr.contains("undefined symbol"), "\(ldd.stdout)\(ldd.stderr)")
        let standIns = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("lib").path)
        #expect(standIns.count >= 14, "\(standIns)")
        for library in standIns {
            #expect(ldd.stdout.contains("\(library) => \(dir.path)/lib/\(library)"), "\(library) is not the stand-in: \(ldd.stdout)")
        }
        let clip = MediaFixture.cfr30MP4.path
        let inspect = try ProcessRunner.run(Self.engine, ["inspect", "--json", clip], environment: environment)
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(!inspect.stdout.contains("left out"), "\(inspect.stdout)")
        let poster = dir.appendingPathComponent("poster.jpg").path
        let made2 = try ProcessRunner.run(Self.engine, ["poster", clip, "--output", poster], environment: environment)
        #expect(made2.status == 0, "\(made2.stderr)")
        #expect(FileManager.default.fileExists(atPath: poster))
    }

    /// A codec a stand-in leaves out is refused by name, with the way out, wherever it would be opened:
    /// probing leaves it alone (the track is reported not decodable, with why), and a command that must
    /// decode it fails with exit 1 and writes nothing. Here a stand-in declares H.264 left out.
    @Test func aLeftOutCodecIsRefusedByName() throws {
        let dir = try TestPaths.makeTemporaryFolder("left-out-codec")
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("marker.c")
        try #"const char mediafarm_left_out_codecs[] = "h264";"#.write(to: source, atomically: true, encoding: .utf8)
        let library = dir.appendingPathComponent("libmarker.so").path
        let cc = try ProcessRunner.run("cc", ["-shared", "-fPIC", "-nostdlib", "-o", library, source.path])
        #expect(cc.status == 0, "\(cc.stderr)")
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = library
        let clip = MediaFixture.cfr30MP4.path
        let inspect = try ProcessRunner.run(Self.engine, ["inspect", "--json", clip], environment: environment)
        #expect(inspect.stdout.contains("the h264 decoder is left out of this build"), "\(inspect.stdout)")
        #expect(inspect.stdout.contains("\"isDecodable\" : false"), "\(inspect.stdout)")
        let poster = dir.appendingPathComponent("poster.jpg").path
        let refused = try ProcessRunner.run(Self.engine, ["poster", clip, "--output", poster], environment: environment)
        #expect(refused.status == 1, "exit \(refused.status): \(refused.stderr)")
        #expect(refused.stderr.contains("the h264 decoder is left out of this build"), "\(refused.stderr)")
        #expect(refused.stderr.contains("script/install"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: poster))
        // Without the stand-in the same poster is made (so the refusal above came from it).
        let made = try ProcessRunner.run(Self.engine, ["poster", clip, "--output", poster])
        #expect(made.status == 0, "\(made.stderr)")
    }
}
