import Foundation

/// Oracles for exact cuts: the decoded video frames as FFmpeg's decoder gives them, and the audio as an
/// edit list says it plays, read from the file's own boxes.
public enum EditListProbe {
    /// MD5 of every decoded frame of the first video stream (yuv420p), in presentation order, edit lists
    /// applied by FFmpeg's demuxer. Frames are taken as decoded (`-fps_mode passthrough`): the ffmpeg
    /// CLI's default frame-rate conversion would drop or repeat frames by its own guess of the rate.
    public static func videoFrameHashes(_ path: String) throws -> [String] {
        let r = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough",
                                                   "-pix_fmt", "yuv420p", "-f", "framemd5", "-"])
        return r.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            line.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// The luma planes of every decoded frame of a file's first video stream, at full size, held in one
    /// buffer (as decoded: `-fps_mode passthrough`): for comparing many frames quickly.
    public struct LumaFrames: Sendable {
        public let width: Int, height: Int
        private let bytes: [UInt8]
        public var count: Int { bytes.count / (width * height) }

        public init(_ path: String, width: Int, height: Int) throws {
            let r = try ProcessRunner.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough",
                                                       "-pix_fmt", "gray", "-f", "rawvideo", "-"])
            self.width = width
            self.height = height
            var bytes = [UInt8](repeating: 0, count: r.stdoutData.count)
            bytes.withUnsafeMutableBytes { _ = r.stdoutData.copyBytes(to: $0) }
            self.bytes = bytes
        }

        /// PSNR of frame `i` against frame `j` of `other`, in dB (infinity when identical).
        public func psnr(_ i: Int, against other: LumaFrames, _ j: Int) -> Double {
            let size = width * height
            guard other.width == width, other.height == height, i < count, j < other.count else { return 0 }
            var sum = 0
            bytes.withUnsafeBufferPointer { a in
                other.bytes.withUnsafeBufferPointer { b in
                    let pa = a.baseAddress! + i * size, pb = b.baseAddress! + j * size
                    for k in 0..<size { let d = Int(pa[k]) - Int(pb[k]); sum += d * d }
                }
            }
            return sum == 0 ? .infinity : 10 * log10(255 * 255 / (Double(sum) / Double(size)))
        }
    }

    /// Peak signal-to-noise ratio of two 8-bit pictures, in dB (infinity when identical).
    public static func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return 0 }
        var sum = 0.0
        for i in a.indices { let d = Double(a[i]) - Double(b[i]); sum += d * d }
        let mse = sum / Double(a.count)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// One track's edit list and timescales, read from an MP4 or QuickTime file.
    public struct Track: Sendable {
        public var handler: String
        public var mediaTimescale: Int
        /// (duration in the movie timescale, media time in the media timescale; -1 for an empty edit)
        public var entries: [(duration: Int, mediaTime: Int)]
    }

    /// The movie timescale and every track's edit list.
    public static func editLists(_ path: String) throws -> (movieTimescale: Int, tracks: [Track]) {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func u32(_ i: Int) -> Int { Int(data[i]) << 24 | Int(data[i + 1]) << 16 | Int(data[i + 2]) << 8 | Int(data[i + 3]) }
        func u64(_ i: Int) -> Int { u32(i) << 32 | u32(i + 4) }
        var movieTimescale = 0
        var tracks: [Track] = []
        func walk(_ start: Int, _ end: Int) {
            var at = start
            while at + 8 <= end {
                var size = u32(at), header = 8
                if size == 1 { size = u64(at + 8); header = 16 } else if size == 0 { size = end - at }
                guard size >= header, at + size <= end else { return }
                let type = String(decoding: data[(at + 4)..<(at + 8)], as: UTF8.self)
                let body = at + header
                switch type {
                case "moov", "mdia", "minf", "stbl", "edts":
                    walk(body, at + size)
                case "trak":
                    tracks.append(Track(handler: "", mediaTimescale: 0, entries: []))
                    walk(body, at + size)
                case "mvhd":
                    movieTimescale = u32(body + (data[body] == 1 ? 20 : 12))
                case "mdhd":
                    tracks[tracks.count - 1].mediaTimescale = u32(body + (data[body] == 1 ? 20 : 12))
                case "hdlr" where tracks.last?.handler.isEmpty == true:
                    // The media handler comes first (QuickTime adds a data handler in minf).
                    tracks[tracks.count - 1].handler = String(decoding: data[(body + 8)..<(body + 12)], as: UTF8.self)
                case "elst":
                    let wide = data[body] == 1
                    for i in 0..<u32(body + 4) {
                        let e = body + 8 + i * (wide ? 20 : 12)
                        let duration = wide ? u64(e) : u32(e)
                        let media = wide ? u64(e + 8) : Int(Int32(truncatingIfNeeded: u32(e + 4)))
                        tracks[tracks.count - 1].entries.append((duration, media))
                    }
                default: break
                }
                at += size
            }
        }
        walk(0, data.count)
        return (movieTimescale, tracks)
    }

    /// The first audio track (or the `audio`-th) as its edit list plays it, mono 16-bit: every stored AAC packet decoded by
    /// FFmpeg with edit lists ignored (`-ignore_editlist`), then the list's media ranges cut out of that
    /// exactly, by sample. (FFmpeg's own edit-list handling trims only an edit's start, by whole packets
    /// elsewhere.) Assumes 1,024 samples per packet (AAC).
    public static func editedAudio(_ path: String, audio: Int = 0) throws -> [Int16] {
        let (movieTimescale, tracks) = try editLists(path)
        let sound = tracks.filter { $0.handler == "soun" }
        guard audio < sound.count else { return [] }
        let track = sound[audio]
        let raw = try ProcessRunner.check("ffmpeg", ["-v", "error", "-ignore_editlist", "1", "-i", path, "-map", "0:a:\(audio)",
                                                     "-ac", "1", "-f", "s16le", "-"]).stdoutData
        let decoded = raw.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let listing = try ProcessRunner.check("ffprobe", ["-v", "error", "-ignore_editlist", "1", "-select_streams", "a:\(audio)",
                                                          "-show_entries", "packet=pts", "-of", "csv=p=0", path]).stdout
        let starts = listing.split(separator: "\n").compactMap { Int($0.split(separator: ",")[0]) }
        // Where a media time lies in the decoded samples: its packet's place times 1,024, plus the offset.
        func position(_ t: Int) -> Int? {
            var lo = 0, hi = starts.count - 1
            guard hi >= 0, t >= starts[0] else { return nil }
            while lo < hi {
                let mid = (lo + hi + 1) / 2
                if starts[mid] > t { hi = mid - 1 } else { lo = mid }
            }
            return t - starts[lo] < 1024 ? lo * 1024 + (t - starts[lo]) : nil
        }
        var out: [Int16] = []
        for e in track.entries where e.mediaTime >= 0 {
            let count = e.duration * track.mediaTimescale / movieTimescale
            guard let p = position(e.mediaTime), p + count <= decoded.count else { return [] }
            out += decoded[p..<(p + count)]
        }
        return out
    }
}
