internal import CFFmpeg
internal import CMediaShims
import MediaTime

extension InputFile {
    static func snapshot(_ stream: UnsafeMutablePointer<AVStream>, index: Int) -> StreamInfo {
        let par = stream.pointee.codecpar!.pointee
        let tb = Rational(stream.pointee.time_base)
        let nopts = mf_av_nopts_value()
        let mediaType: MediaType
        switch par.codec_type {
        case AVMEDIA_TYPE_VIDEO: mediaType = .video
        case AVMEDIA_TYPE_AUDIO: mediaType = .audio
        case AVMEDIA_TYPE_SUBTITLE: mediaType = .subtitle
        case AVMEDIA_TYPE_DATA: mediaType = .data
        case AVMEDIA_TYPE_ATTACHMENT: mediaType = .attachment
        default: mediaType = .unknown
        }
        let descriptor = avcodec_descriptor_get(par.codec_id)
        var info = StreamInfo(
            index: index,
            containerID: Int(stream.pointee.id),
            mediaType: mediaType,
            codecName: String(cString: avcodec_get_name(par.codec_id)),
            codecLongName: descriptor?.pointee.long_name.map { String(cString: $0) },
            codecTag: fourCC(par.codec_tag),
            profile: avcodec_profile_name(par.codec_id, par.profile).map { String(cString: $0) },
            level: Int(par.level),
            timeBase: tb,
            startTime: tb.isValid && tb.numerator > 0 && stream.pointee.start_time != nopts
                ? MediaTime(count: stream.pointee.start_time, timeBase: tb) : .invalid,
            headerDuration: tb.isValid && tb.numerator > 0 && !isUnknownDuration(stream.pointee.duration)
                ? MediaTime(count: stream.pointee.duration, timeBase: tb) : .invalid,
            headerFrameCount: Int(stream.pointee.nb_frames),
            bitRate: Int(par.bit_rate),
            averageFrameRate: Rational(validOrNil: stream.pointee.avg_frame_rate),
            realFrameRate: Rational(validOrNil: stream.pointee.r_frame_rate),
            width: Int(par.width),
            height: Int(par.height),
            pixelFormat: nil,
            sampleAspectRatio: Rational(validOrNil: par.sample_aspect_ratio),
            displayMatrix: nil,
            rotation: nil,
            sampleRate: Int(par.sample_rate),
            frameSize: Int(par.frame_size),
            channelCount: Int(par.ch_layout.nb_channels),
            channelLayout: nil,
            sampleFormat: nil,
            tags: dictionary(stream.pointee.metadata),
            dispositions: (0..<31).compactMap { bit in
                stream.pointee.disposition & (Int32(1) << bit) == 0 ? nil : av_disposition_to_string(Int32(1) << bit).map { String(cString: $0) }
            },
            isAttachedPicture: stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0,
            hasDecoder: LeftOutCodecs.hasDecoder(par.codec_id),
            passthroughContainers: passthroughContainers(par.codec_id)
        )
        if par.extradata_size > 0, let data = par.extradata {
            info.extradata = Array(UnsafeBufferPointer(start: data, count: Int(par.extradata_size)))
        }
        if mediaType == .video, par.format >= 0, let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: par.format)) {
            info.pixelFormat = String(cString: name)
        }
        if mediaType == .audio {
            if par.format >= 0, let name = av_get_sample_fmt_name(AVSampleFormat(rawValue: par.format)) {
                info.sampleFormat = String(cString: name)
            }
            var layout = par.ch_layout
            var buffer = [CChar](repeating: 0, count: 128)
            if par.ch_layout.nb_channels > 0, av_channel_layout_describe(&layout, &buffer, buffer.count) > 0 {
                info.channelLayout = String(cBuffer: buffer)
            }
        }
        var size: Int = 0
        if let data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 9 * 4 {
            data.withMemoryRebound(to: Int32.self, capacity: 9) { matrix in
                info.displayMatrix = (0..<9).map { matrix[$0] }
                let degrees = av_display_rotation_get(matrix)
                if degrees.isFinite { info.rotation = degrees == 0 ? 0 : degrees }
            }
        }
        return info
    }

    /// Missing, zero, or all ones in 32 bits: an ISO BMFF header that does not know its duration
    /// (fragmented MP4 writes 0xFFFFFFFF) and that FFmpeg passes on as if it were real.
    static func isUnknownDuration(_ ticks: Int64) -> Bool {
        ticks == mf_av_nopts_value() || ticks <= 0 || ticks == Int64(UInt32.max)
    }

    static func containerSnapshot(_ ctx: UnsafeMutablePointer<AVFormatContext>, fileSize: Int64) -> ContainerInfo {
        let nopts = mf_av_nopts_value()
        let micros = Rational(1, mf_av_time_base())
        var chapters: [ChapterInfo] = []
        for i in 0..<Int(ctx.pointee.nb_chapters) {
            guard let ch = ctx.pointee.chapters[i]?.pointee else { continue }
            let tb = Rational(ch.time_base)
            guard tb.isValid, tb.numerator > 0 else { continue }
            let tags = dictionary(ch.metadata)
            chapters.append(ChapterInfo(id: ch.id, start: MediaTime(count: ch.start, timeBase: tb),
                                        end: MediaTime(count: ch.end, timeBase: tb), title: tags["title"], tags: tags))
        }
        let iformat = ctx.pointee.iformat!.pointee
        // The container duration is derived from the streams': unknown if any of theirs is the sentinel.
        let derivedFromSentinel = (0..<Int(ctx.pointee.nb_streams)).contains {
            ctx.pointee.streams[$0]!.pointee.duration == Int64(UInt32.max)
        }
        return ContainerInfo(
            formatName: String(cString: iformat.name),
            formatLongName: iformat.long_name.map { String(cString: $0) },
            startTime: ctx.pointee.start_time != nopts ? MediaTime(count: ctx.pointee.start_time, timeBase: micros) : .invalid,
            headerDuration: ctx.pointee.duration != nopts && ctx.pointee.duration > 0 && !derivedFromSentinel
                ? MediaTime(count: ctx.pointee.duration, timeBase: micros) : .invalid,
            bitRate: Int(ctx.pointee.bit_rate),
            fileSize: fileSize,
            tags: dictionary(ctx.pointee.metadata),
            chapters: chapters)
    }

    /// All entries of an AVDictionary.
    static func dictionary(_ dict: OpaquePointer?) -> [String: String] {
        var result: [String: String] = [:]
        var entry: UnsafeMutablePointer<AVDictionaryEntry>? = nil
        while let e = av_dict_get(dict, "", entry, AV_DICT_IGNORE_SUFFIX) {
            if let key = e.pointee.key, let value = e.pointee.value {
                result[String(cString: key)] = String(cString: value)
            }
            entry = e
        }
        return result
    }

    private static func fourCC(_ tag: UInt32) -> String? {
        guard tag != 0 else { return nil }
        let bytes = (0..<4).map { UInt8((tag >> (8 * $0)) & 0xFF) }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return String(tag) }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let passthroughTargets = ["mp4", "mov", "matroska"]

    private static func passthroughContainers(_ id: AVCodecID) -> [String] {
        passthroughTargets.filter { name in
            guard let format = av_guess_format(name, nil, nil) else { return false }
            return avformat_query_codec(format, id, FF_COMPLIANCE_NORMAL) == 1
        }
    }
}

extension Rational {
    init(_ r: AVRational) { self.init(r.num, r.den) }
    init?(validOrNil r: AVRational) {
        guard r.num > 0, r.den > 0 else { return nil }
        self.init(r.num, r.den)
    }
    var avRational: AVRational { AVRational(num: numerator, den: denominator) }
}
