import Foundation
import NIOCore
import Synchronization

/// Random access to one object by ranged GETs, for a demuxer's blocking read callback: it fetches only
/// what is read, in as few requests as it can.
///
/// - The first read fetches the object's first 64 KiB, which also tells its size and entity tag. Every
///   later request carries `If-Match` with that tag: an object replaced while it is read fails as
///   `changed`, never as a mix of two objects.
/// - An MP4/MOV (top-level boxes from the first bytes) has its index found from those 64 KiB: when the
///   `moov` box runs past them, or lies after the media data, the next request fetches the rest of it
///   (and, for an index at the start, as much media data after it as the first request held), so that
///   opening the file takes at most two requests.
/// - Reads that follow one another are fetched ahead in growing windows (256 KiB doubling to 16 MiB); a
///   read elsewhere (a seek) fetches 64 KiB from there and starts the window again. Once reading has
///   gone on past two windows (an export, not an inspection), the next windows are fetched while the
///   current one is read, three requests in flight, so that the reader does not wait a round trip per
///   window.
///
/// `requests` and `bytesFetched` count what was asked of the server. Threading: one reader per demuxer;
/// the counters may be read from any thread.
public final class S3ObjectReader: @unchecked Sendable {  // unchecked: one demuxer reads it at a time; what threads share is behind a Mutex
    public let s3: S3
    public let location: S3Location
    public static let headSize: Int64 = 64 << 10
    static let smallestWindow: Int64 = 256 << 10
    static let largestWindow: Int64 = 16 << 20
    /// The largest index fetched at once ahead of reading it (a longer index is read as it is asked for).
    static let largestIndex: Int64 = 64 << 20
    /// Chunks kept besides the head and the index.
    static let keptChunks = 3
    /// Windows fetched ahead of a sequential read, at once.
    static let prefetchDepth = 3
    /// Sequential windows fetched before the next ones are fetched ahead.
    static let prefetchAfter = 2

    /// A window being fetched ahead: its bytes when they arrive, waited for by a read that needs them.
    private final class Pending: @unchecked Sendable {  // unchecked: its bytes are set once, then read after the semaphore is signalled
        let range: Range<Int64>
        private let done = DispatchSemaphore(value: 0)
        private var result: Result<S3Chunk, S3Error>?
        /// The fetch; cancelled (its request stopped) when the window is dropped or the reader closed.
        var task: Task<Void, Never>?

        init(range: Range<Int64>) { self.range = range }

        func finish(_ outcome: Result<S3Chunk, S3Error>) {
            result = outcome
            done.signal()
        }

        func wait() -> Result<S3Chunk, S3Error> {
            done.wait()
            return result!
        }
    }

    private struct Chunk {
        var offset: Int64
        var bytes: ByteBuffer
        var end: Int64 { offset + Int64(bytes.readableBytes) }
        func contains(_ position: Int64) -> Bool { position >= offset && position < end }
    }

    private var head: Chunk?
    private var index: Chunk?
    /// The range to fetch at once when a read first falls in it (an MP4's index), until it is fetched.
    private var plannedIndex: Range<Int64>?
    private var recent: [Chunk] = []
    /// Windows being fetched ahead, in order, each beginning where the one before ends.
    private var ahead: [Pending] = []
    private var sequentialFetches = 0
    private var window = smallestWindow
    private var lastReadEnd: Int64 = -1
    private var objectSize: Int64 = 0
    private var entityTag = ""
    private let counters = Counters()
    private var closed = false

    public init(s3: S3, location: S3Location) {
        self.s3 = s3
        self.location = location
    }

    /// Stops the fetches ahead (their requests are cancelled) and starts no more. The demuxer is done with
    /// the object: its export ended, failed or was cancelled. Reads still work, fetching what they need.
    public func close() {
        closed = true
        dropAhead()
    }

    deinit { for pending in ahead { pending.task?.cancel() } }

    private func dropAhead() {
        for pending in ahead { pending.task?.cancel() }
        ahead.removeAll()
    }

    public var requests: Int { counters.withLock { $0.requests } }
    public var bytesFetched: Int64 { counters.withLock { $0.bytes } }

    /// Fetches ahead under way (their requests sent, their tasks not ended), from any thread.
    var fetchesInFlight: Int { counters.withLock { $0.inFlight } }

    /// What was asked of the server, counted from the reader's thread and the fetches ahead.
    final class Counters: Sendable {
        private let state = Mutex<(requests: Int, bytes: Int64, inFlight: Int)>((0, 0, 0))
        func withLock<T>(_ body: (inout (requests: Int, bytes: Int64, inFlight: Int)) -> T) -> T { state.withLock { body(&$0) } }
    }

    /// The counters, which outlive the reader while its fetches end (for tests).
    var sharedCounters: Counters { counters }

    /// The object's size (fetching its first bytes if nothing was read yet).
    public func size() throws(S3Error) -> Int64 {
        try fetchHeadIfNeeded()
        return objectSize
    }

