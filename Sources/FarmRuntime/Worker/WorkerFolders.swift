import Crypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The folders a coordinator makes for each worker process it starts: its `TMPDIR`, and its spool for
/// outputs bound for objects (`MEDIAFARM_SPOOL`). They are removed when the process has been reaped,
/// however it ended, so a killed job leaves no temporaries and no half-uploaded staged file.
///
/// They live in a folder of the coordinator's queue (`mediafarm-queue-HASH`, the hash of where the queue
/// is), so that the coordinators of one farm see only each other's. Each coordinator holds a lock
/// (`flock`) on a file of its own there for as long as it lives, holding its lease name: a lock that can
/// be taken belongs to a coordinator that is gone. The next one to start on the host removes that one's
/// folders and learns its name, so that its jobs can be taken back at once rather than when their leases
/// expire (`Rescuer.takeBackJobs`).
final class WorkerFolders: Sendable {
    /// This coordinator's name in the folders: `mediafarm-worker-ID-XXXXXX`, locked by `mediafarm-coordinator-ID.lock`.
    let id = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    /// The lease owner written in the lock file.
    let owner: String
    /// The queue's folder under the TMPDIR, and under the spool.
    let temporary: String
    let spool: String
    private let held = Mutex<[String: Int32]>([:])

    /// `queue`: where the queue is (`JobStore.location`; a file's real path is used when there is one).
    init(queue: String, owner: String, environment: [String: String]) {
        self.owner = owner
        let place = realpath(queue, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? queue
        let hash = SHA256.hash(data: Data(place.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        let temporaryRoot = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let spoolRoot = environment["MEDIAFARM_SPOOL"].flatMap { $0.isEmpty ? nil : $0 } ?? ObjectOutput.defaultSpoolFolder
        temporary = "\(temporaryRoot)/mediafarm-queue-\(hash)"
        spool = "\(spoolRoot)/mediafarm-queue-\(hash)"
    }

    /// Makes a worker's folders and points `environment` at them; returns them (for `remove`). A root that
    /// cannot be used is left as the worker's own (the worker then uses it directly, as before).
    func make(_ environment: inout [String: String]) -> [String] {
        var made: [String] = []
        if let folder = makeFolder(under: temporary) {
            environment["TMPDIR"] = folder
            made.append(folder)
        }
        if let folder = makeFolder(under: spool) {
            environment["MEDIAFARM_SPOOL"] = folder
            made.append(folder)
        }
        return made
    }

    static func remove(_ folders: [String]) {
        for folder in folders { try? FileManager.default.removeItem(atPath: folder) }  // what is left is swept at the next start
    }

    /// What coordinators of this queue that are gone from this host left.
    struct Leftovers: Sendable, Equatable {
        /// Their workers' folders removed.
        var removed = 0
        /// Their lease names (`host:pid:random`), as their lock files hold them.
        var owners: [String] = []
    }

    /// Removes the worker folders of this queue's coordinators that are gone, and names those coordinators.
    /// It takes this coordinator's own lock first, so that two starting at once cannot take each other for gone.
    func sweep() -> Leftovers {
        var leftovers = Leftovers()
        for root in Set([temporary, spool]) {
            guard hold(root), let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { continue }  // no such root: nothing left in it
            for name in names where name.hasPrefix("mediafarm-coordinator-") && name.hasSuffix(".lock") {
                let other = String(name.dropFirst("mediafarm-coordinator-".count).dropLast(".lock".count))
                guard other != id else { continue }
                let fd = open("\(root)/\(name)", O_RDWR | O_CLOEXEC | O_NOFOLLOW)
                guard fd >= 0 else { continue }
                defer { close(fd) }
                guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }  // alive
                // A lock file that cannot be read names no one: its folders still go; its jobs wait for their leases.
                if let text = try? String(contentsOfFile: "\(root)/\(name)", encoding: .utf8) {
                    for line in text.split(separator: "\n") where !line.isEmpty && !leftovers.owners.contains(String(line)) {
                        leftovers.owners.append(String(line))
                    }
                }
                for folder in names where folder.hasPrefix("mediafarm-worker-\(other)-") {
                    try? FileManager.default.removeItem(atPath: "\(root)/\(folder)")  // a folder that cannot be removed now is tried at the next start
                    leftovers.removed += 1
                }
                unlink("\(root)/\(name)")
            }
        }
        return leftovers
    }

    /// A new folder `mediafarm-worker-ID-XXXXXX` under `root`, once this coordinator holds its lock there.
    private func makeFolder(under root: String) -> String? {
        guard hold(root) else { return nil }
        var template = Array("\(root)/mediafarm-worker-\(id)-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!).map { String(cString: $0) } }
    }

    /// Takes this coordinator's lock in `root` (made, 0700, when missing) the first time, and writes its
    /// lease name in it. The descriptor is kept open: the kernel releases the lock when the process ends,
    /// however it ends.
    private func hold(_ root: String) -> Bool {
        held.withLock { held in
            if held[root] != nil { return true }
            let parent = (root as NSString).deletingLastPathComponent
            guard mkdir(parent, 0o700) == 0 || errno == EEXIST else { return false }
            var fd: Int32 = -1
            for _ in 0..<3 where fd < 0 {  // the last coordinator leaving may remove the folder between the two
                guard mkdir(root, 0o700) == 0 || errno == EEXIST else { return false }
                fd = open("\(root)/mediafarm-coordinator-\(id).lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            }
            guard fd >= 0 else { return false }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                close(fd)
                return false
            }
            let line = owner + "\n"
            _ = line.withCString { write(fd, $0, strlen($0)) }
            held[root] = fd
            return true
        }
    }

    /// At a clean exit: this coordinator's lock files go (its worker folders went with their workers).
    func release() {
        held.withLock { held in
            for (root, fd) in held {
                unlink("\(root)/mediafarm-coordinator-\(id).lock")
                close(fd)
                rmdir(root)  // the queue's folder goes with its last coordinator (not while it holds anything)
            }
            held = [:]
        }
    }
}
