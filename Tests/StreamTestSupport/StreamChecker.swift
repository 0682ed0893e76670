import FarmTestSupport
import Foundation
import MediaEdit
import MediaTime

/// Checks a streaming package on its files against the rules it keeps, each finding named by the rule
/// and its source (RFC 8216 for HLS, ISO/IEC 23009-1 and the DASH-IF IOP for DASH, ISO/IEC 14496-12 for
/// the segments' times), reading with readers the farm did not write: PyPI's m3u8 and mpegdash, ffprobe,
/// the boxes themselves (`FragmentProbe`) and GStreamer. Empty: every rule holds.
public enum StreamChecker {
    public struct CheckError: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// `copied`: a package made without encoding, whose keyframes are the source's (a keyframe begins each
    /// segment; others may be inside one).
    public static func check(folder: String, report: StreamReport, copied: Bool = false) throws -> [String] {
        var findings: [String] = []
        func rule(_ holds: Bool, _ text: @autoclosure () -> String) { if !holds { findings.append(text()) } }
        let reader = TestPaths.packageRoot.appendingPathComponent("Tests/Readers/stream-parse.py").path
        let parsed = try ProcessRunner.check("python3", [reader, folder]).stdout
        let read = try JSONSerialization.jsonObject(with: Data(parsed.utf8)) as? [String: Any] ?? [:]
        guard read["error"] == nil else { return ["m3u8/mpegdash cannot parse the package: \(parsed)"] }
        let hls = read["hls"] as? [String: Any] ?? [:], dash = read["dash"] as? [String: Any] ?? [:]
        let video = report.tracks.filter { $0.kind == .video }
        let frame = video.first.flatMap(\.frameRate).map { Double($0.denominator) / Double($0.numerator) } ?? 1.0 / 30
        let programme = report.duration.seconds

        // HLS: RFC 8216 4.3.3.1 (target duration), 4.3.3.5 (VOD), 4.3.5.1 (independent segments), and the sum of EXTINFs.
        rule(hls["independent"] as? Bool == true, "RFC 8216 4.3.5.1: the master has no EXT-X-INDEPENDENT-SEGMENTS")
        var playlists: [(String, [String: Any])] = []
        for v in hls["variants"] as? [[String: Any]] ?? [] { playlists.append(("variant", v["playlist"] as? [String: Any] ?? [:])) }
        for r in hls["renditions"] as? [[String: Any]] ?? [] {
            rule((r["language"] as? String).map { !$0.isEmpty } == true && (r["name"] as? String).map { !$0.isEmpty } == true,
                 "EXT-X-MEDIA without LANGUAGE or NAME: \(r)")
            playlists.append(("rendition \(r["type"] ?? "")", r["playlist"] as? [String: Any] ?? [:]))
        }
        rule((hls["iframes"] as? [Any])?.count == video.count, "an I-frame playlist per rung: \((hls["iframes"] as? [Any])?.count ?? 0) for \(video.count)")
        for (what, p) in playlists {
            let uri = p["uri"] as? String ?? "?"
            let durations = (p["segments"] as? [[String: Any]] ?? []).compactMap { $0["duration"] as? Double }
            let target = p["targetDuration"] as? Int ?? 0
            rule(durations.allSatisfy { Int($0.rounded()) <= target }, "RFC 8216 4.3.3.1: \(what) \(uri): EXTINFs \(durations) over target \(target)")
            // Audio ends at the first AAC frame at or after the video's end; the rest at a frame.
            let slack = what.hasSuffix("AUDIO") ? 1024.0 / Double(report.tracks.compactMap(\.sampleRate).min() ?? 48000) : frame
            rule(abs(durations.reduce(0, +) - programme) <= slack + 1e-6, "\(what) \(uri): EXTINFs sum \(durations.reduce(0, +)), programme \(programme)")
            rule(p["playlistType"] as? String == "vod" && p["endList"] as? Bool == true, "RFC 8216 4.3.3.5: \(uri) is not a whole VOD playlist")
            // Each segment's EXT-X-BYTERANGE (a single-file package's) is the range the track wrote it at, and the
            // initialization's EXT-X-MAP range its size.
            if let track = report.tracks.first(where: { uri.hasPrefix($0.folder + "/") }), track.segments.contains(where: { $0.offset != nil }) {
                let ranges = (p["segments"] as? [[String: Any]] ?? []).map { $0["byterange"] as? String ?? "" }
                rule(ranges == track.segments.map { "\($0.bytes)@\($0.offset ?? -1)" }, "RFC 8216 4.3.2.2: \(uri): ranges \(ranges)")
                rule(track.initializationBytes.map { "\($0)@0" } == (p["mapByterange"] as? [Any])?.first as? String, "RFC 8216 4.3.2.5: \(uri): EXT-X-MAP's range")
            }
            // Apple HLS 8.20: a CMAF track's playlist names its initialization (WebVTT and MPEG-TS need none).
            let cmaf = !what.hasSuffix("SUBTITLES") && !report.tracks.contains { $0.container == .transportStream }
            rule(!cmaf || (p["map"] as? [Any])?.first is String, "Apple HLS 8.20: \(uri) has no EXT-X-MAP")
        }

        // DASH: each representation's S@t is its segment's earliest presentation time, its
        // presentationTimeOffset the track's edit (ISO/IEC 23009-1 5.3.9.6; DASH-IF IOP).
        let sets = dash["adaptationSets"] as? [[String: Any]] ?? []
        for set in sets where set["contentType"] as? String != "video" {
            rule((set["lang"] as? String).map { !$0.isEmpty } == true, "DASH-IF IOP: the \(set["contentType"] ?? "") adaptation set has no lang")
        }
        let representations = sets.flatMap { $0["representations"] as? [[String: Any]] ?? [] }
        for track in report.tracks where track.kind != .text {
            let initialization = try initializationFile(folder, track)
            let edit = try FragmentProbe.editMediaTime(initialization: initialization)
            let duration = try FragmentProbe.defaultDuration(initialization: initialization)
            let earliest = try track.segments.map {
                try FragmentProbe.earliestPresentationTime(segment: try segmentFile(folder, track, $0), defaultDuration: duration)
            }
            rule(edit == track.presentationOffset, "\(track.folder): edit \(edit), reported \(track.presentationOffset)")
            rule(earliest == track.segments.map(\.start), "ISO/IEC 14496-12: \(track.folder): earliest times \(earliest), reported \(track.segments.map(\.start))")
            if track.kind == .video { rule(earliest.first.map { $0 - edit } == 0, "\(track.folder): the first frame presents at \(earliest.first.map { $0 - edit } ?? -1)") }
            guard let r = representations.first(where: { $0["id"] as? String == track.folder }) else {
                findings.append("the MPD has no representation \(track.folder)")
                continue
            }
            let timeline = (r["timeline"] as? [[String: Any]] ?? []).flatMap { s -> [Int64] in
                let t = (s["t"] as? NSNumber)?.int64Value ?? -1, d = (s["d"] as? NSNumber)?.int64Value ?? 0
                return (0...((s["r"] as? NSNumber)?.intValue ?? 0)).map { t + Int64($0) * d }
            }
            rule(timeline == earliest, "ISO/IEC 23009-1 5.3.9.6: \(track.folder): S@t \(timeline), files \(earliest)")
            if let bytes = track.initializationBytes {
                let ranges = track.segments.map { "\($0.offset ?? -1)-\(($0.offset ?? -1) + $0.bytes - 1)" }
                rule(r["mediaRanges"] as? [String] == ranges && r["initializationRange"] as? String == "0-\(bytes - 1)",
                     "ISO/IEC 23009-1 5.3.9.3: \(track.folder): SegmentList ranges \(r["mediaRanges"] ?? "none"), written at \(ranges)")
            }
            rule((r["presentationTimeOffset"] as? NSNumber)?.int64Value ?? 0 == edit, "DASH-IF IOP: \(track.folder): presentationTimeOffset against edit \(edit)")
            // One timescale: the MPD's times are in the track's own (its mdhd's), which the report and the
            // playlists' durations are computed from.
            let timescale = try FragmentProbe.mediaTimescale(initialization: initialization)
            rule((r["timescale"] as? NSNumber)?.int64Value == timescale && track.timescale == Int(timescale),
                 "ISO/IEC 23009-1 5.3.9.2: \(track.folder): the MPD's timescale \(r["timescale"] ?? "none"), the track's \(timescale), reported \(track.timescale)")
        }
        // segmentAlignment said truthfully (ISO/IEC 23009-1 5.3.3.2): "true" only where every representation of the
        // set starts its segments at the same presentation times; the video rungs share one timescale, so their
        // S@t are the same numbers.
        for set in sets {
            let members = (set["representations"] as? [[String: Any]] ?? []).compactMap { r in report.tracks.first { $0.folder == r["id"] as? String } }
            let starts = Set(members.map { t in t.segments.map { Double($0.start - t.presentationOffset) / Double(t.timescale) } })
            let aligned = set["segmentAlignment"] as? Bool == true
            if aligned { rule(starts.count <= 1, "ISO/IEC 23009-1 5.3.3.2: the \(set["contentType"] ?? "") set says segmentAlignment, its representations start apart") }
            if set["contentType"] as? String == "video" {
                rule(aligned == (starts.count <= 1), "the video set's segmentAlignment \(aligned), its rungs' starts \(starts.count == 1 ? "equal" : "apart")")
                rule(Set(members.map(\.timescale)).count <= 1, "one timescale: the video rungs' \(members.map(\.timescale))")
            }
        }

        // Every rung: its frames as ffprobe reads them, a keyframe exactly at each segment's start and nowhere
        // else, the same starts on every rung; the audio's boundaries within one AAC frame of the video's.
        var starts: [[Double]] = []
        for track in video {
            let frames = try Self.frames(folder, track)
            let segmentStarts = track.segments.map { Double($0.start - track.presentationOffset) / Double(track.timescale) }
            starts.append(segmentStarts)
            let keys = frames.filter(\.key).map(\.time)
            // A copied package keeps the source's keyframes: one at each start, others anywhere.
            let starting = copied ? keys.filter { k in segmentStarts.contains { abs($0 - k) < 1e-3 } } : keys
            rule(starting.count == segmentStarts.count && zip(starting, segmentStarts).allSatisfy { abs($0 - $1) < 1e-3 },
                 "\(track.folder): keyframes at \(keys), segments at \(segmentStarts)")
            rule(abs(Double(frames.count) * frame - programme) <= frame + 1e-6, "\(track.folder): \(frames.count) frames for \(programme) s")
        }
        rule(Set(starts).count <= 1, "the rungs' segments start apart: \(starts)")
        for audio in report.tracks where audio.kind == .audio {
            let aac = 1024.0 / Double(audio.sampleRate ?? 48000) + 1e-9
            let audioStarts = audio.segments.map { Double($0.start - audio.presentationOffset) / Double(audio.timescale) }
            // A last video segment shorter than an AAC frame has no audio frame starting in it: its audio is
            // the previous segment's end.
            let video = starts.first ?? []
            let lastIsShort = video.count >= 2 && programme - (video.last ?? 0) < aac
            rule((audioStarts.count == video.count || (lastIsShort && audioStarts.count == video.count - 1))
                 && zip(audioStarts, video).allSatisfy { abs($0 - $1) < aac },
                 "\(audio.folder): boundaries \(audioStarts) against the video's \(video)")
            rule(abs(audio.seconds - programme) < aac, "\(audio.folder): \(audio.seconds) s against \(programme)")
        }
        try rateAndCodecRules(folder: folder, report: report, hls: hls, rule: rule)
        return findings
    }

