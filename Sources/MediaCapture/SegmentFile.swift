import MediaCore
import MediaTime

/// Facts about a finished segment read back from its file.
public enum SegmentFile {
    /// When the segment's first picture is shown, in the file's time (from its container's start, as an
    /// export reads it): zero for a copied stream, the encoder's reordering delay for one encoded with
    /// B-frames (the muxer moves every timestamp later by it, so that none is negative). An assembly's
    /// edit of the segment starts there, so that it holds all of its pictures and no empty lead. Nil when
    /// the file cannot be read or has no video.
    public static func firstPicture(_ path: String) -> MediaTime? {
        // unreadable: not a segment, said by the caller
        guard let input = try? InputFile(path: path, limits: .default, interrupter: Interrupter(stallLimit: .seconds(30))),
              let video = input.streams.first(where: { $0.mediaType == .video && !$0.isAttachedPicture }) else { return nil }
        input.discardAll(except: [video.index])
        let origin = input.container.startTime.isNumeric ? input.container.startTime : .zero
        var packet = Packet()
        var earliest: MediaTime?
        // The keyframe comes first in decoding order; a frame shown before it (an open GOP's leading
        // pictures) comes within the next few packets.
        var seen = 0
        while seen < 8, (try? input.read(into: &packet)) == .packet {  // a read error ends the look, as the end does
            guard packet.streamIndex == video.index, let pts = packet.pts else { continue }
            seen += 1
            let time = MediaTime(count: pts, timeBase: video.timeBase) - origin
            earliest = earliest.map { MediaTime.min($0, time) } ?? time
        }
        return earliest.map { MediaTime.max($0, .zero) }
    }
}
