import CryptoExtras
import Crypto
import Foundation

/// HLS's AES-128 (RFC 8216 5.2): each media segment encrypted whole with AES-128-CBC and PKCS#7 padding,
/// its initialization vector its media sequence number (the first segment's 0) as a 128-bit big-endian
/// number, as the playlist then leaves the IV out. The initialization segments stay in the clear (the
/// playlists name them before the key). Players fetch the key from `keyURI`.
public struct SegmentEncryption: Sendable, Hashable {
    public let key: [UInt8]
    public let keyURI: String

    /// `key`: 16 bytes (a key file as `openssl rand 16` writes one).
    public init(key: [UInt8], keyURI: String) throws(ExportError) {
        guard key.count == 16 else { throw ExportError("an AES-128 key is 16 bytes; this one is \(key.count)") }
        guard !keyURI.isEmpty, !keyURI.contains(where: { $0 == "\"" || $0.isNewline }) else {
            throw ExportError("the key's URI may hold no quote or line break")
        }
        (self.key, self.keyURI) = (key, keyURI)
    }

    /// `segment` encrypted as the media segment of sequence number `sequence`.
    func encrypt(_ segment: [UInt8], sequence: Int) throws -> [UInt8] {
        do {
            return Array(try AES._CBC.encrypt(segment, using: SymmetricKey(data: key), iv: AES._CBC.IV(ivBytes: Self.iv(sequence))))
        } catch {
            throw ExportError("cannot encrypt segment \(sequence + 1): \(error)")
        }
    }

    /// The media segment of sequence number `sequence`, decrypted.
    func decrypt(_ segment: [UInt8], sequence: Int) throws -> [UInt8] {
        do {
            return Array(try AES._CBC.decrypt(segment, using: SymmetricKey(data: key), iv: AES._CBC.IV(ivBytes: Self.iv(sequence))))
        } catch {
            throw ExportError("cannot decrypt segment \(sequence + 1) with the package's key: \(error)")
        }
    }

    /// The IV of sequence number `sequence`: the number as 128 bits, big-endian.
    static func iv(_ sequence: Int) -> [UInt8] {
        (0..<16).map { i in i < 8 ? 0 : UInt8(truncatingIfNeeded: UInt64(max(sequence, 0)) >> (8 * (15 - i))) }
    }
}
