internal import CFFmpeg
internal import CMediaShims
import MediaTime
import S3Client
#if canImport(Glibc)
import Glibc
#endif

/// An opened, probed media file to read packets from: the owner of one AVFormatContext.
///
/// Opening checks the path, opens the demuxer with `SafetyLimits` (protocol and demuxer whitelists,
/// probe bounds, stream count, frame size) and an `Interrupter` whose cancel flag and stall limit FFmpeg
/// polls during I/O; every packet read marks progress on it. `streams`, `container` are value snapshots taken after probing.
///
/// Threading: not thread-safe; use one `InputFile` on one thread at a time (blocking: run it on a
/// `BlockingWorkPool`). The context is closed in `deinit`.
public final class InputFile {
    public let path: String
    public let streams: [StreamInfo]
    public let container: ContainerInfo
    public let limits: SafetyLimits
    let context: UnsafeMutablePointer<AVFormatContext>
    private let interrupter: Interrupter
    private let interruptBox: Unmanaged<Interrupter>
    /// Whether this opening read only the file's header, given what an earlier opening's probe found
    /// (`ProbedFile`): the same file, unchanged since.
    let readOnlyItsHeader: Bool
    /// The object read through ranged requests, for an `s3://` path.
    private let remote: RemoteInput?

    /// For an `s3://` path: the requests made and bytes fetched so far.
    public var transfer: RemoteTransfer? { remote?.transfer }

    /// Opens and probes `path`: a file, or an object in S3-compatible storage (`s3://BUCKET/KEY`, read by
    /// ranged requests: see `S3ObjectReader`). Throws `MediaFileError` naming the file and the problem.
    public convenience init(path: String, limits: SafetyLimits = .default, interrupter: Interrupter = Interrupter()) throws(MediaFileError) {
        try self.init(path: path, limits: limits, interrupter: interrupter, sharing: nil)
    }

    /// The same file opened again from its start, for another pass. An object is read through the same
    /// reader: what it fetched is not fetched again.
    public func reopened(interrupter: Interrupter) throws(MediaFileError) -> InputFile {
        try InputFile(path: path, limits: limits, interrupter: interrupter, sharing: remote?.reader)
    }

    private convenience init(path: String, limits: SafetyLimits, interrupter: Interrupter, sharing reader: S3ObjectReader?) throws(MediaFileError) {
        FFmpegLog.installDefaultIfNeeded()
        let remote = S3Location.isObject(path) ? try RemoteInput(path: path, sharing: reader) : nil
        let fileSize: Int64
        var identity: ProbedFile.Identity?
        if let remote {
            fileSize = remote.size
        } else {
            let st = try InputFile.checkPath(path)
            (fileSize, identity) = (Int64(st.st_size), ProbedFile.Identity(st))
        }

        interrupter.progressed()
        let box = Unmanaged.passRetained(interrupter)
        // Opened before and unchanged since: its header is read with the demuxer it needed, not probed.
        if let identity, let probed = ProbedFile.lookUp(path, identity: identity, limits: limits) {
            let again = InputFile.open(path, format: probed.format, limits: limits, interruptBox: box)
            if let ctx = again.context {
                if probed.apply(to: ctx) {
                    self.init(reopened: ctx, box: box, path: path, limits: limits, interrupter: interrupter, probed: probed)
                    return
                }
                var doomed: UnsafeMutablePointer<AVFormatContext>? = ctx
                avformat_close_input(&doomed)
            }
        }
        var opened = InputFile.open(path, format: nil, limits: limits, interruptBox: box, io: remote?.io)
        // A single still picture is probed as "image2" (the image-sequence demuxer) by its name: read
        // it with the demuxer its content names (jpeg_pipe, png_pipe...), which reads one picture.
        if opened.context == nil, remote == nil, let allowed = limits.allowedFormats, !path.contains("%"),
           let still = InputFile.probeFormat(path, byContentOnly: true),
           case let name = String(cString: still.pointee.name), name.hasSuffix("_pipe"), allowed.contains(name) {
            opened = InputFile.open(path, format: still, limits: limits, interruptBox: box)
        }
        guard let ctx = opened.context else {
            box.release()   // avformat_open_input frees the context on failure
            if let failure = remote?.failure { throw MediaFileError(path: path, reason: .objectStorage(failure)) }
            throw InputFile.openError(path: path, code: opened.code, interrupter: interrupter, limits: limits)
        }
        try self.init(opened: ctx, box: box, path: path, limits: limits, interrupter: interrupter, fileSize: fileSize, remote: remote)
        if let identity, let probed = ProbedFile(ctx, identity: identity, limits: limits, streams: streams, container: container) {
            ProbedFile.keep(probed, for: path)
        }
    }

