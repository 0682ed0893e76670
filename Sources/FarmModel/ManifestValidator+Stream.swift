import MediaTime

/// `"stream"` in a manifest (`JobManifest.StreamSettings`).
extension Walker {
    /// `"stream"` of the manifest's members, which may not come with `"export"`.
    mutating func stream(in o: [String: JSONValue]) -> JobManifest.StreamSettings? {
        if o["stream"] != nil && o["export"] != nil {
            fail("$.stream", "a job makes a movie (\"export\") or a package (\"stream\"), not both: submit a job for each")
        }
        var stream: JobManifest.StreamSettings?
        if let value = o["stream"] { stream = self.stream(value) }
        if stream?.mode == .passthrough, o["edits"] != nil || o["scale"] != nil {
            fail("$.stream.mode", "a passthrough package copies one whole \"input\": edits and scaled ranges need its frames encoded (leave out \"mode\")")
        }
        return stream
    }

    mutating func stream(_ value: JSONValue) -> JobManifest.StreamSettings? {
        let p = "$.stream"
        guard let o = object(value, p, allowed: ["output", "mode", "formats", "container", "encryption", "singleFile", "segmentSeconds", "frameRate", "frameDuration", "video", "audio", "subtitles"]
                                                + Self.chunkingKeys) else { return nil }
        let output = streamFolder(o["output"], "\(p).output")
        let container = enumeration(o["container"], "\(p).container", StreamContainer.self) ?? .cmaf
        var formats = container.defaultFormats
        if let list = o["formats"] {
            if case .array(let items) = list, !items.isEmpty {
                formats = items.enumerated().compactMap { enumeration($1, "\(p).formats[\($0)]", StreamFormat.self) }
                formats = StreamFormat.allCases.filter(formats.contains)
            } else {
                fail("\(p).formats", "expected a list of presentations like [\"hls\", \"dash\"], found \(list.kindName == "an array" ? "an empty list" : list.kindName)")
            }
            if container == .ts && formats.contains(.dash) {
                fail("\(p).formats", "an MPEG-TS package is HLS only (DASH here reads CMAF): leave out \"dash\", or \"container\" to make CMAF, which both read")
            }
        }
        let encryption = o["encryption"].flatMap { streamEncryption($0, "\(p).encryption") }
        if o["encryption"] != nil && container != .ts {
            fail("\(p).encryption", "AES-128 encrypts MPEG-TS segments: add \"container\": \"ts\" (over CMAF, players disagree on whether the "
                 + "initialization is encrypted: GStreamer and Chromium decrypt it too)")
        }
        var segment = MediaTime(value: 6, timescale: 1)
        if let t = time(o["segmentSeconds"], "\(p).segmentSeconds", positive: true) {
            if t < MediaTime(value: 1, timescale: 10) || t > MediaTime(value: 60, timescale: 1) {
                fail("\(p).segmentSeconds", "\(MediaTime.formatSeconds(t.seconds)) s is outside 0.1...60 (Apple's HLS authoring specification asks for 6)")
            } else { segment = t }
        }
        let mode = enumeration(o["mode"], "\(p).mode", StreamMode.self) ?? .ladder
        if mode == .passthrough {
            // Nothing is encoded: what would say how is refused, not ignored.
            for key in ["video", "frameRate", "frameDuration"] + Self.chunkingKeys where o[key] != nil {
                fail("\(p).\(key)", "a passthrough package copies the source's video as it is (its size, rate and keyframes), and is quick enough not to be chunked: "
                     + "leave out \"\(key)\", or \"mode\" to encode a ladder")
            }
        }
        let frameDuration = streamFrameDuration(o, p)
        let video = mode == .passthrough ? JobManifest.StreamVideo(rungs: []) : o["video"].flatMap { streamVideo($0, "\(p).video") }
        for (i, rung) in (video?.rungs ?? []).enumerated() where rung.codec != "h264" && container != .cmaf {
            fail("\(p).video.rungs[\(i)].codec", "an \(RungCodecNames.name(rung.codec)) rung is packaged in CMAF only (Apple's HLS authoring specification "
                 + "asks fMP4 of HEVC, and FFmpeg's MPEG-TS muxer carries no AV1): leave out \"container\", or make the rung H.264")
        }
        if o["video"] == nil && mode == .ladder {
            fail("\(p).video", "is required: a package needs its ladder (\"video\": {\"rungs\": [{\"height\": 720, \"bitrate\": 3000000}]}), or \"mode\": \"passthrough\" to copy the source's")
        }
        var audio = JobManifest.StreamAudio()
        if let a = o["audio"], let ao = object(a, "\(p).audio", allowed: ["bitrate", "channels", "language", "languages", "tracks"]) {
            for key in ["bitrate", "channels"] where mode == .passthrough && ao[key] != nil {
                fail("\(p).audio.\(key)", "a passthrough package copies the source's AAC as it is: leave out \"\(key)\", or \"mode\" to encode")
            }
            audio.bitrate = integer(ao["bitrate"], "\(p).audio.bitrate", in: 16_000...512_000) ?? audio.bitrate
            audio.channels = integer(ao["channels"], "\(p).audio.channels", in: 0...8) ?? audio.channels
            if [3, 7].contains(audio.channels) {
                fail("\(p).audio.channels", "must be one of AAC's channel configurations: 1, 2, 4, 5, 6 or 8 (or 0, the source's own); "
                     + "\(audio.channels) channels have none, and many players refuse them")
            }
            audio.language = languageTag(ao["language"], "\(p).audio.language")
            audio.tracks = audioTracks(ao, "\(p).audio", package: true)
            if audio.language != nil && ![.default, .none].contains(audio.tracks) {
                fail("\(p).audio.language", "labels the one default audio track: leave it out with \"languages\" or \"tracks\": \"all\" (each track is labelled by its own)")
            }
        }
        let subtitles = subtitleLanguages(o, p)
        let chunking = chunking(o, at: p)
        let singleFile = boolean(o["singleFile"], "\(p).singleFile") ?? false
        for key in Self.chunkingKeys where singleFile && o[key] != nil {
            fail("\(p).\(key)", "a single-file package is made whole (its chunks would be copied into one file at the join): leave out \"\(key)\" or \"singleFile\"")
        }
        // Every object of a package is named under its prefix: the longest of their names must fit S3's keys.
        if let output, PathRules.isObject(output), PathRules.objectKey(output).utf8.count > Self.longestPackagePrefix {
            fail("\(p).output", "the prefix is \(PathRules.objectKey(output).utf8.count) bytes long: the package's objects are named under it, and S3's keys hold "
                 + "1,024 bytes, so a package's prefix holds at most \(Self.longestPackagePrefix)")
        } else if let output, PathRules.isObject(output), chunking.duration != nil,
                  PathRules.objectKey(output).utf8.count > Self.longestPackagePrefix - Self.chunkPrefixGrowth {
            fail("\(p).chunkSeconds", "the prefix is \(PathRules.objectKey(output).utf8.count) bytes long: a package made in chunks names its chunks' objects "
                 + "under a longer one beside it (.NAME.chunks-TAG/chunk-NNNN), so its prefix holds at most \(Self.longestPackagePrefix - Self.chunkPrefixGrowth) "
                 + "bytes: leave out \"chunkSeconds\", or name a shorter prefix")
        }
        guard let output, let video else { return nil }
        var settings = JobManifest.StreamSettings(output: output, video: video)
        (settings.chunking, settings.mode) = (chunking, mode)
        (settings.formats, settings.segmentDuration, settings.frameDuration, settings.audio) = (formats, segment, frameDuration, audio)
        (settings.container, settings.encryption, settings.singleFile) = (container, encryption, singleFile)
        settings.subtitleLanguages = subtitles
        return settings
    }

