import Foundation
import MediaCore
import MediaTime

/// Pictures of a movie at given times, with AVAssetImageGenerator's semantics.
///
/// - Times are asset times: seconds from the video track's first frame.
/// - `toleranceBefore` and `toleranceAfter` bound how far the picture's time (`actualTime`) may be from the
///   time asked for. Zero on both sides gives the frame shown at that exact time (the last frame whose
///   time is at or before it), decoded from the keyframe before it. Infinite, the default, gives the
///   keyframe nearest the time (from the demuxer's index), decoding that frame alone.
/// - `maximumSize` fits the picture in a box (0 for a side: no bound), keeping the display aspect: the
///   sample aspect ratio of anamorphic video applied, and with `appliesPreferredTrackTransform` the
///   track's rotation (a phone's portrait clip gives portrait pictures). Pictures are never enlarged.
/// - Colours are read with the source's own matrix and range (BT.601, 709 or 2020; limited or full).
///   HDR (PQ, HLG) is refused, saying so: its tone mapping to SDR is not done.
/// - Each time gets its own result: a time past the end fails alone, saying so.
///
/// Thread-confined: one generator reads one file through one decoder.
public final class AssetImageGenerator {
    public struct Settings: Sendable, Hashable {
        public var toleranceBefore: MediaTime = .positiveInfinity
        public var toleranceAfter: MediaTime = .positiveInfinity
        /// The box a picture fits in; 0 for a side leaves it unbounded.
        public var maximumWidth = 0
        public var maximumHeight = 0
        public var appliesPreferredTrackTransform = true
        public var format: StillImageFormat = .jpeg
        /// From 0 to 1 (JPEG, WebP).
        public var quality = 0.85

        public init() {}
    }

    public struct Image: Sendable {
        public var requestedTime: MediaTime
        /// The time of the frame the picture is of.
        public var actualTime: MediaTime
        public var width: Int
        public var height: Int
        public var format: StillImageFormat
        public var data: [UInt8]
    }

    public let path: String
    public let settings: Settings
    /// The video track's display size (sample aspect and rotation applied) and the size pictures have.
    public let displaySize: (width: Int, height: Int)
    public let imageSize: (width: Int, height: Int)
    /// How long the track is (its header's duration); nil when it does not say.
    public let duration: MediaTime?
    /// Clockwise quarter turns applied to each picture (0 to 3).
    public let quarterTurns: Int

    private let file: InputFile
    private let stream: StreamInfo
    private let decoder: Decoder
    private let origin: MediaTime
    /// The keyframes' times (ticks), when the demuxer's index lists every one of them: an MP4's or MOV's
    /// sample table, Matroska's cues, an AVI's index. Empty otherwise (Matroska without cues, MPEG-TS,
    /// FLV, fragmented MP4: their index holds only what was read so far), and then the packets around
    /// each time are read to find the keyframes beside it.
    private let keyframes: [Int64]
    /// The keyframes either side of the time asked, read from the packets (when `keyframes` is empty).
    private var keyBefore = Packet()
    private var keyAfter = Packet()
    private let converter = PictureConverter()
    private var packet = Packet()
    private var frame = Frame()
    private var held = Frame()
    /// Where decoding stands: the last frame decoded since the last seek (nil right after a seek), and
    /// the keyframe that seek went to.
    private var lastDecoded: Int64?
    private var seekedTo: Int64?
    private var atEnd = false
    /// The time of the frame in `held`.
    private var heldPTS: Int64?
    /// A frame decoded past the time asked (it told where to stop), given first to the next request.
    private var pending = Frame()
    private var pendingPTS: Int64?
    /// The packet read last was refused while the decoder was full: it is sent again.
    private var resend = false
    /// The decoder is drained once it has taken a packet (a keyframe wanted alone).
    private var drainAfterOnePacket = false
    /// H.264 frames nothing refers to, and the time (ticks) before which such a frame is not decoded at
    /// all: it cannot be the one wanted (it ends a frame or more before the window).
    private let disposable: DisposableFrames?
    private var skipEndingBefore: Int64?

