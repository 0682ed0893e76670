import Foundation
import MediaCore
import MediaTime

/// A picture of a movie's or a recording's sound: the levels of its default audio track, as the lowest and
/// highest sample (all channels together) of each column, drawn as a PNG or an SVG, and the same peaks as
/// JSON in audiowaveform's format (version 2, 16 bits), which peaks.js reads and wavesurfer.js takes as
/// its peaks.
///
/// The track is decoded once; each block of 256 samples keeps its lowest and highest sample, so memory is
/// about 7 MB an hour whatever the picture's width, and the columns are made from the blocks at the end.
public struct Waveform: Sendable {
    public struct Settings: Sendable, Hashable {
        /// Columns (the peaks JSON has one pair per column).
        public var width = 1800
        public var height = 140
        public init() {}
    }

    /// Lowest and highest sample of each column, from -1 to 1.
    public var minimums: [Float]
    public var maximums: [Float]
    public var sampleRate: Int
    /// Samples of the track each column covers.
    public var samplesPerColumn: Int
    public var duration: MediaTime
    /// The loudest sample, in dB below full scale (nil for silence).
    public var peakDBFS: Double?
    public var settings: Settings

    static let block = 256

    /// Decodes the default audio track of `path` (flagged default, else the first) and measures its columns.
    public static func make(path: String, settings: Settings, limits: SafetyLimits = .default,
                            interrupter: Interrupter = Interrupter(), progress: (Double) -> Void = { _ in }) throws(ImageGenerationError) -> Waveform {
        let file: InputFile
        do { file = try InputFile(path: path, limits: limits, interrupter: interrupter) } catch { throw .of(error) }
        guard let audio = file.streams.defaultAudio, audio.sampleRate > 0 else {
            throw .unreadable("\(path): no audio track to draw")
        }
        let decoder: Decoder
        let resampler: AudioResampler
        do {
            decoder = try Decoder(file: file, streamIndex: audio.index, threads: 1)
            resampler = try AudioResampler(inputRate: audio.sampleRate, inputChannels: max(1, audio.channelCount),
                                           outputRate: audio.sampleRate, outputChannels: max(1, audio.channelCount))
        } catch {
            throw .unreadable("\(path): \(error)")
        }
        file.discardAll(except: [audio.index])
        let expected = audio.headerDuration.isNumeric && audio.headerDuration > .zero ? audio.headerDuration.seconds
            : file.container.headerDuration.isNumeric ? file.container.headerDuration.seconds : 0
        var lows: [Float] = [], highs: [Float] = []
        var blockLow = Float.infinity, blockHigh = -Float.infinity, inBlock = 0, total = 0
        var packet = Packet()
        var frame = Frame()
        var samples = AudioSamples(channelCount: max(1, audio.channelCount))
        func take(_ samples: AudioSamples) {
            let n = samples.count
            for i in 0..<n {
                var low = Float.infinity, high = -Float.infinity
                for channel in samples.channels {
                    let v = channel[i]
                    if v < low { low = v }
                    if v > high { high = v }
                }
                if low < blockLow { blockLow = low }
                if high > blockHigh { blockHigh = high }
                inBlock += 1
                if inBlock == block {
                    lows.append(blockLow); highs.append(blockHigh)
                    (blockLow, blockHigh, inBlock) = (.infinity, -.infinity, 0)
                }
            }
            total += n
        }
        do {
            func drain() throws {
                while true {
                    let got: Decoder.ReceiveResult
                    do { got = try decoder.receive(into: &frame) } catch { break }  // a frame the decoder could not make: more input
                    guard got == .frame else { break }
                    samples = AudioSamples(channelCount: samples.channelCount)
                    try resampler.convert(frame, appendingTo: &samples)
                    take(samples)
                    file.progressed()
                }
            }
            var ended = false
            while !ended {
                try file.checkInterrupt()
                if try file.read(into: &packet) == .packet {
                    guard packet.streamIndex == audio.index else { continue }
                    while true {
                        let sent: Decoder.SendResult
                        do { sent = try decoder.send(packet) } catch { break }  // a damaged packet is skipped, as a player skips it
                        guard sent == .full else { break }
                        try drain()
                    }
                } else {
                    try decoder.sendEndOfStream()
                    ended = true
                }
                try drain()
                if expected > 0 { progress(min(1, Double(total) / (expected * Double(audio.sampleRate)))) }
            }
            samples = AudioSamples(channelCount: samples.channelCount)
            try resampler.flush(appendingTo: &samples)
            take(samples)
        } catch let error as MediaFileError {
            throw .file(error)
        } catch {
            throw .unreadable("\(path): \(error)")
        }
        if inBlock > 0 { lows.append(blockLow); highs.append(blockHigh) }
        guard total > 0 else { throw .unreadable("\(path): the audio track holds no sample") }
        // Columns from blocks: each column the blocks it covers.
        let columns = min(settings.width, lows.count)
        var minimums = [Float](repeating: 0, count: columns), maximums = [Float](repeating: 0, count: columns)
        for c in 0..<columns {
            let from = c * lows.count / columns, to = max(from + 1, (c + 1) * lows.count / columns)
            minimums[c] = max(-1, lows[from..<to].min() ?? 0)
            maximums[c] = min(1, highs[from..<to].max() ?? 0)
        }
        let loudest = max(abs(minimums.min() ?? 0), abs(maximums.max() ?? 0))
        return Waveform(minimums: minimums, maximums: maximums, sampleRate: audio.sampleRate,
                        samplesPerColumn: (total + columns - 1) / columns,
                        duration: MediaTime(value: Int64(total), timescale: Int32(audio.sampleRate)),
                        peakDBFS: loudest > 0 ? 20 * log10(Double(loudest)) : nil, settings: settings)
    }

