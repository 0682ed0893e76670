import Foundation
import MediaCore

/// Languages as users type them ("en", "fr", "pt-BR") matched against the tags tracks carry (ISO 639-2,
/// "eng", and its bibliographic forms, "fre", as Matroska files often have them).
public enum LanguageMatch {
    /// The language's primary subtag as two letters where it has them ("fre" and "fra" are "fr"), else as given.
    public static func primary(_ tag: String) -> String {
        let first = String(tag.lowercased().split(separator: "-").first ?? "")
        let terminology = ISO639.terminology(first)
        return Locale.LanguageCode(terminology).identifier(.alpha2) ?? terminology
    }

    /// Whether a track tagged `track` is in the language a user asked for.
    public static func matches(_ asked: String, track: String?) -> Bool {
        guard let track, track != "und" else { return false }
        return primary(asked) == primary(track)
    }

    /// The audio streams of `streams` in `language`, in order.
    static func audio(_ streams: [StreamInfo], in language: String) -> [StreamInfo] {
        streams.filter { $0.mediaType == .audio && matches(language, track: $0.language) }
    }
}