    public init(path: String, settings: Settings = Settings(), limits: SafetyLimits = .default,
                interrupter: Interrupter = Interrupter()) throws(ImageGenerationError) {
        self.path = path
        self.settings = settings
        do {
            file = try InputFile(path: path, limits: limits, interrupter: interrupter)
        } catch {
            throw .of(error)
        }
        guard let video = file.streams.first(where: { $0.mediaType == .video && !$0.isAttachedPicture && $0.width > 0 }) else {
            throw .noVideo(path: path)
        }
        stream = video
        do {
            decoder = try Decoder(file: file, streamIndex: video.index, threads: 0)
        } catch {
            throw .of(error)
        }
        file.discardAll(except: [video.index])
        disposable = DisposableFrames(video)
        origin = video.startTime.isNumeric ? video.startTime : .zero
        let header = video.headerDuration.isNumeric && video.headerDuration > .zero ? video.headerDuration
            : file.container.headerDuration.isNumeric && file.container.headerDuration > .zero ? file.container.headerDuration : nil
        duration = header
        keyframes = Self.indexedKeyframes(file, video, duration: header)
        let shown = video.shown(turned: settings.appliesPreferredTrackTransform)
        (displaySize, quarterTurns) = ((shown.width, shown.height), shown.quarterTurns)
        imageSize = Self.fit(width: shown.width, height: shown.height, maximumWidth: settings.maximumWidth, maximumHeight: settings.maximumHeight)
    }

    /// Every keyframe's time from the demuxer's index, or none when the index may miss some. Matroska reads
    /// its cues at the first seek, so one is made first. An index is trusted when it comes from a sample
    /// table (MP4, MOV: an entry for each of the track's frames), or from Matroska's cues or an AVI's index
    /// and reaches the track's end (no gap after its last keyframe longer than its longest gap).
    private static func indexedKeyframes(_ file: InputFile, _ video: StreamInfo, duration: MediaTime?) -> [Int64] {
        let start = (video.startTime.isNumeric ? video.startTime : .zero).count(in: video.timeBase, rounding: .down) ?? 0
        try? file.seek(stream: video.index, toKeyframeBefore: start)  // a file that cannot seek has no cues to read: its index is judged as it is
        // The index holds decoding times; a keyframe is shown later by the stream's reordering delay,
        // which the first frame's time (the stream's start) against the first decoding time gives.
        guard let index = file.index(of: video.index), let firstDecode = index.timestamps.min() else { return [] }
        let keyframes = index.keyframes.map { $0 + max(0, start - firstDecode) }
        let format = file.container.formatName
        let sampleTable = format.hasPrefix("mov,") && video.headerFrameCount > 0 && index.timestamps.count >= video.headerFrameCount
        if sampleTable { return keyframes }
        // Other demuxers index what they read while probing (MPEG-TS: a few packets at each end, each
        // flagged a keyframe), which says nothing of the rest.
        guard format.hasPrefix("matroska") || format == "avi", keyframes.count >= 2, let last = keyframes.last,
              let end = duration.flatMap({ ($0 + (video.startTime.isNumeric ? video.startTime : .zero)).count(in: video.timeBase, rounding: .up) })
        else { return [] }
        let longestGap = zip(keyframes, keyframes.dropFirst()).map { $1 - $0 }.max() ?? 0
        guard last + longestGap >= end else { return [] }
        return listsEveryKeyframe(keyframes, file, video, from: start) ? keyframes : []
    }

    /// Whether an index lists every keyframe of the stretch it opens with: its first three intervals, read
    /// packet by packet. A muxer may index only a keyframe every so many seconds (GStreamer's
    /// `min-index-interval`, mkvmerge's `--cues`): a keyframe flagged there that the index lacks says so.
    private static func listsEveryKeyframe(_ keyframes: [Int64], _ file: InputFile, _ video: StreamInfo, from start: Int64) -> Bool {
        let listed = Set(keyframes)
        let until = keyframes[min(3, keyframes.count - 1)]
        var packet = Packet()
        do {
            try file.seek(stream: video.index, toKeyframeBefore: start)
            var read = 0
            while read < 5000, try file.read(into: &packet) == .packet {
                guard packet.streamIndex == video.index else { continue }
                read += 1
                guard let shown = packet.pts ?? packet.dts else { continue }
                if packet.isKeyframe && !listed.contains(shown) { return false }
                if let decoded = packet.dts ?? packet.pts, decoded > until { break }
            }
        } catch {
            return false  // unread, the index is not trusted: the packets around each time are read instead
        }
        return true
    }

