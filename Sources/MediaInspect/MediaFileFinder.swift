import Foundation
import MediaCore

/// Expands the paths a user gives into the files to inspect: files are taken as they are (whatever
/// their name), folders are walked recursively for files with a media extension, in name order.
public enum MediaFileFinder {
    public static let mediaExtensions: Set<String> = [
        "mp4", "m4v", "m4a", "mov", "qt", "3gp", "3g2", "mkv", "mka", "mks", "webm", "avi", "ts", "m2ts", "mts",
        "mpg", "mpeg", "vob", "flv", "wmv", "wma", "asf", "mxf", "dv", "y4m", "ogg", "oga", "ogv", "opus",
        "mp3", "aac", "ac3", "eac3", "flac", "wav", "aif", "aiff", "aifc", "caf", "amr", "mp2",
    ]

    /// One entry per file to inspect, or an error for a folder that holds no media.
    public enum Entry: Sendable, Equatable {
        case file(String)
        case emptyFolder(String)
    }

    public static func expand(_ paths: [String], extensions: Set<String> = mediaExtensions) -> [Entry] {
        var result: [Entry] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                result.append(.file(path))   // files, and paths that do not exist (reported when inspected)
                continue
            }
            let found = walk(path, extensions: extensions)
            result += found.isEmpty ? [.emptyFolder(path)] : found.map(Entry.file)
        }
        return result
    }

    private static func walk(_ folder: String, extensions: Set<String>) -> [String] {
        let root = URL(fileURLWithPath: folder)
        guard let enumerator = FileManager.default.enumerator(
            at: root, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles]) else { return [] }
        var files: [String] = []
        for case let url as URL in enumerator {
            guard extensions.contains(url.pathExtension.lowercased()),
                  (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }  // not known to be a regular file: skipped
            let relative = url.path.hasPrefix(root.path + "/") ? String(url.path.dropFirst(root.path.count + 1)) : url.lastPathComponent
            files.append((folder as NSString).appendingPathComponent(relative))
        }
        return files.sorted()
    }
}

/// Inspects many inputs concurrently and returns their reports in input order.
public enum BatchInspector {
    public static func inspect(_ entries: [MediaFileFinder.Entry], keys: Set<AssetKey>, options: AssetOptions,
                               concurrency: Int, progress: (@Sendable (Int, Int) -> Void)? = nil) async -> [AssetReport] {
        await concurrentMap(entries, limit: concurrency, progress: progress) { entry in
            switch entry {
            case .emptyFolder(let folder):
                return AssetReport(path: folder, error: "\(folder): the folder contains no media files")
            case .file(let path):
                return await AssetReport.inspect(Asset(path: path, options: options), keys: keys, displayPath: path)
            }
        }
    }
}
