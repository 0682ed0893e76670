import Foundation

/// Media files generated at test time with real FFmpeg (lavfi sources), made once per test process
/// and shared by every test that asks for them.
public enum MediaFixture: String, CaseIterable, Sendable {
    /// 2 s, 320x240, 30 fps H.264 + 48 kHz stereo AAC (440 Hz), title tag, languages eng / fra.
    case cfr30MP4 = "cfr30.mp4"
    /// 2 s, 320x240, 60 fps H.264 + AAC in Matroska, chapters "Intro" [0, 1) and "Main" [1, 2), languages eng / ger.
    case cfr60MKV = "cfr60.mkv"
    /// Variable frame rate: 30 frames at 1/30 s, then 15 frames at 2/30 s (45 frames, 2 s).
    case vfrMP4 = "vfr.mp4"
    /// 3 s of 44.1 kHz mono AAC, audio only.
    case audioM4A = "audio.m4a"
    /// 1.5 s of 44.1 kHz mono PCM.
    case audioWAV = "audio.wav"
    /// 1.6 s, 25 fps H.264 + AAC in QuickTime.
    case movH264 = "clip.mov"
    /// 1 s, 320x240 H.264 whose track matrix rotates it 90 degrees for display (as phones write it).
    case rotatedMP4 = "rotated.mp4"
    /// 10 s, 320x240, 30 fps H.264 + AAC with the index at the front (faststart).
    case longMP4 = "long.mp4"
    /// 10 s, 320x240, 60 fps H.264 (a keyframe every second) + 48 kHz stereo AAC, a 440 Hz tone.
    case tone60MP4 = "tone60.mp4"
    /// 3 s encoded exactly as tone60 (same codec parameters, so passthrough can join them), 660 Hz.
    case tone60ShortMP4 = "tone60-short.mp4"
    /// Variable frame rate (30 fps for 2 s, then 10 fps) with 44.1 kHz AAC, 4 s.
    case vfrWithAudioMP4 = "vfr-audio.mp4"
    /// 3 s of MPEG-4 Part 2 video + MP3 in AVI: stream durations in the header, no sample index.
    case clipAVI = "clip.avi"
    /// 0.5 s of audio in 17 streams: one more than the safety limit.
    case seventeenStreamsMKV = "seventeen.mkv"
    /// 2 s of 161x121 VP9 in WebM: an odd size, which 4:2:0 H.264 cannot encode.
    case oddSizeWebM = "odd-161x121.webm"
    /// A WebVTT cue (0 to 0.456 s) as mov_text alone in MP4, whose header declares 6 s (sparse text).
    case textOnlyMP4 = "text-only.mp4"
    /// 2 s of H.264 encrypted with Common Encryption (cenc-aes-ctr): protected content.
    case encryptedMP4 = "encrypted.mp4"
    /// 4 KB of MPEG-TS whose program declares an H.264 track that has no packets, and AAC audio.
    case videoWithoutPacketsTS = "video-without-packets.ts"
    /// 10 s, 320x240, 30 fps H.264 with two B-frames between references, a keyframe every second
    /// (30 frames), + 48 kHz stereo AAC: every frame distinct, for exact-cut tests.
    case bframesGOP1sMP4 = "bframes-gop1s.mp4"
    /// 30 s as bframesGOP1s but a keyframe every 10 s (300 frames) and 44.1 kHz audio.
    case bframesGOP10sMP4 = "bframes-gop10s.mp4"
    /// As bframesGOP1s but with open GOPs: its keyframes after the first are I pictures, not IDR, and the
    /// B-frames before each (in presentation order) reference the GOP before it.
    case openGOPMP4 = "open-gop.mp4"
    /// 10 s, 320x240, 30 fps VP9 (libvpx, a keyframe every second, alternate reference frames) + AAC in MP4.
    case vp9MP4 = "vp9.mp4"
    /// 10 s, 320x240, 30 fps 10-bit VP9 (profile 2, a keyframe every second) + Opus in WebM.
    case vp9TenBitWebM = "vp9-10bit.webm"
    /// 10 s, 320x240, 30 fps AV1 (libaom, a keyframe every second) + AAC in MP4.
    case av1MP4 = "av1.mp4"
    /// 10 s, 320x240, 30 fps HEVC (x265, B-frames, open GOPs, a keyframe every second, 'hvc1') + AAC.
    case hevcGOP1sMP4 = "hevc-gop1s.mp4"
    /// 30 s as hevcGOP1s but a keyframe every 10 s and 44.1 kHz audio.
    case hevcGOP10sMP4 = "hevc-gop10s.mp4"

