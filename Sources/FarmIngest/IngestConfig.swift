import FarmModel
import FarmSubmit
import Foundation
import S3Client
import SafeFiles

/// `mediafarm ingest --config FILE`: which folders become jobs, and how. Relative paths resolve against the
/// config file's folder. Loading checks everything a pass needs (folders, the templates and their
/// placeholders), so a bad config fails before anything is touched.
public struct IngestConfig: Sendable, Hashable {
    public struct Watch: Sendable, Hashable {
        /// The folder, absolute; or an object prefix, `s3://BUCKET/PREFIX/` (ending in "/") or `s3://BUCKET/`.
        public var path: String
        /// Whether the watch is an object prefix (listed at each pass) rather than a folder.
        public var isObjectPrefix: Bool { S3Location.isObject(path) }
        /// File-name patterns (fnmatch) a file must match one of; empty: every file.
        public var include: [String]
        public var exclude: [String]
        public var template: IngestTemplate
    }

    public enum AfterEnqueue: String, Sendable, Hashable, CaseIterable {
        /// The file stays; the state remembers it.
        case leave
        /// The file moves into `processing/` beside its watch folder (a rename: same file system only).
        case move
    }

    public var file: String
    public var watch: [Watch]
    public var settleSeconds: Double
    public var quarantine: String
    public var state: String
    public var afterEnqueue: AfterEnqueue
    /// Folders the jobs' outputs may be written under; default: each template's folder.
    public var outputRoots: [String]?
    public var priority: Int
    public var maxAttempts: Int?
    /// The asset library album every ingested file is put in (the library registers them either way).
    public var libraryAlbum: String?
    /// How long ingest keeps its row for a file that is no longer in the watch folders (the content's hash
    /// is remembered for good: the same bytes are still a duplicate later).
    public var forgetGoneAfterDays: Double = 7

    static let keys = ["version", "watch", "settleSeconds", "quarantine", "state", "afterEnqueue", "outputRoots", "priority",
                       "maxAttempts", "libraryAlbum", "forgetGoneAfterDays"]
    static let watchKeys = ["path", "include", "exclude", "template"]