    /// The peaks in audiowaveform's JSON format (version 2, one channel, 16 bits).
    public var peaksJSON: String {
        var data: [String] = []
        data.reserveCapacity(minimums.count * 2)
        for (low, high) in zip(minimums, maximums) {
            data.append(String(Int((low * 32767).rounded())))
            data.append(String(Int((high * 32767).rounded())))
        }
        return "{\"version\":2,\"channels\":1,\"sample_rate\":\(sampleRate),\"samples_per_pixel\":\(samplesPerColumn),"
            + "\"bits\":16,\"length\":\(minimums.count),\"data\":[\(data.joined(separator: ","))]}\n"
    }

    /// Where column `c` is drawn, from row `top` to row `bottom` (inclusive), at least one row.
    func rows(_ c: Int) -> (top: Int, bottom: Int) {
        let h = settings.height, middle = Double(h - 1) / 2
        let top = Int((middle - Double(maximums[c]) * middle).rounded())
        let bottom = Int((middle - Double(minimums[c]) * middle).rounded())
        return (max(0, min(top, bottom)), min(h - 1, max(top, bottom)))
    }

    static let ink: (UInt8, UInt8, UInt8) = (0x25, 0x63, 0xEB)

    /// The columns drawn in blue on white, one pixel each, as a PNG.
    public func png() throws(ImageGenerationError) -> [UInt8] {
        let w = minimums.count, h = settings.height
        var picture: Frame
        do { picture = try Frame(width: w, height: h, pixelFormat: "rgb24") } catch { throw .encoding("a \(w)x\(h) waveform cannot be made: \(error)") }
        let columns = (0..<w).map(rows)
        _ = picture.withMutablePlane(0) { pixels, stride in
            for y in 0..<h {
                let row = pixels + y * stride
                for x in 0..<w {
                    let inside = y >= columns[x].top && y <= columns[x].bottom
                    row[3 * x] = inside ? Self.ink.0 : 255
                    row[3 * x + 1] = inside ? Self.ink.1 : 255
                    row[3 * x + 2] = inside ? Self.ink.2 : 255
                }
            }
        }
        do { return try StillImageEncoder.encode(picture, as: .png, quality: 1, converter: PictureConverter()) } catch {
            throw .encoding("the waveform could not be encoded: \(error)")
        }
    }

    /// The columns as an SVG: one path of vertical strokes, scalable.
    public func svg() -> String {
        let w = minimums.count, h = settings.height
        var d = ""
        d.reserveCapacity(w * 16)
        for x in 0..<w {
            let (top, bottom) = rows(x)
            d += "M\(x).5 \(top)V\(bottom + 1)"
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(w)" height="\(h)" viewBox="0 0 \(w) \(h)" preserveAspectRatio="none">\
            <path d="\(d)" stroke="#2563eb" stroke-width="1" fill="none"/></svg>

            """
    }
}
