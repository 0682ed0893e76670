import Foundation
import MediaCore
#if canImport(Glibc)
import Glibc
#endif

/// A file written under a temporary name beside its final path and renamed into place only when
/// complete: the final path is either absent or a whole file. Temporaries left by a process that died
/// (SIGKILL, power loss) are removed the next time anything is written to the same folder.
public struct AtomicOutput: Sendable {
    public let finalPath: String
    public let temporaryPath: String

    static let marker = ".mediafarm-"
    static let suffix = ".tmp"

    /// Prepares to write `finalPath`: creates its folder, cleans stale temporaries there.
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
        Self.removeStaleTemporaries(in: folder)
        temporaryPath = folder + "/." + url.lastPathComponent + Self.marker + String(getpid()) + "-"
            + String(UInt32.random(in: 0...UInt32.max), radix: 36) + Self.suffix
    }

    /// Moves the finished temporary into place and syncs the folder, so the rename survives a crash.
    public func commit() throws(ExportError) {
        guard rename(temporaryPath, finalPath) == 0 else {
            let reason = String(cString: strerror(errno))
            discard()
            throw ExportError("\(finalPath): cannot move the finished file into place: \(reason)")
        }
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
        } catch {
            discard()
            throw error
        }
    }

    /// Removes the temporary (after a failure or cancellation).
    public func discard() { unlink(temporaryPath) }

    /// Deletes `.NAME.mediafarm-PID-XXXX.tmp` files whose writing process no longer exists.
    public static func removeStaleTemporaries(in folder: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where name.hasPrefix(".") && name.hasSuffix(suffix) {
            guard let range = name.range(of: marker, options: .backwards) else { continue }
            let rest = name[range.upperBound...].dropLast(suffix.count)
            guard let pid = rest.split(separator: "-").first.flatMap({ Int32($0) }) else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { unlink(folder + "/" + name) }
        }
    }

    static func reason(_ error: any Error) -> String {
        (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
    }
}
