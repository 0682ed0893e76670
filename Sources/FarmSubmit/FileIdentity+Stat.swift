import FarmModel
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension FileIdentity {
    /// The file `path` reaches now: stat of the path (symbolic links followed) when it exists, else
    /// stat of its folder plus its name. Nil when neither can be looked at.
    @Sendable public static func of(_ path: String) -> FileIdentity? {
        var st = stat()
        if stat(path, &st) == 0 { return .existing(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)) }
        guard errno == ENOENT else { return nil }
        // A dangling symbolic link is not a new file: writing would follow it.
        if lstat(path, &st) == 0 { return nil }
        let url = URL(fileURLWithPath: path)
        guard stat(url.deletingLastPathComponent().path, &st) == 0 else { return nil }
        return .new(folderDevice: UInt64(st.st_dev), folderInode: UInt64(st.st_ino), name: url.lastPathComponent)
    }
}
