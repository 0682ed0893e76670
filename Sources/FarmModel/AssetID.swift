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

    /// Which rule `text` breaks: its length, a character outside the alphabet, or the last character,
    /// which carries only 3 of the id's 128 bits (the other 2 are zero: it is one of 0 4 8 c g m r w).
    public var description: String {
        let lower = text.lowercased()
        let rule = "26 characters of 0-9 and a-z without i, l, o, u, as `mediafarm library add` prints them"
        if lower.count != AssetID.length {
            return "\"\(text)\" is not an asset id: it has \(lower.count) characters (\(rule))"
        }
        if let bad = lower.first(where: { !$0.isASCII || !AssetID.alphabet.contains($0.asciiValue!) }) {
            return "\"\(text)\" is not an asset id: \"\(bad)\" is not one of its characters (\(rule))"
        }
        return "\"\(text)\" is not an asset id: its last character must be one of 0 4 8 c g m r w (an id is 128 bits: "
            + "the last of its 26 characters holds 3 bits and two zero bits), not \"\(lower.last!)\""
    }
}

extension AssetID {
    /// The well-formed `asset:ID` references of a manifest's text with their JSON paths (`$.input`,
    /// `$.edits[N].source`), read whether or not the rest of the manifest is valid, so that an unknown
    /// asset can be reported beside the manifest's other errors.
    public static func references(inManifest bytes: [UInt8]) -> [(path: String, id: AssetID)] {
        guard case .object(let fields)? = try? JSONParser.parse(bytes) else { return [] }  // no JSON: no references; validation reports the text
        var found: [(path: String, id: AssetID)] = []
        for (key, value) in fields {
            if key == "input", case .string(let text) = value, case .success(let id)? = reference(text) {
                found.append(("$.input", id))
            }
            if key == "edits", case .array(let edits) = value {
                for (n, edit) in edits.enumerated() {
                    guard case .object(let members) = edit else { continue }
                    for (name, source) in members where name == "source" {
                        if case .string(let text) = source, case .success(let id)? = reference(text) { found.append(("$.edits[\(n)].source", id)) }
                    }
                }
            }
        }
        return found
    }
}
