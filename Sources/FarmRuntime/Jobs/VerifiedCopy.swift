import Crypto
import Foundation
import MediaEdit
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// An earlier result's file copied for a job that reuses it, kept only when its bytes still hash to what
/// was recorded.
enum VerifiedCopy: Equatable {
    case copied
    /// The source's bytes hash to this, not to what was expected: nothing was written.
    case changed(String)
    case failed(String)

    /// Copies `source` to `target` (written whole under a temporary name, then renamed), hashing the bytes
    /// as they are copied: the copy is kept only when they hash to `sha256`. On a thread of its own.
    static func copy(_ source: String, to target: String, sha256: String) async -> VerifiedCopy {
        await withCheckedContinuation { done in
            DispatchQueue.global().async { done.resume(returning: copyNow(source, to: target, sha256: sha256)) }
        }
    }

    /// Links `source` at `target` (a new name: a name taken is never replaced) when `source` is still the
    /// file `stamp` recorded, which is then not read: a file whose size, modification time and identity are
    /// unchanged holds the bytes it held (as a registered input is not hashed again). false, with nothing
    /// left at `target`, when it is not that file or cannot be linked (another filesystem, a file this user
    /// may not link, its links at their limit): the caller copies it, checked.
    static func link(_ source: String, to target: String, stamp: FileStamp) -> Bool {
        guard FileStamp(path: source) == stamp else { return false }
        guard linkat(AT_FDCWD, source, AT_FDCWD, target, AT_SYMLINK_FOLLOW) == 0 else { return false }
        // Linked after the check: what is at `target` must still be the file stamped (not one put at `source` since).
        guard FileStamp(path: target) == stamp else {
            unlink(target)
            return false
        }
        return true
    }

    private static func copyNow(_ source: String, to target: String, sha256: String) -> VerifiedCopy {
        let input = Glibc.open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return .failed("cannot open \(source): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(input) }
        let out: AtomicOutput
        do { out = try AtomicOutput(finalPath: target) } catch { return .failed(error.description) }
        let output = Glibc.open(out.temporaryPath, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard output >= 0 else { return .failed("cannot write \(out.temporaryPath): \(String(cString: strerror(errno)))") }
        var hasher = SHA256()
        let size = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        func fail(_ what: String) -> VerifiedCopy {
            let reason = String(cString: strerror(errno))
            Glibc.close(output)
            out.discard()
            return .failed("\(what): \(reason)")
        }
        while true {
            let n = Glibc.read(input, buffer.baseAddress, size)
            if n < 0 {
                if errno == EINTR { continue }
                return fail("cannot read \(source)")
            }
            if n == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            var written = 0
            while written < n {
                let w = Glibc.write(output, buffer.baseAddress! + written, n - written)
                if w < 0 {
                    if errno == EINTR { continue }
                    return fail("cannot write a copy of \(source) as \(target)")
                }
                written += w
            }
        }
        let found = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        guard found == sha256 else {
            Glibc.close(output)
            out.discard()
            return .changed(found)
        }
        guard Glibc.fsync(output) == 0 else { return fail("cannot write a copy of \(source) as \(target)") }
        Glibc.close(output)
        do { try out.commit() } catch { return .failed(error.description) }
        return .copied
    }
}