    /// Copies bytes from `offset` into `buffer`: as many as are there up to its size, 0 at the end.
    public func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(S3Error) -> Int {
        try fetchHeadIfNeeded()
        guard offset < objectSize, buffer.count > 0 else { return 0 }
        let chunk = try chunk(containing: offset, wanted: Int64(buffer.count))
        let start = Int(offset - chunk.offset)
        let count = min(buffer.count, chunk.bytes.readableBytes - start)
        chunk.bytes.withUnsafeReadableBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: count)
        }
        lastReadEnd = offset + Int64(count)
        return count
    }

    // MARK: Fetching

    private func fetchHeadIfNeeded() throws(S3Error) {
        guard head == nil else { return }
        let first: S3Chunk
        do throws(S3Error) {
            first = try fetch(0..<Self.headSize, checked: false)
        } catch where error.kind == .invalidRange {
            // No byte 0: the object is empty.
            head = Chunk(offset: 0, bytes: ByteBuffer())
            return
        }
        objectSize = first.objectSize
        entityTag = first.etag
        head = Chunk(offset: 0, bytes: first.bytes)
        plannedIndex = Self.planIndex(first.bytes, objectSize: objectSize)
    }

    private func chunk(containing offset: Int64, wanted: Int64) throws(S3Error) -> Chunk {
        if let head, head.contains(offset) { return head }
        if let index, index.contains(offset) { return index }
        if let found = recent.firstIndex(where: { $0.contains(offset) }) {
            let chunk = recent.remove(at: found)
            recent.append(chunk)
            return chunk
        }
        let range: Range<Int64>
        var isIndex = false
        var sequential = false
        if let planned = plannedIndex, planned.contains(offset) {
            range = planned
            plannedIndex = nil
            isIndex = true
        } else if offset == lastReadEnd {
            range = offset..<(offset + max(window, wanted))
            window = min(window * 2, Self.largestWindow)
            sequential = true
        } else {
            window = Self.smallestWindow
            range = offset..<(offset + max(Self.headSize, wanted))
        }
        let fetched: S3Chunk
        if sequential, let next = ahead.first, next.range.contains(offset) {
            // Fetched ahead: wait for it (it may have arrived already).
            ahead.removeFirst()
            fetched = try next.wait().get()
        } else {
            // Not what was fetched ahead (a seek, or reading faster than the windows): those are dropped.
            dropAhead()
            if !sequential { sequentialFetches = 0 }
            fetched = try fetch(range.clamped(to: 0..<objectSize), checked: true)
        }
        if sequential {
            sequentialFetches += 1
            if sequentialFetches >= Self.prefetchAfter { fetchAhead(from: fetched.offset + Int64(fetched.bytes.readableBytes)) }
        }
        let chunk = Chunk(offset: fetched.offset, bytes: fetched.bytes)
        guard chunk.contains(offset) else {
            throw S3Error(.badResponse, location.description, "the server answered bytes \(chunk.offset)-\(chunk.end) for a read at \(offset)")
        }
        if isIndex {
            index = chunk
        } else {
            recent.append(chunk)
            if recent.count > Self.keptChunks { recent.removeFirst() }
        }
        return chunk
    }

    /// Keeps `prefetchDepth` windows being fetched after `end` (where the last fetched bytes end).
    private func fetchAhead(from end: Int64) {
        var next = ahead.last?.range.upperBound ?? end
        while !closed, ahead.count < Self.prefetchDepth, next < objectSize {
            let pending = Pending(range: next..<min(objectSize, next + window))
            ahead.append(pending)
            next = pending.range.upperBound
            window = min(window * 2, Self.largestWindow)
            let (s3, location, tag, counters) = (s3, location, entityTag, counters)
            counters.withLock { $0.inFlight += 1 }
            // Owned by `pending`: cancelled when the window is dropped or the reader is closed or freed.
            pending.task = Task {
                defer { counters.withLock { $0.inFlight -= 1 } }
                do throws(S3Error) {
                    let got = try await s3.get(location, range: pending.range, ifMatch: tag.isEmpty ? nil : tag)
                    if Task.isCancelled { throw S3Error(.cancelled, location.description, "cancelled") }
                    counters.withLock { $0.requests += 1; $0.bytes += Int64(got.bytes.readableBytes) }
                    pending.finish(.success(got))
                } catch {
                    pending.finish(.failure(error))
                }
            }
        }
    }

    private func fetch(_ range: Range<Int64>, checked: Bool) throws(S3Error) -> S3Chunk {
        let got = try s3.getBlocking(location, range: range, ifMatch: checked && !entityTag.isEmpty ? entityTag : nil)
        counters.withLock { $0.requests += 1; $0.bytes += Int64(got.bytes.readableBytes) }
        return got
    }

    // MARK: The MP4 index

    /// Where an MP4/MOV's `moov` box lies beyond the first bytes `head` (nil when it lies within them, or
    /// the object is not an MP4 whose top-level boxes can be followed). An index at the start is fetched
    /// with as many bytes after it as `head` held (the first samples, which opening reads).
    static func planIndex(_ head: ByteBuffer, objectSize: Int64) -> Range<Int64>? {
        let headEnd = Int64(head.readableBytes)
        var position: Int64 = 0
        var first = true
        while position + 8 <= headEnd {
            guard let size32 = head.getInteger(at: Int(position), as: UInt32.self),
                  let type = head.getString(at: Int(position) + 4, length: 4) else { return nil }
            if first {
                // An MP4 begins with one of these; anything else is left to the generic reading.
                guard ["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot", "uuid"].contains(type) else { return nil }
                first = false
            }
            var size = Int64(size32)
            if size32 == 1 {
                guard position + 16 <= headEnd, let large = head.getInteger(at: Int(position) + 8, as: UInt64.self) else {
                    return nil
                }
                size = Int64(clamping: large)
            } else if size32 == 0 {
                size = objectSize - position
            }
            guard size >= 8 else { return nil }
            let end = position + size
            if type == "moov" {
                guard end > headEnd else { return nil }
                // The rest of the index, and as much after it as the head held.
                return headEnd..<min(objectSize, end + headEnd)
            }
            position = end
        }
        // The next box begins beyond the head: after the media data. Fetch the rest of the object when
        // it is no longer than an index could be; else the boxes are read as asked for.
        guard !first, position < objectSize, objectSize - position <= largestIndex else { return nil }
        return position..<objectSize
    }
}
