import FarmModel
import Foundation
import QueueCLI
import SafeFiles

/// `mediafarm capture --config FILE`: the capture's settings as a JSON object (jobs/capture.schema.json),
/// the options' names in camelCase, so that a systemd unit can run a capture from a file. Options given
/// on the command line win. Relative paths are resolved against the file's folder. An unknown key, or a
/// value of the wrong type, is an error naming the file and the key.
struct CaptureConfigFile: Decodable {
    var source: String?
    var outputDir: String?
    var segmentDuration: Double?
    var maxDuration: Double?
    var maxSize: ByteCount?
    var segmentMaxBytes: ByteCount?
    var minFreeDisk: ByteCount?
    var captureID: String?
    var inputFormat: String?
    var videoSize: String?
    var frameRate: String?
    var readTimeout: Double?
    var reconnectFor: Double?
    var scan: String?
    var roi: String?
    var stillEvery: Double?
    var stillsOnRequest: Bool?
    var levelsEvery: Double?
    var segmentWaveforms: Bool?
    var enqueue: String?
    var assemble: String?
    var queue: String?
    var outputRoots: [String]?

    /// A size as a number of bytes or a string with a unit ("2G").
    struct ByteCount: Decodable {
        var text: String
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let n = try? c.decode(UInt64.self) { text = String(n) } else { text = try c.decode(String.self) }  // a number or a string
        }
    }

    static let keys: Set<String> = ["source", "outputDir", "segmentDuration", "maxDuration", "maxSize", "segmentMaxBytes",
                                    "minFreeDisk", "captureID", "inputFormat", "videoSize", "frameRate", "readTimeout",
                                    "reconnectFor", "scan", "roi", "stillEvery", "stillsOnRequest", "levelsEvery", "segmentWaveforms", "enqueue", "assemble", "queue", "outputRoots"]

    static func load(_ path: String) throws -> CaptureConfigFile {
        func bad(_ why: String) -> CLIError { CLIError("--config \(path): \(why)", status: ExitStatus.usage) }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw bad("cannot read it: \((error as NSError).localizedDescription)")
        }
        guard data.count <= 1 << 20 else { throw bad("larger than 1 MiB; a capture config is a small JSON object") }
        ProtectedFiles.shared.protect(path, role: "the capture config")
        // The strict parser first: a syntax error is named with its line and column.
        let value: JSONValue
        do { value = try JSONParser.parse([UInt8](data)) } catch { throw bad(error.description) }
        guard case .object = value else { throw bad("expected a JSON object, found \(value.kindName)") }
        // Parsed just above, where a fault is named with its line and column.
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw bad("expected a JSON object")
        }
        let unknown = Set(object.keys).subtracting(keys)
        guard unknown.isEmpty else {
            let named = unknown.sorted().map { "\"\($0)\"" + Suggestion.hint($0, in: keys.sorted()) }
            throw bad("unknown key\(unknown.count > 1 ? "s" : "") \(named.joined(separator: ", ")); known: \(keys.sorted().joined(separator: ", "))")
        }
        var file: CaptureConfigFile
        do {
            file = try JSONDecoder().decode(CaptureConfigFile.self, from: data)
        } catch let DecodingError.typeMismatch(type, context), let DecodingError.valueNotFound(type, context) {
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw bad("\(key): expected \(type == ByteCount.self ? "a size (bytes, or a string such as \"2G\")" : "\(type)")")
        } catch {
            throw bad("\(error)")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        func resolve(_ p: String?) -> String? {
            guard let p, !p.hasPrefix("/") else { return p }
            return folder.appendingPathComponent(p).standardizedFileURL.path
        }
        file.outputDir = resolve(file.outputDir)
        file.enqueue = resolve(file.enqueue)
        file.assemble = resolve(file.assemble)
        file.outputRoots = file.outputRoots?.map { resolve($0)! }
        return file
    }
}
