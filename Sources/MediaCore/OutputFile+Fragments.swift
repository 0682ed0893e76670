internal import CFFmpeg
internal import CMediaShims

/// An output written into memory as fragmented MPEG-4, one piece at a time, as a CMAF packager needs:
/// the initialization (`ftyp` + an empty `moov`) when the header is written, then each fragment
/// (`moof` + `mdat`) when it is cut. The pieces are the owner's to store; nothing touches a file.
extension OutputFile {
    /// The muxer options that make a CMAF track: an empty index up front, a fragment only when cut, a
    /// decode time in every fragment, and no index at the end. Not the muxer's `cmaf` flag: it writes
    /// negative composition offsets, which FFmpeg's own demuxer and GStreamer's shift later, where
    /// positive offsets and the track's edit list read the same in every reader.
    public static let cmafOptions = ["movflags": "+frag_custom+empty_moov+default_base_moof+skip_trailer"]

    /// An in-memory output of the muxer `format` ("mp4"); `name` names it in errors.
    public convenience init(fragmentsNamed name: String, format: String) throws(MediaFileError) {
        try self.init(inMemory: name, format: format)
    }

    /// The initialization segment: writes the header with `options` and returns what it wrote.
    public func writeInitialization(options: [String: String] = OutputFile.cmafOptions) throws(MediaFileError) -> [UInt8] {
        try writeHeader(options: options)
        return try takeBytes()
    }

    /// Ends the fragment being written (every packet written so far) and returns its bytes; empty when
    /// no packet was written since the last cut.
    public func cutFragment() throws(MediaFileError) -> [UInt8] {
        var r = av_interleaved_write_frame(context, nil)
        if r < 0 { throw MediaFileError(path: path, reason: .ffmpeg(.capture(r, "av_interleaved_write_frame"), while: "flushing packets")) }
        r = av_write_frame(context, nil)
        if r < 0 { throw MediaFileError(path: path, reason: .ffmpeg(.capture(r, "av_write_frame"), while: "ending a fragment")) }
        return try takeBytes()
    }

    /// Sets the muxer's own option `name` ("mpegts_flags" to "+resend_headers"), for what it writes next.
    public func setMuxerOption(_ name: String, _ value: String) throws(MediaFileError) {
        let r = av_opt_set(context.pointee.priv_data, name, value, 0)
        if r < 0 { throw MediaFileError(path: path, reason: .ffmpeg(.capture(r, "av_opt_set"), while: "setting the muxer's \(name)")) }
    }

    /// Writes the trailer and returns the last bytes (the last fragment, when packets were left).
    public func finishFragments() throws(MediaFileError) -> [UInt8] {
        guard !finished else { return [] }
        finished = true
        let r = av_write_trailer(context)
        if r < 0 { throw MediaFileError(path: path, reason: .ffmpeg(.capture(r, "av_write_trailer"), while: "finishing")) }
        let last = closeBytes()
        isOpen = false
        return last
    }

    /// What the muxer wrote since the last call, with a new buffer behind it for what comes next.
    private func takeBytes() throws(MediaFileError) -> [UInt8] {
        let bytes = closeBytes()
        if avio_open_dyn_buf(&context.pointee.pb) < 0 {
            isOpen = false
            throw MediaFileError(path: path, reason: .ffmpeg(.outOfMemory, while: "buffering"))
        }
        return bytes
    }

    private func closeBytes() -> [UInt8] {
        guard let pb = context.pointee.pb else { return [] }
        var buffer: UnsafeMutablePointer<UInt8>?
        let count = avio_close_dyn_buf(pb, &buffer)
        context.pointee.pb = nil
        defer { av_free(buffer) }
        guard let buffer, count > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(count)))
    }

    func discardBytes() { _ = closeBytes() }
}

/// The kernel's writeback of a file, started early: `start` asks it to begin writing the file's dirty pages
/// now, without waiting, so that the `fsync` that makes the file durable later has little left to do.
public enum Writeback {
    /// Starts writing back `length` bytes of `fd` from `offset` (0: to the end). Advice: a failure is ignored.
    public static func start(_ fd: Int32, offset: Int64 = 0, length: Int64 = 0) { _ = mf_start_writeback(fd, offset, length) }
}
