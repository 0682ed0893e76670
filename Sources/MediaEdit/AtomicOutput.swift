import Foundation
import MediaCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A file written under a temporary name beside its final path and renamed into place only when
/// complete: the final path is either absent or a whole file.
///
/// The temporary's writer holds an exclusive `flock` on it from the moment it has a name until it is
/// committed or discarded, so a temporary is recognised as live by its lock, not by a process id (which
/// means nothing in another container or on another host sharing the folder). A temporary nobody holds
/// a lock on was left by a writer that died (SIGKILL, power loss) and is removed the next time anything
/// is written to the same folder (in a crowded folder, by each process at most once a minute: see
/// `sweepIfDue`). The file appears already locked: it is made unnamed (`O_TMPFILE`)
/// and linked under its name after locking; on file systems without `O_TMPFILE` it is created and
/// locked at once, and a cleaner leaves unlocked temporaries younger than a few seconds alone.
///
/// Thread-confined. An output neither committed nor discarded is discarded when it is released.
public final class AtomicOutput {
    public let finalPath: String
    public let temporaryPath: String
    private var lockDescriptor: Int32
    private var committed = false
    /// Runs with the final path just before the rename; a throw discards the output.
    public var beforeCommit: (@Sendable (String) throws -> Void)?
    /// Runs with the temporary path once the file is whole, before `beforeCommit` (quality checks read it
    /// there, before anyone can see it); a throw discards the output.
    public var checkWritten: (@Sendable (String) throws -> Void)?

    /// An export's hooks: its last check before the rename, and its checks of the written file (under `interrupter`).
    func take(_ settings: ExportSettings, interrupter: Interrupter) {
        beforeCommit = settings.beforeCommit
        if let check = settings.checkWritten {
            checkWritten = { @Sendable path in try check(path, interrupter) }
        } else {
            checkWritten = nil
        }
    }

    static let marker = ".mediafarm-"
    static let suffix = ".tmp"
    /// Unlocked temporaries younger than this are not removed (see the type's notes).
    static let youngestStale: TimeInterval = 5

