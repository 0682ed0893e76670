import MediaTime

/// The picture sections: `"images"`, `"poster"` and `"storyboard"` (`JobManifest+Pictures.swift`).
extension Walker {
    static let pictureKeys = ["images", "poster", "storyboard", "waveform"]

    mutating func images(_ value: JSONValue) -> JobManifest.ImagesSettings? {
        let p = "$.images"
        guard let o = object(value, p, allowed: ["times", "every", "count", "tolerance", "toleranceBefore", "toleranceAfter",
                                                  "maxWidth", "maxHeight", "format", "quality", "output"]) else { return nil }
        var times: JobManifest.ImageTimes?
        switch (o["times"], o["every"], o["count"]) {
        case (let list?, nil, nil):
            guard case .array(let items) = list, !items.isEmpty else {
                fail("\(p).times", "expected a non-empty array of times in seconds, found \(list.kindName)")
                break
            }
            if items.count > NumberedOutputs.limit { fail("\(p).times", "names \(items.count) times; at most \(NumberedOutputs.limit)"); break }
            let parsed = items.enumerated().compactMap { time($0.element, "\(p).times[\($0.offset)]") }
            if parsed.count == items.count { times = .times(parsed) }
        case (nil, let every?, nil):
            if let t = time(every, "\(p).every", positive: true) {
                if t < MediaTime(value: 1, timescale: 100) { fail("\(p).every", "must be at least 0.01 seconds") } else { times = .every(t) }
            }
        case (nil, nil, let count?):
            if let n = integer(count, "\(p).count", in: 1...NumberedOutputs.limit) { times = .count(n) }
        case (nil, nil, nil):
            fail(p, "needs \"times\" (a list), \"every\" (seconds) or \"count\"")
        default:
            fail(p, "give the times one way: \"times\", \"every\" or \"count\"")
        }
        let tolerance = self.tolerance(o, p)
        let output = path(o["output"], "\(p).output", required: true, output: true)
        let style = self.style(o, p, quality: 0.85, output: output)
        if let output {
            let name = output.split(separator: "/").last.map(String.init) ?? output
            let several: Bool = switch times {
            case .times(let list)?: list.count > 1
            case .count(let n)?: n > 1
            case .every?: true
            case nil: false
            }
            if several && !name.contains("{index}") {
                fail("\(p).output", "several pictures need {index} (1, 2, ...) in the file's name, like \"thumbs/thumb-{index}.\(style.format.fileExtension)\"")
            }
            if output.dropLast(name.count).contains("{index}") { fail("\(p).output", "{index} goes in the file's name, not in a folder's") }
        }
        guard let times, let output else { return nil }
        var settings = JobManifest.ImagesSettings(times: times, output: output)
        (settings.tolerance, settings.style) = (tolerance, style)
        return settings
    }

    mutating func poster(_ value: JSONValue, at p: String = "$.poster") -> JobManifest.PosterSettings? {
        guard let o = object(value, p, allowed: ["at", "tolerance", "toleranceBefore", "toleranceAfter", "maxWidth", "maxHeight",
                                                  "format", "quality", "output"]) else { return nil }
        var at: MediaTime?
        var valid = true
        if let a = o["at"], a != .string("auto") {
            at = time(a, "\(p).at")
            if at == nil { valid = false }
        }
        let tolerance = self.tolerance(o, p)
        if at == nil && (tolerance.before != nil || tolerance.after != nil) && valid {
            fail("\(p).tolerance", "applies to a poster at a time; \"auto\" picks a keyframe")
        }
        let output = path(o["output"], "\(p).output", required: true, output: true)
        let style = self.style(o, p, quality: 0.85, output: output)
        guard let output, valid else { return nil }
        var settings = JobManifest.PosterSettings(at: at, output: output)
        (settings.tolerance, settings.style) = (tolerance, style)
        return settings
    }

