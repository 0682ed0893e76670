/// An asset's content identifier: the first 128 bits of the SHA-256 of its bytes, written as 26
/// characters of Crockford's base32 in lower case. The same file has the same id on every host, with no
/// coordination (PhotoKit's cloud identifier, without a cloud); every id has the same length, so no id
/// is the prefix of another. Manifests name an asset as `asset:ID`.
public struct AssetID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String

    public static let length = 26
    /// How manifests and commands name an asset instead of a path.
    public static let scheme = "asset:"
    static let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)

    /// Parses an id (case-insensitive); nil unless it is one exactly.
    public init?(_ text: some StringProtocol) {
        let lower = text.lowercased()
        guard lower.utf8.count == Self.length, lower.utf8.allSatisfy({ Self.alphabet.contains($0) }),
              let last = lower.utf8.last.flatMap({ Self.alphabet.firstIndex(of: $0) }), last & 0b11 == 0 else { return nil }
        rawValue = lower
    }

    /// The id of content whose SHA-256 is `digest` (at least 16 bytes).
    public init(digest: some Collection<UInt8>) {
        precondition(digest.count >= 16, "an asset id needs 128 bits")
        var bits: UInt32 = 0
        var count = 0
        var text: [UInt8] = []
        text.reserveCapacity(Self.length)
        for byte in digest.prefix(16) {
            bits = (bits << 8) | UInt32(byte)
            count += 8
            while count >= 5 {
                count -= 5
                text.append(Self.alphabet[Int((bits >> UInt32(count)) & 31)])
            }
        }
        // 128 bits: 25 whole characters and 3 bits left, padded with two zero bits.
        text.append(Self.alphabet[Int((bits << UInt32(5 - count)) & 31)])
        rawValue = String(decoding: text, as: UTF8.self)
    }

    /// The id in `asset:ID`; nil when `text` does not start with `asset:`, `.failure` when what follows is
    /// not an id.
    public static func reference(_ text: String) -> Result<AssetID, AssetIDError>? {
        guard text.hasPrefix(scheme) else { return nil }
        let rest = text.dropFirst(scheme.count)
        guard let id = AssetID(rest) else { return .failure(AssetIDError(text: String(rest))) }
        return .success(id)
    }

    public var reference: String { Self.scheme + rawValue }
    public var description: String { rawValue }

    public static func < (a: AssetID, b: AssetID) -> Bool { a.rawValue < b.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = AssetID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: AssetIDError(text: text).description))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

public struct AssetIDError: Error, Sendable, Hashable, CustomStringConvertible {
    public var text: String

    public init(text: String) { self.text = text }

    public var description: String {
        "\"\(text)\" is not an asset id (26 characters of 0-9 and a-z without i, l, o, u, as `mediafarm library add` prints them)"
    }
}