    /// Prepares to write `finalPath`: creates its folder, cleans stale temporaries there, and makes the
    /// locked temporary.
    public init(finalPath: String) throws(ExportError) {
        self.finalPath = finalPath
        let url = URL(fileURLWithPath: finalPath)
        let folder = url.deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ExportError("\(finalPath): cannot create the output folder \(folder): \(Self.reason(error))")
        }
        guard access(folder, W_OK) == 0 else {
            throw ExportError("\(finalPath): the output folder \(folder) is not writable by this user")
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: finalPath, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ExportError("\(finalPath): a folder with that name is in the way")
        }
        Self.sweepIfDue(folder)
        let name = url.lastPathComponent
        temporaryPath = folder + "/." + (name.hasPrefix(".") ? String(name.dropFirst()) : name) + Self.marker
            + String(UInt64.random(in: 0...UInt64.max), radix: 36) + Self.suffix
        lockDescriptor = try Self.createLocked(temporaryPath, in: folder)
    }

    deinit {
        if !committed { unlink(temporaryPath) }
        if lockDescriptor >= 0 { close(lockDescriptor) }
    }

    /// Makes `path` and returns a descriptor holding an exclusive lock on it.
    private static func createLocked(_ path: String, in folder: String) throws(ExportError) -> Int32 {
        let fd = open(folder, Self.unnamedFileFlag | O_RDWR | O_CLOEXEC, 0o644)
        if fd >= 0 {
            if flock(fd, LOCK_EX) == 0, linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 {
                return fd
            }
            close(fd)
        }
        // No O_TMPFILE here (or no /proc): create, then lock at once.
        let created = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o644)
        guard created >= 0 else {
            throw ExportError("\(path): cannot create the temporary output: \(String(cString: strerror(errno)))")
        }
        flock(created, LOCK_EX)
        return created
    }

    /// Writes `data` as the whole temporary file and syncs it (for small outputs such as reports).
    public func write(contents data: Data) throws(ExportError) {
        let ok = data.withUnsafeBytes { raw -> Bool in
            guard ftruncate(lockDescriptor, 0) == 0 else { return false }
            var offset = 0
            while offset < raw.count {
                let n = pwrite(lockDescriptor, raw.baseAddress! + offset, raw.count - offset, off_t(offset))
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return fsync(lockDescriptor) == 0
        }
        if !ok { throw ExportError("\(finalPath): cannot write the file: \(String(cString: strerror(errno)))") }
    }

    /// Moves the finished temporary into place and syncs the folder, so the rename survives a crash.
    public func commit() throws(ExportError) {
        if let checkWritten {
            do {
                try checkWritten(temporaryPath)
            } catch {
                discard()
                // Said of the output, not of its temporary name, which is gone.
                throw ExportError("\(error)".replacingOccurrences(of: temporaryPath, with: finalPath))
            }
        }
        if let beforeCommit {
            do {
                try beforeCommit(finalPath)
            } catch {
                discard()
                throw ExportError("\(error)")
            }
        }
        guard rename(temporaryPath, finalPath) == 0 else {
            let reason = String(cString: strerror(errno))
            discard()
            throw ExportError("\(finalPath): cannot move the finished file into place: \(reason)")
        }
        committed = true
        close(lockDescriptor)
        lockDescriptor = -1
        let folder = URL(fileURLWithPath: finalPath).deletingLastPathComponent().path
        let fd = open(folder, O_RDONLY | O_DIRECTORY)
        if fd >= 0 { fsync(fd); close(fd) }
    }

    /// Runs `body` with the temporary path to write, then moves the result into place; on any failure
    /// the temporary is removed and the error passed on.
    public func write<T>(_ body: (String) throws -> T) throws -> T {
        do {
            let result = try body(temporaryPath)
            try commit()
            return result
        } catch let error as MediaFileError where error.path == temporaryPath {
            // Name the output the user asked for, not its temporary.
            discard()
            throw MediaFileError(path: finalPath, reason: error.reason)
        } catch {
            discard()
            throw error
        }
    }

    /// Removes the temporary (after a failure or cancellation).
    public func discard() {
        guard !committed else { return }
        unlink(temporaryPath)
    }

    /// Whether `name` is a temporary's name.
    static func isTemporaryName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(suffix) && name.contains(marker)
    }

    /// Folders this process swept that held more than `crowded` entries, with when: listing a folder costs
    /// in proportion to what it holds (20,000 reports in a dated folder made each job cost 2.4 times as
    /// much), so such a folder is swept by a process at most every `crowdedSweepInterval` seconds. A
    /// smaller folder is swept before every output, as a dead writer's temporary is cheap to find there.
    private static let crowdedFolders = Mutex<[String: Date]>([:])
    static let crowded = 1000
    static let crowdedSweepInterval: TimeInterval = 60

    /// Sweeps `folder` unless it is crowded and this process swept it within the interval (a writer before
    /// each output; the coordinator after each attempt).
    public static func sweepIfDue(_ folder: String, now: Date = Date()) {
        if let last = crowdedFolders.withLock({ $0[folder] }), now.timeIntervalSince(last) < crowdedSweepInterval { return }
        let entries = removeStaleTemporaries(in: folder)
        crowdedFolders.withLock { folders in
            if entries > crowded { folders[folder] = now } else { folders[folder] = nil }
        }
    }

    /// Deletes the temporaries in `folder` that no writer holds a lock on; returns how many entries the
    /// folder held. Safe with writers in other
    /// processes, containers and hosts sharing the folder: a live writer's lock makes this skip it.
    @discardableResult
    public static func removeStaleTemporaries(in folder: String) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return 0 }  // no folder: no temporaries
        var unnamedFiles: Bool?   // asked once, only when a young unlocked temporary needs it
        for name in names where isTemporaryName(name) {
            let path = folder + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }   // its writer is alive
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_nlink > 0 else { continue }
            let age = Date().timeIntervalSince1970 - (Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
            if age < youngestStale {
                if unnamedFiles == nil { unnamedFiles = supportsUnnamedFiles(folder) }
                if unnamedFiles == false { continue }
            }
            // Still the file we locked (not replaced under the same name meanwhile)?
            var now = stat()
            guard lstat(path, &now) == 0, now.st_ino == st.st_ino, now.st_dev == st.st_dev else { continue }
            unlink(path)
        }
        return names.count
    }

    /// Whether temporaries in `folder` are made unnamed and linked already locked (`O_TMPFILE`).
    static func supportsUnnamedFiles(_ folder: String) -> Bool {
        let fd = open(folder, Self.unnamedFileFlag | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// Linux's O_TMPFILE (__O_TMPFILE | O_DIRECTORY), which Glibc's Swift overlay does not export.
    static let unnamedFileFlag: Int32 = 0o20_000_000 | O_DIRECTORY

    static func reason(_ error: any Error) -> String {
        (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
    }
}
