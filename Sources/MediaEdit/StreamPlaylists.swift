import Foundation
import MediaTime

/// The presentations of a package, written from what its segments measured (never from what was asked
/// for): an HLS master playlist with a media playlist and an I-frame playlist per rung and one per audio
/// track, and a DASH MPD over the same files. Item numbers are the Apple HLS Authoring Specification's.
/// Every value written into them comes from the report: numbers, codec names, file names the packager
/// chose, and a language `StreamSettings.check` held to a tag's letters.
public enum StreamPlaylists {
    /// Every file of the presentations, by path relative to the package's folder; `master.m3u8` and
    /// `manifest.mpd` are the two entry points (published last). MPEG-TS segments have no MPD (DASH's
    /// profiles here are ISO BMFF's), and encrypted ones no I-frame playlist.
    public static func files(_ report: StreamReport) -> [(path: String, text: String)] {
        var files: [(String, String)] = []
        for track in report.tracks {
            files.append((track.folder + "/index.m3u8", mediaPlaylist(track)))
            if hasIFrames(track) { files.append((track.folder + "/iframes.m3u8", iFramePlaylist(track))) }
        }
        files.append(("master.m3u8", master(report)))
        if !report.tracks.contains(where: { $0.container == .transportStream }) { files.append(("manifest.mpd", mpd(report))) }
        return files
    }

    /// A video track whose segments' keyframes can be fetched alone.
    static func hasIFrames(_ track: StreamTrack) -> Bool { track.kind == .video && track.segments.contains { $0.keyframeBytes != nil } }

    /// The initialization (CMAF's; MPEG-TS segments stand alone) and the key (HLS AES-128, after the
    /// initialization, which stays in the clear; each segment's IV its media sequence number).
    private static func mapAndKey(_ track: StreamTrack) -> [String] {
        (track.initialization.isEmpty ? [] : ["#EXT-X-MAP:URI=\"\(track.initialization)\""
                                              + (track.initializationBytes.map { ",BYTERANGE=\"\($0)@0\"" } ?? "")])
            + (track.keyURI.map { ["#EXT-X-KEY:METHOD=AES-128,URI=\"\($0)\""] } ?? [])
    }

    /// EXTINF is the segment's measured duration as presented; the target duration holds every EXTINF rounded to the
    /// nearest second; VOD, independent segments, the CMAF initialization in EXT-X-MAP.
    public static func mediaPlaylist(_ track: StreamTrack) -> String {
        // WebVTT segments stand alone; CMAF ones need their initialization.
        var lines = header(track) + (track.kind == .text ? [] : mapAndKey(track))
        for segment in track.segments {
            lines.append("#EXTINF:\(decimal(Double(track.presentedDuration(segment)) / Double(track.timescale), places: 5)),")
            if let offset = segment.offset { lines.append("#EXT-X-BYTERANGE:\(segment.bytes)@\(offset)") }
            lines.append(segment.file)
        }
        return (lines + ["#EXT-X-ENDLIST"]).joined(separator: "\n") + "\n"
    }

    /// Each segment's IDR picture as a byte range of its file (the fragment's header through the picture),
    /// lasting until the next one.
    public static func iFramePlaylist(_ track: StreamTrack) -> String {
        var lines = header(track) + ["#EXT-X-I-FRAMES-ONLY"] + mapAndKey(track)
        for segment in track.segments {
            guard let bytes = segment.keyframeBytes else { continue }
            lines.append("#EXTINF:\(decimal(Double(track.presentedDuration(segment)) / Double(track.timescale), places: 5)),")
            lines.append("#EXT-X-BYTERANGE:\(bytes)@\(segment.offset ?? 0)")
            lines.append(segment.file)
        }
        return (lines + ["#EXT-X-ENDLIST"]).joined(separator: "\n") + "\n"
    }

