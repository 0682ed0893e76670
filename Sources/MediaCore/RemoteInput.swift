internal import CFFmpeg
internal import CMediaShims
import S3Client
#if canImport(Glibc)
import Glibc
#endif

/// An object in S3-compatible storage read by a demuxer: FFmpeg's I/O through an `AVIOContext` whose
/// callbacks are ranged reads of an `S3ObjectReader` (only what the demuxer reads is fetched). The
/// failure of the last request is kept, for the error that names the object and the problem.
///
/// Threading: the callbacks block; one demuxer, on a blocking thread.
final class RemoteInput {
    let reader: S3ObjectReader
    let size: Int64
    private(set) var io: UnsafeMutablePointer<AVIOContext>?
    private var position: Int64 = 0
    private(set) var failure: S3Error?
    static let bufferSize = 64 << 10

    /// Opens `path` (`s3://BUCKET/KEY`) with the process's client, or through `reader` (another opening
    /// of the same object): reads its first bytes, which give its size.
    init(path: String, sharing reader: S3ObjectReader? = nil) throws(MediaFileError) {
        do throws(S3Error) {
            if let reader {
                self.reader = reader
            } else {
                self.reader = S3ObjectReader(s3: try S3.shared(), location: try S3Location(parsing: path))
            }
            size = try self.reader.size()
        } catch {
            throw MediaFileError(path: path, reason: .objectStorage(error))
        }
        if size == 0 { throw MediaFileError(path: path, reason: .empty) }
        guard let buffer = av_malloc(Self.bufferSize)?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaFileError(path: path, reason: .ffmpeg(FFmpegError(code: mf_averror(ENOMEM)), while: "opening"))
        }
        io = avio_alloc_context(buffer, Int32(Self.bufferSize), 0, Unmanaged.passUnretained(self).toOpaque(), { opaque, bytes, count in
            Unmanaged<RemoteInput>.fromOpaque(opaque!).takeUnretainedValue().read(bytes!, Int(count))
        }, nil, { opaque, offset, whence in
            Unmanaged<RemoteInput>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence)
        })
        if io == nil {
            av_free(buffer)
            throw MediaFileError(path: path, reason: .ffmpeg(FFmpegError(code: mf_averror(ENOMEM)), while: "opening"))
        }
    }

    deinit {
        if io != nil {
            av_freep(&io!.pointee.buffer)
            avio_context_free(&io)
        }
    }

    /// What was asked of the server so far.
    var transfer: RemoteTransfer { RemoteTransfer(requests: reader.requests, bytes: reader.bytesFetched) }

    private func read(_ bytes: UnsafeMutablePointer<UInt8>, _ count: Int) -> Int32 {
        do throws(S3Error) {
            let n = try reader.read(at: position, into: UnsafeMutableRawBufferPointer(start: bytes, count: count))
            if n == 0 { return mf_averror_eof() }
            position += Int64(n)
            return Int32(n)
        } catch {
            failure = error
            return mf_averror(EIO)
        }
    }

    private func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        switch whence & ~AVSEEK_FORCE {
        case AVSEEK_SIZE: return size
        case SEEK_SET: position = offset
        case SEEK_CUR: position += offset
        case SEEK_END: position = size + offset
        default: return Int64(mf_averror(EINVAL))
        }
        return position
    }
}

/// What reading an object cost: requests made and bytes fetched.
public struct RemoteTransfer: Sendable, Hashable, Codable {
    public var requests: Int
    public var bytes: Int64

    public init(requests: Int, bytes: Int64) {
        self.requests = requests
        self.bytes = bytes
    }
}
