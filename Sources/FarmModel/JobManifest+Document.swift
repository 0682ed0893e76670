import MediaTime

/// A manifest written back as a document: the JSON the validator reads into this same value
/// (`ManifestValidator.validate(manifest.document, context:)` in the manifest's folder gives it back).
/// Every manifest the farm derives (a chunk, a join, default chunking, sources put in) is built as a
/// value (`JobManifest+Derived.swift`) and written here, once. Paths are written as they are held:
/// absolute, or the asset, object or job result a source names; times as exact fractions ("1001/30000");
/// defaults that change nothing are left out, so a derived manifest reads as a person would write it.
extension JobManifest {
    public var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("version", .number(String(version))), ("name", .string(name))]
        if let whole = wholeInput { members.append(("input", .string(whole))) } else { members.append(("edits", .array(edits.map(\.document)))) }
        if !scale.isEmpty { members.append(("scale", .array(scale.map(\.document)))) }
        if audio != AudioSettings() { members.append(("audio", .object([("timePitch", .string(audio.timePitch.rawValue))]))) }
        if let scan { members.append(("scan", scan.document)) }
        if let export { members.append(("export", export.document)) }
        if let stream { members.append(("stream", stream.document)) }
        if let images { members.append(("images", images.document)) }
        if let poster { members.append(("poster", poster.document)) }
        if let storyboard { members.append(("storyboard", storyboard.document)) }
        if let waveform { members.append(("waveform", waveform.document)) }
        if let checks { members.append(("checks", checks.document)) }
        if let report { members.append(("report", .string(report))) }
        if overwrite { members.append(("overwrite", .bool(true))) }
        if !after.isEmpty { members.append(("after", .array(after.map(\.document)))) }
        if afterPolicy != .success { members.append(("afterPolicy", .string(afterPolicy.rawValue))) }
        if !requires.isEmpty { members.append(("requires", .array(requires.map(JSONValue.string)))) }
        if !notify.isEmpty { members.append(("notify", .array(notify.map { .string($0.text) }))) }
        if let reuse { members.append(("reuse", .bool(reuse))) }
        return .object(members)
    }

    /// The one source read whole from its start, given as `"input"`.
    var wholeInput: String? {
        guard edits.count == 1, edits[0].path == "$.input", edits[0].start == .zero, edits[0].duration == nil else { return nil }
        return edits[0].source
    }
}

extension MediaTime {
    /// Exact, as a manifest gives a time: whole seconds as a number, anything else as a fraction ("5/2").
    var document: JSONValue {
        let t = reduced
        return t.timescale == 1 ? .number(String(t.value)) : .string("\(t.value)/\(t.timescale)")
    }
}

extension JobReference {
    /// An id as a number, a unique key as a string (as `"after"` takes them).
    var document: JSONValue {
        switch self {
        case .id(let id): .number(String(id))
        case .key(let key): .string(key)
        }
    }
}

extension JSONValue {
    /// A number as Swift writes a Double: the shortest text that reads back as the same value.
    static func decimal(_ value: Double) -> JSONValue { .number("\(value)") }
    static func whole(_ value: Int) -> JSONValue { .number(String(value)) }
    /// `[first, end]`, the end excluded.
    static func range(_ range: Range<Int>) -> JSONValue { .array([.whole(range.lowerBound), .whole(range.upperBound)]) }
}

extension JobManifest.Edit {
    var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("source", .string(source))]
        if start != .zero { members.append(("start", start.document)) }
        if let duration { members.append(("duration", duration.document)) }
        return .object(members)
    }
}

extension JobManifest.ScaleRange {
    var document: JSONValue { .object([("start", start.document), ("duration", duration.document), ("toDuration", toDuration.document)]) }
}

extension JobManifest.ScanSettings {
    var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("symbologies", .array(symbologies.map(JSONValue.string)))]
        if let r = regionOfInterest {
            members.append(("regionOfInterest", .object([("x", .decimal(r.x)), ("y", .decimal(r.y)), ("width", .decimal(r.width)), ("height", .decimal(r.height))])))
        }
        if interval != .zero { members.append(("interval", interval.document)) }
        if maxCodesPerFrame != 64 { members.append(("maxCodesPerFrame", .whole(maxCodesPerFrame))) }
        if let images { members.append(("images", .object([("output", .string(images.output))] + images.style.members))) }
        return .object(members)
    }
}

