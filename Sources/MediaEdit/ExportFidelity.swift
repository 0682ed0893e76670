import MediaCore
import MediaTime

/// An export's fidelity measured as it encodes: each picture handed to the encoder is held until the
/// encoder's packets for it, decoded at once, give it back, and the pair is measured (`PictureFidelity`).
/// The composition is decoded once, by the export; the encoded pictures are decoded once, here (one decoder
/// thread: frame threads would hold more pictures back). The encoder's delay decides how many pictures are
/// held: libx264's lookahead, B-frames and frame threads, some 50 to 100 pictures (150 to 300 MB at 1080p,
/// four times that at 2160p). A picture is let go as soon as it is measured.
final class ExportFidelity {
    private final class Held { var frame = Frame(); let pts: Int64; init(_ pts: Int64) { self.pts = pts } }
    private let readBack: EncodedReadBack
    private let log: FidelityLog
    private let frameSeconds: Double
    private let output: String
    private var held: [Held] = []
    private var first = 0
    private var measured = 0, encoded = 0

    init(encoder: Encoder, log: FidelityLog, frameDuration: MediaTime, output: String) throws {
        readBack = try EncodedReadBack(encoder)
        self.log = log
        frameSeconds = frameDuration.seconds
        self.output = output
    }

    /// Holds the picture about to be encoded at `pts` (frames).
    func hold(_ frame: borrowing Frame, pts: Int64) throws {
        let kept = Held(pts)
        try kept.frame.reference(frame)
        held.append(kept)
        encoded += 1
    }

    /// Reads back one packet the encoder made, before it is written (the muxer takes it).
    func read(_ packet: borrowing Packet) throws { try readBack.decode(packet, measure) }

    /// The pictures the decoder still holds, once the encoder is drained; every picture encoded must have been measured.
    func finish() throws {
        try readBack.finish(measure)
        held.removeAll()
        guard measured == encoded else {
            throw ExportError("\(output): \(encoded - measured) of the \(encoded) pictures encoded did not come back from the encoder's packets to be measured: its fidelity is unknown")
        }
    }

    private func measure(_ decoded: borrowing Frame) throws {
        let pts = decoded.pts ?? -1
        // Pictures come back in presentation order; one the encoder dropped (none does) is let go unmeasured.
        while first < held.count, held[first].pts < pts { held[first].frame.reset(); first += 1 }
        guard first < held.count, held[first].pts == pts else { return }
        let reference = held[first]
        first += 1
        defer { reference.frame.reset() }
        if first > 64 { held.removeFirst(first); first = 0 }
        let fidelity: PictureFidelity? = decoded.withPlanes { main in
            reference.frame.withPlanes { PictureFidelity.measure(main, $0) } ?? nil
        } ?? nil
        guard let fidelity else {
            throw ExportError("\(output): cannot measure the export's fidelity: its encoded pictures are not in the format they were encoded from")
        }
        measured += 1
        log.add(time: Double(pts) * frameSeconds, fidelity: fidelity, frameDuration: frameSeconds)
    }
}
