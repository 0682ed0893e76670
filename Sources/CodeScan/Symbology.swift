import MediaCore

/// Machine-readable code types, named as AVMetadataObject.ObjectType names them. Opt-in: a scanner
/// reads only the ones it is asked for.
public enum Symbology: String, Sendable, Hashable, CaseIterable, Codable {
    case qr, aztec, dataMatrix, pdf417, code128, code39, code93, ean8, ean13, upce
    case interleaved2of5, itf14, codabar, databar

    /// The engine that reads it: ZBar for the linear codes; zxing-cpp for the matrix codes (ZBar 0.23
    /// cannot read Aztec and Data Matrix, its PDF417 decoder is unfinished, and on 720p frames its QR
    /// reader spends about four times zxing-cpp's time for the same recall).
    public enum Engine: String, Sendable { case zbar, zxing }

    public var engine: Engine {
        switch self {
        case .qr, .aztec, .dataMatrix, .pdf417: return .zxing
        default: return .zbar
        }
    }

    /// The zxing-cpp format, for the symbologies zxing-cpp reads.
    var zxingFormat: ZXingReader.Format? {
        switch self {
        case .aztec: return .aztec
        case .dataMatrix: return .dataMatrix
        case .pdf417: return .pdf417
        case .qr: return .qr
        default: return nil
        }
    }

    /// The ZBar symbol types to enable for this symbology.
    var zbarTypes: Set<ZBarScanner.SymbolType> {
        switch self {
        case .code128: return [.code128]
        case .code39: return [.code39]
        case .code93: return [.code93]
        case .ean8: return [.ean8]
        // ZBar reads UPC-A as EAN-13 with a leading zero, as AVFoundation reports it.
        case .ean13: return [.ean13, .upca]
        // Enabled explicitly: ZBar otherwise reports a UPC-E as the EAN-13 it expands to.
        case .upce: return [.upce]
        case .interleaved2of5, .itf14: return [.i25]
        case .codabar: return [.codabar]
        case .databar: return [.databar, .databarExpanded]
        case .qr, .aztec, .dataMatrix, .pdf417: return []
        }
    }

    /// The symbology of a name in any case ("QR", "datamatrix").
    public init?(named name: String) {
        guard let s = Self.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else { return nil }
        self = s
    }

    /// Parses a comma-separated list ("qr,ean13", any case); throws naming the unknown entries.
    public static func parseList(_ text: String) throws(UnknownSymbology) -> [Symbology] {
        var result: [Symbology] = []
        var unknown: [String] = []
        for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: " ") }) where !name.isEmpty {
            if let s = Symbology(named: name) { if !result.contains(s) { result.append(s) } } else { unknown.append(name) }
        }
        if !unknown.isEmpty { throw UnknownSymbology(names: unknown) }
        return result
    }
}

/// Symbology names that are not in `Symbology.allCases`.
public struct UnknownSymbology: Error, Sendable, CustomStringConvertible {
    public let names: [String]
    public var description: String {
        "unknown symbology \(names.map { "\"\($0)\"" }.joined(separator: ", ")); known: \(Symbology.allCases.map(\.rawValue).joined(separator: ", "))"
    }
}

extension StringProtocol {
    func trimmingCharacters(in set: Character) -> String {
        String(drop(while: { $0 == set }).reversed().drop(while: { $0 == set }).reversed())
    }
}
