import FarmModel
import Foundation

/// A job manifest in which `{input}` stands for the ingested file, and `{stem}`, `{ext}`, `{hash}` (the
/// first 16 hex digits of the content hash) and `{date}` (the file's modification date, YYYY-MM-DD, UTC)
/// may appear in any string value. Relative paths in it resolve against its own folder. The template is
/// parsed once; each job's manifest is the parsed document with its string values filled in, so that no
/// file name can change the manifest's structure.
public struct IngestTemplate: Sendable, Hashable {
    public static let placeholders = ["input", "stem", "ext", "hash", "date"]

    public var path: String
    public var folder: String { (path as NSString).deletingLastPathComponent }
    public var document: JSONValue

    /// Reads the template; it must be a JSON object, use `{input}`, and use no other `{...}` than
    /// `placeholders` (ingest's by default; a capture's segments have their own) in its string values.
    /// A relative `path` is taken from the current folder: the template's folder, against which its paths
    /// resolve and which is its jobs' default output root, is always absolute.
    public static func load(_ path: String, placeholders: [String] = IngestTemplate.placeholders) throws(IngestTemplateError) -> IngestTemplate {
        let path = PathRules.resolve(path, against: FileManager.default.currentDirectoryPath)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw IngestTemplateError("\(path): cannot be read (no such file, or no permission)")
        }
        guard data.count <= JSONParser.maxDocumentBytes else { throw IngestTemplateError("\(path): larger than 4 MiB") }
        let document: JSONValue
        do {
            document = try JSONParser.parse(Array(data))
        } catch {
            throw IngestTemplateError("\(path): not a job manifest: \(error)")
        }
        guard case .object = document else { throw IngestTemplateError("\(path): not a JSON object (a job manifest)") }
        var used: [String] = []
        _ = document.mappingStrings { value in
            used += names(in: value)
            return value
        }
        let unknown = used.filter { !placeholders.contains($0) }
        guard unknown.isEmpty else {
            throw IngestTemplateError("\(path): unknown placeholder \(unknown.map { "{\($0)}" }.joined(separator: ", ")) "
                                      + "(known: \(placeholders.map { "{\($0)}" }.joined(separator: ", ")))")
        }
        guard used.contains("input") else { throw IngestTemplateError("\(path): never says {input}, the file a job is made for") }
        return IngestTemplate(path: path, document: document)
    }

    /// The names between braces in a string value (a brace followed by a letter, up to the closing one).
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

    /// The manifest for one file.
    public func manifest(for file: String, hash: String, modified: Date) -> String {
        manifest(values: ["input": file, "hash": String(hash.prefix(16)), "date": Self.day(modified)], file: file)
    }

    /// The manifest (JSON text) with `values` (and `file`'s `{stem}` and `{ext}`) in place of the
    /// placeholders in its string values.
    public func manifest(values: [String: String], file: String) -> String {
        let name = (file as NSString).lastPathComponent
        let ext = (name as NSString).pathExtension
        let stem = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
        let values = values.merging(["stem": stem, "ext": ext]) { a, _ in a }
        return document.mappingStrings { text in
            guard text.contains("{") else { return text }
            var out = text
            for (key, value) in values { out = out.replacingOccurrences(of: "{\(key)}", with: value) }
            return out
        }.text
    }

    /// YYYY-MM-DD of `date` in UTC.
    public static func day(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let day = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", day.year ?? 0, day.month ?? 0, day.day ?? 0)
    }
}

public struct IngestTemplateError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