    /// 30 s, 320x180, 25 fps H.264, a keyframe every second, whose middle third (10 to 20 s) is 3 s of
    /// black, 3 s of a fade (a dim, flat picture), 3 s of a blank title card (a plain colour with a small
    /// white bar) and 1 s (19 to 20 s) of a picture: the one frame there that is a poster. Pictures outside
    /// the middle third.
    case posterMP4 = "poster.mp4"
    /// 20 s, 320x240, 30 fps H.264 of legal levels (luma 20-230, chroma 20-235) + 48 kHz stereo PCM (a 440 Hz tone at
    /// 0.3 on the left, 660 Hz on the right), with faults at known times: pictures 120-209 (4.0 to 7.0 s) all picture 120
    /// (a freeze of 3 s); the right channel digitally silent from 5.0 to 7.0 s; the left ten times louder from 9.0 to
    /// 9.05 s (clipped to full scale in 16 bits); black from 12.0 to 13.5 s; luma 250 in the top-left quarter from 15.0 to 16.0 s.
    case faultsMKV = "faults.mkv"
    /// 10 s, 320x240, 30 fps H.264 in Matroska whose picture 100 (3.333 s) is missing: the others keep their times.
    case droppedFrameMKV = "dropped-frame.mkv"

    public var path: String { Fixtures.path(self) }
}

public enum Fixtures {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: [MediaFixture: String] = [:]
    private static let folder: URL = {
        (try? TestPaths.makeTemporaryFolder("fixtures")) ?? FileManager.default.temporaryDirectory
    }()

    /// The fixture's path, generating it on first use.
    public static func path(_ fixture: MediaFixture) -> String {
        lock.lock()
        defer { lock.unlock() }
        if let p = made[fixture] { return p }
        let out = folder.appendingPathComponent(fixture.rawValue).path
        do {
            try generate(fixture, to: out)
        } catch {
            fatalError("could not generate fixture \(fixture.rawValue): \(error)")
        }
        made[fixture] = out
        return out
    }

