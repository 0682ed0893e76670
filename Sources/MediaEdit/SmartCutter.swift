import Foundation
import MediaCore
import MediaTime

/// Exact cuts without edit lists (Matroska, or `cuts: smart`): "smart rendering". The frames from a
/// cut to the next keyframe are decoded and re-encoded with the source's codec (H.264 through libx264,
/// HEVC through libx265, VP9 through libvpx, AV1 through libaom; same size, pixel format, profile,
/// colour and level, no B-frames or hidden frames, headers in-band);
/// the rest of the edit is copied. Where an edit ends, its last GOP is copied up to the end when no
/// frame shown before the end needs one after it (B-frames), and re-encoded otherwise. After
/// re-encoded frames the source's parameter sets are repeated in-band at the next copied keyframe
/// (an HEVC CRA there becomes a BLA: a new sequence starts).
///
/// At most one GOP is re-encoded at each end of an edit. Thread-confined.
struct SmartCutter {
    let stream: StreamInfo
    let encoderName: String
    let encoderOptions: [String: String]
    /// The NAL unit length size of H.264 and HEVC (length-prefixed framing); nil for VP9 and AV1.
    let lengthSize: Int?
    let parameterSets: [UInt8]
    let threads: Int
    /// Encoded packets were written since the last copied keyframe: the next one needs the source's
    /// parameter sets (and, for HEVC, a broken link).
    private var afterEncoded = false
    /// The next copied keyframe starts a new sequence (an edit's first, or after encoded packets): an
    /// HEVC CRA there becomes a BLA, so that decoders drop its leading pictures; an H.264 keyframe that
    /// is not an IDR picture (open GOP) becomes one (`H264Splice`).
    private var brokenLink = false
    private var splice: H264Splice?

    /// What one edit needed.
    struct Result {
        var reencoded = 0
        var copied = 0
    }

    /// The cutter for `stream`, or why there can be none (a codec it cannot match).
    static func make(for stream: StreamInfo, settings: ExportSettings) throws -> SmartCutter {
        let profile = stream.profile ?? ""
        var options = ["crf": String(settings.crf), "preset": settings.preset]
        let name: String
        switch stream.codecName {
        case "h264":
            let profiles = ["Baseline": "baseline", "Constrained Baseline": "baseline", "Main": "main", "High": "high",
                            "High 10": "high10", "High 4:2:2": "high422", "High 4:4:4 Predictive": "high444"]
            guard let p = profiles[profile] else { throw unsupported(stream, "its H.264 profile \"\(profile)\"", settings) }
            name = "libx264"
            options["profile"] = p
            options["x264-params"] = "bframes=0:scenecut=0:keyint=infinite:annexb=1:repeat-headers=1"
        case "hevc":
            let profiles = ["Main": "main", "Main 10": "main10"]
            guard let p = profiles[profile] else { throw unsupported(stream, "its HEVC profile \"\(profile)\"", settings) }
            name = "libx265"
            options["profile"] = p
            var params = "bframes=0:scenecut=0:keyint=100000:min-keyint=100000:repeat-headers=1:annexb=1:log-level=error"
            if stream.level > 0 { params += ":level-idc=\(Double(stream.level) / 30)" }
            options["x265-params"] = params
        case "vp9", "av1":
            // Every keyframe of VP9 and AV1 resets the decoder's references: no open GOPs. The encoder
            // takes the profile and bit depth from the decoded frames' pixel format, the colour from
            // their properties; one keyframe per run, no hidden (alternate reference) frames, no lag.
            let profiles = stream.codecName == "vp9" ? ["Profile 0", "Profile 1", "Profile 2", "Profile 3"] : ["Main", "High", "Professional"]
            guard profiles.contains(profile) else { throw unsupported(stream, "its \(stream.codecName.uppercased()) profile \"\(profile)\"", settings) }
            options = ["crf": String(min(max(settings.crf, 0), 63)), "b": "0", "g": "100000", "lag-in-frames": "0", "row-mt": "1"]
            if stream.codecName == "vp9" {
                name = "libvpx-vp9"
                options["deadline"] = "good"
                options["cpu-used"] = "4"
                options["auto-alt-ref"] = "0"
            } else {
                name = "libaom-av1"
                options["usage"] = "realtime"
                options["cpu-used"] = "8"
            }
        default:
            throw unsupported(stream, "\(stream.codecName) video (smart rendering re-encodes H.264, HEVC, VP9 and AV1)", settings)
        }
        if stream.codecName == "vp9" || stream.codecName == "av1" {
            // AV1: the configuration record's sequence header, repeated at the first copied keyframe
            // after re-encoded frames when it carries none (the encoder's differs).
            let sequenceHeader = stream.codecName == "av1" && stream.extradata.count > 4 ? Array(stream.extradata.dropFirst(4)) : []
            return SmartCutter(stream: stream, encoderName: name, encoderOptions: options, lengthSize: nil,
                               parameterSets: sequenceHeader, threads: settings.threads)
        }
        guard let lengthSize = NALUnits.lengthSize(codec: stream.codecName, extradata: stream.extradata) else {
            throw unsupported(stream, "its video has no configuration record (Annex B framing)", settings)
        }
        let sets = NALUnits.parameterSets(codec: stream.codecName, extradata: stream.extradata, lengthSize: lengthSize)
        var cutter = SmartCutter(stream: stream, encoderName: name, encoderOptions: options, lengthSize: lengthSize,
                                 parameterSets: sets, threads: settings.threads)
        if stream.codecName == "h264" { cutter.splice = H264Splice(parameterSets: sets, lengthSize: lengthSize) }
        return cutter
    }

