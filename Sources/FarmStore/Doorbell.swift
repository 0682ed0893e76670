import Foundation
import SafeFiles
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How an SQLite queue tells its coordinators of new work: a small file beside the database
/// (`QUEUE-wake`) whose times each process touches after a commit that made work due (a submission, a
/// retry, a released or requeued job), and that every listening coordinator watches with inotify. A
/// touch is one system call after the commit, so a woken coordinator always finds the work committed;
/// a touch that fails costs only the wake-up (coordinators still look at the queue now and then).
final class Doorbell: Sendable {
    let path: String
    private let work = WorkSignal()
    /// Whether the watch is in place (coordinators then wait for it, polling only as a fallback).
    var listening: Bool { work.listening.load(ordering: .relaxed) }
    /// The callers waiting for the doorbell now.
    var waiting: Int { work.waiting }

    init(queuePath: String) {
        path = queuePath + "-wake"
        ProtectedFiles.shared.protect(path, role: "the queue's wake file")
    }

    /// Watches the doorbell on a thread of its own, for as long as the process lives.
    init(listeningBeside queuePath: String) {
        path = queuePath + "-wake"
        ProtectedFiles.shared.protect(path, role: "the queue's wake file")
        Self.ring(path)
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        guard fd >= 0,
              inotify_add_watch(fd, folder.isEmpty ? "." : folder, UInt32(IN_ATTRIB | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0 else {
            return
        }
        work.listening.store(true, ordering: .relaxed)
        let work = self.work
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                // Events: a struct inotify_event (16 bytes) then its name, NUL-padded.
                var offset = 0
                var rung = false
                while offset + 16 <= n {
                    let length = Int(buffer[offset + 12]) | Int(buffer[offset + 13]) << 8 | Int(buffer[offset + 14]) << 16 | Int(buffer[offset + 15]) << 24
                    let nameBytes = buffer[(offset + 16)..<min(n, offset + 16 + length)].prefix { $0 != 0 }
                    if String(decoding: nameBytes, as: UTF8.self) == name { rung = true }
                    offset += 16 + length
                }
                if rung { work.signal() }
            }
            work.listening.store(false, ordering: .relaxed)
        }
        thread.name = "mediafarm-doorbell"
        thread.start()
    }

    /// Returns when the doorbell rings, after `seconds`, or when the task is cancelled.
    func wait(upTo seconds: Double) async {
        await work.wait(upTo: seconds)
    }

    /// Touches the doorbell (creating it when it is missing); a link put in its place is touched itself,
    /// never the file it points at.
    func ring() { Self.ring(path) }

    static func ring(_ path: String) {
        if utimensat(AT_FDCWD, path, nil, AT_SYMLINK_NOFOLLOW) == 0 { return }
        guard errno == ENOENT else { return }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o666)
        if fd >= 0 { close(fd) }
    }
}