    private static func header(_ track: StreamTrack) -> [String] {
        ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:\(track.targetDuration)", "#EXT-X-MEDIA-SEQUENCE:0",
                "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS"]
    }

    /// The master playlist: an EXT-X-MEDIA per audio track with LANGUAGE and NAME, then per rung its
    /// variant (BANDWIDTH the measured peak of the rung and its audio together, AVERAGE-BANDWIDTH their
    /// measured average, CODECS of both, RESOLUTION, FRAME-RATE) and its I-frame variant. Rungs go from
    /// the highest average rate down, so the first listed is the best.
    public static func master(_ report: StreamReport) -> String {
        let audio = report.tracks.filter { $0.kind == .audio }
        let video = report.tracks.filter { $0.kind == .video }.sorted { $0.averageBitRate > $1.averageBitRate }
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"]
        // NAME is unique in its group (RFC 8216 4.3.4.1): a language kept twice is "English 2" the second time.
        let audioNames = audio.map { name(of: $0.language ?? "und") }
        for (i, track) in audio.enumerated() {
            let language = track.language ?? "und"
            let earlier = audioNames[..<i].filter { $0 == audioNames[i] }.count
            lines.append("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"\(audioNames[i])\(earlier > 0 ? " \(earlier + 1)" : "")\",LANGUAGE=\"\(language)\","
                         + "DEFAULT=\(i == 0 ? "YES" : "NO"),AUTOSELECT=YES,CHANNELS=\"\(track.channels ?? 2)\",URI=\"\(track.folder)/index.m3u8\"")
        }
        let text = report.tracks.filter { $0.kind == .text }
        for track in text {
            let language = track.language ?? "und"
            lines.append("#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subtitles\",NAME=\"\(name(of: language))\",LANGUAGE=\"\(language)\","
                         + "DEFAULT=NO,AUTOSELECT=YES,FORCED=NO,URI=\"\(track.folder)/index.m3u8\"")
        }
        let audioPeak = audio.map(\.peakBitRate).max() ?? 0, audioAverage = audio.map(\.averageBitRate).max() ?? 0
        let audioCodecs = Set(audio.map(\.codecs)).sorted()
        for track in video {
            var attributes = ["BANDWIDTH=\(track.peakBitRate + audioPeak)", "AVERAGE-BANDWIDTH=\(track.averageBitRate + audioAverage)",
                              "CODECS=\"\(([track.codecs] + audioCodecs).joined(separator: ","))\""]
            if let width = track.width, let height = track.height { attributes.append("RESOLUTION=\(width)x\(height)") }
            if let rate = track.frameRate { attributes.append("FRAME-RATE=\(decimal(Double(rate.numerator) / Double(rate.denominator), places: 3))") }
            if !audio.isEmpty { attributes.append("AUDIO=\"audio\"") }
            if !text.isEmpty { attributes.append("SUBTITLES=\"subtitles\"") }
            attributes.append("CLOSED-CAPTIONS=NONE")
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(track.folder + "/index.m3u8")
        }
        for track in video where hasIFrames(track) {
            // The I-frame playlist's parts: each keyframe's bytes over its segment's time.
            let frames = track.segments.compactMap { s in s.keyframeBytes.map { (duration: s.duration, bytes: $0) } }
            let seconds = Double(frames.reduce(Int64(0)) { $0 + $1.duration }) / Double(track.timescale)
            let average = seconds > 0 ? Int((Double(frames.reduce(0) { $0 + $1.bytes }) * 8 / seconds).rounded(.up)) : 0
            let peak = frames.isEmpty ? 0 : StreamTrack.peak(frames, timescale: track.timescale, target: track.targetDuration)
            var attributes = ["BANDWIDTH=\(peak)", "AVERAGE-BANDWIDTH=\(average)", "CODECS=\"\(track.codecs)\""]
            if let width = track.width, let height = track.height { attributes.append("RESOLUTION=\(width)x\(height)") }
            attributes.append("URI=\"\(track.folder)/iframes.m3u8\"")
            lines.append("#EXT-X-I-FRAME-STREAM-INF:" + attributes.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A static MPD (DASH-IF IOP live profile, which on-demand players read): one video AdaptationSet of
    /// every rung and one audio AdaptationSet per language, each Representation a SegmentTemplate with a
    /// SegmentTimeline in its track's own timescale, numbered as the files are.
    public static func mpd(_ report: StreamReport) -> String {
        let duration = duration(report.duration.seconds)
        let video = report.tracks.filter { $0.kind == .video }.sorted { $0.averageBitRate > $1.averageBitRate }
        let audio = report.tracks.filter { $0.kind == .audio }
        var lines = [#"<?xml version="1.0" encoding="UTF-8"?>"#,
                     #"<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="static" "#
                     + #"mediaPresentationDuration="\#(duration)" minBufferTime="PT2S">"#,
                     #"  <Period id="0" start="PT0S">"#]
        if !video.isEmpty {
            let aligned = sameBoundaries(video)
            let maxWidth = video.compactMap(\.width).max() ?? 0, maxHeight = video.compactMap(\.height).max() ?? 0
            let rate = video.first?.frameRate.map { "\($0.numerator)/\($0.denominator)" } ?? ""
            lines.append(#"    <AdaptationSet id="0" contentType="video" mimeType="video/mp4" segmentAlignment="\#(aligned)" "#
                         + #"startWithSAP="1" maxWidth="\#(maxWidth)" maxHeight="\#(maxHeight)" frameRate="\#(rate)">"#)
            for track in video {
                lines.append(#"      <Representation id="\#(track.folder)" codecs="\#(track.codecs)" bandwidth="\#(track.peakBitRate)" "#
                             + #"width="\#(track.width ?? 0)" height="\#(track.height ?? 0)" sar="1:1">"#)
                lines += template(track)
                lines.append("      </Representation>")
            }
            lines.append("    </AdaptationSet>")
        }
        for (i, track) in audio.enumerated() {
            lines.append(#"    <AdaptationSet id="\#(i + 1)" contentType="audio" mimeType="audio/mp4" lang="\#(track.language ?? "und")" "#
                         + #"segmentAlignment="true" startWithSAP="1">"#)
            lines.append(#"      <Representation id="\#(track.folder)" codecs="\#(track.codecs)" bandwidth="\#(track.peakBitRate)" "#
                         + #"audioSamplingRate="\#(track.sampleRate ?? 48000)">"#)
            lines.append(#"        <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="\#(track.channels ?? 2)"/>"#)
            lines += template(track)
            lines.append("      </Representation>")
            lines.append("    </AdaptationSet>")
        }
        for (i, track) in report.tracks.filter({ $0.kind == .text }).enumerated() {
            // A sidecar WebVTT file (DASH-IF IOP's text), the whole of it.
            lines.append(#"    <AdaptationSet id="\#(audio.count + i + 1)" contentType="text" mimeType="text/vtt" lang="\#(track.language ?? "und")">"#)
            lines.append(#"      <Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle"/>"#)
            lines.append(#"      <Representation id="\#(track.folder)" bandwidth="\#(max(track.averageBitRate, 1))">"#)
            lines.append(#"        <BaseURL>\#(track.folder)/\#(track.initialization)</BaseURL>"#)
            lines.append("      </Representation>")
            lines.append("    </AdaptationSet>")
        }
        return (lines + ["  </Period>", "</MPD>"]).joined(separator: "\n") + "\n"
    }

    /// Where a Representation's segments are: a SegmentTemplate numbered as the files are, or for a single-file
    /// track its BaseURL and a SegmentList of byte ranges; either with a SegmentTimeline in the track's timescale.
    private static func template(_ track: StreamTrack) -> [String] {
        var lines: [String]
        let single = track.initializationBytes.flatMap { bytes in track.segments.first.map { (bytes: bytes, file: $0.file) } }
        if let (initialization, file) = single {
            lines = ["        <BaseURL>\(track.folder)/\(file)</BaseURL>",
                     #"        <SegmentList timescale="\#(track.timescale)" presentationTimeOffset="\#(track.presentationOffset)">"#,
                     #"          <Initialization range="0-\#(initialization - 1)"/>"#, "          <SegmentTimeline>"]
        } else {
            lines = [#"        <SegmentTemplate timescale="\#(track.timescale)" initialization="\#(track.folder)/\#(track.initialization)" "#
                     + #"media="\#(track.folder)/$Number$.m4s" startNumber="1" presentationTimeOffset="\#(track.presentationOffset)">"#, "          <SegmentTimeline>"]
        }
        let list = single != nil
        var i = 0
        let segments = track.segments
        // A SegmentList's timeline has an S per segment, no repeats: GStreamer 1.22's dashdemux2 pairs a
        // repeated S with the wrong SegmentURL (it played the first segment twice and never the last).
        while i < segments.count {
            var repeats = 0
            while !list, i + repeats + 1 < segments.count, segments[i + repeats + 1].duration == segments[i].duration { repeats += 1 }
            lines.append(#"            <S t="\#(segments[i].start)" d="\#(segments[i].duration)"\#(repeats > 0 ? " r=\"\(repeats)\"" : "")/>"#)
            i += repeats + 1
        }
        guard list else { return lines + ["          </SegmentTimeline>", "        </SegmentTemplate>"] }
        lines.append("          </SegmentTimeline>")
        for segment in segments {
            let offset = segment.offset ?? 0
            lines.append(#"          <SegmentURL mediaRange="\#(offset)-\#(offset + segment.bytes - 1)"/>"#)
        }
        return lines + ["        </SegmentList>"]
    }

    /// Whether every rung's segments begin at the same times as presented (each track's edit taken away:
    /// a rung without B-frames has none).
    private static func sameBoundaries(_ tracks: [StreamTrack]) -> Bool {
        let starts = tracks.map { t in t.segments.map { Double($0.start - t.presentationOffset) / Double(t.timescale) } }
        guard let first = starts.first else { return true }
        return starts.allSatisfy { $0.count == first.count && zip($0, first).allSatisfy { abs($0 - $1) < 1e-6 } }
    }

    private static func name(of language: String) -> String {
        Locale(identifier: "en").localizedString(forLanguageCode: language) ?? language
    }

    private static func decimal(_ value: Double, places: Int) -> String { String(format: "%.\(places)f", value) }

    private static func duration(_ seconds: Double) -> String { "PT" + decimal(seconds, places: 3) + "S" }
}
