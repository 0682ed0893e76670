import MediaCore

/// Which of the sources' audio tracks an export or a package keeps: AVMediaSelectionGroup's audible options,
/// chosen as users ask for them (a keep list of languages, the default track, or every one).
public enum AudioSelection: Sendable, Hashable {
    /// Each source's default track (the one flagged default, else its first), as `ExportSource.audio`.
    case defaultTrack
    /// Every audio track of the first source that has audio, in its order; a later source gives its own
    /// track in the same place, or silence when it has fewer.
    case all
    /// One track per language, in this order ("en" finds "eng" and "en-GB"); every source must have each.
    case languages([String])
    /// No audio (a package of video only).
    case none
}

/// One audio track of an output, made of one stream of each source (nil: silence, or no audio, there).
struct AudioChoice {
    /// The track's name where names are files or folders ("audio", "audio-fr", "audio-2").
    let name: String
    /// Its language as a tag for playlists ("en"): the one asked for, the label given, or (every track kept)
    /// the track's own; nil when none says it.
    let language: String?
    /// The first source's stream of it (its format: rate, channels, codec).
    let format: StreamInfo
    /// Each source's stream of it, by segment.
    let streams: [StreamInfo?]

    var indexes: [Int?] { streams.map { $0?.index } }
}

extension AudioSelection {
    /// The tracks to keep from `sources` (one per composition segment). None when no source has audio and no
    /// language is asked for. A language a source lacks is refused, naming what it has; so are two languages
    /// that find the same track. `label` is the default track's language in playlists.
    func choose(_ sources: [ExportSource], label: String? = nil) throws -> [AudioChoice] {
        switch self {
        case .none:
            return []
        case .defaultTrack:
            guard let format = sources.first(where: { $0.audio != nil })?.audio else { return [] }
            return [AudioChoice(name: "audio", language: label, format: format, streams: sources.map(\.audio))]
        case .all:
            // Later sources' tracks are paired by place; a pair tagged with different languages is refused.
            guard let first = sources.first(where: { $0.audio != nil }) else { return [] }
            let tracks = first.audioTracks
            let names = tracks.map { $0.knownLanguage.map(LanguageMatch.primary) }
            for source in sources where source !== first {
                for (i, (a, b)) in zip(tracks, source.audioTracks).enumerated() {
                    if let x = a.knownLanguage, let y = b.knownLanguage, LanguageMatch.primary(x) != LanguageMatch.primary(y) {
                        throw ExportError("\(source.path)'s audio track \(i + 1) is in \"\(y)\" where \(first.path)'s is in \"\(x)\": \"tracks\": \"all\" pairs "
                                          + "the sources' tracks by place; ask for \"languages\" to pair them by language")
                    }
                }
            }
            return tracks.enumerated().map { i, format in
                let unique = names[i].map { name in names.filter { $0 == name }.count == 1 } ?? false
                return AudioChoice(name: tracks.count == 1 ? "audio" : "audio-" + (unique ? names[i]! : String(i + 1)),
                                   language: names[i], format: format, streams: sources.map { i < $0.audioTracks.count ? $0.audioTracks[i] : nil })
            }
        case .languages(let languages):
            let choices = try languages.map { language in
                let streams = try sources.map { source in
                    // A track tagged exactly as asked ("en-GB") before one of the language's other tags.
                    let found = LanguageMatch.audio(source.audioTracks, in: language)
                    guard let stream = found.first(where: { $0.language?.lowercased() == language.lowercased() }) ?? found.first else {
                        let has = Set(source.audioTracks.map { $0.language ?? "und" }).sorted()
                        throw ExportError("\(source.path) has no audio in \"\(language)\" (its audio: \(has.isEmpty ? "none" : has.joined(separator: ", "))); "
                                          + "ask only for languages every source has")
                    }
                    return stream
                }
                // Named by the language's primary subtag ("audio-fr"), by the whole tag where two share it ("audio-en-gb").
                let primary = LanguageMatch.primary(language)
                let shared = languages.filter { LanguageMatch.primary($0) == primary }.count > 1
                return AudioChoice(name: "audio-" + (shared ? language.lowercased() : primary), language: language, format: streams[0], streams: streams)
            }
            // Two languages that find the same track ("en" and "en-GB" of a source with one English track,
            // "fr" and "fre") would keep it twice.
            for i in choices.indices {
                for j in 0..<i where zip(choices[j].indexes, choices[i].indexes).contains(where: { $0 == $1 }) {
                    throw ExportError("the audio languages \"\(choices[j].language ?? "")\" and \"\(choices[i].language ?? "")\" choose the same audio track: ask for each track once")
                }
            }
            return choices
        }
    }
}

extension StreamInfo {
    /// The track's language tag, unless it has none or says "und".
    var knownLanguage: String? { language.flatMap { $0 == "und" || $0.isEmpty ? nil : $0 } }
}
