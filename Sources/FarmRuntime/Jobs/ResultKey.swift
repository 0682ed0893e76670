import Crypto
import FarmModel
import Foundation
import MediaCore
import MediaTime

/// What a job computes from, as one key: every setting of its manifest that changes what it writes, its
/// inputs by content id (not by path), and the versions of MediaFarm and of the media libraries. Two jobs
/// with the same key write the same output and report, on any host: the second may be answered from the
/// first's result (`ResultReuse`). Left out: the job's name, where its outputs go, whether they
/// may be overwritten, what it waits for, what it requires of a host, its webhooks and a chunked export's
/// join list (the coordinator's, not the user's), and whether it writes a report (an earlier result without
/// one answers only a job that asks for none).
enum ResultKey {
    /// MediaFarm's version and the engine's: a result made by another build of the libraries is not reused.
    static let program = "MediaFarm \(MediaFarmVersion.string); \(EngineVersion.description)"

    /// Whether the job may be answered from an earlier result and answer a later one: asked for
    /// (`"reuse": true`), or by default when it decodes (a constant-frame-rate export, a package's ladder, a
    /// scan, pictures): a passthrough export or package or an inspection costs about what checking an earlier
    /// result would. Never with `"reuse": false`, nor when an input or output is an object (no content id
    /// without reading it all; a package's prefix is the exception: its files are hashed as they are sent, and
    /// an earlier package at a prefix is copied on the server), nor for a chunk of an export or a package (reused as a whole), nor for a job
    /// with quality checks (they run every time, and their verdict is the job's own).
    static func applies(to manifest: JobManifest) -> Bool {
        if manifest.reuse == false || manifest.checks != nil || manifest.export?.frames != nil || manifest.stream?.chunking.frames != nil { return false }
        if manifest.edits.contains(where: { PathRules.isObject($0.source) }) { return false }
        if [manifest.export?.output, manifest.report].contains(where: { $0.map(PathRules.isObject) == true }) { return false }
        if [manifest.poster?.output, manifest.images?.output, manifest.storyboard?.output, manifest.export?.poster?.output, manifest.scan?.images?.output,
            manifest.waveform?.output, manifest.waveform?.peaks]
            .contains(where: { $0.map(PathRules.isObject) == true }) {
            return false
        }
        // Something to answer with: an output, pictures or a report.
        guard manifest.export != nil || manifest.stream != nil || manifest.report != nil || manifest.makesPictures else { return false }
        return manifest.reuse == true || manifest.scan != nil || manifest.export?.mode == .constantFrameRate || manifest.stream?.mode == .ladder
            || manifest.makesPictures
    }

