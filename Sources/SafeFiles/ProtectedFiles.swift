import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The farm's own files, which no job's output may ever be: the queue's database and its `-wal`, `-shm`
/// and `-journal` companions (the asset library lives in it), an ingest state and its lock, a capture
/// journal, token and config files. Each part of the farm protects what it opens; submission, the worker
/// and publication ask `refusal(for:)` before an output is accepted or renamed into place.
///
/// Files are compared by identity (device and inode, symbolic links followed, a file yet to be made by
/// its folder's identity and its name), never by spelling. A process passes its list to the worker
/// processes it starts in `MEDIAFARM_PROTECTED_FILES`, so that a worker refuses what its coordinator
/// protects. Besides the list, any existing SQLite database or write-ahead log is refused by its first
/// bytes: that covers another process's queue or ingest state, which this process never opened.
public final class ProtectedFiles: Sendable {
    public struct Entry: Sendable, Hashable, Codable {
        /// Absolute.
        public var path: String
        /// What it is, in words ("the queue's database").
        public var role: String
    }

    /// This process's list, starting with what the process that started it passed on.
    public static let shared = ProtectedFiles(inherited: ProcessInfo.processInfo.environment[environmentKey])

    public static let environmentKey = "MEDIAFARM_PROTECTED_FILES"

    private let entries: Mutex<[Entry]>

    public init(inherited: String? = nil) {
        // Written by this program's parent; unreadable, nothing is inherited and the process protects its own files.
        let decoded = inherited.flatMap { try? JSONDecoder().decode([Entry].self, from: Data($0.utf8)) } ?? []
        entries = Mutex(decoded)
    }

    /// Protects `path` (made absolute against the current folder).
    public func protect(_ path: String, role: String) {
        let entry = Entry(path: Self.absolute(path), role: role)
        entries.withLock { list in if !list.contains(entry) { list.append(entry) } }
    }

    /// Protects an SQLite database and the companion files SQLite makes beside it.
    public func protectDatabase(_ path: String, role: String) {
        protect(path, role: role)
        for suffix in ["-wal", "-shm", "-journal"] { protect(path + suffix, role: role + " (\(suffix.dropFirst()) file)") }
    }

    /// Forgets `path` and its companions (the file was closed).
    public func release(_ path: String) {
        let absolute = Self.absolute(path)
        entries.withLock { list in list.removeAll { $0.path == absolute || $0.path.hasPrefix(absolute + "-") } }
    }

    public var all: [Entry] { entries.withLock { $0 } }

    /// The list as `MEDIAFARM_PROTECTED_FILES` carries it to child processes, with the files this process
    /// holds open for writing (the child cannot see those).
    public var environmentValue: String {
        let open = Self.filesOpenForWriting().map { Entry(path: $0.path, role: Self.openRole(inherited: true)) }
        return String(decoding: (try? JSONEncoder().encode(all + open)) ?? Data("[]".utf8), as: UTF8.self)  // strings only: always encodes
    }

    /// Why nothing may be written to `path`: what farm file (or database) it reaches, in words; nil when
    /// it is none of them. Besides the list: any file this process holds open for writing (its log where
    /// its output goes to a file, its databases, whatever it writes), found where the kernel keeps them, so
    /// that nothing the farm writes has to be named here by hand.
    public func refusal(for path: String) -> String? {
        let target = Self.resolvingLinks(Self.absolute(path))
        if let identity = Self.identity(of: target) {
            for entry in all where Self.identity(of: Self.resolvingLinks(entry.path)) == identity {
                return "\(entry.role) (\(entry.path))"
            }
            // Only a file that exists can be open (most outputs do not exist yet: no look at the descriptors).
            if case .existing = identity {
                for file in Self.filesOpenForWriting() where file.identity == identity {
                    return "\(Self.openRole(inherited: false)) (\(file.path))"
                }
            }
        }
        return Self.databaseKind(target).map { "\($0) (\(target))" }
    }

    static func openRole(inherited: Bool) -> String {
        inherited ? "a file the farm's process that started this one holds open for writing" : "a file the farm holds open for writing"
    }

    /// The regular files this process holds open for writing (`/proc/self/fd` and its `fdinfo` flags), by
    /// identity, each with the path the kernel gives it.
    static func filesOpenForWriting() -> [(identity: Identity, path: String)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }  // no /proc: the list alone
        var files: [(Identity, String)] = []
        for name in names {
            guard let fd = Int32(name) else { continue }
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            // The open flags, in octal: O_WRONLY (1) or O_RDWR (2) in the low bits.
            guard let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8),  // closed meanwhile: not open
                  let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
                  let flags = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8), flags & 3 != 0 else { continue }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
            let path = n > 0 ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "descriptor \(fd)"
            files.append((.existing(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)), path))
        }
        return files
    }

    /// A sentence for a refused output at `path`.
    public func check(_ path: String) -> String? {
        refusal(for: path).map { "\(path) is \($0): an output never replaces the farm's own files" }
    }

    // MARK: - Identity

    enum Identity: Hashable {
        case existing(device: UInt64, inode: UInt64)
        case new(folderDevice: UInt64, folderInode: UInt64, name: String)
    }

    static func identity(of path: String) -> Identity? {
        var st = stat()
        if stat(path, &st) == 0 { return .existing(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)) }
        let folder = (path as NSString).deletingLastPathComponent
        guard stat(folder.isEmpty ? "/" : folder, &st) == 0 else { return nil }
        return .new(folderDevice: UInt64(st.st_dev), folderInode: UInt64(st.st_ino), name: (path as NSString).lastPathComponent)
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// `path` with its folder's links resolved and, when it is itself a symbolic link, the link followed,
    /// even to a target that does not exist yet (writing through a dangling link creates its target).
    static func resolvingLinks(_ path: String) -> String {
        var current = path
        for _ in 0..<40 {
            let folder = (current as NSString).deletingLastPathComponent
            let name = (current as NSString).lastPathComponent
            var resolvedFolder = folder.isEmpty ? "/" : folder
            // A folder yet to be made (an output's folders are created) is taken as spelled, `..` lexically.
            for spelling in [resolvedFolder, lexical(resolvedFolder)] {
                if let real = realpath(spelling, nil) {
                    resolvedFolder = String(cString: real)
                    free(real)
                    break
                }
            }
            current = (resolvedFolder == "/" ? "" : resolvedFolder) + "/" + name
            var st = stat()
            guard lstat(current, &st) == 0, (st.st_mode & S_IFMT) == S_IFLNK else { return current }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink(current, &buffer, buffer.count - 1)
            guard n > 0 else { return current }
            let link = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = link.hasPrefix("/") ? link : resolvedFolder + "/" + link
        }
        return current
    }

    /// `path` without `.`, `..` and repeated slashes, by its text.
    static func lexical(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// "an SQLite database" or "an SQLite write-ahead log" when the regular file at `path` starts like one.
    static func databaseKind(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        var head = [UInt8](repeating: 0, count: 16)
        let n = read(fd, &head, 16)
        if n == 16, head == Array("SQLite format 3\0".utf8) { return "an SQLite database" }
        if n >= 4, head[0] == 0x37, head[1] == 0x7f, head[2] == 0x06, head[3] & 0xfe == 0x82 { return "an SQLite write-ahead log" }
        return nil
    }
}