    /// True when an AV1 temporal unit (low-overhead OBUs with sizes) holds a sequence header.
    static func hasSequenceHeader(_ data: [UInt8]) -> Bool {
        var at = 0
        while at < data.count {
            let header = data[at]
            let type = (header >> 3) & 0xF
            if type == 1 { return true }
            var next = at + 1 + (header & 4 != 0 ? 1 : 0)
            guard header & 2 != 0 else { return false } // no size: the rest is this OBU
            var size = 0, shift = 0
            while next < data.count {
                let b = data[next]; next += 1
                size |= Int(b & 0x7F) << shift
                shift += 7
                if b & 0x80 == 0 || shift > 56 { break }
            }
            at = next + size
        }
        return false
    }

    private static func unsupported(_ stream: StreamInfo, _ what: String, _ settings: ExportSettings) -> ExportError {
        if settings.cuts == .smart {
            return ExportError("cannot smart-render a cut between keyframes: \(what) cannot be re-encoded to match; set \"cuts\": \"exact\" with mp4 or mov (an edit list hides the lead-in, nothing re-encoded), or \"keyframe\"")
        }
        return ExportError("cannot cut exactly between keyframes in Matroska: \(what) cannot be re-encoded to match; export to mp4 or mov (edit lists, no re-encoding), or set \"cuts\": \"keyframe\"")
    }