    /// The key (hex SHA-256) of `manifest`, whose sources have the content ids `contents` (path -> id).
    static func of(_ manifest: JobManifest, contents: [String: String], program: String = ResultKey.program) -> String {
        var hasher = SHA256()
        hasher.update(data: Data(description(manifest, contents: contents, program: program).utf8))
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// The text the key hashes: compact JSON with its members in a fixed order.
    static func description(_ manifest: JobManifest, contents: [String: String], program: String) -> String {
        var members: [(key: String, value: JSONValue)] = [
            ("program", .string(program)),
            ("version", number(manifest.version)),
            ("edits", .array(manifest.edits.map { edit in
                .object([("content", .string(contents[edit.source] ?? "?" + edit.source)), ("start", time(edit.start)),
                         ("duration", time(edit.duration))])
            })),
            ("scale", .array(manifest.scale.map { .object([("start", time($0.start)), ("duration", time($0.duration)),
                                                           ("toDuration", time($0.toDuration))]) })),
            ("timePitch", .string(manifest.audio.timePitch.rawValue)),
        ]
        if let scan = manifest.scan { members.append(("scan", Self.scan(scan))) }
        if let export = manifest.export { members.append(("export", Self.export(export))) }
        if let stream = manifest.stream { members.append(("stream", Self.stream(stream, contents: contents))) }
        members += pictures(manifest)
        return JSONValue.object(members).text
    }

    private static func time(_ t: MediaTime?) -> JSONValue {
        guard let t, t.isNumeric else { return .null }
        let r = t.reduced
        return .string("\(r.value)/\(r.timescale)")
    }

    private static func number(_ n: some Numeric) -> JSONValue { .number("\(n)") }

    private static func scan(_ scan: JobManifest.ScanSettings) -> JSONValue {
        var roi: JSONValue = .null
        if let r = scan.regionOfInterest { roi = .array([r.x, r.y, r.width, r.height].map { .number("\($0)") }) }
        var members: [(key: String, value: JSONValue)] = [
            ("symbologies", .array(scan.symbologies.map { .string($0) })), ("regionOfInterest", roi),
            ("interval", time(scan.interval)), ("maxCodesPerFrame", number(scan.maxCodesPerFrame))]
        if let images = scan.images {
            members.append(("images", .object([("maxWidth", number(images.style.maxWidth)), ("maxHeight", number(images.style.maxHeight)),
                                               ("format", .string(images.style.format.rawValue)),
                                               ("quality", .number("\(images.style.quality)"))])))
        }
        return .object(members)
    }

    private static func export(_ export: JobManifest.ExportSettings) -> JSONValue {
        var frames: JSONValue = .null
        if let f = export.frames { frames = .array([number(f.lowerBound), number(f.upperBound)]) }
        return .object([
            ("mode", .string(export.mode.rawValue)), ("fileType", .string(export.fileType.rawValue)),
            ("frameDuration", time(export.frameDuration)),
            ("video", .object([("codec", .string(export.video.codec)), ("crf", number(export.video.crf)),
                               ("preset", .string(export.video.preset)), ("threads", number(export.video.threads))])),
            ("audio", .object([("policy", .string(export.audio.policy.rawValue)), ("codec", .string(export.audio.codec)),
                               ("bitrate", number(export.audio.bitrate)),
                               ("loudness", export.audio.loudness.map { l in
                                   .object([("measure", .bool(l.measure)), ("standard", l.standard.map { .string($0.rawValue) } ?? .null),
                                            ("target", l.target.map { .number("\($0)") } ?? .null),
                                            ("truePeak", l.truePeak.map { .number("\($0)") } ?? .null)])
                               } ?? .null), ("tracks", tracks(export.audio.tracks))])),
            ("subtitles", .array(export.subtitleLanguages.map(JSONValue.string))),
            ("faststart", .bool(export.faststart)), ("cuts", .string(export.cuts.rawValue)),
            ("chunkDuration", time(export.chunkDuration)), ("chunkAbove", time(export.chunkAbove)), ("frames", frames),
        ])
    }

    /// A package's section as its manifest writes it, without where it goes (`output`) or the chunks a
    /// join reads (the coordinator's), and with the key file by content.
    private static func stream(_ stream: JobManifest.StreamSettings, contents: [String: String]) -> JSONValue {
        guard case .object(let members) = stream.document else { return stream.document }
        return .object(members.compactMap { member in
            switch member.key {
            case "output", "join": return nil
            case "encryption":
                guard let encryption = stream.encryption else { return member }
                return (member.key, .object([("method", .string("aes-128")), ("key", .string(contents[encryption.keyFile] ?? "?" + encryption.keyFile)),
                                             ("keyURI", .string(encryption.keyURI))]))
            default: return member
            }
        } + [("audioTracks", tracks(stream.audio.tracks))])
    }

    /// The audio tracks kept, the default written out: "default" is the track flagged default (it was the
    /// first track in results made before), so a result keyed without it is not taken for one.
    private static func tracks(_ tracks: AudioTracks) -> JSONValue {
        tracks.members.first?.value ?? .string("default")
    }

    /// The pictures' members: posters, images, storyboard, waveform, in that order.
    private static func pictures(_ manifest: JobManifest) -> [(key: String, value: JSONValue)] {
        func tolerance(_ t: JobManifest.PictureTolerance) -> JSONValue { .array([time(t.before), time(t.after)]) }
        func style(_ s: JobManifest.PictureStyle) -> JSONValue {
            .object([("maxWidth", number(s.maxWidth)), ("maxHeight", number(s.maxHeight)), ("format", .string(s.format.rawValue)),
                     ("quality", .number("\(s.quality)"))])
        }
        func poster(_ poster: JobManifest.PosterSettings) -> JSONValue {
            .object([("at", poster.at.map { time($0) } ?? .string("auto")), ("tolerance", tolerance(poster.tolerance)), ("style", style(poster.style))])
        }
        var members: [(key: String, value: JSONValue)] = []
        if let settings = manifest.poster { members.append(("poster", poster(settings))) }
        if let settings = manifest.export?.poster { members.append(("exportPoster", poster(settings))) }
        if let images = manifest.images {
            let times: JSONValue = switch images.times {
            case .times(let list): .object([("times", .array(list.map { time($0) }))])
            case .every(let t): .object([("every", time(t))])
            case .count(let n): .object([("count", number(n))])
            }
            members.append(("images", .object([("times", times), ("tolerance", tolerance(images.tolerance)), ("style", style(images.style))])))
        }
        if let board = manifest.storyboard {
            // Its WebVTT file and index name the sheets: a copy keeps their names.
            let name = board.output.split(separator: "/").last.map(String.init) ?? board.output
            members.append(("storyboard", .object([("every", time(board.every)), ("tiles", board.tiles.map { number($0) } ?? .null),
                                                   ("tileWidth", number(board.tileWidth)), ("columns", number(board.columns)),
                                                   ("rows", number(board.rows)), ("format", .string(board.format.rawValue)),
                                                   ("quality", .number("\(board.quality)")), ("name", .string(name))])))
        }
        if let waveform = manifest.waveform {
            members.append(("waveform", .object([("width", number(waveform.width)), ("height", number(waveform.height)),
                                                 ("svg", .bool(waveform.isSVG)), ("peaks", .bool(waveform.peaks != nil))])))
        }
        return members
    }
}
