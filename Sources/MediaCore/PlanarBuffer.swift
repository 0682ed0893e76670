/// Manually allocated planar float storage whose channel pointers stay valid for the buffer's life,
/// for handing to C APIs that take `float **` (libswresample, Rubber Band). Internal to MediaCore.
final class PlanarBuffer {
    let channels: Int
    let capacity: Int
    let storage: UnsafeMutablePointer<Float>
    /// One pointer per channel into `storage`.
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>

    init(channels: Int, capacity: Int) {
        self.channels = channels
        self.capacity = max(capacity, 1)
        storage = .allocate(capacity: channels * self.capacity)
        storage.initialize(repeating: 0, count: channels * self.capacity)
        pointers = .allocate(capacity: max(channels, 1))
        for c in 0..<channels { pointers[c] = storage + c * self.capacity }
    }

    deinit {
        storage.deallocate()
        pointers.deallocate()
    }

    /// Copies `count` samples of `samples` starting at `offset` into the start of each channel.
    func load(_ samples: AudioSamples, offset: Int, count: Int) {
        for c in 0..<channels {
            samples.channels[c].withUnsafeBufferPointer { src in
                (storage + c * capacity).update(from: src.baseAddress! + offset, count: count)
            }
        }
    }

    /// Appends the first `count` samples of each channel to `samples`.
    func store(_ count: Int, appendingTo samples: inout AudioSamples) {
        for c in 0..<channels {
            samples.channels[c].append(contentsOf: UnsafeBufferPointer(start: storage + c * capacity, count: count))
        }
    }

    /// The pointers as `const uint8_t **` for libswresample.
    var bytePointers: UnsafeMutablePointer<UnsafePointer<UInt8>?> {
        UnsafeMutableRawPointer(pointers).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
    }
    var mutableBytePointers: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?> {
        UnsafeMutableRawPointer(pointers).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
    }
    var constFloatPointers: UnsafePointer<UnsafePointer<Float>?> {
        UnsafeRawPointer(pointers).assumingMemoryBound(to: UnsafePointer<Float>?.self)
    }
}
