import Foundation
import MediaCore
import MediaTime
import QualityModel

extension CheckReport {
    /// Runs every check of `plan` on `path` in one pass over its packets: the first video track's pictures
    /// and every audio track's samples, decoded once. Throws `MediaFileError` naming the file and the problem.
    /// The fidelity check measures each picture against `reference`'s, decoded alongside, paired in order.
    /// `watched`: the checks an export ran as it wrote `path` (`ExportChecks`); when it fed them, the file is not
    /// decoded again: its packets are read only for a spec's bit rates.
    public static func check(path: String, plan: CheckPlan, reference: String? = nil, limits: SafetyLimits = .default, interrupter: Interrupter = Interrupter(),
                             watched: ExportChecks? = nil, progress: (Double) -> Void = { _ in }) throws(MediaFileError) -> CheckReport {
        let file = try InputFile(path: path, limits: limits, interrupter: interrupter)
        let pictures = try plan.fidelity == nil ? nil : reference.map { path throws(MediaFileError) in
            try ReferencePictures(path: path, limits: limits, interrupter: interrupter)
        }
        return try check(file, plan: plan, reference: pictures, watched: watched?.began == true ? watched : nil, progress: progress)
    }

    /// Runs the checks on an opened file from its first packet.
    static func check(_ file: InputFile, plan: CheckPlan, reference: ReferencePictures? = nil, watched: ExportChecks? = nil,
                      progress: (Double) -> Void = { _ in }) throws(MediaFileError) -> CheckReport {
        let started = Date()
        let path = file.path
        let videoStream = plan.needsVideo ? file.streams.first { $0.mediaType == .video && !$0.isAttachedPicture } : nil
        let audioStreams = plan.needsAudio ? file.streams.filter { $0.mediaType == .audio && !$0.isAttachedPicture } : []
        file.discardAll(except: Set(audioStreams.map(\.index) + (videoStream.map { [$0.index] } ?? [])))
        func undecodable(_ stream: StreamInfo, _ error: FFmpegError) -> MediaFileError {
            MediaFileError(path: path, reason: .undecodable(track: stream.index, codec: stream.codecName, error))
        }
        let origin = file.container.startTime.isNumeric ? file.container.startTime : .zero

        var decoders: [Int: Decoder] = [:]
        var pictures: PictureChecks?
        var sounds: [Int: SoundChecks] = [:]
        if let watched {
            do {
                (pictures, sounds) = try watched.finish()
            } catch {
                throw MediaFileError(path: path, reason: .ffmpeg(error as? FFmpegError ?? FFmpegError(code: FFmpegError.invalidArgument.code, operation: "check",
                                                                                                        detail: "\(error)"), while: "checking the export as it was encoded"))
            }
        } else if let v = videoStream {
            decoders[v.index] = try Decoder(file: file, streamIndex: v.index)
            // A constant rate: the stream's rate, which its average is within 1% of (a dropped picture or two moves the average).
            let constant = v.realFrameRate.flatMap { r in
                v.averageFrameRate.flatMap { a in r.numerator > 0 && a.numerator > 0 && abs(a.doubleValue / r.doubleValue - 1) <= 0.01 ? r : nil }
            }
            pictures = PictureChecks(plan: plan, timeBase: v.timeBase, origin: origin.count(in: v.timeBase) ?? 0, frameRate: constant, reference: reference)
        }
        var expected: [Int: Int64] = [:]
        for a in audioStreams where watched == nil {
            decoders[a.index] = try Decoder(file: file, streamIndex: a.index, threads: 1)
            do {
                sounds[a.index] = try SoundChecks(plan: plan, track: a.index + 1, sampleRate: a.sampleRate, channelCount: a.channelCount, layoutName: a.channelLayout)
            } catch {
                throw undecodable(a, error)
            }
        }
        let total = max(file.container.headerDuration.isNumeric ? file.container.headerDuration.seconds : 0, 0)
        var bytes: [Int: Int64] = [:]
        // A reference that fails stops the pass at once: its error, not the checked file's, is the answer.
        // What an export watched is not decoded again: its packets are read for a spec's bit rates alone.
        let bitRates = plan.spec.map { $0.bitRate != nil || $0.video?.bitRate != nil || $0.audio?.bitRate != nil } ?? false
        if watched == nil || bitRates {
            do throws(MediaFileError) {
                try DecodePass.run(file, decoders: decoders, total: total, progress: progress, packet: { bytes[$0.streamIndex, default: 0] += Int64($0.size) }) {
                    decoder, frame throws(FFmpegError) in
                    let index = decoder.stream.index
                    if let pictures, index == videoStream?.index {
                        try pictures.add(frame, pts: frame.pts ?? 0)
                    } else if let sound = sounds[index] {
                        let rate = Rational(1, Int32(clamping: sound.sampleRate))
                        let stamped = frame.pts.flatMap { MediaTime(count: $0, timeBase: decoder.stream.timeBase).count(in: rate) }
                            .map { $0 - (origin.count(in: rate) ?? 0) }
                        // Samples follow one another; a time stamp that jumps by more than half a frame is believed.
                        var position = expected[index] ?? stamped ?? 0
                        if let stamped, (stamped &- position).magnitude > UInt64(frame.sampleCount / 2) { position = stamped }
                        try sound.add(frame, position: position)
                        expected[index] = position + Int64(frame.sampleCount)
                    }
                }
            } catch {
                throw pictures?.referenceFailure ?? error
            }
        }
        var results = pictures?.finish() ?? []
        if videoStream == nil {
            for (name, severity) in [("black", plan.black?.severity), ("freeze", plan.freeze?.severity), ("levels", plan.levels?.severity),
                                     ("interlace", plan.interlace?.severity), ("cadence", plan.cadence?.severity), ("fidelity", plan.fidelity?.severity)] {
                if let severity { results.append(.notApplicable(name, severity, "the file has no video")) }
            }
        }
        var soundSeconds = 0.0
        var audioDurations: [Int: Double] = [:]
        for a in audioStreams {
            guard let sound = sounds[a.index] else { continue }
            do { results += try sound.finish() } catch { throw undecodable(a, error) }
            audioDurations[a.index] = Double(sound.end - sound.first) / Double(sound.sampleRate)
            soundSeconds = max(soundSeconds, Double(sound.end) / Double(sound.sampleRate))
        }
        if audioStreams.isEmpty {
            for (name, severity) in [("silence", plan.silence?.severity), ("clipping", plan.clipping?.severity),
                                     ("channels", plan.channels?.severity), ("loudness", plan.loudness?.severity)] {
                if let severity { results.append(.notApplicable(name, severity, "the file has no audio")) }
            }
        }
        let duration = max(pictures?.duration ?? 0, soundSeconds)
        if let length = plan.length {
            results.append(Self.length(length, duration: duration, frames: pictures?.frames))
        }
        if let spec = plan.spec {
            let measured = SpecCheck.Measured(bytes: bytes, duration: duration, videoDuration: pictures?.duration, audioDurations: audioDurations,
                                              interlaced: pictures.flatMap { $0.frames > 0 ? $0.saidInterlaced : nil })
            results.append(SpecCheck(spec: spec, file: file).result(video: videoStream, audio: audioStreams, measured: measured))
        }
        progress(1)
        return CheckReport(checks: results, duration: duration, frames: pictures?.frames ?? 0, seconds: Date().timeIntervalSince(started))
    }