    mutating func storyboard(_ value: JSONValue) -> JobManifest.StoryboardSettings? {
        let p = "$.storyboard"
        guard let o = object(value, p, allowed: ["every", "tiles", "tileWidth", "columns", "rows", "format", "quality", "output",
                                                  "chunkSeconds"], hidden: ["part", "join"]) else { return nil }
        let output = path(o["output"], "\(p).output", required: true, output: true)
        if let output, !output.hasSuffix(".vtt") {
            fail("\(p).output", "names the WebVTT file, ending in .vtt (its sheets NAME-1.jpg and on, and NAME.json, go beside it)")
        }
        var every: MediaTime?
        var tiles: Int?
        if o["every"] != nil && o["tiles"] != nil { fail(p, "give \"every\" or \"tiles\", not both") }
        if let e = o["every"], let t = time(e, "\(p).every", positive: true) {
            if t < MediaTime(value: 1, timescale: 10) { fail("\(p).every", "must be at least 0.1 seconds") } else { every = t }
        }
        if let t = o["tiles"] { tiles = integer(t, "\(p).tiles", in: 1...NumberedOutputs.limit) }
        let tileWidth = integer(o["tileWidth"], "\(p).tileWidth", in: 16...3840) ?? 160
        let columns = integer(o["columns"], "\(p).columns", in: 1...100) ?? 10
        let rows = integer(o["rows"], "\(p).rows", in: 1...100) ?? 10
        let format = enumeration(o["format"], "\(p).format", PictureFormat.self) ?? .jpeg
        let quality = unitFraction(o["quality"], "\(p).quality") ?? 0.7
        var chunk: MediaTime?
        if let value = o["chunkSeconds"], let t = time(value, "\(p).chunkSeconds", positive: true) {
            if Self.chunkSecondsRange.contains(t.seconds) { chunk = t } else { fail("\(p).chunkSeconds", "must be between 2 and 3600 seconds") }
        }
        let part = o["part"].flatMap { frameRange($0, "\(p).part") }
        var join: [JobManifest.JoinedChunk] = []
        if let value = o["join"] {
            if case .array(let items) = value, !items.isEmpty {
                for (i, item) in items.enumerated() {
                    let q = "\(p).join[\(i)]"
                    guard let c = object(item, q, allowed: ["output", "tiles", "job", "attempts"]) else { continue }
                    let chunkOutput = path(c["output"], "\(q).output", required: true)
                    let tiles = c["tiles"].flatMap { frameRange($0, "\(q).tiles") }
                    if c["tiles"] == nil { fail("\(q).tiles", "is required") }
                    let job = integer(c["job"], "\(q).job", in: 1...Int.max)
                    let attempts = integer(c["attempts"], "\(q).attempts", in: 0...1000)
                    if let chunkOutput, let tiles {
                        if let last = join.last, last.frames.upperBound != tiles.lowerBound {
                            fail("\(q).tiles", "begins at tile \(tiles.lowerBound), but the part before ends at \(last.frames.upperBound)")
                        }
                        join.append(JobManifest.JoinedChunk(output: chunkOutput, frames: tiles, job: job.map(Int64.init), attempts: attempts))
                    }
                }
                if join.first.map({ $0.frames.lowerBound != 0 }) == true { fail("\(p).join[0].tiles", "must begin at tile 0") }
            } else {
                fail("\(p).join", "expected a non-empty array of parts ({\"output\", \"tiles\"})")
            }
        }
        if part != nil && !join.isEmpty { fail("\(p).part", "a join writes every tile; give \"part\" or \"join\", not both") }
        if chunk != nil && part != nil { fail("\(p).chunkSeconds", "a range of tiles is one part already; give \"chunkSeconds\" or \"part\", not both") }
        guard let output, output.hasSuffix(".vtt") else { return nil }
        var settings = JobManifest.StoryboardSettings(output: output)
        (settings.chunkSeconds, settings.part, settings.join) = (chunk, part, join)
        (settings.every, settings.tiles, settings.tileWidth, settings.columns, settings.rows) = (every, tiles, tileWidth, columns, rows)
        (settings.format, settings.quality) = (format, quality)
        return settings
    }

    mutating func waveform(_ value: JSONValue) -> JobManifest.WaveformSettings? {
        let p = "$.waveform"
        guard let o = object(value, p, allowed: ["width", "height", "output", "peaks"]) else { return nil }
        let width = integer(o["width"], "\(p).width", in: 16...16_384) ?? 1800
        let height = integer(o["height"], "\(p).height", in: 16...4096) ?? 140
        let output = path(o["output"], "\(p).output", required: true, output: true)
        if let output, !output.lowercased().hasSuffix(".png") && !output.lowercased().hasSuffix(".svg") {
            fail("\(p).output", "names a .png or an .svg file (the picture's format comes from it)")
        }
        let peaks = path(o["peaks"], "\(p).peaks", output: true)
        if let peaks, !peaks.lowercased().hasSuffix(".json") { fail("\(p).peaks", "names a .json file (audiowaveform's peaks format)") }
        guard let output, output.lowercased().hasSuffix(".png") || output.lowercased().hasSuffix(".svg") else { return nil }
        var settings = JobManifest.WaveformSettings(output: output)
        (settings.width, settings.height, settings.peaks) = (width, height, peaks)
        return settings
    }

    /// `scan.images`: a picture of the frame where each code was first seen.
    mutating func scanImages(_ value: JSONValue) -> JobManifest.ScanImages? {
        let p = "$.scan.images"
        guard let o = object(value, p, allowed: ["maxWidth", "maxHeight", "format", "quality", "output"]) else { return nil }
        let output = path(o["output"], "\(p).output", required: true, output: true)
        let style = self.style(o, p, quality: 0.85, output: output)
        guard let output else { return nil }
        let name = output.split(separator: "/").last.map(String.init) ?? output
        guard name.contains("{index}"), !output.dropLast(name.count).contains("{index}") else {
            fail("\(p).output", "needs {index} in the file's name (the code's place in the report, from 1), like \"codes/code-{index}.jpg\"")
            return nil
        }
        var images = JobManifest.ScanImages(output: output)
        images.style = style
        return images
    }

