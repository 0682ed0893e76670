import MediaTime

/// `"export"` in a manifest (`JobManifest.ExportSettings`): how a composition becomes a movie.
extension Walker {
    mutating func export(_ value: JSONValue) -> JobManifest.ExportSettings? {
        let p = "$.export"
        guard let o = object(value, p, allowed: ["mode", "output", "fileType", "frameRate", "frameDuration", "video", "audio", "faststart", "cuts",
                                                         "subtitles", "chunkSeconds", "chunkAbove", "poster"], hidden: ["frames", "join"]) else { return nil }
        let mode = enumeration(o["mode"], "\(p).mode", ExportMode.self, required: true)
        let output = path(o["output"], "\(p).output", required: true, output: true)
        var fileType: ContainerType?
        if o["fileType"] != nil {
            fileType = enumeration(o["fileType"], "\(p).fileType", ContainerType.self)
        } else if let output {
            let ext = output.split(separator: "/").last.flatMap { $0.contains(".") ? $0.split(separator: ".").last : nil }.map(String.init) ?? ""
            fileType = ContainerType(fileExtension: ext)
            if fileType == nil { fail("\(p).output", "cannot tell the container from \".\(ext)\": use .mp4, .mov or .mkv, or set \"fileType\"") }
        }

        var frameDuration: MediaTime?
        switch (o["frameRate"], o["frameDuration"]) {
        case (.some, .some): fail("\(p).frameDuration", "give \"frameRate\" or \"frameDuration\", not both")
        case (let r?, nil):
            if let rate = rate(r, "\(p).frameRate") {
                if rate.doubleValue < 1 || rate.doubleValue > 240 { fail("\(p).frameRate", "must be between 1 and 240 frames per second") }
                else { frameDuration = rate.period }
            }
        case (nil, let d?):
            if let t = time(d, "\(p).frameDuration", positive: true) {
                if t > MediaTime(value: 1, timescale: 1) || t < MediaTime(value: 1, timescale: 240) {
                    fail("\(p).frameDuration", "must be between 1/240 and 1 second")
                } else { frameDuration = t }
            }
        case (nil, nil): break
        }
        if mode == .passthrough && frameDuration != nil {
            fail(o["frameRate"] != nil ? "\(p).frameRate" : "\(p).frameDuration",
                 "applies to constantFrameRate exports only; passthrough keeps the source's frame timing")
        }
        if mode == .constantFrameRate && frameDuration == nil && o["frameRate"] == nil && o["frameDuration"] == nil {
            frameDuration = MediaTime(value: 1, timescale: 30)
        }

        var video = JobManifest.VideoSettings()
        if let v = o["video"], let vo = object(v, "\(p).video", allowed: ["codec", "crf", "preset", "threads"]) {
            if let codec = string(vo["codec"], "\(p).video.codec") {
                if codec != "h264" { fail("\(p).video.codec", "\"\(codec)\" is not supported; use \"h264\"") }
            }
            video.crf = integer(vo["crf"], "\(p).video.crf", in: 0...51) ?? video.crf
            if let preset = string(vo["preset"], "\(p).video.preset") {
                let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]
                if presets.contains(preset) { video.preset = preset }
                else { fail("\(p).video.preset", "\"\(preset)\" is not one of \(presets.joined(separator: ", "))\(Suggestion.hint(preset, in: presets))") }
            }
            video.threads = integer(vo["threads"], "\(p).video.threads", in: 0...64) ?? video.threads
        }
        var audio = JobManifest.AudioExportSettings()
        if let a = o["audio"], let ao = object(a, "\(p).audio", allowed: ["policy", "codec", "bitrate", "loudness", "tracks", "languages"]) {
            audio.policy = enumeration(ao["policy"], "\(p).audio.policy", AudioPolicy.self) ?? .auto
            audio.tracks = audioTracks(ao, "\(p).audio")
            if audio.policy == .drop, audio.tracks != .default {
                fail("\(p).audio.policy", "\"drop\" keeps no audio track: leave out \"tracks\" and \"languages\", or the policy")
            }
            if let codec = string(ao["codec"], "\(p).audio.codec"), codec != "aac" {
                fail("\(p).audio.codec", "\"\(codec)\" is not supported; use \"aac\"")
            }
            audio.bitrate = integer(ao["bitrate"], "\(p).audio.bitrate", in: 16_000...512_000) ?? audio.bitrate
            if let l = ao["loudness"] { audio.loudness = loudness(l, at: "\(p).audio.loudness", policy: audio.policy) }
        }
        let subtitles = subtitleLanguages(o, p)
        if o["subtitles"] != nil, mode == .passthrough {
            fail("\(p).subtitles", "applies to constantFrameRate exports only: a passthrough export keeps no subtitles")
        }
        let faststart = boolean(o["faststart"], "\(p).faststart")
        if faststart == true, fileType == .mkv { fail("\(p).faststart", "applies to mp4 and mov only") }
        let cuts = enumeration(o["cuts"], "\(p).cuts", CutMode.self)
        if cuts != nil, mode == .constantFrameRate {
            fail("\(p).cuts", "applies to passthrough exports only; constantFrameRate decodes every frame and is always exact")
        }
        let chunking = chunking(o, at: p, mode: mode)
        let poster = o["poster"].flatMap { self.poster($0, at: "\(p).poster") }
        guard let mode, let output, let fileType else { return nil }
        var settings = JobManifest.ExportSettings(mode: mode, output: output, fileType: fileType, frameDuration: frameDuration,
                                                  video: video, audio: audio, faststart: faststart ?? (fileType != .mkv),
                                                  cuts: cuts ?? .exact)
        settings.subtitleLanguages = subtitles
        settings.chunking = chunking
        settings.poster = poster
        return settings
    }
}
