import Foundation
import Hummingbird
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// A file the console serves, opened once and served from that descriptor: a regular file, reached without
/// following a link at any step (each step opened relative to the one before with O_NOFOLLOW), so a name
/// swapped for a link between the check and the read finds nothing, and a read never goes elsewhere on the
/// host. Closed when the last holder lets go (the body written, or dropped unsent).
final class OpenedFile: Sendable {
    let descriptor: Int32
    let size: Int

    /// The file at `path`, itself not a link (a real path: its folders' links resolved and checked by the caller).
    convenience init?(path: String) {
        self.init(in: (path as NSString).deletingLastPathComponent, [Substring((path as NSString).lastPathComponent)])
    }

    /// The file at `steps` ("video-1", "3.m4s") under the folder `folder` (a real path: no step of it a link);
    /// nil when a step of either is missing, a link, a folder where a file should be or not a regular file at the end.
    init?(in folder: String, _ steps: [Substring]) {
        // From the root down: `folder` is a real path, so a link on the way is one put there since it was resolved.
        guard folder.hasPrefix("/") else { return nil }
        var at = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard at >= 0 else { return nil }
        for step in folder.split(separator: "/") {
            let next = openat(at, String(step), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(at)
            guard next >= 0 else { return nil }
            at = next
        }
        for (i, step) in steps.enumerated() {
            // A FIFO at the end would block an open without O_NONBLOCK; it is refused below.
            let next = openat(at, String(step), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (i == steps.count - 1 ? O_NONBLOCK : O_DIRECTORY))
            close(at)
            guard next >= 0 else { return nil }
            at = next
        }
        var info = stat()
        guard fstat(at, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(at)
            return nil
        }
        (descriptor, size) = (at, Int(info.st_size))
    }

    deinit { close(descriptor) }

    /// Its first `limit` bytes as UTF-8 text (a playlist); nil when they cannot be read.
    func text(limit: Int = 4 << 20) -> String? {
        guard let bytes = try? read(min(size, limit), at: 0) else { return nil }  // unreadable: the caller says what is missing
        return String(bytes: bytes.readableBytesView, encoding: .utf8)
    }

    /// A body of the bytes in `range`, read on NIO's thread pool a chunk at a time.
    func body(_ range: ClosedRange<Int>) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            var offset = range.lowerBound
            while offset <= range.upperBound {
                let (start, count) = (offset, min(128 * 1024, range.upperBound - offset + 1))
                try await writer.write(try await NIOThreadPool.singleton.runIfActive { try self.read(count, at: start) })
                offset += count
            }
            try await writer.finish(nil)
        }
    }

    /// `count` bytes from `offset`: all of them, or an error (the file shrank while it was served).
    private func read(_ count: Int, at offset: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: max(count, 1))
        var done = 0
        while done < count {
            let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { p in
                max(0, pread(descriptor, p.baseAddress, count - done, off_t(offset + done)))
            }
            guard n > 0 else { throw HTTPError(.internalServerError, message: "the file shrank while it was served") }
            done += n
        }
        return buffer
    }
}
