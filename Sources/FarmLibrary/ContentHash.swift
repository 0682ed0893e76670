import Crypto
import FarmModel
import Foundation

/// A file's content identity: SHA-256 of every byte, and the asset id derived from it.
public struct ContentHash: Sendable, Hashable {
    public var sha256: String
    public var id: AssetID

    public init(sha256: String, id: AssetID) {
        self.sha256 = sha256
        self.id = id
    }

    /// The identity of bytes whose SHA-256 is `sha256` (64 hex digits); nil for anything else.
    public init?(sha256 hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var digest: [UInt8] = []
        for i in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
            digest.append(byte)
        }
        self.init(sha256: hex.lowercased(), id: AssetID(digest: digest))
    }

    /// Hashes the file on a thread of its own, not the caller's: a large file takes seconds, and a
    /// coordinator's few task threads must keep turning meanwhile.
    public static func reading(_ path: String) async throws(LibraryError) -> ContentHash {
        let result: Result<ContentHash, LibraryError> = await withCheckedContinuation { done in
            DispatchQueue.global().async { done.resume(returning: Result { () throws(LibraryError) in try of(file: path) }) }
        }
        return try result.get()
    }

    /// The identity of `bytes` held in memory (an object read whole).
    public static func of(bytes: [UInt8]) -> ContentHash {
        let digest = Array(SHA256.hash(data: bytes))
        return ContentHash(sha256: digest.map { String(format: "%02x", $0) }.joined(), id: AssetID(digest: digest))
    }

    /// Reads the file 1 MiB at a time. Throws a message naming why it could not be read.
    public static func of(file path: String) throws(LibraryError) -> ContentHash {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path, String(cString: strerror(errno))) }
        defer { close(fd) }
        var hasher = SHA256()
        let size = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, size)
            if n < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path, String(cString: strerror(errno)))
            }
            if n == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        let digest = Array(hasher.finalize())
        return ContentHash(sha256: digest.map { String(format: "%02x", $0) }.joined(), id: AssetID(digest: digest))
    }
}
