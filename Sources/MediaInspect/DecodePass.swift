import MediaCore
import MediaTime

/// One pass over a file's packets from its first: each packet of a stream with a decoder is decoded, and each
/// frame handed to `body` with its decoder; the decoders are drained at the end. Progress is the packets' time
/// over `total` seconds; the interrupter is checked every 256 packets. A decoder's error, or one `body` throws,
/// names the file, the track and its codec. What `loudness` and `check` read a file with.
enum DecodePass {
    static func run(_ file: InputFile, decoders: [Int: Decoder], total: Double, progress: (Double) -> Void,
                    packet seen: (borrowing Packet) -> Void = { _ in },
                    _ body: (Decoder, borrowing Frame) throws(FFmpegError) -> Void) throws(MediaFileError) {
        func undecodable(_ stream: StreamInfo, _ error: FFmpegError) -> MediaFileError {
            MediaFileError(path: file.path, reason: .undecodable(track: stream.index, codec: stream.codecName, error))
        }
        let origin = file.container.startTime.isNumeric ? file.container.startTime : .zero
        var frame = Frame()
        func pull(_ decoder: Decoder) throws(MediaFileError) {
            while true {
                do {
                    guard try decoder.receive(into: &frame) == .frame else { return }
                    try body(decoder, frame)
                } catch {
                    throw undecodable(decoder.stream, error)
                }
            }
        }
        var packet = Packet()
        var read = 0
        while try file.read(into: &packet) == .packet {
            read += 1
            seen(packet)
            if read & 255 == 0 {
                try file.checkInterrupt()
                if total > 0, let pts = packet.pts, let stream = file.streams.first(where: { $0.index == packet.streamIndex }) {
                    progress(min(1, max(0, (MediaTime(count: pts, timeBase: stream.timeBase) - origin).seconds / total)))
                }
            }
            guard let decoder = decoders[packet.streamIndex] else { continue }
            // .full: the decoder holds frames to take first.
            let full: Bool
            do throws(FFmpegError) { full = try decoder.send(packet) == .full } catch { throw undecodable(decoder.stream, error) }
            if full {
                try pull(decoder)
                do throws(FFmpegError) { _ = try decoder.send(packet) } catch { throw undecodable(decoder.stream, error) }
            }
            try pull(decoder)
        }
        for decoder in decoders.values {
            try? decoder.sendEndOfStream()  // draining after the packets: an error leaves nothing more to decode
            try pull(decoder)
        }
    }
}
