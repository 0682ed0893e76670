import Foundation

extension JSONEncoder {
    /// How MediaFarm writes JSON for people and tools: keys sorted (stable output), slashes unescaped,
    /// indented unless `compact` (one JSON value per line, for event streams).
    public static func mediafarm(compact: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = compact ? [.sortedKeys, .withoutEscapingSlashes] : [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
