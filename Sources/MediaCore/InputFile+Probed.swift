internal import CFFmpeg
internal import CMediaShims
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What probing a file found (`avformat_find_stream_info`: its streams' codec parameters, rates and
/// times, and the snapshots taken of them), kept so that opening the same file again reads only its
/// header. An export opens each of its sources several times (its facts, its streams, its keyframes,
/// its packets); the probe decodes frames and costs most of an opening: 1,440 capture segments
/// assembled opened 5,760 files, each probed. Only index-based containers (MP4, MOV: the header holds
/// every stream and every sample) are kept, and only while the file is unchanged: the same device,
/// inode, size and modification and change times to the nanosecond. Otherwise the file is probed.
final class ProbedFile: @unchecked Sendable {  // unchecked: FFmpeg's context is used by one reader at a time; the cache is behind a Mutex
    struct Identity: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: timespec
        var changed: timespec

        init(_ st: stat) {
            (device, inode, size) = (UInt64(st.st_dev), UInt64(st.st_ino), Int64(st.st_size))
            (modified, changed) = (st.st_mtim, st.st_ctim)
        }

        static func == (a: Identity, b: Identity) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// The fields of an AVStream the probe fills in besides its codec parameters.
    struct StreamFields {
        var averageFrameRate: AVRational
        var realFrameRate: AVRational
        var startTime: Int64
        var duration: Int64
        var sampleAspectRatio: AVRational
    }

    let identity: Identity
    let limits: SafetyLimits
    let format: UnsafePointer<AVInputFormat>
    let streams: [StreamInfo]
    let container: ContainerInfo
    private let parameters: [UnsafeMutablePointer<AVCodecParameters>]
    private let fields: [StreamFields]
    /// Each stream's sample count in the header's index: a file rewritten in place within one tick of
    /// the clock that dates it (the same size, other samples) is told apart by it.
    private let entries: [Int32]
    private let start: Int64, duration: Int64, bitRate: Int64

    /// The probe of `ctx` (just probed), or nil for a container whose header may not hold every stream.
    init?(_ ctx: UnsafeMutablePointer<AVFormatContext>, identity: Identity, limits: SafetyLimits, streams: [StreamInfo], container: ContainerInfo) {
        guard let format = ctx.pointee.iformat, ProbedFile.indexBased.contains(String(cString: format.pointee.name)),
              ctx.pointee.ctx_flags & AVFMTCTX_NOHEADER == 0 else { return nil }
        var copies: [UnsafeMutablePointer<AVCodecParameters>] = []
        for i in 0..<Int(ctx.pointee.nb_streams) {
            guard let copy = avcodec_parameters_alloc() else { break }
            copies.append(copy)
            if avcodec_parameters_copy(copy, ctx.pointee.streams[i]!.pointee.codecpar) < 0 { break }
        }
        guard copies.count == Int(ctx.pointee.nb_streams) else {
            for var copy in copies as [UnsafeMutablePointer<AVCodecParameters>?] { avcodec_parameters_free(&copy) }
            return nil
        }
        self.identity = identity
        self.limits = limits
        self.format = format
        self.streams = streams
        self.container = container
        parameters = copies
        fields = (0..<Int(ctx.pointee.nb_streams)).map {
            let st = ctx.pointee.streams[$0]!.pointee
            return StreamFields(averageFrameRate: st.avg_frame_rate, realFrameRate: st.r_frame_rate, startTime: st.start_time,
                                duration: st.duration, sampleAspectRatio: st.sample_aspect_ratio)
        }
        entries = (0..<Int(ctx.pointee.nb_streams)).map { avformat_index_get_entries_count(ctx.pointee.streams[$0]!) }
        (start, duration, bitRate) = (ctx.pointee.start_time, ctx.pointee.duration, ctx.pointee.bit_rate)
    }

    deinit {
        for var copy in parameters as [UnsafeMutablePointer<AVCodecParameters>?] { avcodec_parameters_free(&copy) }
    }

    /// Gives `ctx`, the same file opened again (its header read, not probed), what the probe found.
    /// False when its header does not describe the same streams.
    func apply(to ctx: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard Int(ctx.pointee.nb_streams) == parameters.count else { return false }
        for i in 0..<parameters.count {
            let st = ctx.pointee.streams[i]!
            let (now, then) = (st.pointee.codecpar.pointee, parameters[i].pointee)
            guard now.codec_id == then.codec_id, avformat_index_get_entries_count(st) == entries[i],
                  now.extradata_size == then.extradata_size,
                  now.extradata_size == 0 || memcmp(now.extradata, then.extradata, Int(now.extradata_size)) == 0 else { return false }
        }
        for i in 0..<parameters.count {
            let st = ctx.pointee.streams[i]!
            guard avcodec_parameters_copy(st.pointee.codecpar, parameters[i]) >= 0 else { return false }
            let f = fields[i]
            st.pointee.avg_frame_rate = f.averageFrameRate
            st.pointee.r_frame_rate = f.realFrameRate
            st.pointee.start_time = f.startTime
            st.pointee.duration = f.duration
            st.pointee.sample_aspect_ratio = f.sampleAspectRatio
        }
        (ctx.pointee.start_time, ctx.pointee.duration, ctx.pointee.bit_rate) = (start, duration, bitRate)
        return true
    }

    /// The demuxers whose header holds every stream and the index of every sample.
    static let indexBased: Set<String> = ["mov,mp4,m4a,3gp,3g2,mj2"]

    // MARK: - The kept probes

    /// At most this many files' probes are kept (some 6 KB each), more than a day's recording in segments;
    /// the oldest go first.
    static let capacity = 2048

    private struct Kept {
        var byPath: [String: ProbedFile] = [:]
        var order: [String] = []
        var next = 0
    }
    private static let kept = Mutex(Kept())

    /// The probe kept for `path` if the file is unchanged since and was probed with the same limits.
    static func lookUp(_ path: String, identity: Identity, limits: SafetyLimits) -> ProbedFile? {
        kept.withLock { k in
            guard let found = k.byPath[path] else { return nil }
            return found.identity == identity && found.limits == limits ? found : nil
        }
    }

    /// Keeps `probe` for `path`, in place of any earlier one.
    static func keep(_ probe: ProbedFile, for path: String) {
        kept.withLock { k in
            if k.byPath.updateValue(probe, forKey: path) != nil { return }
            if k.order.count < capacity {
                k.order.append(path)
                return
            }
            // Full: the oldest kept path makes room (a ring over the paths in the order they came).
            k.byPath[k.order[k.next]] = nil
            k.order[k.next] = path
            k.next = (k.next + 1) % capacity
        }
    }
}
