import Foundation
import MediaCore

/// Languages as users type them ("en", "fr", "pt-BR") matched against the tags tracks carry (ISO 639-2,
/// "eng", and its bibliographic forms, "fre", as Matroska files often have them).
public enum LanguageMatch {
    /// ISO 639-2's bibliographic codes that differ from the terminology ones Foundation knows.
    static let bibliographic = ["alb": "sqi", "arm": "hye", "baq": "eus", "bur": "mya", "chi": "zho", "cze": "ces", "dut": "nld",
                                "fre": "fra", "geo": "kat", "ger": "deu", "gre": "ell", "ice": "isl", "mac": "mkd", "mao": "mri",
                                "may": "msa", "per": "fas", "rum": "ron", "slo": "slk", "tib": "bod", "wel": "cym"]

    /// The language's primary subtag as two letters where it has them ("fre" and "fra" are "fr"), else as given.
    public static func primary(_ tag: String) -> String {
        let first = String(tag.lowercased().split(separator: "-").first ?? "")
        let terminology = bibliographic[first] ?? first
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
