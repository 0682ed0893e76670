import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The folders a coordinator makes for each worker process it starts: its `TMPDIR`, and its spool for
/// outputs bound for objects (`MEDIAFARM_SPOOL`). They are removed when the process has been reaped,
/// however it ended, so a killed job leaves no temporaries and no half-uploaded staged file. Those of a
/// coordinator that was killed itself are removed by the next coordinator that starts on the host: each
/// coordinator holds a lock (`flock`) on a file of its own beside them for as long as it lives, and a lock
/// that can be taken belongs to one that is gone.
enum WorkerFolders {
    /// This process's name in the folders: `mediafarm-worker-ID-XXXXXX`, locked by `mediafarm-coordinator-ID.lock`.
    static let id = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    private static let lock = NSLock()
    nonisolated(unsafe) private static var locked: Set<String> = []

    /// The roots worker folders are made under: the TMPDIR and the spool folder of `environment`.
    static func roots(_ environment: [String: String]) -> (temporary: String, spool: String) {
        let temporary = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let spool = environment["MEDIAFARM_SPOOL"].flatMap { $0.isEmpty ? nil : $0 } ?? ObjectOutput.defaultSpoolFolder
        return (temporary, spool)
    }

    /// Makes a worker's folders and points `environment` at them; returns them (for `remove`). A root that
    /// cannot be used is left as the worker's own (the worker then uses it directly, as before).
    static func make(_ environment: inout [String: String]) -> [String] {
        let (temporary, spool) = roots(environment)
        var made: [String] = []
        if let folder = makeFolder(under: temporary) {
            environment["TMPDIR"] = folder
            made.append(folder)
        }
        if mkdir(spool, 0o700) == 0 || errno == EEXIST, let folder = makeFolder(under: spool) {
            environment["MEDIAFARM_SPOOL"] = folder
            made.append(folder)
        }
        return made
    }

    static func remove(_ folders: [String]) {
        for folder in folders { try? FileManager.default.removeItem(atPath: folder) }  // what is left is swept at the next start
    }

    /// Removes the worker folders of coordinators that are gone, under the roots of `environment`.
    static func sweep(_ environment: [String: String]) -> Int {
        let (temporary, spool) = roots(environment)
        var removed = 0
        for root in Set([temporary, spool]) {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { continue }  // no such root: nothing left in it
            for name in names where name.hasPrefix("mediafarm-coordinator-") && name.hasSuffix(".lock") {
                let owner = String(name.dropFirst("mediafarm-coordinator-".count).dropLast(".lock".count))
                guard owner != id else { continue }
                let fd = open("\(root)/\(name)", O_RDWR | O_CLOEXEC)
                guard fd >= 0 else { continue }
                defer { close(fd) }
                guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }  // alive
                for folder in names where folder.hasPrefix("mediafarm-worker-\(owner)-") {
                    try? FileManager.default.removeItem(atPath: "\(root)/\(folder)")  // a folder that cannot be removed now is tried at the next start
                    removed += 1
                }
                unlink("\(root)/\(name)")
            }
        }
        return removed
    }

    /// A new folder `mediafarm-worker-ID-XXXXXX` under `root`, once this process holds its lock there.
    private static func makeFolder(under root: String) -> String? {
        guard holdLock(in: root) else { return nil }
        var template = Array("\(root)/mediafarm-worker-\(id)-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!).map { String(cString: $0) } }
    }

    /// Takes this process's lock in `root` the first time (the descriptor is kept open: the kernel
    /// releases the lock when the process ends, however it ends).
    private static func holdLock(in root: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if locked.contains(root) { return true }
        let fd = open("\(root)/mediafarm-coordinator-\(id).lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return false
        }
        locked.insert(root)
        return true
    }

    /// At a clean exit: this process's lock files go (its worker folders went with their workers).
    static func release(_ environment: [String: String]) {
        let (temporary, spool) = roots(environment)
        lock.lock()
        defer { lock.unlock() }
        for root in locked where root == temporary || root == spool { unlink("\(root)/mediafarm-coordinator-\(id).lock") }
    }
}
