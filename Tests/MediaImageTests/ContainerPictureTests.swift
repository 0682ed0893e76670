import FarmTestSupport
import Foundation
import MediaCore
import MediaImage
import MediaTime
import Testing

/// Pictures of one movie in every container the farm reads, and of every video in the corpus: each
/// picture is the frame it reports, by FFmpeg's own decode of the file, and near the time asked.
/// (Matroska's keyframes come from its cues, read at the first seek; an MPEG-TS, FLV or Matroska file
/// without cues has no list of them, so the packets around each time are read.)
@Suite struct ContainerPictureTests {
    static let containers = ["mp4", "mov", "mkv", "mkv-streamed", "mkv-sparse-cues", "webm", "ts", "flv", "avi"]

    /// The numbered movie (8 s at 25 fps, a keyframe every 2 s, B-frames) remuxed into `container`; WebM
    /// encoded as VP9 with the same keyframes; "mkv-streamed" written to a pipe (no cues, no duration);
    /// "mkv-sparse-cues" by GStreamer's matroskamux with a cue every 5 s only (keyframes at 0, 2, 4 and 6 s,
    /// cues at 0 and 6: trusted, they would give the keyframe at 6 s for a time of 3.5 s).
    static func numbered(in container: String) throws -> String {
        let source = try ImageGeneratorTests.numbered.get()
        let folder = try TestPaths.makeTemporaryFolder("container-\(container)")
        let path = folder.appendingPathComponent("numbered.\(container.hasPrefix("mkv") ? "mkv" : container)").path
        switch container {
        case "webm":
            _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", source, "-c:v", "libvpx-vp9", "-g", "50", "-keyint_min", "50",
                                                   "-crf", "4", "-b:v", "0", "-deadline", "realtime", "-cpu-used", "8", path])
        case "mkv-sparse-cues":
            let whole = folder.appendingPathComponent("whole.mkv").path
            _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", source, "-c", "copy", whole])
            _ = try ProcessRunner.check("gst-launch-1.0", ["-q", "filesrc", "location=\(whole)", "!", "matroskademux", "!", "h264parse", "!",
                                                           "matroskamux", "min-index-interval=5000000000", "!", "filesink", "location=\(path)"])
        case "mkv-streamed":
            let piped = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", source, "-c", "copy", "-f", "matroska", "pipe:1"])
            try piped.stdoutData.write(to: URL(fileURLWithPath: path))
        default:
            _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", source, "-c", "copy", path])
        }
        return path
    }

    /// How FFmpeg decodes the first video stream of `path`: its start, each frame's time in the order shown
    /// (absolute seconds, the decoder's best-effort timestamps) and the keyframes' times among them.
    static func frames(_ path: String) throws -> (start: Double, times: [Double], keyframes: [Double]) {
        // (An MPEG-TS lists the stream under its program too: the first line; side data adds a field.)
        let start = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=start_time",
                                                        "-of", "csv=p=0", path]).stdout.split(separator: "\n").first?.split(separator: ",").first
            .map(String.init) ?? ""
        let lines = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                        "frame=best_effort_timestamp_time,key_frame", "-of", "csv=p=0", path])
            .stdout.split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        let frames = lines.compactMap { fields -> (Double, Bool)? in
            guard fields.count >= 2, let time = Double(fields[1]) else { return nil }
            return (time, fields[0] == "1")
        }
        return (Double(start) ?? 0, frames.map(\.0), frames.filter(\.1).map(\.0))
    }

    static func seconds(_ s: Double) -> MediaTime { MediaTime(value: Int64((s * 1000).rounded()), timescale: 1000) }

    @Test(arguments: containers)
    func nearestKeyframePicturesAreTheFramesTheyReport(container: String) throws {
        let path = try Self.numbered(in: container)
        let ffmpeg = try Self.frames(path)
        // FFmpeg times none of the last two frames of H.264 with B-frames in AVI (no presentation times
        // there), and leaves them out.
        #expect(ffmpeg.times.count == (container == "avi" ? 198 : 200), "\(container): FFmpeg decodes \(ffmpeg.times.count) frames")
        var settings = AssetImageGenerator.Settings()
        settings.format = .png
        let generator = try AssetImageGenerator(path: path, settings: settings)
        let asked = stride(from: 0.0, through: 7.9, by: 0.35).map(Self.seconds)
        var shown = Set<Int>()
        for (time, result) in zip(asked, generator.images(at: asked)) {
            let image = try result.get()
            let number = try ImageGeneratorTests.number(image.data)
            shown.insert(number)
            let reported = ffmpeg.times.firstIndex { abs($0 - ffmpeg.start - image.actualTime.seconds) < 0.01 }
            #expect(reported == number, "\(container) at \(time.seconds) s: the picture is frame \(number), reported at \(image.actualTime.seconds) s")
            #expect(ffmpeg.keyframes.contains { abs($0 - ffmpeg.start - image.actualTime.seconds) < 0.01 },
                    "\(container) at \(time.seconds) s: \(image.actualTime.seconds) s is not a keyframe")
            // The nearest keyframe (give or take two frames where the container's times are the decoder's
            // guesses, as AVI's are).
            let nearest = ffmpeg.keyframes.map { abs($0 - ffmpeg.start - time.seconds) }.min() ?? 0
            #expect(abs(image.actualTime.seconds - time.seconds) <= nearest + 0.081,
                    "\(container) at \(time.seconds) s: \(image.actualTime.seconds) s, and a keyframe is \(nearest) s away")
        }
        #expect(shown == [0, 50, 100, 150], "\(container): pictures of frames \(shown.sorted())")
    }

    @Test(arguments: containers)
    func exactPicturesAreTheFramesShownAtEachTime(container: String) throws {
        let path = try Self.numbered(in: container)
        let ffmpeg = try Self.frames(path)
        var settings = AssetImageGenerator.Settings()
        (settings.format, settings.toleranceBefore, settings.toleranceAfter) = (.png, .zero, .zero)
        let generator = try AssetImageGenerator(path: path, settings: settings)
        let asked = [0.0, 0.5, 1.99, 2.0, 3.13, 4.5, 6.02, 7.95].map(Self.seconds)
        for (time, result) in zip(asked, generator.images(at: asked)) {
            let image = try result.get()
            // The last frame shown at or before the time (the first, for a time before it).
            let expected = ffmpeg.times.lastIndex { $0 - ffmpeg.start <= time.seconds + 1e-6 } ?? 0
            #expect(try ImageGeneratorTests.number(image.data) == expected, "\(container) at \(time.seconds) s")
            #expect(abs(image.actualTime.seconds - (ffmpeg.times[expected] - ffmpeg.start)) < 0.001, "\(container) at \(time.seconds) s")
        }
    }

    /// A poster and a storyboard of a Matroska file are of the frames they name, not of its first frame.
    @Test func aMatroskaFilesPosterAndStoryboardAreOfTheirFrames() throws {
        let path = try Self.numbered(in: "mkv")
        let poster = try RepresentativeFrame.find(path: path)
        // The one keyframe in the middle third (2.67 to 5.33 s).
        #expect(poster.time == MediaTime(value: 4, timescale: 1), "the poster is at \(poster.time.seconds) s")
        var settings = StoryboardSettings()
        (settings.every, settings.tileWidth, settings.columns, settings.rows, settings.format) = (0.5, 160, 4, 4, .png)
        let board = try Storyboard.make(path: path, settings: settings)
        #expect(Set(board.tiles.map(\.frameTime)) == [0, 2, 4, 6], "tiles of \(Set(board.tiles.map(\.frameTime)).sorted())")
    }

    /// Every video of the corpus (other encoders and muxers: MP4 with edit lists, fragmented MP4, a phone's
    /// slow motion, Matroska from other tools, VP9 WebM, an MPEG-TS with two programs, AVI with MPEG-4
    /// Part 2): pictures at five times, each compared with FFmpeg's decode of the frame it reports and
    /// within the file's longest GOP of the time asked.
    @Test(arguments: TestPaths.corpusFiles.filter { ["mp4", "mkv", "webm", "ts", "avi"].contains($0.pathExtension) })
    func corpusPicturesAreTheFramesTheyReport(file: URL) throws {
        let path = file.path
        let ffmpeg = try Self.frames(path)
        if file.lastPathComponent.contains("invalid") || ffmpeg.times.isEmpty {
            // A damaged stream or no video (audio-only MP4): no picture, saying why.
            if ffmpeg.times.isEmpty {
                #expect(throws: ImageGenerationError.self) { try AssetImageGenerator(path: path).image(at: .zero) }
            }
            return
        }
        let span = (ffmpeg.times.max() ?? 0) - ffmpeg.start
        let ends = ffmpeg.keyframes + [ffmpeg.start + span]
        let longestGOP = zip(ends, ends.dropFirst()).map { $1 - $0 }.max() ?? span
        var settings = AssetImageGenerator.Settings()
        (settings.format, settings.appliesPreferredTrackTransform) = (.png, false)
        let generator = try AssetImageGenerator(path: path, settings: settings)
        let asked = [0.1, 0.3, 0.5, 0.7, 0.9].map { Self.seconds($0 * span) }
        for (time, result) in zip(asked, generator.images(at: asked)) {
            let image = try result.get()
            let label = "\(file.lastPathComponent) at \(time.seconds) s (the frame at \(image.actualTime.seconds) s)"
            #expect(abs(image.actualTime.seconds - time.seconds) <= longestGOP + 0.001, "\(label): the longest GOP is \(longestGOP) s")
            guard let n = ffmpeg.times.firstIndex(where: { abs($0 - ffmpeg.start - image.actualTime.seconds) < 0.001 }) else {
                Issue.record("\(label): FFmpeg decodes no frame at that time")
                continue
            }
            let mine = try ImageGeneratorTests.decoded(image.data)
            let theirs = try ProcessRunner.check("ffmpeg", ["-v", "error", "-noautorotate", "-i", path, "-map", "0:v:0", "-vf",
                                                            "select=eq(n\\,\(n)),scale=\(mine.width):\(mine.height):flags=lanczos+accurate_rnd+full_chroma_int",
                                                            "-frames:v", "1", "-pix_fmt", "rgb24", "-f", "rawvideo", "-"]).stdoutData
            #expect(theirs.count == mine.rgb.count, "\(label): FFmpeg's frame \(n) has \(theirs.count) bytes")
            guard theirs.count == mine.rgb.count else { continue }
            let psnr = ImageGeneratorTests.psnr(mine.rgb, theirs)
            #expect(psnr >= 35, "\(label): \(psnr) dB against FFmpeg's frame \(n)")
        }
    }
}
