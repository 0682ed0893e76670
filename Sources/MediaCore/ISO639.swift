/// ISO 639-2 codes, which tracks carry.
public enum ISO639 {
    /// The bibliographic codes that differ from the terminology ones ("fre" for "fra", as Matroska files
    /// often have them), ISO 639-2's 20 pairs.
    static let bibliographic = ["alb": "sqi", "arm": "hye", "baq": "eus", "bur": "mya", "chi": "zho", "cze": "ces", "dut": "nld",
                                "fre": "fra", "geo": "kat", "ger": "deu", "gre": "ell", "ice": "isl", "mac": "mkd", "mao": "mri",
                                "may": "msa", "per": "fas", "rum": "ron", "slo": "slk", "tib": "bod", "wel": "cym"]

    /// The terminology code of `code` (lowercase): "fra" for "fre"; any other as given.
    public static func terminology(_ code: String) -> String { bibliographic[code] ?? code }

    /// The form of a pair that FFmpeg's QuickTime muxer knows (its table of Macintosh language codes holds one
    /// of each pair, and drops the other): the terminology code for French, Czech, Romanian and Slovak, the
    /// bibliographic code for the 15 others. Māori it knows in neither form.
    static let quickTime: [String: String] = {
        let terminologyKept: Set = ["fre", "cze", "rum", "slo"]
        var forms: [String: String] = [:]
        for (b, t) in bibliographic where b != "mao" {
            if terminologyKept.contains(b) { forms[b] = t } else { forms[t] = b }
        }
        return forms
    }()

    /// `code` (lowercase) as FFmpeg's QuickTime muxer keeps it: "fra" for "fre", "ger" for "deu"; any other as given.
    public static func quickTime(_ code: String) -> String { quickTime[code] ?? code }
}
