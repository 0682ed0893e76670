import FarmModel
import Foundation

/// The JSON text columns both backends keep (output roots, attempt errors).
enum JobCoding {
    static func json<T: Encodable & Collection>(_ value: T) -> String {
        if value.isEmpty { return "[]" }  // the common case, without a JSON encoder
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(value)) ?? Data("[]".utf8), as: UTF8.self)  // lists of strings, ids and errors always encode
    }

    static func decode<T: Decodable & RangeReplaceableCollection>(_ type: T.Type, _ text: String?) -> T? {
        guard let text else { return nil }
        if text == "[]" { return T() }  // the common case, without a JSON decoder
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(type, from: Data(text.utf8))  // nil: the column is read as empty, as the row's default
    }

    /// A value that is not a list (a chunk plan).
    static func json<T: Encodable>(object value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)  // a chunk plan always encodes
    }

    static func decode<T: Decodable>(object type: T.Type, _ text: String?) -> T? {
        guard let text else { return nil }
        return try? JSONDecoder().decode(type, from: Data(text.utf8))  // nil: no chunk plan, as the row's default
    }
}
