internal import CFFmpeg
internal import CMediaShims
import MediaTime
#if canImport(Glibc)
import Glibc
#endif

/// A media file being written: the owner of one output AVFormatContext and its I/O.
///
/// Streams are added (copied from an input stream, or from an encoder), then `writeHeader`,
/// `write` packets (interleaved by FFmpeg), and `finish` writes the trailer, flushes and closes the
/// file and fsyncs it. The muxer may change stream time bases at `writeHeader`: read `timeBase(of:)`
/// after it. Thread-confined; the context is freed in `deinit` (a file not finished is left as is for
/// its owner to delete).
public final class OutputFile {
    public let path: String
    let context: UnsafeMutablePointer<AVFormatContext>
    var isOpen = false
    var finished = false
    /// Written into memory, one fragment at a time (`OutputFile+Fragments.swift`), not into `path`.
    let inMemory: Bool
    /// A second descriptor on the file, used to start writeback early (see `write`).
    private var syncDescriptor: Int32 = -1
    private var writebackOffset: Int64 = 0
    private static let writebackChunk: Int64 = 8 << 20

    /// Creates `path` for writing with the muxer `format` ("mp4", "mov", "matroska").
    public init(path: String, format: String) throws(MediaFileError) {
        FFmpegLog.installDefaultIfNeeded()
        self.path = path
        inMemory = false
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let r = avformat_alloc_output_context2(&ctx, nil, format, path)
        guard r >= 0, let ctx else {
            throw MediaFileError(path: path, reason: .ffmpeg(.capture(r, "avformat_alloc_output_context2"), while: "creating the \(format) muxer"))
        }
        context = ctx
        let o = avio_open(&ctx.pointee.pb, path, AVIO_FLAG_WRITE)
        if o < 0 {
            avformat_free_context(ctx)
            throw MediaFileError(path: path, reason: .ffmpeg(.capture(o, "avio_open"), while: "creating the file"))
        }
        isOpen = true
        syncDescriptor = open(path, O_RDONLY)
    }

    /// An output into memory (see `OutputFile+Fragments.swift`).
    init(inMemory name: String, format: String) throws(MediaFileError) {
        FFmpegLog.installDefaultIfNeeded()
        path = name
        inMemory = true
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let r = avformat_alloc_output_context2(&ctx, nil, format, nil)
        guard r >= 0, let ctx else {
            throw MediaFileError(path: name, reason: .ffmpeg(.capture(r, "avformat_alloc_output_context2"), while: "creating the \(format) muxer"))
        }
        context = ctx
        guard avio_open_dyn_buf(&ctx.pointee.pb) >= 0 else {
            avformat_free_context(ctx)
            throw MediaFileError(path: name, reason: .ffmpeg(.outOfMemory, while: "buffering"))
        }
        isOpen = true
    }

    deinit {
        if syncDescriptor >= 0 { close(syncDescriptor) }
        if isOpen {
            if inMemory { discardBytes() } else { avio_closep(&context.pointee.pb) }
        }
        avformat_free_context(context)
    }

    /// Encoders writing into this container must put codec headers in extradata.
    public var needsGlobalHeader: Bool { context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 }

