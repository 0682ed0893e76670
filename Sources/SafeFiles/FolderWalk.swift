import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What is under a folder, as ingest and `library add` walk it: every entry that is not a folder, with its
/// kind (from `lstat`: links are not followed, so a link to a folder is an entry, never entered), a folder's
/// own entries in name order before those of its sub-folders (each in name order); hidden folders are not
/// entered. Folders that cannot be read are listed apart, so that a caller can tell "gone" from "not
/// readable now".
public struct FolderWalk: Sendable {
    public enum Kind: Sendable { case regular, link, other }

    public struct Entry: Sendable {
        public var path: String
        public var kind: Kind
        public var name: String { (path as NSString).lastPathComponent }
    }

    public private(set) var entries: [Entry] = []
    public private(set) var unreadable: [String] = []

    public init(_ folder: String) {
        var pending = [folder]
        while let current = pending.popLast() {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: current) else {  // reported as unreadable
                unreadable.append(current)
                continue
            }
            var folders: [String] = []
            for name in names.sorted() {
                let path = current + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR: if !name.hasPrefix(".") { folders.append(path) }
                case S_IFREG: entries.append(Entry(path: path, kind: .regular))
                case S_IFLNK: entries.append(Entry(path: path, kind: .link))
                default: entries.append(Entry(path: path, kind: .other))
                }
            }
            pending += folders.reversed()
        }
    }
}