    /// Reads and checks `path`; every problem is listed with where it is.
    public static func load(_ path: String) throws(IngestConfigError) -> IngestConfig {
        let absolute = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardized.path
        guard let data = FileManager.default.contents(atPath: absolute) else {
            throw IngestConfigError(file: path, issues: ["cannot be read (no such file, or no permission)"])
        }
        guard data.count <= 1 << 20 else { throw IngestConfigError(file: path, issues: ["is larger than 1 MiB; a config is a small JSON file"]) }
        // The strict parser first: a syntax error is named with its line and column.
        let value: JSONValue
        do { value = try JSONParser.parse([UInt8](data)) } catch { throw IngestConfigError(file: path, issues: [error.description]) }
        guard case .object = value else { throw IngestConfigError(file: path, issues: ["$: expected a JSON object, found \(value.kindName)"]) }
        // Parsed just above, where a fault is named with its line and column.
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw IngestConfigError(file: path, issues: ["$: expected a JSON object"])
        }
        var fields = ConfigFields(object: object, folder: URL(fileURLWithPath: absolute).deletingLastPathComponent())
        for key in object.keys.sorted() where !keys.contains(key) {
            fields.issues.append("$.\(key): unknown key\(Suggestion.hint(key, in: keys)) (known: \(keys.joined(separator: ", ")))")
        }
        if (object["version"] as? NSNumber)?.intValue != 1 || isBool(object["version"]) { fields.issues.append("$.version: must be 1") }
        var watches: [Watch] = []
        if let list = object["watch"] as? [Any], !list.isEmpty {
            for (i, item) in list.enumerated() {
                if let watch = fields.watch(item, at: "$.watch[\(i)]") { watches.append(watch) }
            }
        } else {
            fields.issues.append("$.watch: required, a non-empty list of {path, template}")
        }
        let settle = fields.amount("settleSeconds", "seconds", limit: 86400, default: 60)
        let quarantine = fields.path("quarantine", default: "quarantine")
        let state = fields.path("state", default: "ingest-state.sqlite")
        var after = AfterEnqueue.leave
        if let value = object["afterEnqueue"] {
            if let text = value as? String, let mode = AfterEnqueue(rawValue: text) {
                after = mode
            } else {
                fields.issues.append("$.afterEnqueue: one of \(AfterEnqueue.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        var roots: [String]?
        if let value = object["outputRoots"] {
            if let list = value as? [String], !list.isEmpty, list.allSatisfy({ !$0.isEmpty }) {
                roots = list.map { S3Location.isObject($0) ? $0 : fields.resolve($0) }
            } else {
                fields.issues.append("$.outputRoots: a non-empty list of folders or object prefixes")
            }
        }
        let priority = fields.whole("priority", UserNumbers.priority) ?? 0
        let maxAttempts = fields.whole("maxAttempts", UserNumbers.attempts)
        var libraryAlbum: String?
        if let value = object["libraryAlbum"] {
            if let name = value as? String, !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 200 {
                libraryAlbum = name
            } else {
                fields.issues.append("$.libraryAlbum: an album's name (1 to 200 characters)")
            }
        }
        let forgetGone = fields.amount("forgetGoneAfterDays", "days", limit: 36500, default: 7)
        var issues = fields.issues
        if after == .move, let objects = watches.first(where: \.isObjectPrefix) {
            issues.append("$.afterEnqueue: \"move\" is for folders: the objects under \(objects.path) are left where they are "
                          + "(ingest remembers them); use \"leave\", or a config of their own")
        }
        for w in watches where !w.isObjectPrefix && (state.hasPrefix(w.path + "/") || quarantine.hasPrefix(w.path + "/")) {
            issues.append("$.state and $.quarantine must lie outside the watch folders (\(w.path))")
        }
        guard issues.isEmpty else { throw IngestConfigError(file: path, issues: issues) }
        // No job this config makes may write over the config, the state or its lock.
        ProtectedFiles.shared.protect(absolute, role: "the ingest config")
        ProtectedFiles.shared.protectDatabase(state, role: "the ingest state")
        ProtectedFiles.shared.protect(state + ".lock", role: "the ingest lock file")
        return IngestConfig(file: absolute, watch: watches, settleSeconds: settle, quarantine: quarantine, state: state,
                            afterEnqueue: after, outputRoots: roots, priority: priority, maxAttempts: maxAttempts, libraryAlbum: libraryAlbum,
                            forgetGoneAfterDays: forgetGone)
    }
}

/// A config's members read with their checks: every problem kept with where it is, paths resolved
/// against the config's folder.
struct ConfigFields {
    let object: [String: Any]
    let folder: URL
    var issues: [String] = []

    func resolve(_ p: String) -> String { URL(fileURLWithPath: p, relativeTo: folder).standardized.path }

    /// A number from 0 to `limit` (`unit` names it in the error), else `fallback`.
    mutating func amount(_ key: String, _ unit: String, limit: Double, default fallback: Double) -> Double {
        guard let value = object[key] else { return fallback }
        guard let n = value as? NSNumber, !isBool(value), n.doubleValue >= 0, n.doubleValue <= limit else {
            issues.append("$.\(key): \(unit), from 0 to \(Int(limit))")
            return fallback
        }
        return n.doubleValue
    }

    /// A path, resolved; `fallback` (resolved) when absent or not a path.
    mutating func path(_ key: String, default fallback: String) -> String {
        guard let value = object[key] else { return resolve(fallback) }
        guard let p = value as? String, !p.isEmpty else {
            issues.append("$.\(key): a path")
            return resolve(fallback)
        }
        return resolve(p)
    }

    /// A whole number within `rule`'s range (the command line's and the API's for the same setting).
    mutating func whole(_ key: String, _ rule: NumberRule<Int>) -> Int? {
        guard let value = object[key] else { return nil }
        if let n = value as? NSNumber, !isBool(value), let i = Int(exactly: n.doubleValue), case .success(let checked) = rule.check(i) {
            return checked
        }
        issues.append("$.\(key): a whole number \(rule.rangeDescription)")
        return nil
    }

    /// One entry of `"watch"`: a folder or an object prefix, its patterns and its template.
    mutating func watch(_ item: Any, at: String) -> IngestConfig.Watch? {
        guard let entry = item as? [String: Any] else {
            issues.append("\(at): must be an object with path and template")
            return nil
        }
        let watchKeys = IngestConfig.watchKeys
        for key in entry.keys.sorted() where !watchKeys.contains(key) {
            issues.append("\(at).\(key): unknown key\(Suggestion.hint(key, in: watchKeys)) (known: \(watchKeys.joined(separator: ", ")))")
        }
        var watchPath = ""
        if let p = entry["path"] as? String, S3Location.isObject(p) {
            // An object prefix: the server is asked at each pass, not here (a config is checked offline).
            do throws(S3Error) {
                let location = try S3Location(parsing: p, prefix: true)
                watchPath = location.key.isEmpty || location.key.hasSuffix("/") ? location.description : location.description + "/"
            } catch {
                issues.append("\(at).path: \(error.description)")
            }
        } else if let p = entry["path"] as? String, !p.isEmpty {
            watchPath = resolve(p)
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: watchPath, isDirectory: &isDirectory) || !isDirectory.boolValue {
                issues.append("\(at).path: \(watchPath) is not a folder")
            }
        } else {
            issues.append("\(at).path: required, a folder or an object prefix (s3://BUCKET/PREFIX/)")
        }
        func patterns(_ key: String) -> [String] {
            guard let value = entry[key] else { return [] }
            guard let list = value as? [String], list.allSatisfy({ !$0.isEmpty && !$0.contains("/") }) else {
                issues.append("\(at).\(key): a list of file-name patterns such as \"*.mp4\" (no '/')")
                return []
            }
            return list
        }
        let include = patterns("include"), exclude = patterns("exclude")
        var template: IngestTemplate?
        if let t = entry["template"] as? String, !t.isEmpty {
            do {
                template = try IngestTemplate.load(resolve(t), allowChain: true)
            } catch {
                issues.append("\(at).template: \(error.description)")
            }
        } else {
            issues.append("\(at).template: required, a job manifest with {input}")
        }
        guard let template, !watchPath.isEmpty else { return nil }
        return IngestConfig.Watch(path: watchPath, include: include, exclude: exclude, template: template)
    }
}

/// JSON's true and false (Foundation hands them over as NSNumbers, which also convert to Bool).
func isBool(_ value: Any?) -> Bool {
    guard let value else { return false }
    if let number = value as? NSNumber { return String(cString: number.objCType) == "c" }
    return value is Bool
}

/// A config that cannot be used, with every problem found.
public struct IngestConfigError: Error, Sendable, CustomStringConvertible {
    public var file: String
    public var issues: [String]

    public var description: String {
        "\(file): invalid ingest config (\(issues.count) \(issues.count == 1 ? "error" : "errors"))\n"
            + issues.map { "  " + $0 }.joined(separator: "\n")
    }
}