    /// Copies or re-encodes the source range [start, end) of `source`'s video, reading `input` from
    /// `key` on (the caller has positioned it at or before the keyframe). `write` receives each packet
    /// in decoding order, timed in the source stream's time base.
    mutating func cut(input: InputFile, source: ExportSource, key: PassthroughExporter.Keyframe, start: MediaTime,
                      end: MediaTime, write: (inout Packet) throws -> Void) throws -> Result {
        var result = Result()
        brokenLink = true
        splice?.endRun()
        // Decoding leads presentation by this much at keyframes; re-encoded frames (no B-frames) are
        // given decoding times as far behind, so that decoding times stay increasing into copied GOPs.
        let lead = max(source.ticks(key.pts, in: stream) - source.ticks(key.dts, in: stream), 0)
        var run = EncodeRun(cutter: self, lead: lead)
        var packet = Packet()
        var started = false
        var head = key.pts < start
        let decoder: Decoder? = head ? try Decoder(file: input, streamIndex: stream.index, threads: threads) : nil
        // The keyframe that ends the re-encoded head, once read, with the packets after it.
        var nextKey: MediaTime?
        var carried: [PacketBox] = []
        // The current GOP being copied, written when the next keyframe comes (or resolved at the end).
        var pending: [PacketBox] = []
        var dropBefore: MediaTime?

        func encodeDecoded(_ decoder: Decoder, until limit: MediaTime, draining: Bool) throws {
            var frame = Frame()
            if draining { try decoder.sendEndOfStream() }
            while true {
                let r: Decoder.ReceiveResult
                do { r = try decoder.receive(into: &frame) } catch { throw MediaFileError(path: source.path, reason: .undecodable(track: stream.index, codec: stream.codecName, error)) }
                guard r == .frame, let raw = frame.pts else { break }
                let t = source.time(raw, in: stream)
                guard !(t < start), t < limit else { continue }
                try run.encode(&frame, pts: raw, write: write)
                result.reencoded += 1
            }
        }
        func feed(_ decoder: Decoder, _ packet: borrowing Packet, until limit: MediaTime) throws {
            while true {
                let r: Decoder.SendResult
                do { r = try decoder.send(packet) } catch { throw MediaFileError(path: source.path, reason: .undecodable(track: stream.index, codec: stream.codecName, error)) }
                try encodeDecoded(decoder, until: limit, draining: false)
                if r != .full { break }
            }
        }
        // The GOP copied last: decoding context for the next one's leading pictures (open GOPs).
        var context: [PacketBox] = []
        func flushPending() throws {
            for box in pending {
                let kept = PacketBox(); kept.packet.reference(box.packet)
                try copy(&box.packet, source: source, write: write); result.copied += 1
                box.packet.take(from: &kept.packet)
            }
            context = pending
            pending.removeAll()
        }

        while try input.read(into: &packet) == .packet {
            guard packet.streamIndex == stream.index, let (s, sd) = time(packet, in: source) else { continue }
            if !started { guard !(sd < key.dts) else { continue }; started = true }
            guard sd < end else { break }
            if head, let decoder {
                if let k2 = nextKey {
                    try feed(decoder, packet, until: MediaTime.min(k2, end))
                    if k2 < s {
                        // The first picture after the keyframe's leading ones: the head is complete.
                        try encodeDecoded(decoder, until: MediaTime.min(k2, end), draining: true)
                        try run.finish(write: write)
                        afterEncoded = afterEncoded || run.wrote
                        head = false
                        dropBefore = k2
                        pending = carried
                        carried.removeAll()
                        let box = PacketBox(); box.packet.take(from: &packet); pending.append(box)
                    }
                    continue
                }
                if packet.isKeyframe, start < s, s < end {
                    nextKey = s
                    let box = PacketBox(); box.packet.reference(packet); carried.append(box)
                }
                try feed(decoder, packet, until: MediaTime.min(nextKey ?? end, end))
                continue
            }
            // A keyframe shown before the end starts a new GOP; one at or after it may still carry
            // leading pictures shown before the end, so it stays in the last GOP.
            if packet.isKeyframe, s < end, !pending.isEmpty { try flushPending(); dropBefore = nil }
            // A leading picture: re-encoded in the head, or shown before the edit.
            if let d = dropBefore, s < d { continue }
            if s < start { continue }
            let box = PacketBox(); box.packet.take(from: &packet); pending.append(box)
        }

        if head, let decoder {
            try encodeDecoded(decoder, until: MediaTime.min(nextKey ?? end, end), draining: true)
            try run.finish(write: write)
            afterEncoded = afterEncoded || run.wrote
            if let k2 = nextKey { pending = carried.filter { time($0.packet, in: source).map { !($0.pts < k2) } ?? false } }
        }
        try copyLastGOP(pending, after: context, input: input, source: source, start: start, end: end, lead: lead, write: write, result: &result)
        return result
    }

