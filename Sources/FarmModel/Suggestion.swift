/// "Did you mean": the allowed name nearest to a typo, for every refusal of an unknown name (manifest
/// and config keys, symbologies, enumerations).
public enum Suggestion {
    /// The candidate nearest to `word` when it is close, else nil: an edit distance (ignoring case) of at
    /// most 2, or a third of the shorter name for long names (`settleSecs` → `settleSeconds`).
    public static func closest(_ word: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word.lowercased(), $0.lowercased())) }.min { $0.1 < $1.1 }
        guard let (best, d) = scored, d < max(word.count, 1), d <= max(2, min(word.count, best.count) / 3) else { return nil }
        return best
    }

    /// " (did you mean "NAME"?)", or "" when nothing is close.
    public static func hint(_ word: String, in candidates: [String]) -> String {
        closest(word, in: candidates).map { " (did you mean \"\($0)\"?)" } ?? ""
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }
}