    private static let x264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]

    private static func ffmpeg(_ args: [String]) throws {
        try ProcessRunner.check("ffmpeg", ["-y", "-nostdin", "-v", "error"] + args)
    }

    private static func generate(_ fixture: MediaFixture, to out: String) throws {
        switch fixture {
        case .faultsMKV:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=20",
                        "-f", "lavfi", "-i", "aevalsrc='0.3*sin(2*PI*440*t)*if(gte(t,9)*lt(t,9.05),10,1)|if(gte(t,5)*lt(t,7),0,0.3*sin(2*PI*660*t))':s=48000:d=20",
                        "-filter_complex", "[0:v]format=yuv420p,lutyuv=y='clip(val,20,230)':u='clip(val,20,235)':v='clip(val,20,235)',split[a][b];"
                            + "[a][b]freezeframes=first=120:last=209:replace=120,drawbox=color=black:t=fill:enable='gte(t,12)*lt(t,13.5)',"
                            + "geq=lum='if(lt(X,W/2)*lt(Y,H/2),250,lum(X,Y))':cb='cb(X,Y)':cr='cr(X,Y)':enable='gte(t,15)*lt(t,16)'[v]",
                        "-map", "[v]", "-map", "1:a", "-c:v", "libx264", "-crf", "16", "-preset", "veryfast", "-pix_fmt", "yuv420p",
                        "-c:a", "pcm_s16le", out])
        case .droppedFrameMKV:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=10", "-vf", "select='not(eq(n,100))'", "-fps_mode", "passthrough"]
                       + x264 + [out])
        case .posterMP4:
            let size = "s=320x180:r=25"
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=\(size):d=10", "-f", "lavfi", "-i", "color=c=black:\(size):d=3",
                        "-f", "lavfi", "-i", "testsrc2=\(size):d=3,eq=brightness=-0.45:contrast=0.15",
                        "-f", "lavfi", "-i", "color=c=0x202040:\(size):d=3,drawbox=x=140:y=80:w=40:h=8:color=white:t=fill",
                        "-f", "lavfi", "-i", "testsrc=\(size):d=1", "-f", "lavfi", "-i", "testsrc2=\(size):d=10",
                        "-filter_complex", "[0][1][2][3][4][5]concat=n=6:v=1[v]", "-map", "[v]",
                        "-g", "25", "-keyint_min", "25", "-sc_threshold", "0"] + x264 + [out])
        case .cfr30MP4:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=2",
                        "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=2"]
                       + x264 + ["-c:a", "aac", "-ac", "2", "-b:a", "96k",
                                 "-metadata", "title=MediaFarm fixture",
                                 "-metadata:s:v:0", "language=eng", "-metadata:s:a:0", "language=fra", out])
        case .bframesGOP1sMP4, .bframesGOP10sMP4, .hevcGOP1sMP4, .hevcGOP10sMP4, .openGOPMP4:
            // 10 s with a keyframe every second, or 30 s with one every 10 s (and 44.1 kHz audio).
            let long = fixture == .bframesGOP10sMP4 || fixture == .hevcGOP10sMP4
            let seconds = long ? 30 : 10, gop = long ? 300 : 30
            let video = fixture == .hevcGOP1sMP4 || fixture == .hevcGOP10sMP4
                ? ["-c:v", "libx265", "-tag:v", "hvc1", "-x265-params", "keyint=\(gop):min-keyint=\(gop):scenecut=0:bframes=3:log-level=error"]
                : ["-c:v", "libx264", "-bf", "2", "-x264-params", "keyint=\(gop):min-keyint=\(gop):scenecut=0:b-adapt=0"
                    + (fixture == .openGOPMP4 ? ":open-gop=1" : "")]
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=\(seconds)",
                        "-f", "lavfi", "-i", "sine=f=440:sample_rate=\(long ? 44100 : 48000):d=\(seconds)"]
                       + video + ["-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", out])
        case .vp9MP4, .vp9TenBitWebM, .av1MP4:
            let video = fixture == .av1MP4
                ? ["-c:v", "libaom-av1", "-usage", "realtime", "-cpu-used", "8", "-pix_fmt", "yuv420p"]
                : ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-auto-alt-ref", "1", "-lag-in-frames", "10",
                   "-pix_fmt", fixture == .vp9TenBitWebM ? "yuv420p10le" : "yuv420p"]
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=10", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=10"]
                       + video + ["-g", "30", "-keyint_min", "30", "-b:v", "1M", "-c:a", fixture == .vp9TenBitWebM ? "libopus" : "aac", "-ac", "2", out])
        case .cfr60MKV:
            let meta = out + ".ffmeta"
            try """
            ;FFMETADATA1
            title=Chaptered
            [CHAPTER]
            TIMEBASE=1/1000
            START=0
            END=1000
            title=Intro
            [CHAPTER]
            TIMEBASE=1/1000
            START=1000
            END=2000
            title=Main

            """.write(toFile: meta, atomically: true, encoding: .utf8)
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=60:d=2",
                        "-f", "lavfi", "-i", "sine=f=330:sample_rate=44100:d=2", "-i", meta,
                        "-map", "0:v", "-map", "1:a", "-map_metadata", "2", "-map_chapters", "2"]
                       + x264 + ["-c:a", "aac", "-metadata:s:v:0", "language=eng", "-metadata:s:a:0", "language=ger", out])
        case .vfrMP4:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=2",
                        "-vf", "select='lt(n,30)+not(mod(n,2))'", "-vsync", "vfr"] + x264 + [out])
        case .audioM4A:
            try ffmpeg(["-f", "lavfi", "-i", "sine=f=1000:sample_rate=44100:d=3", "-c:a", "aac", out])
        case .audioWAV:
            try ffmpeg(["-f", "lavfi", "-i", "sine=f=440:sample_rate=44100:d=1.5", "-c:a", "pcm_s16le", out])
        case .movH264:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=1.6",
                        "-f", "lavfi", "-i", "sine=f=550:sample_rate=48000:d=1.6"] + x264 + ["-c:a", "aac", out])
        case .rotatedMP4:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=1"] + x264 + [out])
            try setRotationMatrix(path: out, width: 320)
        case .longMP4:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=10",
                        "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=10"]
                       + x264 + ["-c:a", "aac", "-movflags", "+faststart", out])
        case .tone60MP4, .tone60ShortMP4:
            let (seconds, hz) = fixture == .tone60MP4 ? (10, 440) : (3, 660)
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=60:d=\(seconds)",
                        "-f", "lavfi", "-i", "sine=f=\(hz):sample_rate=48000:d=\(seconds)"]
                       + x264 + ["-g", "60", "-keyint_min", "60", "-sc_threshold", "0",
                                 "-c:a", "aac", "-ac", "2", "-b:a", "128k", out])
        case .vfrWithAudioMP4:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=4",
                        "-f", "lavfi", "-i", "sine=f=440:sample_rate=44100:d=4",
                        "-vf", "select='lt(n,60)+not(mod(n,3))'", "-vsync", "vfr"] + x264 + ["-c:a", "aac", out])
        case .clipAVI:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=3", "-f", "lavfi", "-i", "sine=f=440:d=3",
                        "-c:v", "mpeg4", "-c:a", "libmp3lame", out])
        case .seventeenStreamsMKV:
            try ffmpeg(["-f", "lavfi", "-i", "sine=d=0.5"] + Array(repeating: ["-map", "0:a"], count: 17).flatMap { $0 }
                       + ["-c:a", "pcm_s16le", out])
        case .oddSizeWebM:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=15:d=2", "-vf", "scale=161:121",
                        "-c:v", "libvpx-vp9", "-deadline", "realtime", out])
        case .textOnlyMP4:
            let vtt = out + ".vtt"
            try "WEBVTT\n\n00:00.000 --> 00:00.456\nhello\n\n".write(toFile: vtt, atomically: true, encoding: .utf8)
            try ffmpeg(["-i", vtt, "-c:s", "mov_text", out])
            try setDeclaredDuration(path: out, seconds: 6)
        case .encryptedMP4:
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=160x120:r=15:d=2"] + x264
                       + ["-encryption_scheme", "cenc-aes-ctr", "-encryption_key", "00112233445566778899aabbccddeeff",
                          "-encryption_kid", "00112233445566778899aabbccddeeff", out])
        case .videoWithoutPacketsTS:
            let full = out + ".full.ts"
            try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=160x120:r=15:d=0.3", "-f", "lavfi", "-i", "sine=d=0.3"]
                       + x264 + ["-c:a", "aac", "-f", "mpegts", full])
            // Drop every packet of the video PID (FFmpeg's first elementary stream, 0x100), keep 4 KB.
            let data = try Data(contentsOf: URL(fileURLWithPath: full))
            var kept = Data()
            for start in stride(from: 0, to: data.count - 187, by: 188) {
                let pid = (Int(data[start + 1]) & 0x1f) << 8 | Int(data[start + 2])
                if pid != 0x100 { kept.append(data[start..<start + 188]) }
            }
            try kept.prefix(22 * 188).write(to: URL(fileURLWithPath: out))
        }
    }

    /// Sets the durations an MP4's headers declare (mvhd, tkhd, mdhd; version 0 boxes) to `seconds`.
    static func setDeclaredDuration(path: String, seconds: Double) throws {
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        func u32(_ at: Int) -> UInt32 { data[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        func put(_ value: UInt32, at: Int) { withUnsafeBytes(of: value.bigEndian) { data.replaceSubrange(at..<at + 4, with: $0) } }
        func boxes(_ tag: String) -> [Int] {
            var found: [Int] = [], from = data.startIndex
            while let r = data.range(of: Data(tag.utf8), in: from..<data.endIndex) { found.append(r.upperBound); from = r.upperBound }
            return found
        }
        guard let mvhd = boxes("mvhd").first else { throw FixtureError("no mvhd box in \(path)") }
        let movieScale = u32(mvhd + 12)
        put(UInt32(seconds * Double(movieScale)), at: mvhd + 16)
        for tkhd in boxes("tkhd") { put(UInt32(seconds * Double(movieScale)), at: tkhd + 20) }
        for mdhd in boxes("mdhd") { put(UInt32(seconds * Double(u32(mdhd + 12))), at: mdhd + 16) }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Writes a 90-degree display matrix {0 1 0, -1 0 0, h 0 1} into the first `tkhd` box (version 0).
    static func setRotationMatrix(path: String, width: Int) throws {
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let range = data.range(of: Data("tkhd".utf8)) else { throw FixtureError("no tkhd box in \(path)") }
        let matrixOffset = range.upperBound + 40   // version/flags, times, track id, duration, layer, volume
        let values: [Int32] = [0, 0x10000, 0, -0x10000, 0, 0, Int32(width) << 16, 0, 0x4000_0000]
        for (i, v) in values.enumerated() {
            let be = UInt32(bitPattern: v).bigEndian
            withUnsafeBytes(of: be) { bytes in
                data.replaceSubrange(matrixOffset + 4 * i ..< matrixOffset + 4 * i + 4, with: bytes)
            }
        }
        try data.write(to: URL(fileURLWithPath: path))
    }
}
