/// ISO 639-2 codes, which tracks carry.
public enum ISO639 {
    /// The bibliographic codes that differ from the terminology ones ("fre" for "fra", as Matroska files
    /// often have them), ISO 639-2's 20 pairs.
    static let bibliographic = ["alb": "sqi", "arm": "hye", "baq": "eus", "bur": "mya", "chi": "zho", "cze": "ces", "dut": "nld",
                                "fre": "fra", "geo": "kat", "ger": "deu", "gre": "ell", "ice": "isl", "mac": "mkd", "mao": "mri",
                                "may": "msa", "per": "fas", "rum": "ron", "slo": "slk", "tib": "bod", "wel": "cym"]

    /// The terminology code of `code` (lowercase): "fra" for "fre"; any other as given.
    public static func terminology(_ code: String) -> String { bibliographic[code] ?? code }
}
