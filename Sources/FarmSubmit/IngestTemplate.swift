import FarmModel
import Foundation

/// A job manifest in which `{input}` stands for the ingested file, and `{stem}`, `{ext}`, `{hash}` (the
/// first 16 hex digits of the content hash) and `{date}` (the file's modification date, YYYY-MM-DD, UTC)
/// may appear in any string value. Relative paths in it resolve against its own folder. The template is
/// parsed once; each job's manifest is the parsed document with its string values filled in, so that no
/// file name can change the manifest's structure.
///
/// An ingest template may also be a chain: `{"jobs": [MANIFEST, ...]}`, each manifest with an optional
/// `"key"` (a name within the chain; default `step1`, `step2`, ...) that later ones name in `"after"` and in
/// `job:KEY#output` / `job:KEY#report` sources. A file's chain is enqueued in one transaction, all of it or
/// none; its jobs' unique keys are `ingest:<hash>` (the first) and `ingest:<hash>:<key>` (the others), and
/// what the chain's manifests call each other is rewritten to those.
public struct IngestTemplate: Sendable, Hashable {
    public static let placeholders = ["input", "stem", "ext", "hash", "date"]

    public var path: String
    public var folder: String { (path as NSString).deletingLastPathComponent }
    /// The manifest (a single job), or the first one of a chain.
    public var document: JSONValue
    /// A chain's jobs, with their keys; nil for a single manifest.
    public var chain: [Step]?

    public struct Step: Sendable, Hashable {
        public var key: String
        public var document: JSONValue
    }

    /// One job of a file's chain, its manifest filled in.
    public struct Job: Sendable, Hashable {
        public var key: String?
        public var uniqueKey: UniqueKey
        public var manifest: String
    }

    /// Reads the template; it must be a JSON object, use `required` (`{input}` unless told otherwise), and
    /// use no other `{...}` than `placeholders` (ingest's by default; a capture's segments and assemblies
    /// have their own) in its string values.
    /// A relative `path` is taken from the current folder: the template's folder, against which its paths
    /// resolve and which is its jobs' default output root, is always absolute.
    public static func load(_ path: String, placeholders: [String] = IngestTemplate.placeholders,
                            required: String? = "input", allowChain: Bool = false) throws(IngestTemplateError) -> IngestTemplate {
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
        if let required, !used.contains(required) {
            throw IngestTemplateError("\(path): never says {\(required)}" + (required == "input" ? ", the file a job is made for" : ""))
        }
        guard case .object(let members) = document, let jobs = members.first(where: { $0.key == "jobs" })?.value else {
            return IngestTemplate(path: path, document: document)
        }
        guard allowChain else {
            throw IngestTemplateError("\(path): a chain of jobs (\"jobs\") is for ingest templates; this template is one manifest")
        }
        let chain = try Self.chain(jobs, others: members.map(\.key).filter { $0 != "jobs" }, path: path)
        return IngestTemplate(path: path, document: chain[0].document, chain: chain)
    }

    /// A chain's steps: 1 to 20 manifest objects, keys unique, each "after" naming only earlier steps.
    static func chain(_ jobs: JSONValue, others: [String], path: String) throws(IngestTemplateError) -> [Step] {
        guard others.isEmpty else {
            throw IngestTemplateError("\(path): a chain has only \"jobs\" at its top, not \(others.map { "\"\($0)\"" }.joined(separator: ", "))")
        }
        guard case .array(let items) = jobs, (1...20).contains(items.count) else {
            throw IngestTemplateError("\(path): \"jobs\" is a list of 1 to 20 job manifests")
        }
        var steps: [Step] = []
        for (i, item) in items.enumerated() {
            guard case .object(let members) = item else { throw IngestTemplateError("\(path): jobs[\(i)] is not a job manifest (an object)") }
            var key = "step\(i + 1)"
            if let value = members.first(where: { $0.key == "key" })?.value {
                guard case .string(let text) = value, HostCapability.problem(text) == nil else {
                    throw IngestTemplateError("\(path): jobs[\(i)].key: 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
                }
                key = text
            }
            guard !steps.contains(where: { $0.key == key }) else { throw IngestTemplateError("\(path): jobs[\(i)].key \"\(key)\" is taken by an earlier job") }
            if case .array(let after)? = members.first(where: { $0.key == "after" })?.value {
                for case .string(let name) in after where !steps.contains(where: { $0.key == name }) {
                    throw IngestTemplateError("\(path): jobs[\(i)].after names \"\(name)\", which is not an earlier job of the chain")
                }
            }
            steps.append(Step(key: key, document: .object(members.filter { $0.key != "key" })))
        }
        return steps
    }

    /// The jobs for one file: its manifest, or its chain's, with their unique keys, and what the chain's
    /// manifests call each other rewritten to those keys.
    public func jobs(for file: String, hash: String, modified: Date) -> [Job] {
        let values = ["input": file, "hash": String(hash.prefix(16)), "date": Self.day(modified)]
        guard let chain else {
            return [Job(key: nil, uniqueKey: .ingest(hash: hash), manifest: manifest(values: values, file: file))]
        }
        let keys = Dictionary(uniqueKeysWithValues: chain.enumerated().map { i, step in
            (step.key, i == 0 ? UniqueKey.ingest(hash: hash) : .ingest(hash: hash, step: step.key))
        })
        return chain.map { step in
            var document = step.document.mappingStrings { text in
                // job:KEY#output and job:KEY#report of the chain's own jobs.
                guard text.hasPrefix("job:"), let hashMark = text.lastIndex(of: "#"),
                      let unique = keys[String(text.dropFirst(4)[..<hashMark])] else { return text }
                return "job:" + unique.stored + text[hashMark...]
            }
            if case .object(let members) = document, case .array(let after)? = members.first(where: { $0.key == "after" })?.value {
                document = document.replacing("after", with: .array(after.map { item in
                    if case .string(let name) = item, let unique = keys[name] { return .string(unique.stored) }
                    return item
                }))
            }
            return Job(key: step.key, uniqueKey: keys[step.key]!, manifest: Self.filled(document, values: values, file: file).text)
        }
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

    /// The manifest (JSON text) with `values` (and `file`'s `{stem}` and `{ext}`) in place of the
    /// placeholders in its string values.
    public func manifest(values: [String: String], file: String) -> String {
        Self.filled(document, values: values, file: file).text
    }

    /// `document` with `values` (and `file`'s `{stem}` and `{ext}`) in place of the placeholders in its
    /// string values.
    public static func filled(_ document: JSONValue, values: [String: String], file: String) -> JSONValue {
        let name = (file as NSString).lastPathComponent
        let ext = (name as NSString).pathExtension
        let stem = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
        let values = values.merging(["stem": stem, "ext": ext]) { a, _ in a }
        return document.mappingStrings { text in text.contains("{") ? expand(text, values) : text }
    }

    /// `text` with each `{name}` that `values` names replaced by its value, in one pass from the left: what
    /// a value puts in is never read again as a placeholder (a file named `clip{hash}.mov` is its own stem,
    /// whatever order the names come in).
    public static func expand(_ text: String, _ values: [String: String]) -> String {
        var out = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            let after = rest[rest.index(after: open)...]
            if let close = after.firstIndex(of: "}"), let value = values[String(after[..<close])] {
                out += value
                rest = after[after.index(after: close)...]
            } else {
                out += "{"
                rest = after
            }
        }
        return out + rest
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