    /// Adds a stream whose packets are copied from `streamIndex` of `input`, keeping its codec
    /// parameters and display matrix. Returns the new stream's index.
    public func addStream(copying streamIndex: Int, of input: InputFile, timeBase: Rational) throws(MediaFileError) -> Int {
        let source = input.context.pointee.streams[streamIndex]!
        guard let s = avformat_new_stream(context, nil) else { throw failure(.outOfMemory, "adding a stream") }
        var r = avcodec_parameters_copy(s.pointee.codecpar, source.pointee.codecpar)
        if r < 0 { throw failure(.capture(r, "avcodec_parameters_copy"), "adding a stream") }
        // A tag valid in the source container may be invalid in this one: let the muxer choose.
        s.pointee.codecpar.pointee.codec_tag = 0
        s.pointee.time_base = timeBase.avRational
        av_dict_copy(&s.pointee.metadata, source.pointee.metadata, 0)
        s.pointee.disposition = source.pointee.disposition
        var size: Int = 0
        if let matrix = av_stream_get_side_data(source, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 {
            if let dst = av_stream_new_side_data(s, AV_PKT_DATA_DISPLAYMATRIX, size) { dst.update(from: matrix, count: size) }
        }
        r = 0
        return Int(s.pointee.index)
    }

    /// Replaces the codec header (extradata) of `stream`, added and not yet written: a record in the framing
    /// this container wants, where the source's was in another (an avcC record for Annex B parameter sets).
    public func setCodecHeader(_ stream: Int, _ bytes: [UInt8]) throws(MediaFileError) {
        guard stream >= 0, stream < Int(context.pointee.nb_streams), let s = context.pointee.streams[stream], let par = s.pointee.codecpar else {
            throw failure(.streamNotFound, "setting stream \(stream)'s codec header")
        }
        let padding = Int(AV_INPUT_BUFFER_PADDING_SIZE)
        guard let data = av_mallocz(bytes.count + padding)?.assumingMemoryBound(to: UInt8.self) else { throw failure(.outOfMemory, "setting a codec header") }
        bytes.withUnsafeBufferPointer { if let base = $0.baseAddress { data.update(from: base, count: bytes.count) } }
        av_freep(&par.pointee.extradata)
        par.pointee.extradata = data
        par.pointee.extradata_size = Int32(bytes.count)
    }

    /// Marks `stream` as its kind's default track (the one players choose), or clears the mark.
    public func setDefault(_ stream: Int, _ isDefault: Bool) {
        guard let s = context.pointee.streams[stream] else { return }
        s.pointee.disposition = isDefault ? s.pointee.disposition | AV_DISPOSITION_DEFAULT : s.pointee.disposition & ~AV_DISPOSITION_DEFAULT
    }

    /// Adds a stream for `encoder`'s packets; `displayMatrix` (9 Int32) sets the rotation to keep.
    public func addStream(for encoder: Encoder, displayMatrix: [Int32]? = nil, language: String? = nil, codecTag: String? = nil) throws(MediaFileError) -> Int {
        guard let s = avformat_new_stream(context, nil) else { throw failure(.outOfMemory, "adding a stream") }
        let r = avcodec_parameters_from_context(s.pointee.codecpar, encoder.context)
        if r < 0 { throw failure(.capture(r, "avcodec_parameters_from_context"), "adding a stream") }
        if let tag = codecTag.map(Array.init)?.map(\.asciiValue), tag.count == 4, tag.allSatisfy({ $0 != nil }) {
            s.pointee.codecpar.pointee.codec_tag = tag.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1!) }
        }
        s.pointee.time_base = encoder.context.pointee.time_base
        if let language { av_dict_set(&s.pointee.metadata, "language", language, 0) }
        if let displayMatrix, displayMatrix.count == 9,
           let dst = av_stream_new_side_data(s, AV_PKT_DATA_DISPLAYMATRIX, 36) {
            dst.withMemoryRebound(to: Int32.self, capacity: 9) { m in for i in 0..<9 { m[i] = displayMatrix[i] } }
        }
        return Int(s.pointee.index)
    }

    /// Container-level tags (title, ...).
    public func setMetadata(_ tags: [String: String]) {
        for (k, v) in tags { av_dict_set(&context.pointee.metadata, k, v, 0) }
    }

    /// Chapters, in output time. Replaces any chapters set before (which are freed).
    public func setChapters(_ chapters: [ChapterInfo]) {
        freeChapters()
        guard !chapters.isEmpty else { return }
        let count = chapters.count
        guard let list = av_calloc(count, MemoryLayout<UnsafeMutablePointer<AVChapter>?>.size)?
            .assumingMemoryBound(to: UnsafeMutablePointer<AVChapter>?.self) else { return }
        var made = 0
        for (i, ch) in chapters.enumerated() {
            guard let c = av_mallocz(MemoryLayout<AVChapter>.size)?.assumingMemoryBound(to: AVChapter.self) else { continue }
            c.pointee.id = Int64(i + 1)
            c.pointee.time_base = AVRational(num: 1, den: 1000)
            c.pointee.start = ch.start.count(in: Rational(1, 1000)) ?? 0
            c.pointee.end = ch.end.count(in: Rational(1, 1000)) ?? 0
            if let title = ch.title { av_dict_set(&c.pointee.metadata, "title", title, 0) }
            list[made] = c
            made += 1
        }
        context.pointee.chapters = list
        context.pointee.nb_chapters = UInt32(made)
    }

    private func freeChapters() {
        if let list = context.pointee.chapters {
            for i in 0..<Int(context.pointee.nb_chapters) {
                if let c = list[i] {
                    av_dict_free(&c.pointee.metadata)
                    av_free(c)
                }
            }
            av_free(list)
        }
        context.pointee.chapters = nil
        context.pointee.nb_chapters = 0
    }

    /// Writes the container header. `options` are muxer options ("movflags": "+faststart").
    public func writeHeader(options: [String: String] = [:]) throws(MediaFileError) {
        // FFmpeg's QuickTime muxer knows one form of each bibliographic/terminology pair: "fre" or "deu" would be lost.
        if String(cString: context.pointee.oformat.pointee.name) == "mov" {
            for i in 0..<Int(context.pointee.nb_streams) {
                guard let s = context.pointee.streams[i], let tag = av_dict_get(s.pointee.metadata, "language", nil, 0) else { continue }
                let code = String(cString: tag.pointee.value).lowercased()
                if ISO639.quickTime(code) != code { av_dict_set(&s.pointee.metadata, "language", ISO639.quickTime(code), 0) }
            }
        }
        var dict: OpaquePointer? = nil
        for (k, v) in options { av_dict_set(&dict, k, v, 0) }
        let r = avformat_write_header(context, &dict)
        av_dict_free(&dict)
        if r < 0 { throw failure(.capture(r, "avformat_write_header"), "writing the header") }
    }

    /// The stream's time base as the muxer settled it (valid after `writeHeader`).
    public func timeBase(of stream: Int) -> Rational {
        Rational(context.pointee.streams[stream]!.pointee.time_base)
    }

    /// Writes a packet already timed in its output stream's time base. The packet is consumed (reset).
    public func write(_ packet: inout Packet) throws(MediaFileError) {
        let r = av_interleaved_write_frame(context, packet.pointer)
        if r < 0 { throw failure(.capture(r, "av_interleaved_write_frame"), "writing packets") }
        // Let the disk catch up while we write, instead of all at the final fsync.
        if syncDescriptor >= 0 {
            let written = avio_tell(context.pointee.pb)
            if written - writebackOffset >= Self.writebackChunk {
                _ = mf_start_writeback(syncDescriptor, writebackOffset, written - writebackOffset)
                writebackOffset = written
            }
        }
    }

    /// Writes the trailer, closes the file and fsyncs it to disk (unless `sync` is false: for a file the
    /// caller rewrites and syncs itself).
    public func finish(sync: Bool = true) throws(MediaFileError) {
        if inMemory { _ = try finishFragments(); return }   // no file to close or sync
        guard !finished else { return }
        finished = true
        let r = av_write_trailer(context)
        if r < 0 { throw failure(.capture(r, "av_write_trailer"), "finishing the file") }
        avio_closep(&context.pointee.pb)
        isOpen = false
        guard sync else { return }
        let fd = open(path, O_RDONLY)
        if fd >= 0 {
            defer { close(fd) }
            if fsync(fd) != 0 { throw failure(FFmpegError(code: mf_averror(errno)), "syncing the file to disk") }
        }
    }

    func failure(_ e: FFmpegError, _ activity: String) -> MediaFileError {
        MediaFileError(path: path, reason: .ffmpeg(e, while: activity))
    }
}
