internal import CFileShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A move that did not happen, with the reason's errno kept (`EEXIST`: something is at the target, and
/// it was left untouched).
public struct FileMoveError: Error, Sendable, CustomStringConvertible {
    public let from: String
    public let to: String
    public let code: Int32

    public init(from: String, to: String, code: Int32) {
        self.from = from
        self.to = to
        self.code = code
    }

    /// Something is already at the target.
    public var targetExists: Bool { code == EEXIST }
    /// Source and target are on different file systems: a rename cannot join them.
    public var crossesDevices: Bool { code == EXDEV }

    public var description: String {
        switch code {
        case EEXIST: "cannot move \(from) to \(to): a file of that name is already there (it was left as it was)"
        case EXDEV: "cannot move \(from) to \(to): they are on different file systems"
        default: "cannot move \(from) to \(to): \(String(cString: strerror(code)))"
        }
    }
}

/// File operations that never lose a file: every rename here refuses to replace what is at its target
/// (`renameat2(RENAME_NOREPLACE)`, or link and unlink where a file system lacks the flag).
public enum SafeFiles {
    /// Renames `from` to `to` unless something is at `to` (then `FileMoveError.targetExists`).
    public static func move(_ from: String, to: String) throws(FileMoveError) {
        let result = mf_rename_noreplace(from, to)
        if result != 0 { throw FileMoveError(from: from, to: to, code: -result) }
    }

    /// Swaps what is at `a` and at `b` in one step (both must exist): a folder replaced this way is never
    /// missing to a reader; what was at `b` is at `a` afterwards, for the caller to remove.
    public static func exchange(_ a: String, _ b: String) throws(FileMoveError) {
        let result = mf_rename_exchange(a, b)
        if result != 0 { throw FileMoveError(from: a, to: b, code: -result) }
    }

    /// As `move`, and across file systems too: there the file is copied under a temporary name beside
    /// `to`, synced, moved into place without replacing, and only then removed from `from`.
    public static func moveAcrossDevices(_ from: String, to: String) throws(FileMoveError) {
        do {
            try move(from, to: to)
            return
        } catch where error.crossesDevices {}
        let temporary = temporaryName(beside: to)
        guard copy(from, to: temporary) else {
            let code = errno
            unlink(temporary)
            throw FileMoveError(from: from, to: to, code: code)
        }
        do {
            try move(temporary, to: to)
        } catch {
            unlink(temporary)
            throw FileMoveError(from: from, to: to, code: error.code)
        }
        syncFolder(of: to)
        unlink(from)
    }

    /// Writes `data` as a new file at `path`: under a temporary name, synced, then moved into place
    /// without replacing anything (`FileMoveError.targetExists` when `path` is taken).
    public static func create(_ path: String, contents data: Data) throws(FileMoveError) {
        let temporary = temporaryName(beside: path)
        let fd = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileMoveError(from: temporary, to: path, code: errno) }
        let written = data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return fsync(fd) == 0
        }
        let code = errno
        close(fd)
        guard written else {
            unlink(temporary)
            throw FileMoveError(from: temporary, to: path, code: code)
        }
        do {
            try move(temporary, to: path)
        } catch {
            unlink(temporary)
            throw error
        }
        syncFolder(of: path)
    }

    /// Syncs the folder holding `path`, so that a rename into it survives a crash.
    public static func syncFolder(of path: String) {
        let fd = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }

    /// A hidden name beside `path` that nothing else uses.
    public static func temporaryName(beside path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        return (folder.isEmpty ? "." : folder) + "/." + name + ".mediafarm-move-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }

    /// Copies the bytes of `from` into a new file `to`, synced. False with errno set on failure.
    static func copy(_ from: String, to: String) -> Bool {
        let source = open(from, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { return false }
        defer { close(source) }
        var info = stat()
        guard fstat(source, &info) == 0 else { return false }
        let target = open(to, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, info.st_mode & 0o777)
        guard target >= 0 else { return false }
        defer { close(target) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress!, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return false }
            if n == 0 { break }
            var offset = 0
            while offset < n {
                let w = buffer.withUnsafeBytes { write(target, $0.baseAddress! + offset, n - offset) }
                if w < 0 { if errno == EINTR { continue }; return false }
                offset += w
            }
        }
        return fsync(target) == 0
    }
}