    /// `"encryption": {"method": "aes-128", "keyFile": "/keys/show.key", "keyURI": "https://keys.example.com/show.key"}`.
    private mutating func streamEncryption(_ value: JSONValue, _ p: String) -> JobManifest.StreamEncryption? {
        guard let o = object(value, p, allowed: ["method", "keyFile", "keyURI"]) else { return nil }
        if let method = string(o["method"], "\(p).method"), method.lowercased() != "aes-128" {
            let cenc = ["sample-aes", "cenc", "cbcs", "cens", "cbc1"].contains(method.lowercased())
            fail("\(p).method", "\"\(UserText.printable(method))\" is not one the farm writes\(cenc ? " (FFmpeg 5.1's muxers here write no SAMPLE-AES or CENC)" : ""): use \"aes-128\"")
        }
        var keyFile: String?
        if let raw = string(o["keyFile"], "\(p).keyFile", required: true) {
            if PathRules.isObject(raw) || JobOutputReference.parse(raw) != nil || AssetID.reference(raw) != nil {
                fail("\(p).keyFile", "a key file is a path on the worker's host, not an object, an asset or another job's result")
            } else {
                keyFile = PathRules.resolve(raw, against: context.baseDirectory)
            }
        }
        var keyURI: String?
        if let uri = string(o["keyURI"], "\(p).keyURI", required: true) {
            // Holds what the engine's SegmentEncryption refuses (a quote, any line break) and more: no run fails on what was accepted.
            if uri.count > 2048 || uri.contains(where: { $0 == "\"" || $0.isNewline || $0.unicodeScalars.contains { $0.properties.generalCategory == .control } }) {
                fail("\(p).keyURI", "must be a URI of at most 2048 characters with no quote or control character (it is written into the playlists)")
            } else {
                keyURI = uri
            }
        }
        guard let keyFile, let keyURI else { return nil }
        return JobManifest.StreamEncryption(keyFile: keyFile, keyURI: keyURI)
    }

    /// The longest prefix of a package in object storage, in bytes: S3's 1,024 less room for the longest name
    /// of its files (`subtitles-LANGUAGE/index.m3u8` with a tag of up to 35 characters, `.mediafarm-package.json`).
    static let longestPackagePrefix = 1024 - 64

    /// How much longer a chunk's prefix is than its package's: `/NAME` becomes `/.NAME.chunks-TAG/chunk-NNNN`
    /// (a tag of 10 characters, a chunk number of up to 6 digits).
    static let chunkPrefixGrowth = 32

    /// Which audio tracks an `audio` object keeps: `"tracks": "default" | "all"` or `"languages"`, not both;
    /// a package's may say `"tracks": "none"` (an export's `"policy": "drop"` says it there).
    mutating func audioTracks(_ o: [String: JSONValue], _ p: String, package: Bool = false) -> AudioTracks {
        enum Kept: String, CaseIterable { case `default`, all }
        if o["tracks"] == .string("none") {
            guard package else {
                fail("\(p).tracks", "\"none\" is a package's: an export without audio says \"policy\": \"drop\"")
                return .default
            }
            if let other = ["languages", "language", "bitrate", "channels"].first(where: { o[$0] != nil }) {
                fail("\(p).\(other)", "a package without audio (\"tracks\": \"none\") has no \"\(other)\": leave one of them out")
            }
            return .none
        }
        // A package's refusal names all three ("none" was taken above).
        enum PackageKept: String, CaseIterable { case `default`, all, none }
        let kept = package ? enumeration(o["tracks"], "\(p).tracks", PackageKept.self).flatMap { Kept(rawValue: $0.rawValue) }
            : enumeration(o["tracks"], "\(p).tracks", Kept.self)
        let languages = languageList(o["languages"], "\(p).languages")
        if o["tracks"] != nil && o["languages"] != nil {
            fail("\(p).tracks", "give \"tracks\" (\"default\" or \"all\") or \"languages\" (a keep list), not both")
        }
        if kept == .all { return .all }
        return languages.isEmpty ? .default : .languages(languages)
    }

    /// `subtitles.languages` of a package or an export: the text subtitle tracks to keep.
    mutating func subtitleLanguages(_ o: [String: JSONValue], _ p: String) -> [String] {
        guard let t = o["subtitles"], let to = object(t, "\(p).subtitles", allowed: ["languages"]) else { return [] }
        if to["languages"] == nil { fail("\(p).subtitles.languages", "is required: the text subtitle tracks to keep, like [\"en\", \"fr\"]") }
        return languageList(to["languages"], "\(p).subtitles.languages")
    }

    /// A keep list of 1 to 16 languages, each named once.
    mutating func languageList(_ value: JSONValue?, _ p: String) -> [String] {
        switch value {
        case nil: return []
        case .array(let items)? where (1...16).contains(items.count):
            let languages = items.enumerated().compactMap { languageTag($1, "\(p)[\($0)]") }
            if Set(languages.map { $0.lowercased() }).count != languages.count { fail(p, "names a language twice") }
            return languages
        case let other?:
            fail(p, "expected a list of 1 to 16 languages like [\"en\", \"fr\"], found \(other.kindName)")
            return []
        }
    }

    /// A BCP 47 language tag, as the playlists carry it.
    private mutating func languageTag(_ value: JSONValue?, _ p: String) -> String? {
        guard let language = string(value, p) else { return nil }
        if language.range(of: "^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*\\z", options: .regularExpression) != nil, language.count <= 35 { return language }
        fail(p, "\"\(UserText.printable(language))\" is not a language tag like \"en\", \"fra\" or \"pt-BR\"")
        return nil
    }

    /// The package's place under the output roots: a folder, or an object prefix (`s3://BUCKET/PREFIX`, its files objects under it); a trailing "/" left out.
    private mutating func streamFolder(_ value: JSONValue?, _ p: String) -> String? {
        if case .string(let raw)? = value, raw.hasSuffix("/") {
            return path(.string(String(raw.dropLast(raw.count > 1 ? 1 : 0))), p, required: true, output: true)
        }
        return path(value, p, required: true, output: true)
    }

    private mutating func streamFrameDuration(_ o: [String: JSONValue], _ p: String) -> MediaTime? {
        switch (o["frameRate"], o["frameDuration"]) {
        case (.some, .some): fail("\(p).frameDuration", "give \"frameRate\" or \"frameDuration\", not both")
        case (let r?, nil):
            guard let rate = rate(r, "\(p).frameRate") else { return nil }
            if rate.doubleValue < 1 || rate.doubleValue > 120 { fail("\(p).frameRate", "must be between 1 and 120 frames per second") } else { return rate.period }
        case (nil, let d?):
            guard let t = time(d, "\(p).frameDuration", positive: true) else { return nil }
            if t > MediaTime(value: 1, timescale: 1) || t < MediaTime(value: 1, timescale: 120) { fail("\(p).frameDuration", "must be between 1/120 and 1 second") } else { return t }
        case (nil, nil): break
        }
        return nil
    }

    private mutating func streamVideo(_ value: JSONValue, _ p: String) -> JobManifest.StreamVideo? {
        guard let o = object(value, p, allowed: ["rungs", "larger", "preset", "threads"]) else { return nil }
        var rungs: [JobManifest.StreamRung] = []
        switch o["rungs"] {
        case nil: fail("\(p).rungs", "is required: the ladder, for example [{\"height\": 720, \"bitrate\": 3000000}, {\"height\": 360, \"bitrate\": 800000}]")
        case .array(let items)?:
            if items.isEmpty || items.count > 12 { fail("\(p).rungs", "has \(items.count) rungs; a ladder has 1 to 12") }
            rungs = items.enumerated().compactMap { streamRung($1, "\(p).rungs[\($0)]") }
        case let other?: fail("\(p).rungs", "expected a list of rungs, found \(other.kindName)")
        }
        var video = JobManifest.StreamVideo(rungs: rungs)
        video.larger = enumeration(o["larger"], "\(p).larger", LargerRungPolicy.self) ?? .refuse
        if let preset = string(o["preset"], "\(p).preset") {
            let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]
            if presets.contains(preset) { video.preset = preset }
            else { fail("\(p).preset", "\"\(UserText.printable(preset))\" is not one of \(presets.joined(separator: ", "))\(Suggestion.hint(preset, in: presets))") }
        }
        video.threads = integer(o["threads"], "\(p).threads", in: 0...64) ?? 0
        return rungs.isEmpty ? nil : video
    }

    private mutating func streamRung(_ value: JSONValue, _ p: String) -> JobManifest.StreamRung? {
        guard let o = object(value, p, allowed: ["width", "height", "bitrate", "maxBitrate", "bufferSize", "codec", "profile", "level"]) else { return nil }
        func side(_ key: String) -> Int? {
            guard let n = integer(o[key], "\(p).\(key)", in: 2...8192) else { return nil }
            if n % 2 != 0 { fail("\(p).\(key)", "\(n) is odd: 4:2:0 pictures need even sizes") }
            return n
        }
        let width = side("width"), height = side("height")
        if o["width"] == nil && o["height"] == nil { fail(p, "needs a \"height\" (its width follows the source's aspect), a \"width\", or both") }
        let bitrate = integer(o["bitrate"], "\(p).bitrate", in: 16_000...500_000_000)
        if o["bitrate"] == nil { fail("\(p).bitrate", "is required: the rung's target bit rate in bits per second (3000000 for 3 Mbit/s)") }
        let maxBitrate = integer(o["maxBitrate"], "\(p).maxBitrate", in: 16_000...1_000_000_000)
        if let maxBitrate, let bitrate, maxBitrate < bitrate { fail("\(p).maxBitrate", "\(maxBitrate) is below the rung's bitrate \(bitrate)") }
        let bufferSize = integer(o["bufferSize"], "\(p).bufferSize", in: 16_000...2_000_000_000)
        var codec = "h264"
        if let name = string(o["codec"], "\(p).codec") {
            if RungCodecNames.codecs.contains(name) { codec = name }
            else { fail("\(p).codec", "\"\(UserText.printable(name))\" is not one of \(RungCodecNames.codecs.joined(separator: ", "))\(Suggestion.hint(name, in: RungCodecNames.codecs))") }
        }
        let codecName = RungCodecNames.name(codec), levels = RungCodecNames.levels(codec), profiles = RungCodecNames.profiles(codec)
        var level: Int?
        if let raw = o["level"] {
            let text: String? = switch raw { case .string(let s): s; case .number(let n): n; default: nil }
            if let text, let l = RungCodecNames.level(text, codec: codec) { level = l }
            else { fail("\(p).level", "\(raw.numberText) is not an \(codecName) level; one of \(levels.joined(separator: ", "))") }
        }
        var profile = profiles[0]
        if let name = string(o["profile"], "\(p).profile") {
            if profiles.contains(name) { profile = name }
            else { fail("\(p).profile", "\"\(UserText.printable(name))\" is not one of \(codecName)'s: \(profiles.joined(separator: ", "))\(Suggestion.hint(name, in: profiles))") }
        }
        guard let bitrate, width != nil || height != nil else { return nil }
        var rung = JobManifest.StreamRung(width: width, height: height, bitrate: bitrate)
        (rung.maxBitrate, rung.bufferSize, rung.codec, rung.profile, rung.level) = (maxBitrate, bufferSize, codec, profile, level)
        return rung
    }
}
