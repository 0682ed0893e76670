import FarmTestSupport
import Foundation
import MediaCore
import MediaImage
import MediaTime
import Testing

/// Pictures at times from real movies made by FFmpeg: exact frames by the number burnt into each, keyframes
/// and tolerances, the display's geometry, colours, formats and bad input.
@Suite struct ImageGeneratorTests {
    /// 8 s at 25 fps, a keyframe every 2 s and B-frames; each frame's number burnt in as 8 columns of 40
    /// pixels, black or white, bit 0 on the left.
    static let numbered: Result<String, any Error> = Result {
        let folder = try TestPaths.makeTemporaryFolder("numbered")
        let path = folder.appendingPathComponent("numbered.mp4").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i",
                                               "color=c=black:s=320x240:r=25:d=8,format=gray,geq=lum='255*mod(floor(N/pow(2\\,floor(X/40)))\\,2)'",
                                               "-c:v", "libx264", "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-bf", "3", "-crf", "12",
                                               "-pix_fmt", "yuv420p", path])
        return path
    }

    static let fps = 25

    func generator(_ path: String, _ configure: (inout AssetImageGenerator.Settings) -> Void = { _ in }) throws -> AssetImageGenerator {
        var settings = AssetImageGenerator.Settings()
        settings.format = .png
        configure(&settings)
        return try AssetImageGenerator(path: path, settings: settings)
    }

    /// The pixels of a picture file, as packed RGB.
    static func decoded(_ data: [UInt8]) throws -> (width: Int, height: Int, rgb: [UInt8]) {
        let path = try TestPaths.makeTemporaryFolder("picture").appendingPathComponent("p").path
        try Data(data).write(to: URL(fileURLWithPath: path))
        let file = try InputFile(path: path)
        let decoder = try Decoder(file: file, streamIndex: 0, threads: 1)
        var packet = Packet(), frame = Frame()
        _ = try file.read(into: &packet)
        _ = try decoder.send(packet)
        try decoder.sendEndOfStream()
        #expect(try decoder.receive(into: &frame) == .frame)
        var rgb = Frame()
        try PictureConverter().rgb(frame, width: frame.width, height: frame.height, into: &rgb)
        var bytes: [UInt8] = []
        let (w, h) = (rgb.width, rgb.height)
        _ = rgb.withPlane(0) { p, stride in
            for y in 0..<h { bytes += UnsafeBufferPointer(start: p + y * stride, count: w * 3) }
        }
        return (w, h, bytes)
    }

    /// The peak signal-to-noise ratio of two pictures' samples, dB (99 when they are the same).
    static func psnr(_ mine: [UInt8], _ theirs: Data) -> Double {
        var squared = 0.0
        for (a, b) in zip(mine, theirs) { let d = Double(a) - Double(b); squared += d * d }
        let mse = squared / Double(max(1, theirs.count))
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }

    /// The frame number burnt into a picture of the numbered movie.
    static func number(_ data: [UInt8]) throws -> Int {
        let (w, h, rgb) = try decoded(data)
        var n = 0
        for bit in 0..<8 {
            let x = Int((Double(bit) + 0.5) * Double(w) / 8), y = h / 2
            if rgb[(y * w + x) * 3] > 128 { n |= 1 << bit }
        }
        return n
    }

    func t(_ frames: Int, plus fraction: Double = 0) -> MediaTime {
        MediaTime(value: Int64((Double(frames) + fraction) * 1000), timescale: Int32(Self.fps * 1000))
    }

    @Test func exactTimesGiveTheFrameShownAtEachTime() throws {
        let images = try generator(try Self.numbered.get()) { $0.toleranceBefore = .zero; $0.toleranceAfter = .zero }
        var random = SystemRandomNumberGenerator()
        // On frame boundaries, just after them and in between; in random order, some twice.
        var frames = [0, 1, 49, 50, 51, 99, 100, 101, 150, 199]
        frames += (0..<40).map { _ in Int.random(in: 0..<200, using: &random) }
        let times = frames.enumerated().map { i, n in t(n, plus: [0, 0.01, 0.5, 0.99][i % 4]) }
        let results = images.images(at: times)
        for (n, result) in zip(frames, results) {
            let image = try result.get()
            #expect(try Self.number(image.data) == n, "\(image.requestedTime.seconds) s")
            #expect(image.actualTime == t(n), "\(image.requestedTime.seconds) s: actual \(image.actualTime.seconds)")
            #expect(image.width == 320 && image.height == 240)
        }
    }

    /// 100 exact pictures at random frames of a textured movie are the frames FFmpeg's accurate seek gives,
    /// converted to RGB the same way: at least 40 dB PSNR each.
    @Test func exactPicturesAreFFmpegsAccurateSeekFrames() throws {
        let folder = try TestPaths.makeTemporaryFolder("psnr")
        let source = folder.appendingPathComponent("textured.mp4").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=25:d=10", "-c:v", "libx264",
                                               "-g", "50", "-bf", "3", "-pix_fmt", "yuv420p", source])
        var random = SystemRandomNumberGenerator()
        let frames = (0..<100).map { _ in Int.random(in: 0..<250, using: &random) }
        let images = try generator(source) { $0.toleranceBefore = .zero; $0.toleranceAfter = .zero }
        let results = images.images(at: frames.map { t($0) })
        var worst = Double.infinity
        for (n, result) in zip(frames, results) {
            let mine = try Self.decoded(try result.get().data)
            let theirs = try ProcessRunner.check("ffmpeg", ["-v", "error", "-ss", String(format: "%.2f", Double(n) / Double(Self.fps)), "-i", source,
                                                            "-frames:v", "1", "-vf", "scale=flags=lanczos+accurate_rnd+full_chroma_int",
                                                            "-pix_fmt", "rgb24", "-f", "rawvideo", "-"]).stdoutData
            #expect(theirs.count == mine.rgb.count, "frame \(n)")
            guard theirs.count == mine.rgb.count else { continue }
            let psnr = Self.psnr(mine.rgb, theirs)
            worst = min(worst, psnr)
            #expect(psnr >= 40, "frame \(n): \(psnr) dB against FFmpeg's")
        }
        print(String(format: "exact pictures against ffmpeg -ss: the worst of 100 at %.1f dB", worst))
    }

    @Test func theDefaultToleranceGivesTheNearestKeyframe() throws {
        let images = try generator(try Self.numbered.get())
        for (seconds, keyframe) in [(0.3, 0), (0.99, 0), (1.2, 50), (2.9, 50), (3.1, 100), (4.99, 100), (7.9, 150)] {
            let image = try images.image(at: MediaTime(value: Int64(seconds * 1000), timescale: 1000))
            #expect(image.actualTime == t(keyframe), "\(seconds) s gave \(image.actualTime.seconds) s")
            #expect(try Self.number(image.data) == keyframe)
        }
    }

    @Test func aToleranceBoundsTheFramesTime() throws {
        let half = MediaTime(value: 1, timescale: 2)
        let images = try generator(try Self.numbered.get()) { $0.toleranceBefore = half; $0.toleranceAfter = half }
        for frame in [10, 37, 60, 120, 175] {
            let image = try images.image(at: t(frame))
            let distance = image.actualTime - t(frame)
            #expect(!(half < distance) && !(distance < MediaTime.zero - half), "frame \(frame): \(image.actualTime.seconds) s")
            #expect(try Self.number(image.data) == Int((image.actualTime.seconds * Double(Self.fps)).rounded()))
        }
    }

    @Test func aTimePastTheEndFailsAloneSayingSo() throws {
        let images = try generator(try Self.numbered.get()) { $0.toleranceBefore = .zero; $0.toleranceAfter = .zero }
        let results = images.images(at: [t(10), MediaTime(value: 9, timescale: 1), t(20)])
        #expect(try Self.number(try results[0].get().data) == 10)
        #expect(try Self.number(try results[2].get().data) == 20)
        guard case .failure(let error) = results[1] else { Issue.record("9 s of an 8 s movie gave a picture"); return }
        #expect(error.description.contains("past the end") && error.description.contains("8.000 s long"), "\(error)")
    }

    @Test func picturesKeepTheDisplayAspectAndFitTheBox() throws {
        // A phone's portrait clip: 320x240 samples turned a quarter for display.
        let rotated = try generator(MediaFixture.rotatedMP4.path)
        let portrait = try rotated.image(at: .zero)
        #expect(portrait.width == 240 && portrait.height == 320)
        #expect(try Self.decoded(portrait.data).width == 240)
        // Anamorphic: 320x240 samples twice as wide as high show as 640x240.
        let folder = try TestPaths.makeTemporaryFolder("anamorphic")
        let wide = folder.appendingPathComponent("wide.mp4").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=1,setsar=2", "-c:v", "libx264",
                                               "-pix_fmt", "yuv420p", wide])
        #expect(try generator(wide).image(at: .zero).width == 640)
        let fitted = try generator(wide) { $0.maximumWidth = 320 }.image(at: .zero)
        #expect(fitted.width == 320 && fitted.height == 120)
        // An odd size, and a box that bounds the height.
        let odd = try generator(MediaFixture.oddSizeWebM.path) { $0.maximumHeight = 61 }.image(at: .zero)
        #expect(odd.height == 61 && odd.width == 81, "\(odd.width)x\(odd.height)")
        #expect(try Self.decoded(odd.data).width == 81)
    }

    @Test(arguments: [("bt709", "tv"), ("bt709", "pc"), ("smpte170m", "tv"), ("smpte170m", "pc")])
    func coloursAreReadWithTheSourcesMatrixAndRange(matrix: String, range: String) throws {
        let folder = try TestPaths.makeTemporaryFolder("colour")
        let path = folder.appendingPathComponent("\(matrix)-\(range).mp4").path
        let scaleMatrix = matrix == "bt709" ? "bt709" : "bt601"
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "color=c=0x3366CC:s=320x240:r=25:d=1",
                                               "-vf", "scale=out_color_matrix=\(scaleMatrix):out_range=\(range),format=yuv420p",
                                               "-c:v", "libx264", "-crf", "5", "-colorspace", matrix, "-color_range", range, path])
        // PNG from RGB, JPEG straight from the source's samples (decoded back with JPEG's own matrix).
        for format in [StillImageFormat.png, .jpeg] {
            let (w, h, rgb) = try Self.decoded(try generator(path) { $0.format = format }.image(at: .zero).data)
            let i = ((h / 2) * w + w / 2) * 3
            for (channel, expected) in zip(0..<3, [0x33, 0x66, 0xCC]) {
                #expect(abs(Int(rgb[i + channel]) - expected) <= 6, "\(format) \(matrix) \(range): channel \(channel) is \(rgb[i + channel]), not \(expected)")
            }
        }
    }

    @Test func hdrIsRefusedSayingSo() throws {
        let path = try TestPaths.makeTemporaryFolder("hdr").appendingPathComponent("pq.mp4").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=1", "-c:v", "libx264",
                                               "-pix_fmt", "yuv420p", "-color_primaries", "bt2020", "-color_trc", "smpte2084",
                                               "-colorspace", "bt2020nc", path])
        #expect { try generator(path).image(at: .zero) } throws: { "\($0)".contains("HDR (PQ (HDR10))") && "\($0)".contains("tone mapping") }
    }

    @Test(arguments: StillImageFormat.allCases)
    func eachFormatIsWhatItsNameSays(format: StillImageFormat) throws {
        let image = try generator(try Self.numbered.get()) { $0.format = format; $0.toleranceBefore = .zero; $0.toleranceAfter = .zero }
            .image(at: t(77))
        let magic: [UInt8] = switch format {
        case .jpeg: [0xFF, 0xD8, 0xFF]
        case .png: [0x89, 0x50, 0x4E, 0x47]
        case .webp: Array("RIFF".utf8)
        }
        #expect(Array(image.data.prefix(magic.count)) == magic)
        #expect(try Self.number(image.data) == 77)
        // Quality trades size: the same picture at 0.2 is smaller than at 0.95 (lossless PNG ignores it).
        if format != .png {
            let small = try generator(MediaFixture.longMP4.path) { $0.format = format; $0.quality = 0.2 }.image(at: .zero)
            let large = try generator(MediaFixture.longMP4.path) { $0.format = format; $0.quality = 0.95 }.image(at: .zero)
            #expect(small.data.count < large.data.count)
        }
    }

    /// A storyboard's WebVTT, read by a small parser: a cue per tile, end to end over the movie, each rectangle
    /// inside its sheet, and each tile the picture of the keyframe its index names.
    @Test func aStoryboardsCuesPointInsideItsSheets() throws {
        var settings = StoryboardSettings()
        (settings.every, settings.tileWidth, settings.columns, settings.rows, settings.format) = (0.5, 160, 4, 3, .png)
        let board = try Storyboard.make(path: try Self.numbered.get(), settings: settings)
        #expect(board.tiles.count == 16 && board.sheets.count == 2 && board.tileWidth == 160 && board.tileHeight == 120)
        let sheets = try board.sheets.map(Self.decoded)
        #expect(sheets[0].width == 640 && sheets[0].height == 360)
        #expect(sheets[1].width == 640 && sheets[1].height == 120, "the last sheet holds only the rows it needs")
        let vtt = board.webVTT { "s\($0 + 1).png" }
        let blocks = vtt.components(separatedBy: "\n\n")
        #expect(blocks.first == "WEBVTT")
        var previousEnd = "00:00:00.000"
        for (i, block) in blocks.dropFirst().enumerated() {
            let lines = block.split(separator: "\n").map(String.init)
            let times = lines[0].components(separatedBy: " --> ")
            #expect(times.count == 2 && times[0] == previousEnd, "cue \(i): \(lines[0])")
            previousEnd = times[1]
            let parts = lines[1].split(separator: "#")
            let sheet = Int(parts[0].dropFirst().dropLast(4))! - 1
            let xywh = parts[1].dropFirst("xywh=".count).split(separator: ",").map { Int($0)! }
            let (sw, sh, rgb) = sheets[sheet]
            #expect(xywh[0] + xywh[2] <= sw && xywh[1] + xywh[3] <= sh, "cue \(i) outside its sheet")
            // The tile shows the keyframe the index names.
            var n = 0
            for bit in 0..<8 {
                let x = xywh[0] + Int((Double(bit) + 0.5) * Double(xywh[2]) / 8), y = xywh[1] + xywh[3] / 2
                if rgb[(y * sw + x) * 3] > 128 { n |= 1 << bit }
            }
            #expect(n == Int((board.tiles[i].frameTime * Double(Self.fps)).rounded()), "tile \(i)")
        }
        #expect(previousEnd == "00:00:08.000", "the last cue ends with the movie")
    }

    @Test func badInputIsNamed() throws {
        let folder = try TestPaths.makeTemporaryFolder("bad")
        let garbage = folder.appendingPathComponent("garbage.mp4").path
        try Data((0..<4096).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: garbage))
        #expect { try AssetImageGenerator(path: garbage) } throws: { "\($0)".contains("garbage.mp4") }
        #expect { try AssetImageGenerator(path: folder.appendingPathComponent("missing.mp4").path) } throws: { "\($0)".contains("missing.mp4") }
        let audio = folder.appendingPathComponent("tone.m4a").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=d=1", audio])
        #expect { try AssetImageGenerator(path: audio) } throws: { "\($0)".contains("no video track") }
    }
}
