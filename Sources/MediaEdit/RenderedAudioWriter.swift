import MediaCore
import MediaTime

/// Writes an `AudioTrackRenderer`'s AAC packets into one stream of an output file, interleaved with
/// what else is written: `write(until:)` writes every packet starting at or before an output time,
/// `write(until: nil)` the rest. Thread-confined like the file.
final class RenderedAudioWriter {
    let renderer: AudioTrackRenderer
    private let file: OutputFile
    let stream: Int
    private var times = MonotonicTimestamps()
    private var pending: PacketBox?
    private(set) var packets = 0
    /// Where packets go instead of the file, when set (a segmented track that times what it is given).
    var sink: ((inout Packet) throws -> Void)?
    /// Sees each packet before it is written (an export's checks).
    var watch: (any EncodingWatch)?
    /// The bit rate it encodes at, and the source's (its file's figure), bits per second.
    let bitRate: Int
    let sourceBitRate: Int?
    /// The language its first source's track is tagged with.
    let language: String?

    init(renderer: AudioTrackRenderer, file: OutputFile, stream: Int, bitRate: Int, sourceBitRate: Int?, language: String? = nil) {
        self.renderer = renderer
        self.file = file
        self.stream = stream
        self.bitRate = bitRate
        self.sourceBitRate = sourceBitRate
        self.language = language
    }

    /// Sets up the composition's audio track, rendered from `audio`'s format, as a new stream of `file`;
    /// `totalDuration` may run past the mapping (silence to the end).
    /// `streams`: each source's stream to render (nil for one: silence there); by default each source's first.
    /// `channels`: mixed to this many; nil: `audio`'s own, up to 8.
    convenience init(mapping: TimeMapping, sources: [ExportSource], audio: StreamInfo, streams: [Int?]? = nil, channels: Int? = nil, totalDuration: MediaTime,
                     file: OutputFile, settings: ExportSettings, interrupter: Interrupter,
                     progress: (@Sendable (ExportProgress) -> Void)? = nil) throws {
        let indexes = streams ?? sources.map { $0.audio?.index }
        let renderer = try AudioTrackRenderer(
            mapping: mapping, sources: zip(sources, indexes).map { .init(path: $0.path, streamIndex: $1) },
            sampleRate: audio.sampleRate, channels: channels ?? min(max(audio.channelCount, 1), 8), algorithm: settings.timePitch,
            bitRate: settings.audioBitRate, totalDuration: totalDuration, globalHeader: file.needsGlobalHeader,
            loudness: settings.loudness, limits: settings.limits, interrupter: interrupter, progress: progress)
        self.init(renderer: renderer, file: file, stream: try file.addStream(for: renderer.encoder, language: audio.language),
                  bitRate: settings.audioBitRate, sourceBitRate: audio.bitRate > 0 ? audio.bitRate : nil, language: audio.knownLanguage)
    }

    /// One writer per audio track an export keeps (`ExportSettings.audioTracks`), each a stream of `file` in
    /// the choices' order.
    static func tracks(_ choices: [AudioChoice], mapping: TimeMapping, sources: [ExportSource], totalDuration: MediaTime,
                       file: OutputFile, settings: ExportSettings, interrupter: Interrupter,
                       progress: (@Sendable (ExportProgress) -> Void)? = nil) throws -> [RenderedAudioWriter] {
        try choices.enumerated().map { j, choice in
            let writer = try RenderedAudioWriter(mapping: mapping, sources: sources, audio: choice.format, streams: choice.indexes, totalDuration: totalDuration,
                                                 file: file, settings: settings, interrupter: interrupter, progress: progress)
            file.setDefault(writer.stream, j == 0)  // the first kept track is the one players choose
            return writer
        }
    }

    /// The report's audio of an export that wrote `tracks`: the first, and the others when there are any.
    static func reports(_ tracks: [RenderedAudioWriter], sources: [ExportSource]) -> (first: ExportReport.Audio, more: [ExportReport.Audio]?) {
        (tracks.first?.report ?? .absent(sourcesHaveAudio: sources.contains { $0.audio != nil }),
         tracks.count > 1 ? tracks.dropFirst().map(\.report) : nil)
    }

    /// Writes every packet that starts at or before `until` (before it, when not `inclusive`); nil: all.
    func write(until: MediaTime?, inclusive: Bool = true) throws {
        let tb = file.timeBase(of: stream)
        let sampleTB = Rational(1, Int32(renderer.sampleRate))
        while let box = try pending ?? renderer.nextPacket() {
            let t = MediaTime(count: box.packet.pts ?? 0, timeBase: sampleTB)
            if let until, inclusive ? t > until : t >= until { pending = box; return }
            pending = nil
            try watch?.audioPacket(stream: stream, box.packet)
            let ticks = t.count(in: tb) ?? 0
            let fixed = times.fix(pts: ticks, dts: ticks)
            box.packet.retime(pts: fixed.pts, dts: fixed.dts,
                              duration: MediaTime(count: box.packet.duration, timeBase: sampleTB).count(in: tb) ?? 0, streamIndex: stream)
            if let sink { try sink(&box.packet) } else { try file.write(&box.packet) }
            packets += 1
        }
    }

    var report: ExportReport.Audio {
        .init(handling: "encoded", language: language, codec: "aac", sampleRate: renderer.sampleRate, channels: renderer.channels,
              samples: renderer.samplesWritten, packets: packets, pieces: renderer.pieces, decodeErrors: renderer.decodeErrors,
              loudness: renderer.loudnessReport, bitRate: bitRate, sourceBitRate: sourceBitRate,
              note: ExportReport.Audio.bitRateNote(encoded: bitRate, source: sourceBitRate))
    }
}