    /// `width` x `height` made to fit the box (0: no bound on that side), the aspect kept, never enlarged.
    static func fit(width: Int, height: Int, maximumWidth: Int, maximumHeight: Int) -> (width: Int, height: Int) {
        var scale = 1.0
        if maximumWidth > 0 { scale = min(scale, Double(maximumWidth) / Double(width)) }
        if maximumHeight > 0 { scale = min(scale, Double(maximumHeight) / Double(height)) }
        return (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
    }

    /// A picture for each time, in the order asked (each its own result). Times are visited in
    /// ascending order, so that a decode from one keyframe serves the times after it.
    public func images(at times: [MediaTime], progress: (Int) -> Void = { _ in }) -> [Result<Image, ImageGenerationError>] {
        var results = [Result<Image, ImageGenerationError>?](repeating: nil, count: times.count)
        let order = times.indices.sorted { a, b in times[a] < times[b] }
        for (done, i) in order.enumerated() {
            results[i] = Result { () throws(ImageGenerationError) -> Image in try image(at: times[i]) }
            progress(done + 1)
        }
        return results.map { $0! }
    }

    /// The picture at `time`, or why there is none.
    public func image(at time: MediaTime) throws(ImageGenerationError) -> Image {
        guard time.isNumeric, !(time < .zero) else { throw .invalidTime(time) }
        if let duration, duration < time { throw .pastEnd(requested: time, duration: duration) }
        let actual = try decodeFrame(at: time)
        return try picture(requested: time, actual: actual)
    }

    // MARK: - Finding the frame

    private func ticks(_ time: MediaTime) -> Int64? { (time + origin).count(in: stream.timeBase, rounding: .down) }

    private func time(ofTicks ticks: Int64) -> MediaTime { MediaTime(count: ticks, timeBase: stream.timeBase) - origin }

    /// Leaves in `held` the frame for `time` within the tolerances; returns its time. A frame is within
    /// them when its own time is; when none is (a window narrower than a frame: tolerance 0), the frame
    /// shown at `time` is the one.
    private func decodeFrame(at time: MediaTime, within window: (before: MediaTime, after: MediaTime)? = nil) throws(ImageGenerationError) -> MediaTime {
        guard let target = ticks(time) else { throw .invalidTime(time) }
        let (toleranceBefore, toleranceAfter) = window ?? (settings.toleranceBefore, settings.toleranceAfter)
        let low = toleranceBefore.isNumeric ? ticks(time - toleranceBefore) : nil
        let high = toleranceAfter.isNumeric ? ticks(time + toleranceAfter) : nil
        func inWindow(_ start: Int64) -> Bool { !(low.map { start < $0 } ?? false) && !(high.map { start > $0 } ?? false) }
        if keyframes.isEmpty {
            // No list of keyframes: the packets around the time tell where they are.
            let scan = try scanKeyframes(around: target)
            let nearest = [scan.before, scan.after].compactMap { $0 }.filter(inWindow).min(by: { abs($0 - target) < abs($1 - target) })
            if let nearest, let first = try (nearest == scan.before ? decodeAlone(keyBefore) : decodeAlone(keyAfter)), inWindow(first) {
                try keep()
                return self.time(ofTicks: first)
            }
            try seek(to: scan.seekPoint)
            // Each time scans again, which moves the reading on: no decode continues from one time to the next.
            seekedTo = nil
            return try decodeOn(to: target, toleranceBefore: toleranceBefore, low: low, inWindow: inWindow)
        }
        // A keyframe within the tolerances, nearest the time: that frame alone is decoded. The window holds
        // the time, so the nearest one inside it is a neighbour of the time (the keyframes are in order).
        let after = keyframeIndex(after: target)
        let neighbours = [after > 0 ? keyframes[after - 1] : nil, after < keyframes.count ? keyframes[after] : nil].compactMap { $0 }
        if let nearest = neighbours.filter(inWindow).min(by: { abs($0 - target) < abs($1 - target) }) {
            try seek(to: nearest)
            // The keyframe's packet alone, then the decoder drained: a decoder on several threads otherwise
            // holds its first frame back until as many packets as it has threads were sent (frames decoded
            // for nothing). Drained, it cannot go on: the next request seeks.
            let first = try { () throws(ImageGenerationError) -> Int64? in
                drainAfterOnePacket = true
                defer { drainAfterOnePacket = false }
                return try nextFrame()
            }()
            if let first, inWindow(first) {
                try keep()
                return self.time(ofTicks: first)
            }
            if first == nil {
                // No timed frame from the keyframe alone: where packets carry no presentation time (AVI with
                // B-frames) the decoder times a frame by the packets after it. Decoded on from the keyframe,
                // the keyframe's is the first frame (unless its time moves it out of the window).
                try seek(to: nearest)
                let actual = try decodeOn(to: target, toleranceBefore: toleranceBefore, low: low, inWindow: inWindow)
                if let held = heldPTS, inWindow(held) { return actual }
            }
        }
        // Otherwise decoded from the keyframe at or before the time, up to the frame shown at it, or with a
        // tolerance before the time, to the first frame inside the window.
        guard !keyframes.isEmpty else {
            try seek(to: target)
            return try decodeOn(to: target, toleranceBefore: toleranceBefore, low: low, inWindow: inWindow)
        }
        var k = max(0, after - 1)
        while true {
            // Decoding on from where it stands serves a later time of the same stretch without a seek.
            let canContinue = seekedTo == keyframes[k] && (lastDecoded.map { $0 <= target } ?? false)
            if !canContinue { try seek(to: keyframes[k]) }
            let actual = try decodeOn(to: target, toleranceBefore: toleranceBefore, low: low, inWindow: inWindow)
            // A keyframe indexed by its decoding time (AVI's packets carry no other) is shown a little
            // later: when its first frame comes after the time and outside the window, the frame shown at
            // the time belongs to the stretch before.
            guard k > 0, let held = heldPTS, held > target, !inWindow(held), lastDecoded == held else { return actual }
            k -= 1
        }
    }

    /// Decodes from where the reading stands up to the frame shown at `target` (ticks), or with a tolerance
    /// before it, to the first frame inside the window; leaves it in `held` and returns its time.
    private func decodeOn(to target: Int64, toleranceBefore: MediaTime, low: Int64?,
                          inWindow: (Int64) -> Bool) throws(ImageGenerationError) -> MediaTime {
        // Continuing, the frame held is the last one at or before the time so far.
        var best: Int64? = heldPTS.flatMap { $0 <= target ? $0 : nil }
        // Frames nothing refers to that end before the window are not decoded (for an exact picture in the
        // middle of a GOP, about half of what lies before it).
        skipEndingBefore = low
        defer { skipEndingBefore = nil }
        while let pts = try nextFrame() {
            if pts <= target {
                try keep()
                best = pts
                // Inside a tolerance before the time: good enough (AVFoundation's latitude; it saves decoding).
                if toleranceBefore > .zero, inWindow(pts) { return self.time(ofTicks: pts) }
                // Shown at the time: it lasts past it.
                if frame.duration > 0, target < pts + frame.duration { return self.time(ofTicks: pts) }
            } else {
                // The first frame after the time: the one before it is the one shown at the time. This one
                // is kept for a later time the same decode reaches.
                pending.take(&frame)
                pendingPTS = pts
                if let best, inWindow(best) || !inWindow(pts) { return self.time(ofTicks: best) }
                // Nothing before it (a time before the first frame), or only frames before the window.
                if inWindow(pts) || best == nil {
                    frame.take(&pending)
                    pendingPTS = nil
                    try keep()
                    return self.time(ofTicks: pts)
                }
            }
        }
        // The end: the last frame is shown until the movie ends.
        if let best { return self.time(ofTicks: best) }
        let time = self.time(ofTicks: target)
        throw .pastEnd(requested: time, duration: duration ?? time)
    }

    /// The keyframes either side of `target` (ticks), read from the packets around it and kept in
    /// `keyBefore` and `keyAfter`; and where a seek goes to decode from the one before. A demuxer without
    /// an index (MPEG-TS) seeks to somewhere near the time, not to a keyframe before it: the seek steps
    /// back (1 s, 2 s, 4 s... up to 64 s) until a keyframe at or before the time is read, or it went a second
    /// before the start. The reading stops once no later keyframe can be nearer than the one before, or 30 s past
    /// the time when none is found (a stream with no keyframe flagged: decoded from the seek then).
    private func scanKeyframes(around target: Int64) throws(ImageGenerationError) -> (before: Int64?, after: Int64?, seekPoint: Int64) {
        let second = MediaTime(value: 1, timescale: 1).count(in: stream.timeBase, rounding: .up) ?? 1
        let start = ticks(.zero) ?? 0
        var back: Int64 = 0
        while true {
            let seekPoint = target - back
            try seek(to: seekPoint)
            var before: Int64?, after: Int64?
            keyBefore.reset()
            keyAfter.reset()
            do {
                reading: while try file.read(into: &packet) == .packet {
                    guard packet.streamIndex == stream.index else { continue }
                    try file.checkInterrupt()
                    let decoded = packet.dts ?? packet.pts
                    if packet.isKeyframe, let shown = packet.pts ?? packet.dts {
                        if shown <= target {
                            before = shown
                            keyBefore.reference(packet)
                        } else {
                            after = shown
                            keyAfter.reference(packet)
                            break reading
                        }
                    }
                    // Packets come in decoding order, and a frame is shown at or after it is decoded.
                    if let decoded {
                        // (Saturating: a time near the largest tick count must not trap.)
                        let twice = target.multipliedReportingOverflow(by: 2)
                        if let before, decoded > (twice.overflow ? .max : twice.partialValue - before) { break reading }
                        let farEnough = target.addingReportingOverflow(30 * second)
                        if decoded > (farEnough.overflow ? .max : farEnough.partialValue) { break reading }
                    }
                }
            } catch {
                throw .of(error)
            }
            // A seek a second before the stream's start reads from its beginning (a seek just before it may
            // not: MPEG-TS seeks by decoding times, which come before the times shown).
            if before != nil || seekPoint < start - second || back >= 64 * second {
                return (before, after, seekPoint)
            }
            back = max(second, 2 * back)
        }
    }

    /// Decodes the keyframe in `key` alone; its frame's time, or nil when it gives none (a damaged packet).
    /// The reading is left where it was: the next request seeks.
    private func decodeAlone(_ key: borrowing Packet) throws(ImageGenerationError) -> Int64? {
        decoder.flush()
        (seekedTo, lastDecoded, heldPTS, pendingPTS, resend, atEnd) = (nil, nil, nil, nil, false, true)
        pending.reset()
        do {
            guard try decoder.send(key) == .accepted else { return nil }
            try decoder.sendEndOfStream()
            while try decoder.receive(into: &frame) == .frame {
                if let pts = frame.pts {
                    lastDecoded = pts
                    return pts
                }
            }
        } catch {
            // A damaged keyframe: the caller decodes from the seek instead.
        }
        return nil
    }

    /// The index of the first keyframe after `ticks` (binary search: a long movie has tens of thousands).
    private func keyframeIndex(after ticks: Int64) -> Int {
        var low = 0, high = keyframes.count
        while low < high {
            let mid = (low + high) / 2
            if keyframes[mid] <= ticks { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func seek(to ticks: Int64) throws(ImageGenerationError) {
        do {
            try file.seek(stream: stream.index, toKeyframeBefore: ticks)
        } catch {
            throw .of(error)
        }
        decoder.flush()
        seekedTo = ticks
        lastDecoded = nil
        atEnd = false
        resend = false
        heldPTS = nil
        pending.reset()
        pendingPTS = nil
    }

    /// Decodes on to the next frame (in `frame`); its time in ticks, nil at the end.
    private func nextFrame() throws(ImageGenerationError) -> Int64? {
        if let pts = pendingPTS {
            frame.take(&pending)
            pendingPTS = nil
            return pts
        }
        do {
            while true {
                do {
                    switch try decoder.receive(into: &frame) {
                    case .frame:
                        guard let pts = frame.pts else { continue }
                        lastDecoded = pts
                        return pts
                    case .endOfStream:
                        return nil
                    case .needsInput:
                        break
                    }
                } catch {
                    // A frame the decoder could not make (damaged data): more input, and the next ones still come.
                }
                if resend {
                    resend = false
                } else {
                    try file.checkInterrupt()
                    guard try file.read(into: &packet) == .packet else {
                        try decoder.sendEndOfStream()
                        atEnd = true
                        continue
                    }
                    guard packet.streamIndex == stream.index else { continue }
                    if let limit = skipEndingBefore, let pts = packet.pts, packet.duration > 0,
                       pts + 2 * packet.duration <= limit, disposable?.isDisposable(packet) == true {
                        continue
                    }
                }
                do {
                    if try decoder.send(packet) == .full { resend = true }
                } catch {
                    // A damaged packet is skipped, as a player skips it.
                    continue
                }
                if drainAfterOnePacket && !resend {
                    try decoder.sendEndOfStream()
                    atEnd = true
                    // Nothing decodes on from here: a later time of this stretch seeks again.
                    seekedTo = nil
                }
            }
        } catch let error as MediaFileError {
            throw .file(error)
        } catch {
            throw .unreadable("\(path): \(error)")
        }
    }

    private func keep() throws(ImageGenerationError) {
        do { try held.reference(frame) } catch { throw .unreadable("\(path): \(error)") }
        heldPTS = lastDecoded
    }

    // MARK: - Making the picture

    private func picture(requested: MediaTime, actual: MediaTime) throws(ImageGenerationError) -> Image {
        // A JPEG of a picture that is not turned: straight to its samples, one conversion instead of two.
        var rgb = Frame()
        if settings.format == .jpeg && quarterTurns == 0 {
            try checkDynamicRange()
            do { try converter.jpegSamples(held, width: imageSize.width, height: imageSize.height, into: &rgb) } catch {
                throw .encoding("\(path): the picture at \(actual.seconds) s could not be made: \(error)")
            }
        } else {
            rgb = try pixels(actual)
        }
        do {
            let data = try StillImageEncoder.encode(rgb, as: settings.format, quality: settings.quality, converter: converter)
            return Image(requestedTime: requested, actualTime: actual, width: imageSize.width, height: imageSize.height,
                         format: settings.format, data: data)
        } catch {
            throw .encoding("\(path): the picture at \(actual.seconds) s could not be made: \(error)")
        }
    }

    /// The picture at `time` as packed RGB (rgb24) of `imageSize`, for pictures made of pictures
    /// (storyboards); its frame's time. `window`, when given, replaces the settings' tolerances.
    public func pixels(at time: MediaTime, within window: (before: MediaTime, after: MediaTime)? = nil,
                       into rgb: inout Frame) throws(ImageGenerationError) -> MediaTime {
        guard time.isNumeric, !(time < .zero) else { throw .invalidTime(time) }
        if let duration, duration < time { throw .pastEnd(requested: time, duration: duration) }
        let actual = try decodeFrame(at: time, within: window)
        rgb = try pixels(actual)
        return actual
    }

    /// The frame held, sized, turned and in RGB.
    private func checkDynamicRange() throws(ImageGenerationError) {
        let colour = held.colour
        if colour.transfer != .sdr {
            throw .highDynamicRange(transfer: colour.transfer == .pq ? "PQ (HDR10)" : "HLG")
        }
    }

    private func pixels(_ actual: MediaTime) throws(ImageGenerationError) -> Frame {
        try checkDynamicRange()
        // Scaled before it is turned: a quarter turn swaps the sides.
        let turned = quarterTurns % 2 == 1
        let (w, h) = turned ? (imageSize.height, imageSize.width) : (imageSize.width, imageSize.height)
        do {
            var rgb = Frame()
            try converter.rgb(held, width: w, height: h, into: &rgb)
            if quarterTurns != 0 { rgb = try Self.turn(rgb, quarterTurns: quarterTurns) }
            return rgb
        } catch {
            throw .encoding("\(path): the picture at \(actual.seconds) s could not be made: \(error)")
        }
    }

    /// An RGB picture turned clockwise by `quarterTurns` quarter turns.
    static func turn(_ source: borrowing Frame, quarterTurns: Int) throws(FFmpegError) -> Frame {
        let w = source.width, h = source.height
        let (ow, oh) = quarterTurns % 2 == 1 ? (h, w) : (w, h)
        var out = try Frame(width: ow, height: oh, pixelFormat: "rgb24")
        _ = source.withPlane(0) { src, srcStride in
            out.withMutablePlane(0) { dst, dstStride in
                for y in 0..<h {
                    let row = src + y * srcStride
                    for x in 0..<w {
                        let (tx, ty) = switch quarterTurns {
                        case 1: (h - 1 - y, x)
                        case 2: (w - 1 - x, h - 1 - y)
                        default: (y, w - 1 - x)
                        }
                        let p = row + x * 3, q = dst + ty * dstStride + tx * 3
                        q[0] = p[0]; q[1] = p[1]; q[2] = p[2]
                    }
                }
            }
        }
        return out
    }
}