    /// The last GOP. Its packets before the first one shown at or after the end (in decoding order)
    /// need nothing later: copied. Frames shown before the end that come after that packet (B-frames
    /// referencing past the end, leading pictures of a keyframe past the end) are re-encoded, when
    /// they all follow the copied ones; otherwise the whole GOP is.
    private mutating func copyLastGOP(_ pending: [PacketBox], after context: [PacketBox], input: InputFile, source: ExportSource,
                                      start: MediaTime, end: MediaTime, lead: Int64, write: (inout Packet) throws -> Void,
                                      result: inout Result) throws {
        guard !pending.isEmpty else { return }
        let times = pending.map { time($0.packet, in: source)?.pts ?? end }
        let clean = times.firstIndex { !($0 < end) } ?? times.count
        let rest = times[clean...].filter { $0 < end && !($0 < start) }
        let copiedUntil = times[..<clean].max()
        let copyPrefix = rest.isEmpty || copiedUntil.map { last in rest.allSatisfy { last < $0 } } ?? true
        if copyPrefix {
            for box in pending.prefix(clean) {
                let kept = PacketBox(); kept.packet.reference(box.packet)
                try copy(&box.packet, source: source, write: write); result.copied += 1
                box.packet.take(from: &kept.packet)
            }
            if rest.isEmpty { return }
        }
        // Decoded after the GOP before it (whose frames leading pictures may reference).
        let wanted = Set(copyPrefix ? rest : times.filter { $0 < end && !($0 < start) })
        let tail = try Decoder(file: input, streamIndex: stream.index, threads: threads)
        var tailRun = EncodeRun(cutter: self, lead: lead)
        var frame = Frame()
        func encodeWanted() throws {
            // A packet the decoder refuses (damaged) gives no frame, as a player skips it.
            while (try? tail.receive(into: &frame)) == .frame {
                if let raw = frame.pts, wanted.contains(source.time(raw, in: stream)) {
                    try tailRun.encode(&frame, pts: raw, write: write)
                    result.reencoded += 1
                }
            }
        }
        // The GOP before is needed only for the leading pictures of this one's keyframe (open GOP).
        let keyTime = times[0]
        let needsContext = wanted.contains { $0 < keyTime }
        for box in (needsContext ? context : []) + pending {
            while (try? tail.send(box.packet)) == .full { try encodeWanted() }  // as above
            try encodeWanted()
        }
        try? tail.sendEndOfStream()  // draining at the end: nothing more to decode
        try encodeWanted()
        try tailRun.finish(write: write)
        afterEncoded = afterEncoded || tailRun.wrote
    }

    /// A packet's presentation and decoding times in the source's timeline.
    private func time(_ p: borrowing Packet, in source: ExportSource) -> (pts: MediaTime, dts: MediaTime)? {
        guard let raw = p.pts ?? p.dts else { return nil }
        let s = source.time(raw, in: stream)
        return (s, p.dts.map { source.time($0, in: stream) } ?? s)
    }

    /// One frame's duration at the stream's average rate, in its ticks (for frames that state none).
    var frameDuration: Int64 {
        guard let rate = stream.averageFrameRate, rate.numerator > 0 else { return 0 }
        return MediaTime(value: Int64(rate.denominator), timescale: rate.numerator).count(in: stream.timeBase) ?? 0
    }

