import Foundation

/// How hard a token is to guess, estimated from its text: its length times the lesser of what its
/// characters' alphabet (lower case, upper case, digits, others) could carry and what their spread does
/// carry (Shannon's entropy of its characters). `aaaaaaaaaaaaaaaa` carries nothing; `openssl rand -hex 32`
/// about 240 bits.
public enum TokenStrength {
    /// What a token file must carry.
    public static let minimumBits = 128.0

    public static func estimatedBits(_ token: String) -> Double {
        let characters = Array(token.unicodeScalars)
        guard !characters.isEmpty else { return 0 }
        var alphabet = 0
        if characters.contains(where: { ("a"..."z").contains($0) }) { alphabet += 26 }
        if characters.contains(where: { ("A"..."Z").contains($0) }) { alphabet += 26 }
        if characters.contains(where: { ("0"..."9").contains($0) }) { alphabet += 10 }
        if characters.contains(where: { !(("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)) }) { alphabet += 32 }
        var counts: [Unicode.Scalar: Int] = [:]
        for c in characters { counts[c, default: 0] += 1 }
        let n = Double(characters.count)
        let spread = counts.values.reduce(0.0) { sum, count in
            let p = Double(count) / n
            return sum - p * log2(p)
        }
        return n * min(log2(Double(alphabet)), spread)
    }
}