    /// A file opened again (`ctx`, its header read) given what probing it found before.
    private init(reopened ctx: UnsafeMutablePointer<AVFormatContext>, box: Unmanaged<Interrupter>, path: String, limits: SafetyLimits,
                 interrupter: Interrupter, probed: ProbedFile) {
        self.path = path
        self.limits = limits
        self.interrupter = interrupter
        self.remote = nil
        self.context = ctx
        self.interruptBox = box
        self.streams = probed.streams
        self.container = probed.container
        readOnlyItsHeader = true
    }

    /// Opens a live source: `url` read by the demuxer or capture device named `format` (libavdevice's
    /// v4l2, x11grab, alsa, pulse, lavfi; or nil to probe a network stream), with its `options`
    /// (video_size, framerate, input_format, timeout...). `interrupter` bounds every wait for data.
    public convenience init(live url: String, format: String?, options: [String: String], limits: SafetyLimits,
                            interrupter: Interrupter) throws(MediaFileError) {
        FFmpegLog.installDefaultIfNeeded()
        var inputFormat: UnsafePointer<AVInputFormat>?
        if let format {
            let devices = LiveDevices.load()
            guard let found = av_find_input_format(format) else {
                throw MediaFileError(path: url, reason: .formatRefused(devices ? format : "\(format) (capture devices need libavdevice59, which is not installed)"))
            }
            inputFormat = found
        }
        interrupter.progressed()
        let box = Unmanaged.passRetained(interrupter)
        let opened = InputFile.open(url, format: inputFormat, limits: limits, interruptBox: box, extra: options)
        guard let ctx = opened.context else {
            box.release()
            if let reason = interrupter.reason { throw MediaFileError.interrupted(path: url, reason) }
            throw MediaFileError(path: url, reason: .ffmpeg(.capture(opened.code, "avformat_open_input"), while: "opening the live source"))
        }
        try self.init(opened: ctx, box: box, path: url, limits: limits, interrupter: interrupter, fileSize: 0)
    }