    /// Writes a copied packet; the first keyframe after re-encoded frames carries the source's
    /// parameter sets again, and one that follows other frames starts a new sequence (an HEVC CRA
    /// becomes a BLA, an H.264 non-IDR keyframe an IDR picture, with the frames after it renumbered).
    private mutating func copy(_ packet: inout Packet, source: ExportSource, write: (inout Packet) throws -> Void) throws {
        do {
            if packet.isKeyframe && (brokenLink || afterEncoded) {
                if stream.codecName == "hevc", let lengthSize { packet.withMutableData { NALUnits.markBrokenLinks($0, lengthSize: lengthSize) } }
                if let idr = try splice?.startSequence(packet.bytes) { packet.replaceData(with: idr) }
                if afterEncoded, !parameterSets.isEmpty, stream.codecName != "av1" || !Self.hasSequenceHeader(packet.bytes) {
                    packet.replaceData(with: parameterSets + packet.bytes)
                }
                afterEncoded = false
                brokenLink = false
            } else if splice?.renumbers == true {
                if let renumbered = try splice?.continueRun(packet.bytes) { packet.replaceData(with: renumbered) }
            } else if splice != nil {
                packet.withBytes { splice?.noteParameterSets($0) }
            }
        } catch let error as H264Splice.Malformed {
            let at = (packet.pts ?? packet.dts).map { Composition.seconds(source.time($0, in: stream)) } ?? "?"
            throw ExportError("cannot join the H.264 frames at \(at) s of \(source.path) to the frames before them: \(error.description); use \"cuts\": \"keyframe\" (pure copying)")
        }
        try write(&packet)
    }

    /// One run of re-encoded frames: its own encoder (made at the first frame, which becomes an IDR
    /// picture carrying its parameter sets), drained at the end.
    struct EncodeRun {
        let cutter: SmartCutter
        let lead: Int64
        var encoder: Encoder?
        var wrote = false
        /// Each frame's duration by presentation time: encoders that buffer frames (libx264, libx265)
        /// give their packets none, and the muxer needs the last one's.
        private var durations: [Int64: Int64] = [:]

        init(cutter: SmartCutter, lead: Int64) { self.cutter = cutter; self.lead = lead }

        mutating func encode(_ frame: inout Frame, pts: Int64, write: (inout Packet) throws -> Void) throws {
            if encoder == nil {
                do {
                    encoder = try Encoder.video(codecName: cutter.encoderName, like: frame, timeBase: cutter.stream.timeBase,
                                                frameRate: cutter.stream.averageFrameRate, level: cutter.stream.codecName == "h264" ? cutter.stream.level : nil,
                                                threads: cutter.threads, options: cutter.encoderOptions)
                } catch {
                    let format = "\(frame.width)x\(frame.height) \(frame.pixelFormatName ?? "?"), \(cutter.stream.profile ?? "no profile")"
                    throw ExportError("\(cutter.encoderName) cannot encode frames like the source's (\(format)) to re-encode those at a cut: \(error); set \"cuts\": \"exact\" with mp4 or mov (nothing re-encoded), or \"keyframe\"")
                }
            }
            frame.setPTS(pts)
            durations[pts] = frame.duration > 0 ? frame.duration : cutter.frameDuration
            while true {
                let r: Encoder.SendResult
                do { r = try encoder!.send(frame) } catch { throw ExportError("\(cutter.encoderName) refused a frame at a cut: \(error)") }
                try drain(write: write)
                if r == .accepted { break }
            }
        }

        mutating func finish(write: (inout Packet) throws -> Void) throws {
            guard let encoder else { return }
            do { try encoder.sendEndOfStream() } catch { throw ExportError("\(cutter.encoderName) failed at a cut: \(error)") }
            try drain(write: write)
            self.encoder = nil
        }

        private mutating func drain(write: (inout Packet) throws -> Void) throws {
            guard let encoder else { return }
            var packet = Packet()
            while true {
                let r: Encoder.ReceiveResult
                do { r = try encoder.receive(into: &packet) } catch { throw ExportError("\(cutter.encoderName) failed at a cut: \(error)") }
                guard r == .packet, let pts = packet.pts else { return }
                if let lengthSize = cutter.lengthSize {
                    packet.replaceData(with: NALUnits.lengthPrefixed(annexB: packet.bytes, lengthSize: lengthSize))
                }
                let duration = durations.removeValue(forKey: pts) ?? packet.duration
                packet.retime(pts: pts, dts: pts - lead, duration: duration, streamIndex: cutter.stream.index)
                try write(&packet)
                wrote = true
            }
        }
    }
}
