import MediaCore
import MediaTime

/// An export's fidelity measured as it encodes: each picture handed to the encoder is held until the
/// encoder's packets for it, decoded at once, give it back, and the pair is measured (`PictureFidelity`).
/// The composition is decoded once, by the export; the encoded pictures are decoded once, here. The
/// encoder's delay decides how many pictures are held (libx264's lookahead: about 50, 150 MB at 1080p).
final class ExportFidelity {
    private final class Held { var frame = Frame(); let pts: Int64; init(_ pts: Int64) { self.pts = pts } }
    private let readBack: EncodedReadBack
    private let log: FidelityLog
    private let frameSeconds: Double
    private var held: [Held] = []
    private var first = 0

    init(encoder: Encoder, log: FidelityLog, frameDuration: MediaTime) throws {
        readBack = try EncodedReadBack(encoder)
        self.log = log
        frameSeconds = frameDuration.seconds
    }

    /// Holds the picture about to be encoded at `pts` (frames).
    func hold(_ frame: borrowing Frame, pts: Int64) throws {
        let kept = Held(pts)
        try kept.frame.reference(frame)
        held.append(kept)
    }

    /// Reads back one packet the encoder made, before it is written (the muxer takes it).
    func read(_ packet: borrowing Packet) throws { try readBack.decode(packet, measure) }

    /// The pictures the decoder still holds, once the encoder is drained.
    func finish() throws {
        try readBack.finish(measure)
        held.removeAll()
    }

    private func measure(_ decoded: borrowing Frame) throws {
        let pts = decoded.pts ?? -1
        // Pictures come back in presentation order; one the encoder dropped (none does) is skipped.
        while first < held.count, held[first].pts < pts { first += 1 }
        guard first < held.count, held[first].pts == pts else { return }
        let reference = held[first]
        first += 1
        if first > 64 { held.removeFirst(first); first = 0 }
        let fidelity: PictureFidelity? = decoded.withPlanes { main in
            reference.frame.withPlanes { PictureFidelity.measure(main, $0) } ?? nil
        } ?? nil
        guard let fidelity else {
            throw ExportError("cannot measure the export's fidelity: its encoded pictures are not in the format they were encoded from")
        }
        log.add(time: Double(pts) * frameSeconds, fidelity: fidelity, frameDuration: frameSeconds)
    }
}