    /// Probes an opened demuxer context (owning it and `box` from here on, closing both on failure).
    private init(opened ctx: UnsafeMutablePointer<AVFormatContext>, box: Unmanaged<Interrupter>, path: String, limits: SafetyLimits,
                 interrupter: Interrupter, fileSize: Int64, remote: RemoteInput? = nil) throws(MediaFileError) {
        self.path = path
        self.limits = limits
        self.interrupter = interrupter
        self.remote = remote
        readOnlyItsHeader = false
        func fail(_ reason: MediaFileError.Reason) -> MediaFileError {
            var doomed: UnsafeMutablePointer<AVFormatContext>? = ctx
            avformat_close_input(&doomed)
            box.release()
            // A request that failed is the cause of whatever FFmpeg made of it.
            if let failure = remote?.failure { return MediaFileError(path: path, reason: .objectStorage(failure)) }
            return MediaFileError(path: path, reason: reason)
        }

        let declared = Int(ctx.pointee.nb_streams)
        if declared > limits.maxStreams {
            throw fail(.tooManyStreams(count: declared, limit: limits.maxStreams))
        }
        // Bound the frame size the probing decoders may allocate.
        var perStream = [OpaquePointer?](repeating: nil, count: declared)
        for i in 0..<declared {
            av_dict_set(&perStream[i], "max_pixels", String(limits.maxPixels), 0)
            av_dict_set(&perStream[i], "threads", "1", 0)
            // A build with stand-in libraries lets the probe open only the decoders it really has.
            if let allowed = LeftOutCodecs.probeWhitelist { av_dict_set(&perStream[i], "codec_whitelist", allowed, 0) }
        }
        let probeResult = perStream.withUnsafeMutableBufferPointer { buffer in
            avformat_find_stream_info(ctx, declared == 0 ? nil : buffer.baseAddress)
        }
        for i in 0..<declared { av_dict_free(&perStream[i]) }
        if probeResult < 0 {
            if let reason = interrupter.reason {
                throw fail(MediaFileError.interrupted(path: path, reason).reason)
            }
            throw fail(.ffmpeg(.capture(probeResult, "avformat_find_stream_info"), while: "reading stream parameters"))
        }
        let count = Int(ctx.pointee.nb_streams)
        if count > limits.maxStreams { throw fail(.tooManyStreams(count: count, limit: limits.maxStreams)) }
        if count == 0 { throw fail(.noStreams) }

        var snapshots: [StreamInfo] = []
        for i in 0..<count {
            let s = InputFile.snapshot(ctx.pointee.streams[i]!, index: i)
            if s.mediaType == .video {
                let tooWide = s.width > limits.maxDimension || s.height > limits.maxDimension
                if tooWide || s.width * s.height > limits.maxPixels {
                    throw fail(.frameTooLarge(width: s.width, height: s.height,
                                              limits: "at most \(limits.maxDimension) px a side and \(limits.maxPixels) pixels"))
                }
            }
            snapshots.append(s)
        }
        self.context = ctx
        self.interruptBox = box
        self.streams = snapshots
        self.container = InputFile.containerSnapshot(ctx, fileSize: fileSize)
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&ctx)
        interruptBox.release()
    }

    /// The result of reading one packet.
    public enum ReadResult: Sendable { case packet, endOfFile }

    /// Reads the next packet of any stream into `packet` (which is reset first).
    public func read(into packet: inout Packet) throws(MediaFileError) -> ReadResult {
        packet.reset()
        let r = av_read_frame(context, packet.pointer)
        if r >= 0 { interrupter.progressed(); return .packet }
        if let failure = remote?.failure { throw MediaFileError(path: path, reason: .objectStorage(failure)) }
        if r == mf_averror_eof() { return .endOfFile }
        if let reason = interrupter.reason {
            throw MediaFileError.interrupted(path: path, reason)
        }
        throw MediaFileError(path: path, reason: .ffmpeg(.capture(r, "av_read_frame"), while: "reading packets"))
    }

    /// Seeks so that the next packets of `streamIndex` start at the keyframe at or before `ticks`
    /// (in that stream's time base). Packets of other streams follow from about the same place.
    public func seek(stream streamIndex: Int, toKeyframeBefore ticks: Int64) throws(MediaFileError) {
        let r = av_seek_frame(context, Int32(streamIndex), ticks, AVSEEK_FLAG_BACKWARD)
        if r < 0 { throw MediaFileError(path: path, reason: .ffmpeg(.capture(r, "av_seek_frame"), while: "seeking")) }
    }

    /// Tells the demuxer to skip every stream not in `streams` (their packets are not read or returned).
    public func discardAll(except streams: Set<Int>) {
        for i in 0..<Int(context.pointee.nb_streams) {
            context.pointee.streams[i]!.pointee.discard = streams.contains(i) ? AVDISCARD_DEFAULT : AVDISCARD_ALL
        }
    }

    /// What the demuxer's sample index says about a stream, without reading any packet: for
    /// index-based containers (MP4, MOV) it is built from the sample tables at open and is the source
    /// of the timestamps packets would carry. Nil when the demuxer keeps no index for the stream.
    public struct StreamIndex: Sendable {
        /// Entries, one per packet the demuxer returns (those an edit list discards included, as
        /// packets flagged discard).
        public var entries: Int
        /// One past the last byte any entry occupies.
        public var endOffset: Int64
        public var bytes: Int64
        /// Timestamps in stream ticks (decoding order) of the entries that are not discarded.
        public var timestamps: [Int64]
        /// Those of the keyframes among them.
        public var keyframes: [Int64] = []
        /// The timestamp of the keyframe a copy of the stream begins at, when an edit list hides it: the last
        /// discarded keyframe before the first entry shown (whose pictures that entry may need to decode).
        public var hiddenLeadKeyframe: Int64?

        /// Whether the entries reach the end of `stream` as its header gives it (to within a second), or the
        /// header gives none: an index of a fragmented file may hold only the fragments read so far.
        public func covers(_ stream: StreamInfo) -> Bool {
            guard stream.headerDuration.isNumeric, let first = timestamps.min(), let last = timestamps.max() else { return true }
            return MediaTime(count: last - first, timeBase: stream.timeBase) + MediaTime(value: 1, timescale: 1) >= stream.headerDuration
        }

        public init(entries: Int, endOffset: Int64, bytes: Int64, timestamps: [Int64], keyframes: [Int64] = []) {
            (self.entries, self.endOffset, self.bytes, self.timestamps, self.keyframes) = (entries, endOffset, bytes, timestamps, keyframes)
        }
    }

    public func index(of streamIndex: Int) -> StreamIndex? {
        let st = context.pointee.streams[streamIndex]!
        let count = Int(avformat_index_get_entries_count(st))
        guard count > 0 else { return nil }
        var result = StreamIndex(entries: count, endOffset: 0, bytes: 0, timestamps: [])
        result.timestamps.reserveCapacity(count)
        for i in 0..<count {
            guard let e = avformat_index_get_entry(st, Int32(i))?.pointee else { return nil }
            let size = Int64(e.size)
            result.endOffset = max(result.endOffset, e.pos + size)
            result.bytes += size
            if e.flags & AVINDEX_DISCARD_FRAME == 0 {
                result.timestamps.append(e.timestamp)
                if e.flags & AVINDEX_KEYFRAME != 0 { result.keyframes.append(e.timestamp) }
            } else if result.timestamps.isEmpty, e.flags & AVINDEX_KEYFRAME != 0 {
                result.hiddenLeadKeyframe = e.timestamp
            }
        }
        return result
    }

    /// Throws when the owner cancelled or the work stalled; call between units of work.
    public func checkInterrupt() throws(MediaFileError) {
        if let reason = interrupter.reason {
            throw MediaFileError.interrupted(path: path, reason)
        }
    }

    /// Marks progress on this file's operation (a frame decoded, samples produced): see `Interrupter`.
    public func progressed() { interrupter.progressed() }

    // MARK: - Opening

    /// Stats the path before FFmpeg sees it, for errors that say exactly what is wrong. Returns its status.
    static func checkPath(_ path: String) throws(MediaFileError) -> stat {
        var st = stat()
        if stat(path, &st) != 0 {
            switch errno {
            case ENOENT, ENOTDIR: throw MediaFileError(path: path, reason: .notFound)
            case EACCES: throw MediaFileError(path: path, reason: .permissionDenied)
            default: throw MediaFileError(path: path, reason: .ffmpeg(FFmpegError(code: mf_averror(errno)), while: "checking the file"))
            }
        }
        let type = st.st_mode & S_IFMT
        if type == S_IFDIR { throw MediaFileError(path: path, reason: .isDirectory) }
        if type != S_IFREG { throw MediaFileError(path: path, reason: .notRegularFile) }
        if st.st_size == 0 { throw MediaFileError(path: path, reason: .empty) }
        if access(path, R_OK) != 0 { throw MediaFileError(path: path, reason: .permissionDenied) }
        return st
    }

    /// A demuxer context opened on `path` with the limits' options (nil and FFmpeg's code on failure).
    private static func open(_ path: String, format: UnsafePointer<AVInputFormat>?, limits: SafetyLimits,
                             interruptBox: Unmanaged<Interrupter>, extra: [String: String] = [:],
                             io: UnsafeMutablePointer<AVIOContext>? = nil) -> (context: UnsafeMutablePointer<AVFormatContext>?, code: Int32) {
        guard let ctx = avformat_alloc_context() else { return (nil, mf_averror(ENOMEM)) }
        if let io {
            // The caller's I/O: FFmpeg opens nothing by the path and leaves the context to its owner.
            ctx.pointee.pb = io
            ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        }
        ctx.pointee.interrupt_callback.callback = { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<Interrupter>.fromOpaque(opaque).takeUnretainedValue().reason == nil ? 0 : 1
        }
        ctx.pointee.interrupt_callback.opaque = interruptBox.toOpaque()
        var options: OpaquePointer? = nil
        av_dict_set(&options, "protocol_whitelist", limits.allowedProtocols.joined(separator: ","), 0)
        av_dict_set(&options, "probesize", String(limits.probeSize), 0)
        let analyzeMicros = limits.analyzeDuration.count(in: Rational(1, 1_000_000)) ?? 10_000_000
        av_dict_set(&options, "analyzeduration", String(analyzeMicros), 0)
        av_dict_set(&options, "max_streams", String(limits.maxStreams), 0)
        if let formats = limits.allowedFormats { av_dict_set(&options, "format_whitelist", formats.joined(separator: ","), 0) }
        for (key, value) in extra { av_dict_set(&options, key, value, 0) }
        FFmpegLog.clearLastError()
        var maybeCtx: UnsafeMutablePointer<AVFormatContext>? = ctx
        let result = avformat_open_input(&maybeCtx, path, format, &options)
        av_dict_free(&options)
        return result >= 0 ? (maybeCtx, result) : (nil, result)
    }

    /// The name of the demuxer FFmpeg's probe picks for the file's first bytes and name, without
    /// opening it (so that nothing the file names is opened). Nil when nothing matches.
    static func probeFormatName(_ path: String) -> String? {
        probeFormat(path, byContentOnly: false).map { String(cString: $0.pointee.name) }
    }

    /// The demuxer FFmpeg's probe picks for the file's first megabyte (and its name, unless
    /// `byContentOnly`).
    static func probeFormat(_ path: String, byContentOnly: Bool) -> UnsafePointer<AVInputFormat>? {
        let fd = Glibc.open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let size = 1 << 20
        let padding = Int(AVPROBE_PADDING_SIZE)
        var buffer = [UInt8](repeating: 0, count: size + padding)
        var filled = 0
        while filled < size {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, size - filled) }
            if n <= 0 { break }
            filled += n
        }
        return buffer.withUnsafeMutableBufferPointer { bytes in
            path.withCString { name in
                var data = AVProbeData()
                data.filename = byContentOnly ? nil : name
                data.buf = bytes.baseAddress
                data.buf_size = Int32(filled)
                var score: Int32 = 0
                return av_probe_input_format3(&data, 1, &score)
            }
        }
    }

    private static func openError(path: String, code: Int32, interrupter: Interrupter, limits: SafetyLimits) -> MediaFileError {
        if let reason = interrupter.reason {
            return MediaFileError.interrupted(path: path, reason)
        }
        let error = FFmpegError.capture(code, "avformat_open_input")
        if let allowed = limits.allowedFormats, let name = InputFile.probeFormatName(path),
           !name.split(separator: ",").contains(where: { allowed.contains(String($0)) }) {
            return MediaFileError(path: path, reason: .formatRefused(name))
        }
        switch error {
        case .notFound: return MediaFileError(path: path, reason: .notFound)
        case .permissionDenied: return MediaFileError(path: path, reason: .permissionDenied)
        case .outOfMemory where error.detail?.contains("max_streams") == true:
            return MediaFileError(path: path, reason: .tooManyStreams(count: nil, limit: limits.maxStreams))
        case .invalidData, .demuxerNotFound: return MediaFileError(path: path, reason: .unknownFormat(detail: error.detail))
        default: return MediaFileError(path: path, reason: .ffmpeg(error, while: "opening"))
        }
    }
}

/// libavdevice's capture devices (v4l2, x11grab, alsa, pulse, lavfi). The library is loaded and its
/// devices registered the first time a device is opened, so that everything else (and a container image
/// for jobs and network streams) runs without it and the many libraries it links.
enum LiveDevices {
    private static let loaded: Bool = {
        guard let handle = dlopen("libavdevice.so.59", RTLD_NOW | RTLD_GLOBAL),
              let register = dlsym(handle, "avdevice_register_all") else { return false }
        unsafeBitCast(register, to: (@convention(c) () -> Void).self)()
        return true
    }()

    /// Whether libavdevice is there (its devices registered).
    static func load() -> Bool { loaded }
}