    /// Apple's HLS authoring specification 9.13 and 9.14 and RFC 8216 4.3.4.2, measured again from the files
    /// as the playlists name them: each variant's BANDWIDTH the largest sum of peak segment bit rates of its
    /// rung and an audio rendition (the highest rate of any run of segments lasting 0.5 to 1.5 target
    /// durations), AVERAGE-BANDWIDTH the sum of their averages; CODECS (RFC 6381), RESOLUTION and FRAME-RATE
    /// as ffprobe reads the rung's and the audio's streams.
    static func rateAndCodecRules(folder: String, report: StreamReport, hls: [String: Any], rule: (Bool, @autoclosure () -> String) -> Void) throws {
        /// (peak, average) of a media playlist, from its EXTINFs and its segments' bytes on disk.
        func rates(_ p: [String: Any]) throws -> (peak: Double, average: Double) {
            let target = Double((p["targetDuration"] as? NSNumber)?.intValue ?? 1), uri = p["uri"] as? String ?? ""
            let base = (folder as NSString).appendingPathComponent((uri as NSString).deletingLastPathComponent)
            let parts: [(seconds: Double, bytes: Double)] = try (p["segments"] as? [[String: Any]] ?? []).map { segment in
                let seconds = (segment["duration"] as? NSNumber)?.doubleValue ?? 0
                if let range = segment["byterange"] as? String, let length = range.split(separator: "@").first.flatMap({ Double($0) }) { return (seconds, length) }
                let size = try FileManager.default.attributesOfItem(atPath: base + "/" + (segment["uri"] as? String ?? ""))[.size] as? NSNumber
                return (seconds, size?.doubleValue ?? 0)
            }
            var peak: Double?
            for i in parts.indices {
                var seconds = 0.0, bytes = 0.0
                for part in parts[i...] {
                    (seconds, bytes) = (seconds + part.seconds, bytes + part.bytes)
                    if seconds > target * 1.5 { break }
                    if seconds >= target * 0.5 { peak = max(peak ?? 0, bytes * 8 / seconds) }
                }
            }
            let seconds = parts.reduce(0) { $0 + $1.seconds }, bytes = parts.reduce(0) { $0 + $1.bytes }
            return (peak ?? bytes * 8 / max(seconds, 1e-9), bytes * 8 / max(seconds, 1e-9))
        }
        func near(_ declared: Any?, _ measured: Double) -> Bool {
            guard let d = (declared as? NSNumber)?.doubleValue else { return false }
            return abs(d - measured) <= measured * 0.002 + 8
        }
        /// The stream's CODECS name as ffprobe's reading of it gives it: its codec, profile and level.
        func codecs(_ track: StreamTrack) throws -> (name: String, width: Int, height: Int, rate: Double)? {
            let fields = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "0", "-show_entries",
                                                             "stream=codec_name,profile,level,width,height,avg_frame_rate,pix_fmt", "-of", "json",
                                                             try joined(folder, track)]).stdout
            guard let stream = ((try JSONSerialization.jsonObject(with: Data(fields.utf8)) as? [String: Any])?["streams"] as? [[String: Any]])?.first else { return nil }
            let profile = stream["profile"] as? String ?? "", level = (stream["level"] as? NSNumber)?.intValue ?? -1
            let rate = (stream["avg_frame_rate"] as? String ?? "0/1").split(separator: "/").compactMap { Double($0) }
            let (width, height) = ((stream["width"] as? NSNumber)?.intValue ?? 0, (stream["height"] as? NSNumber)?.intValue ?? 0)
            let fps = rate.count == 2 && rate[1] > 0 ? rate[0] / rate[1] : 0
            switch stream["codec_name"] as? String {
            case "h264":
                // profile_idc and the constraint flags libx264 sets for each (Constrained Baseline: 42c0), then the level.
                guard let p = ["Constrained Baseline": "42c0", "Baseline": "4200", "Main": "4d40", "High": "6400"][profile] else { return ("h264 \(profile)", width, height, fps) }
                return ("avc1.\(p)" + String(format: "%02x", level), width, height, fps)
            case "hevc": return (profile == "Main" ? "hvc1.1.6.L\(level)" : "hevc \(profile)", width, height, fps)
            case "av1": return (profile == "Main" && stream["pix_fmt"] as? String == "yuv420p" ? "av01.0." + String(format: "%02d", level) + "M.08" : "av1 \(profile)", width, height, fps)
            case "aac": return (["LC": "mp4a.40.2", "HE-AAC": "mp4a.40.5", "HE-AACv2": "mp4a.40.29"][profile] ?? "aac \(profile)", 0, 0, 0)
            default: return nil
            }
        }
        let renditions = (hls["renditions"] as? [[String: Any]] ?? []).filter { $0["type"] as? String == "AUDIO" }
        let audioRates = try renditions.map { try rates($0["playlist"] as? [String: Any] ?? [:]) }
        let audioPeak = audioRates.map(\.peak).max() ?? 0, audioAverage = audioRates.map(\.average).max() ?? 0
        let audioCodecs = try report.tracks.filter { $0.kind == .audio }.compactMap { try codecs($0)?.name }
        for variant in hls["variants"] as? [[String: Any]] ?? [] {
            let p = variant["playlist"] as? [String: Any] ?? [:], uri = p["uri"] as? String ?? ""
            guard let track = report.tracks.first(where: { $0.kind == .video && uri.hasPrefix($0.folder + "/") }) else { rule(false, "variant \(uri): no rung"); continue }
            let video = try rates(p)
            rule(near(variant["bandwidth"], video.peak + audioPeak),
                 "Apple HLS 9.13: \(uri): BANDWIDTH \(variant["bandwidth"] ?? "none"), the measured peaks \(Int(video.peak)) + \(Int(audioPeak))")
            rule(near(variant["averageBandwidth"], video.average + audioAverage),
                 "Apple HLS 9.14: \(uri): AVERAGE-BANDWIDTH \(variant["averageBandwidth"] ?? "none"), measured \(Int(video.average)) + \(Int(audioAverage))")
            guard let read = try codecs(track) else { rule(false, "\(uri): ffprobe reads no stream"); continue }
            let declared = (variant["codecs"] as? String ?? "").split(separator: ",").map(String.init)
            // HEVC's constraint bytes, which ffprobe does not name, follow its level.
            let videoDeclared = declared.first.map { read.name.hasPrefix("hvc1.") ? $0.split(separator: ".").prefix(4).joined(separator: ".") : $0 }
            rule(videoDeclared == read.name && Set(declared.dropFirst()) == Set(audioCodecs.prefix(1)),
                 "Apple HLS 9.1, 9.15, RFC 6381: \(uri): CODECS \(declared), the streams read as \(read.name) and \(audioCodecs)")
            rule((variant["resolution"] as? [NSNumber])?.map(\.intValue) == [read.width, read.height],
                 "Apple HLS 9.2: \(uri): RESOLUTION \(variant["resolution"] ?? "none"), the stream \(read.width)x\(read.height)")
            // Within its three decimals, or 0.1% where the times are coarse (Matroska's milliseconds copied: 30.003).
            rule(((variant["frameRate"] as? NSNumber)?.doubleValue).map { abs($0 - read.rate) <= max(0.0015, read.rate * 0.001) } == true,
                 "Apple HLS 9.2: \(uri): FRAME-RATE \(variant["frameRate"] ?? "none"), the stream \(read.rate)")
        }
    }

    /// One track's initialization (CMAF's) and segments joined into one file beside the package; its path.
    public static func joined(_ folder: String, _ track: StreamTrack) throws -> String {
        var joined = track.initialization.isEmpty || track.initializationBytes != nil
            ? Data() : try Data(contentsOf: URL(fileURLWithPath: folder + "/" + track.folder + "/" + track.initialization))
        if let bytes = track.initializationBytes { joined.append(try piece(folder + "/" + track.folder + "/" + track.initialization, at: 0, bytes: bytes)) }
        for segment in track.segments { joined.append(try bytes(folder, track, segment)) }
        let path = folder + "/../" + track.folder + ".joined." + (track.container == .transportStream ? "ts" : "mp4")
        try joined.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A segment's bytes: its file, or its range of the track's one file.
    public static func bytes(_ folder: String, _ track: StreamTrack, _ segment: StreamSegment) throws -> Data {
        let path = folder + "/" + track.folder + "/" + segment.file
        guard let offset = segment.offset else { return try Data(contentsOf: URL(fileURLWithPath: path)) }
        return try piece(path, at: offset, bytes: segment.bytes)
    }

    /// A segment as a file of its own: its file, or its range written beside the package; its path.
    public static func segmentFile(_ folder: String, _ track: StreamTrack, _ segment: StreamSegment) throws -> String {
        guard segment.offset != nil else { return folder + "/" + track.folder + "/" + segment.file }
        let path = folder + "/../" + track.folder + "-\(segment.offset ?? 0).piece"
        try bytes(folder, track, segment).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The initialization as a file of its own (a single file's first range written beside the package); its path.
    public static func initializationFile(_ folder: String, _ track: StreamTrack) throws -> String {
        let path = folder + "/" + track.folder + "/" + track.initialization
        guard let bytes = track.initializationBytes else { return path }
        let own = folder + "/../" + track.folder + ".init.mp4"
        try piece(path, at: 0, bytes: bytes).write(to: URL(fileURLWithPath: own))
        return own
    }

    static func piece(_ path: String, at offset: Int, bytes: Int) throws -> Data {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }  // read-only: nothing to lose
        try handle.seek(toOffset: UInt64(offset))
        let data = try handle.read(upToCount: bytes) ?? Data()
        guard data.count == bytes else { throw CheckError(description: "\(path): \(data.count) bytes at \(offset), not \(bytes)") }
        return data
    }

    /// The frames of one track as ffprobe reads them from its initialization and segments joined.
    public static func frames(_ folder: String, _ track: StreamTrack) throws -> [(time: Double, key: Bool)] {
        let path = try joined(folder, track)
        let r = try ProcessRunner.check("ffprobe", ["-v", "error", "-select_streams", "0", "-show_entries", "frame=pts_time,key_frame", "-of", "csv=p=0", path])
        return r.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let time = Double(fields[1]) else { return nil }
            return (time, fields[0] == "1")
        }
    }

    /// Plays each rung alone, forced in turn, with GStreamer's playbin3 over HTTP: from a master playlist
    /// and an MPD that name that rung only (written beside the package's, which stay as they are). Each
    /// must play to the end, every frame ffprobe reads in the rung (`frameCount`; by default from its CMAF
    /// files joined), at the rung's size. `dash`: the MPD too (an MPEG-TS package has none).
    public static func playEachRung(folder: String, report: StreamReport, dash: Bool = true,
                                    frameCount: ((StreamTrack) throws -> Int)? = nil) throws -> [String] {
        let (server, port) = try serve(folder)
        defer { server.kill(SIGKILL); _ = server.wait(timeout: 5) }
        let master = try String(contentsOfFile: folder + "/master.m3u8", encoding: .utf8)
        let mpd = dash ? try String(contentsOfFile: folder + "/manifest.mpd", encoding: .utf8) : ""
        var findings: [String] = []
        for track in report.tracks where track.kind == .video {
            try forcedMaster(master, keeping: track.folder).write(toFile: folder + "/forced-\(track.folder).m3u8", atomically: true, encoding: .utf8)
            if dash {
                try forcedMPD(mpd, keeping: track.folder, all: report.tracks.filter { $0.kind == .video }.map(\.folder))
                    .write(toFile: folder + "/forced-\(track.folder).mpd", atomically: true, encoding: .utf8)
            }
            let expected = try frameCount?(track) ?? frames(folder, track).count
            for entry in ["forced-\(track.folder).m3u8"] + (dash ? ["forced-\(track.folder).mpd"] : []) {
                let uri = "uri=http://127.0.0.1:\(port)/\(entry)"
                let counted = try gstreamer("gst-launch-1.0", ["-q", "playbin3", uri, "video-sink=checksumsink hash=md5 sync=false", "audio-sink=fakesink sync=false"])
                let played = counted.stdout.split(separator: "\n").filter { line in
                    line.count == 50 && line.first?.isNumber == true && line.dropFirst(18).allSatisfy(\.isHexDigit)
                }.count
                // The rung's picture size as GStreamer's discoverer reads it off the stream (given time on a busy
                // machine: its own default, 10 s, ends it with no size and status 0).
                // Its DASH demuxer now and then gives the discoverer no stream at all (no size, status 0; seen once in
                // tens of runs): asked up to three times, any size it does give is checked.
                var shown = try gstreamer("gst-discoverer-1.0", ["--timeout", String(GStreamerProbe.discovererTimeout), "http://127.0.0.1:\(port)/\(entry)"])
                var sizes = Self.sizes(shown.stdout)
                for _ in 0..<2 where shown.status == 0 && sizes.isEmpty {
                    shown = try gstreamer("gst-discoverer-1.0", ["--timeout", String(GStreamerProbe.discovererTimeout), "http://127.0.0.1:\(port)/\(entry)"])
                    sizes = Self.sizes(shown.stdout)
                }
                if counted.status != 0 || played != expected || shown.status != 0 || sizes != ["\(track.width ?? 0)x\(track.height ?? 0)"] {
                    findings.append("GStreamer \(entry): status \(counted.status), \(played) of \(expected) frames, sizes \(sizes): \(counted.stderr.prefix(400)) "
                                    + "discoverer: \(shown.stdout.suffix(400))")
                }
            }
        }
        return findings
    }

    /// The picture sizes in a `gst-discoverer-1.0` report ("640x360").
    static func sizes(_ report: String) -> Set<String> {
        let lines = report.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let widths = lines.filter { $0.hasPrefix("Width: ") }.map { $0.dropFirst(7) }, heights = lines.filter { $0.hasPrefix("Height: ") }.map { $0.dropFirst(8) }
        return Set(zip(widths, heights).map { "\($0)x\($1)" })
    }

    /// An HTTP server of `folder` on a free loopback port that answers byte ranges (`Tests/Readers/rangeserve.py`),
    /// listening; its requests logged (`server.log`).
    public static func serve(_ folder: String) throws -> (server: Background, port: Int) {
        let port = TestPaths.freeLoopbackPort()
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/Readers/rangeserve.py").path
        let server = try Background(["/usr/bin/python3", script, String(port), folder], log: folder + "/../server-\(port).log")
        guard TestPaths.waitForListener(port: port, udp: false) else {
            server.kill(SIGKILL)
            throw CheckError(description: "the HTTP server of \(folder) did not listen: \(server.log)")
        }
        return (server, port)
    }

    /// A GStreamer tool with `arguments`, once more (up to three runs) when its HLS demuxer says it "Couldn't
    /// download fragments" though the server sent every one: GStreamer 1.22's hlsdemux2 does so now and then
    /// on a one-segment playlist, measured here as often on FFmpeg's own HLS (3 runs of 16; none of 16 on three
    /// segments), and under load three runs in a row: a package checked here has at least two segments.
    public static func gstreamer(_ tool: String, _ arguments: [String]) throws -> ProcessResult {
        var result = try ProcessRunner.run(tool, arguments)
        for _ in 0..<2 where result.status != 0 && (result.stderr + result.stdout).contains("Couldn't download fragments") {
            result = try ProcessRunner.run(tool, arguments)
        }
        return result
    }

    /// The master playlist with one variant: the others and the I-frame variants left out.
    public static func forcedMaster(_ master: String, keeping folder: String) -> String {
        var out: [Substring] = [], skipNext = false
        for line in master.split(separator: "\n", omittingEmptySubsequences: false) {
            if skipNext { skipNext = false; continue }
            if line.hasPrefix("#EXT-X-I-FRAME-STREAM-INF") { continue }
            if line.hasPrefix("#EXT-X-STREAM-INF") { skipNext = true; continue }
            out.append(line)
        }
        let variant = master.split(separator: "\n").enumerated().first { i, line in
            line.hasPrefix("#EXT-X-STREAM-INF") && master.split(separator: "\n")[i + 1].hasPrefix(folder + "/")
        }
        if let (i, line) = variant { out += [line, master.split(separator: "\n")[i + 1]] }
        return out.joined(separator: "\n") + "\n"
    }

    /// The MPD with one video representation.
    public static func forcedMPD(_ mpd: String, keeping folder: String, all: [String]) -> String {
        var text = mpd
        for other in all where other != folder {
            guard let start = text.range(of: "<Representation id=\"\(other)\""),
                  let end = text.range(of: "</Representation>", range: start.upperBound..<text.endIndex) else { continue }
            let lineStart = text[..<start.lowerBound].lastIndex(of: "\n").map { text.index(after: $0) } ?? start.lowerBound
            let lineEnd = text[end.upperBound...].firstIndex(of: "\n").map { text.index(after: $0) } ?? end.upperBound
            text.removeSubrange(lineStart..<lineEnd)
        }
        return text
    }
}