    /// The duration and picture count against their expected values.
    static func length(_ p: CheckPlan.Length, duration: Double, frames: Int?) -> CheckResult {
        var problems: [String] = [], said: [String] = []
        var thresholds: [String: Double] = [:]
        if let expected = p.duration {
            thresholds["duration"] = expected
            thresholds["durationTolerance"] = p.durationTolerance
            said.append(String(format: "%.3f s", duration))
            if abs(duration - expected) > p.durationTolerance {
                problems.append(String(format: "lasts %.3f s, not %.3f ± %.3f s", duration, expected, p.durationTolerance))
            }
        }
        if let expected = p.frames {
            thresholds["frames"] = Double(expected)
            thresholds["frameTolerance"] = Double(p.frameTolerance)
            if let frames {
                said.append("\(frames) pictures")
                if abs(frames - expected) > p.frameTolerance { problems.append("has \(frames) pictures, not \(expected) ± \(p.frameTolerance)") }
            } else {
                problems.append("has no video: 0 pictures, not \(expected)")
            }
        }
        var figures = ["duration": duration]
        figures["frames"] = frames.map(Double.init)
        return CheckResult(check: "length", severity: p.severity, found: !problems.isEmpty,
                           summary: problems.isEmpty ? said.joined(separator: ", ") : problems.joined(separator: "; "),
                           thresholds: thresholds, figures: figures)
    }
}
