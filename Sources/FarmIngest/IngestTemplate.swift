import Foundation

/// A job manifest in which `{input}` stands for the ingested file, and `{stem}`, `{ext}`, `{hash}` (the
/// first 16 hex digits of the content hash) and `{date}` (the file's modification date, YYYY-MM-DD, UTC)
/// may appear in any string. Relative paths in it resolve against its own folder.
public struct IngestTemplate: Sendable, Hashable {
    public static let placeholders = ["input", "stem", "ext", "hash", "date"]

    public var path: String
    public var folder: String { (path as NSString).deletingLastPathComponent }
    public var text: String

    /// Reads the template; it must be JSON, use `{input}`, and use no other `{...}` than `placeholders`
    /// (ingest's by default; a capture's segments have their own).
    public static func load(_ path: String, placeholders: [String] = IngestTemplate.placeholders) throws(IngestTemplateError) -> IngestTemplate {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw IngestTemplateError("\(path): cannot be read (no such file, or no permission)")
        }
        guard data.count <= 4 << 20 else { throw IngestTemplateError("\(path): larger than 4 MiB") }
        guard (try? JSONSerialization.jsonObject(with: data)) is [String: Any] else {
            throw IngestTemplateError("\(path): not a JSON object (a job manifest)")
        }
        let text = String(decoding: data, as: UTF8.self)
        let used = Self.names(in: text)
        let unknown = used.filter { !placeholders.contains($0) }
        guard unknown.isEmpty else {
            throw IngestTemplateError("\(path): unknown placeholder \(unknown.map { "{\($0)}" }.joined(separator: ", ")) "
                                      + "(known: \(placeholders.map { "{\($0)}" }.joined(separator: ", ")))")
        }
        guard used.contains("input") else { throw IngestTemplateError("\(path): never says {input}, the file a job is made for") }
        return IngestTemplate(path: path, text: text)
    }

    /// The names between braces in `text` (a brace followed by a letter: JSON's own braces are followed
    /// by quotes, spaces or other braces).
    static func names(in text: String) -> [String] {
        var names: [String] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            let after = rest[rest.index(after: open)...]
            if let first = after.first, first.isLetter, let close = after.firstIndex(of: "}") {
                let name = after[..<close]
                if name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) { names.append(String(name)) }
            }
            rest = after
        }
        return names
    }

    /// The manifest for one file: each placeholder replaced by its value, escaped for a JSON string.
    public func manifest(for file: String, hash: String, modified: Date) -> String {
        manifest(values: ["input": file, "hash": String(hash.prefix(16)), "date": Self.day(modified)], file: file)
    }

    /// The manifest with `values` (and `file`'s `{stem}` and `{ext}`) in place of the placeholders.
    public func manifest(values: [String: String], file: String) -> String {
        let name = (file as NSString).lastPathComponent
        let ext = (name as NSString).pathExtension
        let stem = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
        let values = values.merging(["stem": stem, "ext": ext]) { a, _ in a }
        var out = text
        for (key, value) in values {
            out = out.replacingOccurrences(of: "{\(key)}", with: Self.escaped(value))
        }
        return out
    }

    /// YYYY-MM-DD of `date` in UTC.
    public static func day(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let day = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", day.year ?? 0, day.month ?? 0, day.day ?? 0)
    }

    /// `value` as it must appear inside a JSON string.
    static func escaped(_ value: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

public struct IngestTemplateError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
