import Foundation
import MediaCore

/// Planar float audio kept on disk to be read again: a file in the temporary folder, removed from its
/// folder as soon as it is made, so that nothing is left behind however the process ends (the space is
/// freed when the spill is). Frames are stored interleaved, 32-bit float. Appended to on one thread;
/// once that is done, read from any (positioned reads share no state).
final class SampleSpill: @unchecked Sendable {  // unchecked: appended on one thread; then read by positioned reads that share no state
    let channels: Int
    private(set) var frames = 0
    private let descriptor: Int32
    private let folder: String

    init(channels: Int) throws(ExportError) {
        self.channels = channels
        folder = FileManager.default.temporaryDirectory.path
        var template = Array((folder + "/mediafarm-audio-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw ExportError("cannot make a file in \(folder) for the audio to be measured and normalized: \(String(cString: strerror(errno))) (set TMPDIR to a folder with room)")
        }
        _ = template.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        descriptor = fd
    }

    deinit { close(descriptor) }

    func append(_ samples: AudioSamples) throws(ExportError) {
        let n = samples.count
        guard n > 0 else { return }
        var interleaved = [Float](repeating: 0, count: n * channels)
        interleaved.withUnsafeMutableBufferPointer { samples.interleave(from: 0, count: n, into: $0) }
        let offset = off_t(frames * channels * 4)
        let bytes = n * channels * 4
        let written = interleaved.withUnsafeBytes { raw -> Int in
            var done = 0
            while done < bytes {
                let r = pwrite(descriptor, raw.baseAddress! + done, bytes - done, offset + off_t(done))
                if r < 0 { if errno == EINTR { continue }; return -1 }
                done += r
            }
            return done
        }
        guard written == bytes else {
            throw ExportError("cannot keep the audio in \(folder) to be normalized: \(String(cString: strerror(errno))) "
                              + "(it needs \(channels * 4) bytes a sample frame, 1.4 GB an hour of stereo at 48 kHz; set TMPDIR to a folder with room)")
        }
        frames += n
    }

    /// `read(from:count:)` for other threads.
    var reader: @Sendable (Int, Int) throws -> AudioSamples { { [self] in try read(from: $0, count: $1) } }

    /// Frames `start ..< start + count` (cut at the end).
    func read(from start: Int, count: Int) throws(ExportError) -> AudioSamples {
        let n = max(0, min(count, frames - start))
        guard n > 0 else { return AudioSamples(channelCount: channels) }
        var interleaved = [Float](repeating: 0, count: n * channels)
        let bytes = n * channels * 4
        let offset = off_t(start * channels * 4)
        let got = interleaved.withUnsafeMutableBytes { raw -> Int in
            var done = 0
            while done < bytes {
                let r = pread(descriptor, raw.baseAddress! + done, bytes - done, offset + off_t(done))
                if r < 0 { if errno == EINTR { continue }; return -1 }
                if r == 0 { break }
                done += r
            }
            return done
        }
        guard got == bytes else { throw ExportError("cannot read back the audio kept in \(folder): \(String(cString: strerror(errno)))") }
        return interleaved.withUnsafeBufferPointer { AudioSamples(interleaved: $0, channelCount: channels, count: n) }
    }
}
