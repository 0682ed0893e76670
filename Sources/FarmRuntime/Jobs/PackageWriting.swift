import Foundation
import SafeFiles
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The writer of a staged package folder, seen from outside: a file in the folder (`name`) that the writer
/// holds locked (`flock`) and touches while it works (at most every `heartbeat` seconds), and removes once
/// the package is whole (its marker written). What a killed writer left (a `mediafarm run` stopped by
/// SIGKILL, a worker on a host that died) is then told from a folder being written by both: no lock held
/// on this host, and no touch for `stale` seconds on any (a lock may be only this host's on a shared file
/// system; the file's time is the server's). Thread-safe.
final class PackageWriting: Sendable {
    static let name = ".mediafarm-writing"
    static let heartbeat: TimeInterval = 30
    static let stale: TimeInterval = 600

    let path: String
    private let state: Mutex<(fd: Int32, touched: Date)>

    /// Creates the lock file in `folder` and takes its lock (where the file system has none, the touches
    /// alone say the writer is alive).
    init(in folder: String) throws {
        path = folder + "/" + Self.name
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw JobError("\(path): cannot make the package's writer file: \(String(cString: strerror(errno)))") }
        if flock(fd, LOCK_EX) != 0 && errno != ENOLCK && errno != EOPNOTSUPP {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw JobError("\(path): cannot lock the package's writer file: \(reason)")
        }
        state = Mutex((fd, Date()))
    }

    /// Says the writer is alive: touches the file, at most every `heartbeat` seconds.
    func touch(now: Date = Date()) {
        state.withLock { state in
            guard state.fd >= 0, now.timeIntervalSince(state.touched) >= Self.heartbeat else { return }
            futimens(state.fd, nil)
            state.touched = now
        }
    }

    /// Removes the file (the package is whole, or given up) and lets go of the lock. Idempotent.
    func end() {
        state.withLock { state in
            guard state.fd >= 0 else { return }
            unlink(path)
            close(state.fd)
            state.fd = -1
        }
    }

    deinit { end() }

    /// Removes the staged package folders beside `final` whose writer is gone: a folder under a staged
    /// name without the package's marker (written last: a whole package waiting for its coordinator to
    /// publish it has one), whose writer file no process here holds locked and nobody touched for `stale`
    /// seconds (without one, the folder itself untouched as long: its writer was killed before making
    /// it). Each is renamed aside first and checked to be the folder examined, then removed. Returns the
    /// paths removed.
    @discardableResult
    static func sweepAbandoned(beside final: String, now: Date = Date()) -> [String] {
        let parent = (final as NSString).deletingLastPathComponent
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return [] }  // no folder: nothing left in it
        var removed: [String] = []
        for name in names where StagedOutput.isStagedName(name) {
            let path = parent + "/" + name
            var folder = stat()
            guard lstat(path, &folder) == 0, folder.st_mode & S_IFMT == S_IFDIR,
                  faccessat(AT_FDCWD, path + "/" + PackageFolder.marker, F_OK, AT_SYMLINK_NOFOLLOW) != 0 else { continue }
            let fd = open(path + "/" + Self.name, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
            defer { if fd >= 0 { close(fd) } }
            var touched = folder.st_mtim
            if fd >= 0 {
                var file = stat()
                guard flock(fd, LOCK_EX | LOCK_NB) == 0, fstat(fd, &file) == 0 else { continue }  // alive here
                touched = file.st_mtim
            }
            guard now.timeIntervalSince1970 - Double(touched.tv_sec) > stale else { continue }
            let aside = path + StagedOutput.asideSuffix
            guard (try? SafeFiles.move(path, to: aside)) != nil else { continue }  // moved or removed meanwhile: left to its owner
            var moved = stat()
            guard lstat(aside, &moved) == 0, moved.st_ino == folder.st_ino, moved.st_dev == folder.st_dev else {
                _ = try? SafeFiles.move(aside, to: path)  // another folder took the name meanwhile: put back as found
                continue
            }
            PackageFolder.remove(aside)
            removed.append(path)
        }
        return removed
    }
}