extension JobManifest.ExportSettings {
    var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("mode", .string(mode.rawValue)), ("output", .string(output)), ("fileType", .string(fileType.rawValue))]
        if mode == .constantFrameRate, let frameDuration { members.append(("frameDuration", frameDuration.document)) }
        var video: [(key: String, value: JSONValue)] = []
        if self.video.crf != 20 { video.append(("crf", .whole(self.video.crf))) }
        if self.video.preset != "veryfast" { video.append(("preset", .string(self.video.preset))) }
        if self.video.threads != 0 { video.append(("threads", .whole(self.video.threads))) }
        if !video.isEmpty { members.append(("video", .object(video))) }
        var audio: [(key: String, value: JSONValue)] = []
        if self.audio.policy != .auto { audio.append(("policy", .string(self.audio.policy.rawValue))) }
        audio += self.audio.tracks.members
        if self.audio.bitrate != 128_000 { audio.append(("bitrate", .whole(self.audio.bitrate))) }
        if let loudness = self.audio.loudness { audio.append(("loudness", loudness.document)) }
        if !audio.isEmpty { members.append(("audio", .object(audio))) }
        if !subtitleLanguages.isEmpty { members.append(("subtitles", .object([("languages", .array(subtitleLanguages.map(JSONValue.string)))]))) }
        // The validator's default is on for mp4 and mov, and Matroska has none to turn on.
        if fileType != .mkv, !faststart { members.append(("faststart", .bool(false))) }
        if mode == .passthrough, cuts != .exact { members.append(("cuts", .string(cuts.rawValue))) }
        members += chunking.members
        if let poster { members.append(("poster", poster.document)) }
        return .object(members)
    }
}

extension JobManifest.LoudnessSettings {
    var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if measure { members.append(("measure", .bool(true))) }
        if let standard { members.append(("standard", .string(standard.rawValue))) }
        if let target { members.append(("target", .decimal(target))) }
        if let truePeak { members.append(("truePeak", .decimal(truePeak))) }
        return .object(members)
    }
}

extension JobManifest.Chunking {
    /// The members of an export or a package that say how it is chunked.
    var members: [(key: String, value: JSONValue)] {
        var members: [(key: String, value: JSONValue)] = []
        if let duration { members.append(("chunkSeconds", duration.document)) }
        if let above { members.append(("chunkAbove", above.document)) }
        if let frames { members.append(("frames", .range(frames))) }
        if !join.isEmpty { members.append(("join", .array(join.map { $0.document(rangeKey: "frames") }))) }
        return members
    }
}

extension JobManifest.JoinedChunk {
    /// A chunk's frames (an export's) or tiles (a storyboard's part) under `rangeKey`.
    func document(rangeKey: String) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("output", .string(output)), (rangeKey, .range(frames))]
        if let job { members.append(("job", .number(String(job)))) }
        if let attempts { members.append(("attempts", .whole(attempts))) }
        return .object(members)
    }
}

extension JobManifest.PictureStyle {
    /// The style's members of a picture section: the format is its output's extension, so it is not written.
    var members: [(key: String, value: JSONValue)] {
        var members: [(key: String, value: JSONValue)] = []
        if maxWidth != 0 { members.append(("maxWidth", .whole(maxWidth))) }
        if maxHeight != 0 { members.append(("maxHeight", .whole(maxHeight))) }
        if quality != 0.85 { members.append(("quality", .decimal(quality))) }
        return members
    }
}

extension JobManifest.PictureTolerance {
    var members: [(key: String, value: JSONValue)] {
        var members: [(key: String, value: JSONValue)] = []
        if let before { members.append(("toleranceBefore", before.document)) }
        if let after { members.append(("toleranceAfter", after.document)) }
        return members
    }
}

extension JobManifest.ImagesSettings {
    var document: JSONValue {
        let when: (key: String, value: JSONValue) = switch times {
        case .times(let list): ("times", .array(list.map(\.document)))
        case .every(let t): ("every", t.document)
        case .count(let n): ("count", .whole(n))
        }
        return .object([when] + tolerance.members + style.members + [("output", .string(output))])
    }
}

extension JobManifest.PosterSettings {
    var document: JSONValue {
        .object([("at", at?.document ?? .string("auto"))] + tolerance.members + style.members + [("output", .string(output))])
    }
}

extension JobManifest.StoryboardSettings {
    var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let every { members.append(("every", every.document)) }
        if let tiles { members.append(("tiles", .whole(tiles))) }
        if tileWidth != 160 { members.append(("tileWidth", .whole(tileWidth))) }
        if columns != 10 { members.append(("columns", .whole(columns))) }
        if rows != 10 { members.append(("rows", .whole(rows))) }
        if format != .jpeg { members.append(("format", .string(format.rawValue))) }
        if quality != 0.7 { members.append(("quality", .decimal(quality))) }
        members.append(("output", .string(output)))
        if let chunkSeconds { members.append(("chunkSeconds", chunkSeconds.document)) }
        if let part { members.append(("part", .range(part))) }
        if !join.isEmpty { members.append(("join", .array(join.map { $0.document(rangeKey: "tiles") }))) }
        return .object(members)
    }
}

extension JobManifest.WaveformSettings {
    var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if width != 1800 { members.append(("width", .whole(width))) }
        if height != 140 { members.append(("height", .whole(height))) }
        members.append(("output", .string(output)))
        if let peaks { members.append(("peaks", .string(peaks))) }
        return .object(members)
    }
}