    /// `"tolerance"` (both sides) or `"toleranceBefore"` and `"toleranceAfter"`; none: any distance.
    mutating func tolerance(_ o: [String: JSONValue], _ p: String) -> JobManifest.PictureTolerance {
        if o["tolerance"] != nil && (o["toleranceBefore"] != nil || o["toleranceAfter"] != nil) {
            fail("\(p).tolerance", "give \"tolerance\" (both sides) or \"toleranceBefore\" and \"toleranceAfter\", not both")
        }
        if let both = o["tolerance"] {
            let t = time(both, "\(p).tolerance")
            return JobManifest.PictureTolerance(before: t, after: t)
        }
        return JobManifest.PictureTolerance(before: time(o["toleranceBefore"], "\(p).toleranceBefore"),
                                            after: time(o["toleranceAfter"], "\(p).toleranceAfter"))
    }

    /// A picture's size and encoding. Its format is the output's (from the name's extension); a `"format"`
    /// that disagrees is refused, naming both.
    mutating func style(_ o: [String: JSONValue], _ p: String, quality: Double, output: String?) -> JobManifest.PictureStyle {
        var style = JobManifest.PictureStyle()
        style.maxWidth = integer(o["maxWidth"], "\(p).maxWidth", in: 0...16_384) ?? 0
        style.maxHeight = integer(o["maxHeight"], "\(p).maxHeight", in: 0...16_384) ?? 0
        let named = enumeration(o["format"], "\(p).format", PictureFormat.self)
        let fromName = output.flatMap { PictureFormat(fileName: $0) }
        if let output, fromName == nil {
            fail("\(p).output", "\"\(output)\" must end in .jpg, .jpeg, .png or .webp: the picture's format comes from its name")
        }
        if let named, let fromName, named != fromName, let output {
            fail("\(p).format", "is \"\(named.rawValue)\", but the output \"\(output)\" names a \(fromName.rawValue.uppercased()) file; leave \"format\" out or make the two agree")
        }
        style.format = fromName ?? named ?? .jpeg
        style.quality = unitFraction(o["quality"], "\(p).quality") ?? quality
        return style
    }

    /// A number from 0 to 1.
    mutating func unitFraction(_ value: JSONValue?, _ path: String) -> Double? {
        guard let d = fraction(value, path) else { return nil }
        guard d >= 0 && d <= 1 else { fail(path, "\(value?.numberText ?? "") is outside 0...1"); return nil }
        return d
    }

    /// A storyboard made in parts is a job of its own: nothing else to split or to join.
    mutating func checkChunkedStoryboard(_ o: [String: JSONValue], _ storyboard: JobManifest.StoryboardSettings?) {
        guard let storyboard, storyboard.chunkSeconds != nil || storyboard.part != nil || !storyboard.join.isEmpty else { return }
        for key in ["export", "stream", "scan", "poster", "images", "waveform"] where o[key] != nil {
            fail("$.storyboard.chunkSeconds", "a storyboard made in parts is a job of its own: move \"\(key)\" to another job")
            return
        }
    }

    /// Pictures are of one whole input: `"input"`, not pieces (`"edits"`) or a retimed composition.
    mutating func checkPictureInput(_ o: [String: JSONValue]) {
        guard let section = Self.pictureKeys.first(where: { o[$0] != nil }) else { return }
        if o["edits"] != nil {
            fail("$.\(section)", "pictures are of one whole input: give \"input\", not \"edits\" (for pictures of an edited export, make them of its output: \"input\": \"job:KEY#output\")")
        } else if o["scale"] != nil {
            fail("$.\(section)", "pictures are of the input as it is, not retimed: make them of the export's output in a job of their own (\"input\": \"job:KEY#output\")")
        }
    }
}

extension Walker {
    /// Numbered outputs (`{index}` patterns) may not name the same files as each other or as a fixed output.
    mutating func checkPatterns(images: JobManifest.ImagesSettings?, storyboard: JobManifest.StoryboardSettings?,
                                scanImages: JobManifest.ScanImages?, fixed: [(String, String)]) {
        // Fixed outputs under one name (identities catch only files that exist).
        for (i, (jsonPath, file)) in fixed.enumerated() where ["$.images", "$.poster", "$.storyboard", "$.export.poster", "$.waveform"].contains(where: jsonPath.hasPrefix) {
            if let other = fixed[..<i].first(where: { $0.1 == file }) { fail(jsonPath, "is the same file as \(other.0) (\(file))") }
        }
        var patterns: [(String, String)] = []
        if let images, images.output.contains("{index}") { patterns.append(("$.images.output", images.output)) }
        if let storyboard { patterns.append(("$.storyboard.output", storyboard.sheetPattern)) }
        if let codes = scanImages { patterns.append(("$.scan.images.output", codes.output)) }
        for (i, (jsonPath, pattern)) in patterns.enumerated() {
            if let other = patterns[..<i].first(where: { $0.1 == pattern }) {
                fail(jsonPath, "its files (\(pattern)) are the same as \(other.0)'s; choose another name")
            }
            for (otherPath, file) in fixed where otherPath != jsonPath && NumberedOutputs.matches(file, pattern: pattern) {
                fail(jsonPath, "\(file) (\(otherPath)) is one of its files (\(pattern)); choose another name")
            }
        }
    }
}
