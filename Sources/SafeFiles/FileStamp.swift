#if canImport(Glibc)
import Glibc
#endif

/// What `stat` says about a file: its size, modification time and identity. A file whose stamp is unchanged
/// is taken as unchanged without reading it (a registered path is not hashed again; a reused result's file is
/// linked, not copied).
public struct FileStamp: Sendable, Hashable, Codable {
    public var size: Int64
    /// Modification time, seconds since 1970 with nanoseconds.
    public var mtime: Double
    public var inode: Int64
    public var device: Int64

    /// nil when there is no regular file at `path` (following symbolic links).
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        size = Int64(info.st_size)
        mtime = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        inode = Int64(bitPattern: UInt64(info.st_ino))
        device = Int64(bitPattern: UInt64(info.st_dev))
    }

    public init(size: Int64, mtime: Double, inode: Int64, device: Int64) {
        self.size = size
        self.mtime = mtime
        self.inode = inode
        self.device = device
    }
}
